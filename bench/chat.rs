//! Chat benchmark: the release `ferroclaw` binary as a child process, a
//! fake OpenAI-style provider on loopback streaming at 0 ms per token (in
//! this process, so its first-chunk times share the client's clock), and
//! one WebSocket client. Prints numbers; asserts nothing but "no run lost".
//!
//!     cargo bench --bench chat
//!     FERROCLAW_BENCH_SESSIONS=1000 FERROCLAW_BENCH_TOTAL_RUNS=10000 cargo bench --bench chat
//!
//! Phases: idle RSS; 100 sequential runs on one session (chat.send ack
//! latency, gateway overhead to the first `chat` delta = client receive time
//! minus the provider's first-chunk time, runs/s) and RSS; N concurrent
//! sessions x 200 tokens (completions, events/s, send->final p50/p99); more
//! runs up to the total, then RSS again.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../tests/support/mod.rs"]
#[allow(dead_code, unused_imports)]
mod support;

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;
use support::fake_provider::{FakeProvider, Script};
use support::{connect_params, Client};

const BIN: &str = env!("CARGO_BIN_EXE_ferroclaw");

struct Gateway(Child);

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn rss_kb(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// Threads of the gateway process.
fn threads(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with("Threads:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[idx]
}

fn report(name: &str, mut samples: Vec<Duration>) {
    samples.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "{name:<34} n={:<6} p50={:>8.3}ms p90={:>8.3}ms p99={:>8.3}ms max={:>8.3}ms",
        samples.len(),
        ms(percentile(&samples, 0.50)),
        ms(percentile(&samples, 0.90)),
        ms(percentile(&samples, 0.99)),
        ms(*samples.last().unwrap()),
    );
}

fn tokens(n: usize) -> Script {
    let words: Vec<String> = (0..n).map(|i| format!("w{i} ")).collect();
    let refs: Vec<&str> = words.iter().map(String::as_str).collect();
    Script::text(&refs)
}

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// What one client read loop saw.
#[derive(Default)]
struct Seen {
    events: u64,
    finals: u64,
    errors: u64,
}

/// Reads frames until every run in `pending` ended; records the first
/// delta and end times per run id.
async fn drain(
    c: &mut Client,
    pending: &mut HashMap<String, Instant>,
    first_delta: &mut HashMap<String, Instant>,
    ended: &mut HashMap<String, Instant>,
    seen: &mut Seen,
) {
    while !pending.is_empty() {
        let f = c.recv().await.expect("gateway closed the socket");
        if f["type"] != "event" {
            continue;
        }
        seen.events += 1;
        if f["event"] != "chat" {
            continue;
        }
        let p = &f["payload"];
        let id = p["runId"].as_str().unwrap_or("").to_string();
        match p["state"].as_str() {
            Some("delta") => {
                first_delta.entry(id).or_insert_with(Instant::now);
            }
            Some(s @ ("final" | "error" | "aborted")) => {
                if s == "final" {
                    seen.finals += 1;
                } else {
                    seen.errors += 1;
                    eprintln!("run {id} ended {s}: {p}");
                }
                ended.insert(id.clone(), Instant::now());
                pending.remove(&id);
            }
            _ => {}
        }
    }
}

fn main() {
    let sessions = env_usize("FERROCLAW_BENCH_SESSIONS", 1000);
    let total_runs = env_usize("FERROCLAW_BENCH_TOTAL_RUNS", 10_000);
    // Phase 2 one run at a time (to tell per-session memory from burst peaks).
    let serial = env_usize("FERROCLAW_BENCH_SERIAL", 0) == 1;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        let fake = FakeProvider::start().await;
        fake.record
            .store(false, std::sync::atomic::Ordering::Relaxed);
        fake.set_default(tokens(20));
        let state = tempfile::tempdir().unwrap();
        let home = state.path().join(".ferroclaw");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::write(
            home.join("ferroclaw.json"),
            json!({
                "gateway": { "auth": { "mode": "token", "token": "bench-token" },
                             "tickIntervalMs": 3_600_000, "healthRefreshIntervalMs": 3_600_000 },
                "models": { "providers": { "fake": { "baseUrl": fake.base_url(), "api": "openai-completions", "apiKey": "k" } } },
                "agents": { "defaults": { "model": "fake/bench", "sessionIdleSeconds": env_usize("FERROCLAW_BENCH_IDLE_S", 600) } },
                "logging": { "level": "warn" },
            })
            .to_string(),
        )
        .unwrap();
        let mut child = Command::new(BIN)
            .env("HOME", state.path())
            .env_remove("OPENCLAW_GATEWAY_TOKEN")
            .args(["--state-dir"])
            .arg(state.path())
            .arg("--config")
            .arg(home.join("ferroclaw.json"))
            .args(["gateway", "--port", "0"])
            .stderr(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let pid = child.id();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let addr = loop {
            let line = lines.next().expect("gateway printed its address").unwrap();
            if let Some(rest) = line.split("listening on ws://").nth(1) {
                break rest.trim().to_string();
            }
        };
        std::thread::spawn(move || for _ in lines {});
        let _gw = Gateway(child);
        let url = format!("ws://{addr}/");
        tokio::time::sleep(Duration::from_secs(1)).await;
        let idle = rss_kb(pid);
        println!("gateway RSS idle                   {:>8.1} MB", idle as f64 / 1024.0);

        let mut c = Client::connect(&url).await;
        let res = c
            .handshake(connect_params(
                "cli",
                "cli",
                &["operator.read", "operator.write"],
                Some("bench-token"),
            ))
            .await;
        assert_eq!(res["ok"], true, "{res}");

        // Phase 1: sequential runs on one session.
        let (mut acks, mut overhead) = (Vec::new(), Vec::new());
        let mut seen = Seen::default();
        let mut runs_done = 0usize;
        let t_seq = Instant::now();
        let seq_runs = 100;
        for i in 0..seq_runs {
            let id = format!("seq-{i}");
            let t0 = Instant::now();
            let rid = c
                .send_req(
                    "chat.send",
                    json!({"sessionKey": "bench-seq", "message": "go", "idempotencyKey": id}),
                )
                .await;
            // The ack and the run's events may interleave: read until both.
            let (mut acked, mut first, mut done) = (false, None, false);
            while !(acked && done) {
                let f = c.recv().await.expect("gateway closed the socket");
                if f["type"] == "res" && f["id"] == rid {
                    assert_eq!(f["ok"], true, "{f}");
                    acks.push(t0.elapsed());
                    acked = true;
                    continue;
                }
                if f["type"] != "event" {
                    continue;
                }
                seen.events += 1;
                if f["event"] != "chat" || f["payload"]["runId"] != id.as_str() {
                    continue;
                }
                match f["payload"]["state"].as_str() {
                    Some("delta") => {
                        first.get_or_insert_with(Instant::now);
                    }
                    Some("final") => {
                        seen.finals += 1;
                        done = true;
                    }
                    Some(_) => {
                        seen.errors += 1;
                        done = true;
                    }
                    None => {}
                }
            }
            let provider_first = *fake.first_chunk_at.lock().unwrap().last().unwrap();
            if let Some(t) = first {
                overhead.push(t.saturating_duration_since(provider_first));
            }
            runs_done += 1;
        }
        let seq_elapsed = t_seq.elapsed();
        report("chat.send ack", acks);
        report("first delta - provider 1st chunk", overhead);
        println!(
            "{:<34} {:.0} runs/s (20 tokens each, one session)",
            "sequential runs",
            seq_runs as f64 / seq_elapsed.as_secs_f64()
        );
        let after_100 = rss_kb(pid);
        println!("gateway RSS after {runs_done} runs          {:>8.1} MB", after_100 as f64 / 1024.0);

        // Phase 2: many sessions at once, 200 tokens each.
        fake.set_default(tokens(env_usize("FERROCLAW_BENCH_TOKENS", 200)));
        let mut pending = HashMap::new();
        let (mut first, mut ended) = (HashMap::new(), HashMap::new());
        let mut seen2 = Seen::default();
        let mut started = HashMap::new();
        let t_conc = Instant::now();
        for i in 0..sessions {
            let id = format!("conc-{i}");
            c.send_req(
                "chat.send",
                json!({"sessionKey": format!("bench-{i}"), "message": "go", "idempotencyKey": id}),
            )
            .await;
            pending.insert(id.clone(), Instant::now());
            started.insert(id, Instant::now());
            if serial {
                drain(&mut c, &mut pending, &mut first, &mut ended, &mut seen2).await;
            }
        }
        drain(&mut c, &mut pending, &mut first, &mut ended, &mut seen2).await;
        let conc_elapsed = t_conc.elapsed();
        let durations: Vec<Duration> = ended
            .iter()
            .map(|(id, t)| t.duration_since(started[id]))
            .collect();
        println!(
            "{:<34} {}/{} completed, {} errors, {:.2}s, {:.0} events/s at the client",
            format!("{sessions} sessions x 200 tokens"),
            seen2.finals,
            sessions,
            seen2.errors,
            conc_elapsed.as_secs_f64(),
            seen2.events as f64 / conc_elapsed.as_secs_f64()
        );
        report("  send -> final", durations);
        runs_done += sessions;

        // Phase 3: more runs up to the total (100 sessions in waves, 20 tokens).
        fake.set_default(tokens(20));
        let t_more = Instant::now();
        let mut seen3 = Seen::default();
        let mut wave = 0;
        while runs_done < total_runs {
            let n = (total_runs - runs_done).min(100);
            let mut pending = HashMap::new();
            for i in 0..n {
                let id = format!("more-{wave}-{i}");
                c.send_req(
                    "chat.send",
                    json!({"sessionKey": format!("bench-{i}"), "message": "go", "idempotencyKey": id}),
                )
                .await;
                pending.insert(id, Instant::now());
            }
            let (mut f, mut e) = (HashMap::new(), HashMap::new());
            drain(&mut c, &mut pending, &mut f, &mut e, &mut seen3).await;
            runs_done += n;
            wave += 1;
        }
        println!(
            "{:<34} {} runs in {:.1}s ({:.0} runs/s), {} errors",
            "waves of 100 sessions",
            seen3.finals,
            t_more.elapsed().as_secs_f64(),
            seen3.finals as f64 / t_more.elapsed().as_secs_f64(),
            seen3.errors
        );
        tokio::time::sleep(Duration::from_millis(env_usize("FERROCLAW_BENCH_SETTLE_MS", 0) as u64)).await;
        let after_all = rss_kb(pid);
        println!(
            "gateway RSS after {runs_done} runs        {:>8.1} MB ({:.2}x the RSS after 100 runs)",
            after_all as f64 / 1024.0,
            after_all as f64 / after_100.max(1) as f64
        );
        println!("gateway threads                    {}", threads(pid));
        let lost = runs_done as u64 - (seen.finals + seen2.finals + seen3.finals);
        println!("lost runs                          {lost}");
    });
}
