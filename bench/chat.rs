//! Chat benchmark: the release `ferroclaw` binary as a child process, a
//! fake OpenAI-style provider on loopback streaming at 0 ms per token (in
//! this process, so its first-chunk times share the client's clock), and
//! one WebSocket client. Prints numbers; asserts nothing but "no run lost".
//!
//!     cargo bench --bench chat
//!     FERROCLAW_BENCH_IDLE_S=2 cargo bench --bench chat
//!
//! Phases: idle RSS; 100 sequential runs on one session (chat.send ack
//! latency, gateway overhead to the first `chat` delta = client receive time
//! minus the provider's first-chunk time, runs/s) and RSS; the same kind of
//! work up to the total (waves of 100 sessions, 20 tokens) and RSS, so the
//! ratio of the two shows whether memory grows with runs; N concurrent
//! sessions x 200 tokens (completions, events/s, send->final p50/p99, RSS
//! and the cost of a live session). Every RSS line says how many sessions
//! are live. With a short session idle timeout (`FERROCLAW_BENCH_IDLE_S`
//! <= 10) it also waits for every session to idle out after the waves and
//! after the burst, prints the RSS the gateway keeps, runs the waves again
//! and prints the growth per 1000 runs (a leak shows there). Knobs:
//! `FERROCLAW_BENCH_SESSIONS` (1000), `_TOTAL_RUNS` (10000), `_TOKENS`
//! (200), `_SERIAL=1`, `_FRESH=1` (a new session for every run of the
//! waves), `_SMAPS=1` (where the RSS is: heap in use and free by the
//! allocator's count, and resident memory by mapping kind),
//! `_PROFILER="heaptrack -o /tmp/ht"`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../tests/support/mod.rs"]
#[allow(dead_code, unused_imports)]
mod support;

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;
use support::fake_provider::{FakeProvider, Script};
use support::{connect_params, Client};

const BUILT: &str = env!("CARGO_BIN_EXE_ferroclaw");

/// The gateway binary: `FERROCLAW_BENCH_BIN` (another build, to compare
/// in one run), else this one.
fn bin() -> String {
    std::env::var("FERROCLAW_BENCH_BIN").unwrap_or_else(|_| BUILT.to_string())
}

#[path = "proc_stats.rs"]
mod proc_stats;
use proc_stats::{env_usize, metric, status_kb, Gateway};

fn rss_kb(pid: u32) -> u64 {
    status_kb(pid, "VmRSS:")
}

/// Where the gateway's resident memory is, from /proc/<pid>/smaps: the
/// `[heap]`, thread stacks, other anonymous mappings by size class (glibc
/// arenas are 64 MB reservations, big allocations their own mmaps), files.
fn smaps_breakdown(pid: u32) -> String {
    let text = std::fs::read_to_string(format!("/proc/{pid}/smaps")).unwrap_or_default();
    let mut groups: std::collections::BTreeMap<String, (u64, u64)> = Default::default();
    let mut current = String::new();
    for line in text.lines() {
        let mut parts = line.split_whitespace();
        let first = parts.next().unwrap_or("");
        if first.contains('-') && !first.ends_with(':') {
            let (lo, hi) = first.split_once('-').unwrap_or(("0", "0"));
            let size =
                u64::from_str_radix(hi, 16).unwrap_or(0) - u64::from_str_radix(lo, 16).unwrap_or(0);
            let name = line.split_whitespace().nth(5).unwrap_or("");
            current = match name {
                "" if size >= 60 << 20 => "anon arena-size (>=60 MB)".into(),
                "" if size >= 1 << 20 => "anon 1-60 MB".into(),
                "" => "anon <1 MB".into(),
                n if n.starts_with('[') => n.to_string(),
                _ => "files".into(),
            };
        } else if first == "Rss:" {
            let kb: u64 = parts.next().and_then(|v| v.parse().ok()).unwrap_or(0);
            let e = groups.entry(current.clone()).or_default();
            e.0 += kb;
            e.1 += 1;
        }
    }
    groups
        .iter()
        .filter(|(_, (kb, _))| *kb >= 256)
        .map(|(k, (kb, n))| format!("{k}: {:.1} MB in {n}", *kb as f64 / 1024.0))
        .collect::<Vec<_>>()
        .join("; ")
}

/// Prints the gateway's RSS with the number of live sessions; returns it (KB).
fn rss_line(label: &str, pid: u32, addr: &str, reference: Option<u64>) -> u64 {
    let rss = rss_kb(pid);
    let live = metric(addr, "ferroclaw_sessions_live").unwrap_or(-1);
    let ratio = reference
        .map(|r| {
            format!(
                ", {:.2}x the RSS after 100 runs",
                rss as f64 / r.max(1) as f64
            )
        })
        .unwrap_or_default();
    println!(
        "{:<34} {:>8.1} MB ({live} sessions live{ratio})",
        format!("gateway RSS {label}"),
        rss as f64 / 1024.0
    );
    if env_usize("FERROCLAW_BENCH_SMAPS", 0) == 1 {
        let heap = |state: &str| {
            metric(addr, &format!("ferroclaw_heap_bytes{{state=\"{state}\"}}")).unwrap_or(-1) as f64
                / 1048576.0
        };
        println!(
            "    heap in use {:.1} MB, free {:.1} MB; {}",
            heap("in_use"),
            heap("free"),
            smaps_breakdown(pid)
        );
    }
    rss
}

/// Waits until every session idled out and the gateway's next heap trim
/// (every 5 s after sessions stopped) ran.
async fn settle(addr: &str) {
    let until = Instant::now() + Duration::from_secs(120);
    while metric(addr, "ferroclaw_sessions_live").unwrap_or(0) > 0 && Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    tokio::time::sleep(Duration::from_secs(6)).await;
}

/// `runs` more runs in waves of 100 sessions (`bench-0..99`, 20 tokens;
/// with `FERROCLAW_BENCH_FRESH=1` a new session for every run).
async fn waves(c: &mut Client, runs: usize, tag: &str) -> Seen {
    let fresh = env_usize("FERROCLAW_BENCH_FRESH", 0) == 1;
    let key = |i: usize, id: &str| match fresh {
        true => format!("fresh-{id}"),
        false => format!("bench-{i}"),
    };
    let mut seen = Seen::default();
    let (mut done, mut wave) = (0, 0);
    while done < runs {
        let n = (runs - done).min(100);
        let mut pending = HashMap::new();
        for i in 0..n {
            let id = format!("{tag}-{wave}-{i}");
            c.send_req(
                "chat.send",
                json!({"sessionKey": key(i, &id), "message": "go", "idempotencyKey": id}),
            )
            .await;
            pending.insert(id, Instant::now());
        }
        let (mut f, mut e) = (HashMap::new(), HashMap::new());
        drain(c, &mut pending, &mut f, &mut e, &mut seen).await;
        done += n;
        wave += 1;
    }
    seen
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
    let idle_s = env_usize("FERROCLAW_BENCH_IDLE_S", 600);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        let fake = FakeProvider::start().await;
        fake.record
            .store(false, std::sync::atomic::Ordering::Relaxed);
        fake.set_default(Script::words(20));
        let state = tempfile::tempdir().unwrap();
        let home = state.path().join(".ferroclaw");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::write(
            home.join("ferroclaw.json"),
            json!({
                "gateway": { "auth": { "mode": "token", "token": "bench-token-0123456789" },
                             "tickIntervalMs": 3_600_000, "healthRefreshIntervalMs": 3_600_000,
                             "maxInFlightRequests": env_usize("FERROCLAW_BENCH_INFLIGHT", 128) },
                "models": { "providers": { "fake": { "baseUrl": fake.base_url(), "api": "openai-completions", "apiKey": "k" } } },
                "agents": { "defaults": { "model": "fake/bench", "sessionIdleSeconds": idle_s } },
                "logging": { "level": "warn" },
            })
            .to_string(),
        )
        .unwrap();
        // FERROCLAW_BENCH_PROFILER="heaptrack -o /tmp/ht" runs the gateway
        // under a profiler (RSS lines then measure the profiler's process).
        let profiler = std::env::var("FERROCLAW_BENCH_PROFILER").unwrap_or_default();
        let mut argv: Vec<&str> = profiler.split_whitespace().collect();
        let bin = bin();
        argv.push(&bin);
        let mut child = Command::new(argv[0])
            .args(&argv[1..])
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
        std::thread::spawn(move || for l in lines.map_while(Result::ok) { eprintln!("gw: {l}") });
        let _gw = Gateway(child);
        let url = format!("ws://{addr}/");
        tokio::time::sleep(Duration::from_secs(1)).await;
        rss_line("idle", pid, &addr, None);

        let mut c = Client::connect(&url).await;
        let res = c
            .handshake(connect_params(
                "cli",
                "cli",
                &["operator.read", "operator.write"],
                Some("bench-token-0123456789"),
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
                    // OpenClaw's run status (`starting_model`) is no end.
                    Some("status") => {}
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
        let after_100 = rss_line(&format!("after {runs_done} runs"), pid, &addr, None);

        // Phase 2: the same kind of work up to the total (waves of 100
        // sessions, 20 tokens): does memory grow with the number of runs?
        fake.set_default(Script::words(20));
        let t_more = Instant::now();
        let more = total_runs.saturating_sub(runs_done);
        let seen3 = waves(&mut c, more, "more").await;
        runs_done += more;
        println!(
            "{:<34} {} runs in {:.1}s ({:.0} runs/s), {} errors",
            "waves of 100 sessions",
            seen3.finals,
            t_more.elapsed().as_secs_f64(),
            seen3.finals as f64 / t_more.elapsed().as_secs_f64(),
            seen3.errors
        );
        rss_line(&format!("after {runs_done} runs"), pid, &addr, Some(after_100));
        let mut finals = seen.finals + seen3.finals;
        // With a short idle timeout (FERROCLAW_BENCH_IDLE_S), the memory the
        // gateway keeps once its sessions idled out.
        let idle = idle_s <= 10;
        if idle {
            settle(&addr).await;
            rss_line(&format!("after {runs_done} runs, idle"), pid, &addr, Some(after_100));
        }

        // Phase 3: many sessions at once, 200 tokens each.
        fake.set_default(Script::words(env_usize("FERROCLAW_BENCH_TOKENS", 200)));
        let before_burst = rss_kb(pid);
        let mut pending = HashMap::new();
        let (mut first, mut ended) = (HashMap::new(), HashMap::new());
        let mut seen2 = Seen::default();
        let mut started = HashMap::new();
        let t_conc = Instant::now();
        for i in 0..sessions {
            let id = format!("conc-{i}");
            c.send_req(
                "chat.send",
                json!({"sessionKey": format!("burst-{i}"), "message": "go", "idempotencyKey": id}),
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
        finals += seen2.finals;
        let after_burst = rss_line(
            &format!("after {runs_done} runs, burst"),
            pid,
            &addr,
            Some(after_100),
        );
        println!(
            "{:<34} {:>8.1} KB per session (RSS growth over the burst / {sessions})",
            "  live session cost",
            after_burst.saturating_sub(before_burst) as f64 / sessions.max(1) as f64
        );
        // Then the memory a burst leaves behind, and whether another batch
        // of runs adds to it (a leak would).
        if idle {
            settle(&addr).await;
            let settled = rss_line(&format!("after {runs_done} runs, idle"), pid, &addr, Some(after_100));
            let again = waves(&mut c, more, "again").await;
            finals += again.finals;
            runs_done += more;
            settle(&addr).await;
            let later = rss_line(&format!("after {runs_done} runs, idle"), pid, &addr, Some(after_100));
            println!(
                "{:<34} {:>8.1} KB per 1000 runs (idle RSS after the last {more} runs minus before)",
                "  steady-state growth",
                (later as f64 - settled as f64) * 1000.0 / more.max(1) as f64
            );
        }
        println!("gateway threads                    {}", status_kb(pid, "Threads:"));
        let lost = runs_done as u64 - finals;
        println!("lost runs                          {lost}");
    });
}
