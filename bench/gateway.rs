//! Gateway benchmark: opens N WebSocket connections to a real gateway on
//! loopback and reports connect -> hello-ok and `health` round-trip
//! latencies (p50/p90/p99/max), then a burst of concurrent health calls.
//! Timings are wall clock at the client and include the client's own work.
//!
//!     cargo bench --bench gateway                # N = 200 connections
//!     FERROCLAW_BENCH_CONNS=1000 cargo bench --bench gateway
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../tests/support/mod.rs"]
#[allow(dead_code, unused_imports)]
mod support;

use std::time::{Duration, Instant};

use serde_json::json;
use support::{connect_params, Client, TestGateway, TOKEN};

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[idx]
}

fn report(name: &str, mut samples: Vec<Duration>) {
    samples.sort();
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    println!(
        "{name:<28} n={:<6} p50={:>8.1}us p90={:>8.1}us p99={:>8.1}us max={:>8.1}us",
        samples.len(),
        us(percentile(&samples, 0.50)),
        us(percentile(&samples, 0.90)),
        us(percentile(&samples, 0.99)),
        us(*samples.last().unwrap()),
    );
}

fn main() {
    let conns: usize = std::env::var("FERROCLAW_BENCH_CONNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let rounds: usize = std::env::var("FERROCLAW_BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000);
    // Quiet gateway: no ticks or health refreshes during the run.
    let gw = TestGateway::with_config(
        json!({"gateway": {"tickIntervalMs": 3_600_000, "healthRefreshIntervalMs": 3_600_000, "maxUnauthenticatedSockets": 100_000}}),
    );
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let url = gw.ws_url();
        let params = connect_params("cli", "cli", &["operator.read"], Some(TOKEN));
        // Warm-up.
        for _ in 0..20 {
            let mut c = Client::connect(&url).await;
            c.handshake(params.clone()).await;
        }
        let mut clients = Vec::with_capacity(conns);
        let mut connect = Vec::with_capacity(conns);
        for _ in 0..conns {
            let t0 = Instant::now();
            let mut c = Client::connect(&url).await;
            let res = c.handshake(params.clone()).await;
            connect.push(t0.elapsed());
            assert_eq!(res["ok"], true);
            clients.push(c);
        }
        report("connect -> hello-ok", connect);

        let mut health = Vec::with_capacity(rounds);
        for i in 0..rounds {
            let c = &mut clients[i % conns];
            let t0 = Instant::now();
            let res = c.call("health", json!({})).await;
            health.push(t0.elapsed());
            assert_eq!(res["ok"], true);
        }
        report("health round trip", health);

        // Every connection sends one health at once; time to the last answer.
        let t0 = Instant::now();
        let mut ids = Vec::with_capacity(conns);
        for c in clients.iter_mut() {
            ids.push(c.send_req("health", json!({})).await);
        }
        for (c, id) in clients.iter_mut().zip(&ids) {
            c.res(id).await;
        }
        let burst = t0.elapsed();
        println!(
            "{:<28} {conns} concurrent calls answered in {:.1}ms ({:.0} req/s)",
            "health burst",
            burst.as_secs_f64() * 1e3,
            conns as f64 / burst.as_secs_f64()
        );
    });
}
