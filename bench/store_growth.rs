//! Store memory benchmark: the heap the `Store` (sled 0.34) holds as a
//! gateway's transcripts grow, with no session, run or cache of ferroclaw's
//! in the way. Each "run" writes what a chat run writes (user message,
//! assistant message, usage entry, run record, session entry; flushed like
//! a run's end) into 100 sessions in turn. A counting allocator reports the
//! live heap after every 1000 runs. Prints numbers; asserts nothing.
//!
//!     cargo bench --bench store_growth
//!     FERROCLAW_BENCH_STORE_RUNS=20000 cargo bench --bench store_growth
//!
//! sled keeps a small structure for every page it ever paged out, whatever
//! `cache_capacity` says (spacejam/sled#1093), so its heap grows with the
//! size of the store: this bench measures by how much per run.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};
use std::time::Instant;

use ferroclaw_actors::runs::{self, RunRecord};
use ferroclaw_actors::store::{Store, Tree};
use ferroclaw_actors::transcript;
use serde_json::json;

struct Counting;
static LIVE: AtomicIsize = AtomicIsize::new(0);

// SAFETY: forwards to the system allocator; only counts sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        LIVE.fetch_add(l.size() as isize, Ordering::Relaxed);
        System.alloc(l)
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        LIVE.fetch_sub(l.size() as isize, Ordering::Relaxed);
        System.dealloc(p, l)
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        LIVE.fetch_add(n as isize - l.size() as isize, Ordering::Relaxed);
        System.realloc(p, l, n)
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

fn mb(bytes: isize) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

fn main() {
    let total: usize = std::env::var("FERROCLAW_BENCH_STORE_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let start = LIVE.load(Ordering::Relaxed);
        println!("store heap at open                  {:>8.2} MB", mb(start));
        let text = "hello there, this is a message of about the length people type";
        let t0 = Instant::now();
        let mut prev = start;
        for n in 0..total {
            let sid = format!("sess-{}", n % 100);
            let user = transcript::message_entry(None, transcript::user_message(text));
            let reply = transcript::message_entry(
                None,
                json!({"role": "assistant", "content": [{"type": "text", "text": format!("You said: {text}")}]}),
            );
            let usage = json!({"type": "custom", "customType": "usage", "data": {"input": 20, "output": 30}});
            transcript::append(&store, &sid, &[user]).unwrap();
            store.flush().await.unwrap();
            transcript::append(&store, &sid, &[reply, usage]).unwrap();
            let record = RunRecord {
                status: "ok".into(),
                ended_at: n as u64 + 1,
                stop_reason: "stop".into(),
                ..RunRecord::pending(&format!("agent:main:{sid}"), n as u64)
            };
            runs::save(&store, &format!("run-{n}"), &record).unwrap();
            store
                .put(Tree::Sessions, &format!("agent:main:{sid}"), &json!({"sessionId": sid, "updatedAt": n}))
                .unwrap();
            store.flush().await.unwrap();
            if (n + 1) % 1000 == 0 {
                let now = LIVE.load(Ordering::Relaxed);
                println!(
                    "store heap after {:>6} runs        {:>8.2} MB (+{:.0} bytes per run since the last line)",
                    n + 1,
                    mb(now),
                    (now - prev) as f64 / 1000.0
                );
                prev = now;
            }
        }
        let end = LIVE.load(Ordering::Relaxed);
        println!(
            "{total} runs in {:.1}s: store heap {:.2} -> {:.2} MB ({:.0} bytes per run)",
            t0.elapsed().as_secs_f64(),
            mb(start),
            mb(end),
            (end - start) as f64 / total as f64
        );
    });
}
