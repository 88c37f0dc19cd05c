//! The cron scheduler at scale, on a real sled store, in this process:
//!
//! - 10,000 jobs (a mix of cron expressions in named zones, intervals and
//!   one-shots) stored, then the scheduler started on them: the time to load
//!   them and compute every next run, and the resident memory it added;
//! - 1,000 one-shot jobs due at the same instant: how late each run started
//!   (p50, p99, max), with a runner that only records when it was called.
//!
//! `cargo bench --bench cron`. Numbers are printed, never asserted.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use actix::prelude::*;
use ferroclaw_actors::cron::clock::SystemClock;
use ferroclaw_actors::cron::job::{CronJob, Known, Target};
use ferroclaw_actors::cron::*;
use ferroclaw_actors::store::Store;
use futures_util::future::BoxFuture;
use futures_util::FutureExt;
use serde_json::json;

#[derive(Clone, Default)]
struct Clocked(Arc<Mutex<Vec<(u64, u64)>>>);

impl Runner for Clocked {
    fn run(&self, o: Order) -> BoxFuture<'static, Outcome> {
        let now = ferroclaw_actors::now_ms();
        self.0.lock().unwrap().push((o.entry.scheduled_at_ms, now));
        async {
            Outcome {
                status: "ok".into(),
                ..Default::default()
            }
        }
        .boxed()
    }
    fn redeliver(&self, _: Order, _: String, _: Target) -> BoxFuture<'static, Outcome> {
        async { Outcome::failed("unused") }.boxed()
    }
}

fn rss_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn config() -> CronConfig {
    CronConfig {
        enabled: true,
        run_missed: true,
        retry_interrupted: false,
        default_agent: "main".into(),
    }
}

fn job(i: usize, now: u64) -> serde_json::Value {
    let zones = [
        "Europe/Lisbon",
        "America/New_York",
        "Asia/Tokyo",
        "Australia/Sydney",
    ];
    let schedule = match i % 4 {
        0 => {
            json!({"kind": "cron", "expr": format!("{} {} * * *", i % 60, i % 24), "tz": zones[i % 4]})
        }
        1 => {
            json!({"kind": "cron", "expr": "0 * * * *", "tz": zones[(i / 4) % 4], "staggerMs": 300_000})
        }
        2 => json!({"kind": "every", "everyMs": 60_000 * (1 + i as u64 % 240)}),
        _ => json!({"kind": "at", "atMs": now + 86_400_000 + i as u64 * 1000}),
    };
    json!({"name": format!("job {i}"), "schedule": schedule, "sessionTarget": "isolated",
        "wakeMode": "now", "payload": {"kind": "agentTurn", "message": format!("task {i}")}})
}

fn store_jobs(store: &Store, params: impl Iterator<Item = serde_json::Value>) {
    let now = ferroclaw_actors::now_ms();
    let known = Known {
        channels: &[],
        agents: &[],
        default_agent: "main",
        now_ms: now,
    };
    for (i, p) in params.enumerate() {
        let job = ferroclaw::protocol::cron::new_job(&p).unwrap();
        let (j, _) = CronJob::create(&format!("job-{i:05}"), &job, &known).unwrap();
        record::save_job(store, &j).unwrap();
    }
}

fn percentile(sorted: &[u64], p: f64) -> u64 {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let now = ferroclaw_actors::now_ms();
    {
        let store = Store::open(dir.path()).unwrap();
        store_jobs(&store, (0..10_000).map(|i| job(i, now)));
    }
    System::new().block_on(async {
        let store = Store::open(dir.path()).unwrap();
        let before = rss_kb();
        let heap_before = ferroclaw_actors::gateway::heap::stats().map_or(0, |h| h.in_use);
        let t = Instant::now();
        let runner = Clocked::default();
        let addr = CronActor::new(store, Arc::new(SystemClock), Arc::new(runner), config()).start();
        let status = addr.send(CronStatus).await.unwrap();
        let load = t.elapsed();
        // What the scheduler holds, not the transient peak of reading the store.
        ferroclaw_actors::gateway::heap::release_free_memory();
        let after = rss_kb();
        let held = ferroclaw_actors::gateway::heap::stats()
            .map_or(0, |h| h.in_use)
            .saturating_sub(heap_before);
        println!(
            "10,000 jobs: loaded with every next run computed in {:.1} ms ({:.1} µs/job); heap held +{:.1} MB ({:.0} bytes/job, sled's cache included), RSS +{:.1} MB ({} jobs, next wake {})",
            load.as_secs_f64() * 1000.0,
            load.as_secs_f64() * 1e6 / 10_000.0,
            held as f64 / 1_048_576.0,
            held as f64 / 10_000.0,
            (after.saturating_sub(before)) as f64 / 1024.0,
            status.jobs,
            status.next_wake_at_ms.unwrap_or_default(),
        );
        let t = Instant::now();
        for _ in 0..100 {
            addr.send(ListJobs { limit: Some(200), ..Default::default() }).await.unwrap();
        }
        println!(
            "cron.list of 200 of 10,000 jobs: {:.2} ms each",
            t.elapsed().as_secs_f64() * 10.0
        );
    });

    burst("1,000 jobs due at one instant", |_| 3_000);
    // The same minute, spread: one job every `spread / 1000` ms.
    let spread: u64 = std::env::var("FERROCLAW_BENCH_SPREAD_S")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20);
    burst(&format!("1,000 jobs due across {spread} s"), |i| {
        3_000 + i as u64 * spread * 1000 / 1000
    });
}

/// 1,000 one-shot jobs due `offset(i)` ms from now: how late each started.
fn burst(label: &str, offset: impl Fn(usize) -> u64) {
    let dir = tempfile::tempdir().unwrap();
    let start = ferroclaw_actors::now_ms();
    let last = (0..1_000).map(&offset).max().unwrap_or(0);
    {
        let store = Store::open(dir.path()).unwrap();
        store_jobs(
            &store,
            (0..1_000).map(|i| {
                json!({"name": format!("burst {i}"), "schedule": {"kind": "at", "atMs": start + offset(i)},
                    "sessionTarget": "isolated", "wakeMode": "now",
                    "payload": {"kind": "agentTurn", "message": "now"}})
            }),
        );
    }
    let runner = Clocked::default();
    let seen = runner.0.clone();
    let watch = seen.clone();
    System::new().block_on(async move {
        let store = Store::open(dir.path()).unwrap();
        let _addr =
            CronActor::new(store, Arc::new(SystemClock), Arc::new(runner), config()).start();
        let deadline = Instant::now() + Duration::from_millis(last + 10_000);
        while Instant::now() < deadline {
            actix::clock::sleep(Duration::from_millis(50)).await;
            if watch.lock().unwrap().len() >= 1_000 {
                break;
            }
        }
    });
    let mut late: Vec<u64> = runner_late(&runner_calls(&seen));
    late.sort_unstable();
    println!(
        "{label}: started {} of them; lateness p50 {} ms, p99 {} ms, max {} ms",
        late.len(),
        percentile(&late, 0.5),
        percentile(&late, 0.99),
        late.last().copied().unwrap_or(0)
    );
}

fn runner_calls(seen: &Arc<Mutex<Vec<(u64, u64)>>>) -> Vec<(u64, u64)> {
    seen.lock().unwrap().clone()
}

fn runner_late(calls: &[(u64, u64)]) -> Vec<u64> {
    calls
        .iter()
        .map(|(slot, at)| at.saturating_sub(*slot))
        .collect()
}
