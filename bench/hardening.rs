//! Hardening benchmark (issue 12): the release `ferroclaw` binary as a
//! child process, attacked over loopback. Prints numbers; asserts nothing.
//!
//!     cargo bench --bench hardening
//!
//! 1. Pre-auth flood: 100 unauthenticated sockets each declare a 2^40-byte
//!    frame and stream into it (up to `FERROCLAW_BENCH_FLOOD_MB`, 8 MB each,
//!    until the gateway hangs up); then 100 sockets each send a 64 KiB
//!    frame (the most a pre-auth frame may be) minus one byte and hold it
//!    open. The gateway's RSS before, after and its peak.
//! 2. A flooding socket: one authenticated client pipelines `agent.wait`
//!    calls for unknown ids (`timeoutMs: 1`) and `health` calls (or only
//!    `health` with `FERROCLAW_BENCH_HEALTH_ONLY=1`) as fast as it can,
//!    reading its answers; a bystander client measures WebSocket `health`
//!    and HTTP `/health` round trips (p50/p99) without and with the flood
//!    running. Knobs: `FERROCLAW_BENCH_PROBES` (1500), `_INFLIGHT` and
//!    `_RATE` (the gateway's `maxInFlightRequests` / `maxRequestsPerSecond`;
//!    0 turns the rate bound off), `_SKIP_PREAUTH=1`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../tests/support/mod.rs"]
#[allow(dead_code, unused_imports)]
mod support;

#[path = "proc_stats.rs"]
#[allow(dead_code)]
mod proc_stats;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use proc_stats::status_kb;
use serde_json::json;
use support::process::{spawn_gateway, Gateway};
use support::raw_ws::{header, text_frame, RawWs};
use support::{connect_params, Client};

const TOKEN: &str = "bench-token-0123456789";

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn mb(kb: u64) -> f64 {
    kb as f64 / 1024.0
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[idx]
}

fn summary(mut samples: Vec<Duration>) -> (f64, f64) {
    samples.sort();
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    (
        us(percentile(&samples, 0.5)),
        us(percentile(&samples, 0.99)),
    )
}

/// The release binary on a state dir whose config the bench writes.
fn start(state: &std::path::Path) -> (Gateway, u32, String) {
    let mut config = json!({
        "gateway": { "auth": { "mode": "token", "token": TOKEN },
                     "handshakeTimeoutMs": 120000,
                     "tickIntervalMs": 3_600_000, "healthRefreshIntervalMs": 3_600_000 },
        "logging": { "level": "warn" },
    });
    // The defaults unless asked otherwise.
    if let Ok(n) = std::env::var("FERROCLAW_BENCH_INFLIGHT") {
        config["gateway"]["maxInFlightRequests"] = json!(n.parse::<u64>().unwrap());
    }
    if let Ok(n) = std::env::var("FERROCLAW_BENCH_RATE") {
        config["gateway"]["maxRequestsPerSecond"] = json!(n.parse::<u64>().unwrap());
    }
    std::fs::write(state.join("ferroclaw.json"), config.to_string()).unwrap();
    let (gw, addr, _) = spawn_gateway(state);
    let pid = gw.id();
    (gw, pid, addr)
}

async fn preauth_flood(addr: std::net::SocketAddr, pid: u32) {
    let per_socket = env_usize("FERROCLAW_BENCH_FLOOD_MB", 8) << 20;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let before = status_kb(pid, "VmRSS:");
    let t0 = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..100 {
        tasks.push(tokio::spawn(async move {
            let mut ws = RawWs::connect(addr).await;
            let _ = ws.frame().await; // the challenge
            ws.write(&header(true, 2, 1 << 40)).await.unwrap();
            let chunk = vec![0u8; 64 * 1024];
            let mut sent = 0usize;
            while sent < per_socket && ws.write(&chunk).await.is_ok() {
                sent += chunk.len();
            }
            let code = match tokio::time::timeout(Duration::from_secs(10), ws.until_close()).await {
                Ok(Some((code, _))) => code,
                _ => 0,
            };
            (sent, code)
        }));
    }
    let mut streamed = 0usize;
    let mut closed_1009 = 0;
    for t in tasks {
        let (sent, code) = t.await.unwrap();
        streamed += sent;
        closed_1009 += usize::from(code == 1009);
    }
    let after = status_kb(pid, "VmRSS:");
    println!(
        "pre-auth 2^40-byte declarations  sockets=100 closed_1009={closed_1009} accepted_by_kernel={:.1}MB in {:.2}s  RSS {:.1} -> {:.1} MB (+{:.1} MB)",
        streamed as f64 / 1048576.0,
        t0.elapsed().as_secs_f64(),
        mb(before),
        mb(after),
        mb(after.saturating_sub(before)),
    );
    // The largest a pre-auth frame may be, minus one byte, held open.
    let before = status_kb(pid, "VmRSS:");
    let mut held = Vec::new();
    for _ in 0..100 {
        let mut ws = RawWs::connect(addr).await;
        let _ = ws.frame().await;
        ws.write(&header(true, 1, 64 * 1024)).await.unwrap();
        ws.write(&vec![b'x'; 64 * 1024 - 1]).await.unwrap();
        held.push(ws);
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let after = status_kb(pid, "VmRSS:");
    println!(
        "pre-auth 64 KiB frames held      sockets=100  RSS {:.1} -> {:.1} MB (+{:.1} MB), peak {:.1} MB",
        mb(before),
        mb(after),
        mb(after.saturating_sub(before)),
        mb(status_kb(pid, "VmHWM:")),
    );
    drop(held);
}

async fn bystander(addr: &str, n: usize) -> (Vec<Duration>, Vec<Duration>) {
    let mut c = Client::connect(&format!("ws://{addr}/")).await;
    let r = c
        .handshake(connect_params(
            "cli",
            "cli",
            &["operator.read"],
            Some(TOKEN),
        ))
        .await;
    assert_eq!(r["ok"], true);
    let sock: std::net::SocketAddr = addr.parse().unwrap();
    let (mut ws, mut http) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for _ in 0..n {
        let t = Instant::now();
        let h = c.call("health", json!({})).await;
        ws.push(t.elapsed());
        assert_eq!(h["ok"], true);
        let t = Instant::now();
        let (status, _, _) = support::http(sock, "GET", "/health", &[]).await;
        http.push(t.elapsed());
        assert_eq!(status, 200);
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    (ws, http)
}

/// One authenticated socket pipelining requests as fast as it can; returns
/// how many answers it read.
async fn flood(addr: std::net::SocketAddr, stop: Arc<AtomicBool>, answers: Arc<AtomicU64>) {
    let ws = RawWs::connect(addr).await;
    let RawWs { stream, .. } = ws;
    let (mut rd, mut wr) = stream.into_split();
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let connect = json!({"type": "req", "id": "c", "method": "connect",
        "params": connect_params("cli", "cli", &["operator.admin", "operator.write"], Some(TOKEN))});
    wr.write_all(&text_frame(&connect.to_string()))
        .await
        .unwrap();
    let reader = {
        let answers = answers.clone();
        tokio::spawn(async move {
            let mut buf = vec![0u8; 1 << 16];
            loop {
                match rd.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    // Roughly one answer per `"type":"res"` in the bytes.
                    Ok(n) => {
                        let k = buf[..n].windows(5).filter(|w| w == b"\"res\"").count();
                        answers.fetch_add(k as u64, Ordering::Relaxed);
                    }
                }
            }
        })
    };
    let health_only = std::env::var("FERROCLAW_BENCH_HEALTH_ONLY").is_ok();
    let mut i = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let mut burst = Vec::with_capacity(1 << 16);
        for _ in 0..500 {
            i += 1;
            let f = if health_only || i.is_multiple_of(5) {
                json!({"type": "req", "id": format!("h{i}"), "method": "health"})
            } else {
                json!({"type": "req", "id": format!("w{i}"), "method": "agent.wait",
                    "params": {"runId": format!("nope-{i}"), "timeoutMs": 1}})
            };
            burst.extend(text_frame(&f.to_string()));
        }
        if wr.write_all(&burst).await.is_err() {
            break;
        }
    }
    reader.abort();
}

fn main() {
    let n = env_usize("FERROCLAW_BENCH_PROBES", 1500);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        let state = tempfile::tempdir().unwrap();
        let (_gw, pid, addr) = start(state.path());
        let sock: std::net::SocketAddr = addr.parse().unwrap();
        println!("gateway pid {pid} on {addr}, idle RSS {:.1} MB", mb(status_kb(pid, "VmRSS:")));
        if std::env::var("FERROCLAW_BENCH_SKIP_PREAUTH").is_err() {
            preauth_flood(sock, pid).await;
        }

        let (ws, http) = bystander(&addr, n).await;
        let (ws_quiet, http_quiet) = (summary(ws), summary(http));
        let stop = Arc::new(AtomicBool::new(false));
        let answers = Arc::new(AtomicU64::new(0));
        let flooder = tokio::spawn(flood(sock, stop.clone(), answers.clone()));
        tokio::time::sleep(Duration::from_millis(500)).await;
        let t0 = Instant::now();
        let start_answers = answers.load(Ordering::Relaxed);
        let (ws, http) = bystander(&addr, n).await;
        let flood_rate = (answers.load(Ordering::Relaxed) - start_answers) as f64
            / t0.elapsed().as_secs_f64();
        stop.store(true, Ordering::Relaxed);
        let _ = flooder.await;
        let (ws_flood, http_flood) = (summary(ws), summary(http));
        let line = |what: &str, quiet: (f64, f64), flood: (f64, f64)| {
            println!(
                "{what:<26} quiet p50={:>7.1}us p99={:>7.1}us | flooded p50={:>7.1}us p99={:>7.1}us | p99 ratio {:.2}",
                quiet.0,
                quiet.1,
                flood.0,
                flood.1,
                flood.1 / quiet.1
            )
        };
        line("bystander ws health", ws_quiet, ws_flood);
        line("bystander http /health", http_quiet, http_flood);
        println!(
            "flooding socket answered {flood_rate:.0} requests/s meanwhile; RSS {:.1} MB, peak {:.1} MB",
            mb(status_kb(pid, "VmRSS:")),
            mb(status_kb(pid, "VmHWM:")),
        );
    });
}
