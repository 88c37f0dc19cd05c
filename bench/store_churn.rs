//! sled's own disk use under churn: rounds of writing a batch of sessions
//! (transcripts, runs, session rows; flushed as runs are) and then removing
//! them all, as session maintenance does. Prints the store folder's size
//! on disk after each write and each removal, and the growth per round
//! over the second half (sled reuses freed segments, or it does not).
//! Then what a backup costs the writers: a put + flush, one after the
//! other, timed without a snapshot running and with snapshots taken back
//! to back on another thread (`Store::snapshot`, the log `ferroclaw backup`
//! archives): p50, p99 and the worst write. Prints numbers; asserts
//! nothing.
//!
//!     cargo bench --bench store_churn
//!     FERROCLAW_BENCH_CHURN_ROUNDS=50 cargo bench --bench store_churn
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;

#[path = "proc_stats.rs"]
#[allow(dead_code)]
mod proc_stats;

use ferroclaw_actors::store::{Store, Tree};
use ferroclaw_actors::transcript;
use serde_json::json;

fn disk(p: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    walk(p, &|m: &std::fs::Metadata| m.blocks() * 512)
}

fn walk(p: &Path, f: &dyn Fn(&std::fs::Metadata) -> u64) -> u64 {
    let Ok(m) = std::fs::symlink_metadata(p) else {
        return 0;
    };
    if !m.is_dir() {
        return f(&m);
    }
    std::fs::read_dir(p)
        .map(|d| d.flatten().map(|e| walk(&e.path(), f)).sum())
        .unwrap_or(0)
}

fn mb(b: u64) -> f64 {
    b as f64 / (1024.0 * 1024.0)
}

fn main() {
    let rounds = proc_stats::env_usize("FERROCLAW_BENCH_CHURN_ROUNDS", 30);
    let (sessions, turns) = (200, 10);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let text = "a message of about the length people type, with a little more to it ".repeat(4);
        let mut after_removal = Vec::new();
        for round in 0..rounds {
            for s in 0..sessions {
                let sid = format!("r{round}-s{s}");
                for t in 0..turns {
                    let user = transcript::message_entry(None, transcript::user_message(&text));
                    let reply = transcript::message_entry(
                        None,
                        json!({"role": "assistant", "content": [{"type": "text", "text": format!("{t}: {text}")}]}),
                    );
                    transcript::append(&store, &sid, &[user, reply]).unwrap();
                }
                store
                    .put(Tree::Sessions, &format!("agent:main:{sid}"), &json!({"sessionId": sid, "updatedAt": round}))
                    .unwrap();
                store.flush().await.unwrap();
            }
            let written = disk(&dir.path().join("store"));
            for s in 0..sessions {
                let sid = format!("r{round}-s{s}");
                transcript::delete(&store, &sid).unwrap();
                store.remove(Tree::Sessions, &format!("agent:main:{sid}")).unwrap();
            }
            store.flush().await.unwrap();
            let removed = disk(&dir.path().join("store"));
            after_removal.push(removed);
            println!(
                "round {:>3}: {} sessions x {} turns written: store {:>7.1} MB; all removed: {:>7.1} MB",
                round + 1,
                sessions,
                turns,
                mb(written),
                mb(removed)
            );
        }
        let half = rounds / 2;
        if rounds >= 4 {
            let slope = (after_removal[rounds - 1] as f64 - after_removal[half] as f64)
                / (rounds - 1 - half) as f64;
            println!(
                "after removal, rounds {}..{}: {:+.2} MB per round ({} sessions x {} turns written and removed per round)",
                half + 1,
                rounds,
                slope / (1024.0 * 1024.0),
                sessions,
                turns
            );
        }
        snapshot_cost(&store).await;
    });
}

/// Writes timed without, then with, snapshots running beside them.
async fn snapshot_cost(store: &Store) {
    for i in 0..20_000 {
        store
            .put(
                Tree::Transcripts,
                &format!("bulk\0{i:06}"),
                &json!({"text": "x".repeat(300)}),
            )
            .unwrap();
    }
    store.flush().await.unwrap();
    let n = 2000;
    let timed = |label: &'static str, with_snapshots: bool| {
        let store = store.clone();
        async move {
            let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
            let (s, halt) = (store.clone(), stop.clone());
            let snapper = with_snapshots.then(|| {
                std::thread::spawn(move || {
                    let mut taken = 0;
                    while !halt.load(std::sync::atomic::Ordering::Relaxed) {
                        s.snapshot(&mut std::io::sink()).unwrap();
                        taken += 1;
                    }
                    taken
                })
            });
            let mut lat = Vec::with_capacity(n);
            for i in 0..n {
                let t0 = std::time::Instant::now();
                store
                    .put(Tree::Sessions, &format!("w{i}"), &json!({"n": i}))
                    .unwrap();
                store.flush().await.unwrap();
                lat.push(t0.elapsed());
            }
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
            let taken = snapper.map(|h| h.join().unwrap()).unwrap_or(0);
            lat.sort();
            let ms = |q: f64| lat[((lat.len() - 1) as f64 * q) as usize].as_secs_f64() * 1e3;
            println!(
                "put + flush, {label:<28} p50 {:.3} ms  p99 {:.3} ms  max {:.3} ms  ({n} writes; {taken} snapshots of {} entries taken meanwhile)",
                ms(0.5),
                ms(0.99),
                ms(1.0),
                20_000 + n
            );
        }
    };
    timed("no snapshot running:", false).await;
    timed("snapshots back to back:", true).await;
}
