//! What nodes cost the gateway: the release `ferroclaw` binary as a child
//! process, an operator client calling `node.invoke` over loopback, and
//! two nodes: a raw signed node in this process that answers every
//! request at once (the round trip is the gateway's own overhead: two
//! sockets and the registry), and OpenClaw's own node host (`openclaw node
//! run`, from the package `tests/interop/setup.sh` installs) answering
//! `system.which` (the difference is the node host's own time). Then the
//! gateway's RSS with 1 and with 1 + N raw nodes connected. Prints
//! numbers; asserts only that every call was answered.
//!
//!     cargo bench --bench nodes
//!
//! Knobs: `FERROCLAW_BENCH_INVOKES` (500 raw, a fifth of that on the node
//! host), `FERROCLAW_BENCH_NODES` (100).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../tests/support/mod.rs"]
#[allow(dead_code, unused_imports)]
mod support;

#[path = "proc_stats.rs"]
#[allow(dead_code)]
mod proc_stats;

use std::path::Path;
use std::time::{Duration, Instant};

use proc_stats::{env_usize, status_kb};
use serde_json::json;
use support::node_host::{self, NodeHost, RawAuth};
use support::process::Gateway;
// The test token: `NodeHost` connects with it too.
use support::{connect_params, Client, Device, TOKEN};

fn start(state: &Path) -> (Gateway, u32, String) {
    let cfg = json!({
        "gateway": { "auth": { "mode": "token", "token": TOKEN },
                     "nodes": { "commands": { "allow": ["system.which"] } } },
    });
    std::fs::write(state.join("ferroclaw.json"), cfg.to_string()).unwrap();
    let (gw, addr, _) = support::process::spawn_gateway(state);
    let pid = gw.id();
    (gw, pid, addr)
}

async fn operator(url: &str) -> Client {
    let mut c = Client::connect(url).await;
    let scopes = [
        "operator.admin",
        "operator.pairing",
        "operator.write",
        "operator.read",
    ];
    let res = c
        .handshake(connect_params("cli", "cli", &scopes, Some(TOKEN)))
        .await;
    assert_eq!(res["ok"], true, "{res}");
    c
}

async fn raw_node(url: &str, seed: u8) -> (Client, String) {
    let dev = Device::new(seed);
    let auth = RawAuth::Token(TOKEN);
    let (c, res) = node_host::raw_node(url, &dev, &["system.which"], auth, &[]).await;
    assert_eq!(res["ok"], true, "{res}");
    (c, dev.id.clone())
}

fn pct(sorted: &[Duration], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i].as_secs_f64() * 1000.0
}

/// `n` sequential `system.which` calls to `node`; their round trips, sorted.
async fn invokes(op: &mut Client, node: &str, n: usize, tag: &str) -> Vec<Duration> {
    let mut times = Vec::with_capacity(n);
    for i in 0..n {
        let t = Instant::now();
        let r = op
            .call(
                "node.invoke",
                json!({ "nodeId": node, "command": "system.which", "params": { "bins": ["sh"] },
                        "idempotencyKey": format!("{tag}-{i}"), "timeoutMs": 30000 }),
            )
            .await;
        assert_eq!(r["ok"], true, "{r}");
        times.push(t.elapsed());
    }
    times.sort();
    times
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let n = env_usize("FERROCLAW_BENCH_INVOKES", 500);
    let many = env_usize("FERROCLAW_BENCH_NODES", 100).min(140);
    let state = tempfile::tempdir().unwrap();
    let (_gw, pid, addr) = start(state.path());
    let url = format!("ws://{addr}");
    let mut op = operator(&url).await;

    // A raw node answering at once: the gateway's own overhead.
    let (mut node, node_id) = raw_node(&url, 7).await;
    node_host::approve_next(&mut op).await;
    let answering = tokio::spawn(async move {
        loop {
            let req = node.event("node.invoke.request").await["payload"].clone();
            let r = node
                .call(
                    "node.invoke.result",
                    json!({ "id": req["id"], "nodeId": req["nodeId"], "ok": true,
                        "payload": { "bins": { "sh": "/bin/sh" } } }),
                )
                .await;
            assert_eq!(r["ok"], true, "{r}");
        }
    });
    invokes(&mut op, &node_id, 20, "warm").await;
    let raw = invokes(&mut op, &node_id, n, "raw").await;
    println!("node.invoke round trip, raw node answering at once ({n} calls): p50 {:.3} ms, p99 {:.3} ms", pct(&raw, 0.5), pct(&raw, 0.99));

    // OpenClaw's node host.
    let home = tempfile::tempdir().unwrap();
    let port: u16 = addr.rsplit(':').next().unwrap().parse().unwrap();
    if node_host::installed() {
        let mut host = NodeHost::start_on(port, home.path(), "bench-host");
        let requested = node_host::approve_next(&mut op).await;
        let id = requested["nodeId"].as_str().unwrap().to_string();
        invokes(&mut op, &id, 10, "host-warm").await;
        let host_times = invokes(&mut op, &id, (n / 5).max(20), "host").await;
        println!(
            "node.invoke round trip, OpenClaw's node host, system.which ({} calls): p50 {:.3} ms, p99 {:.3} ms (the node host's own share at p50: {:.3} ms)",
            host_times.len(), pct(&host_times, 0.5), pct(&host_times, 0.99), pct(&host_times, 0.5) - pct(&raw, 0.5)
        );
        host.kill();
    } else {
        println!("OpenClaw's node host is not installed (bash tests/interop/setup.sh): skipped");
    }

    // RSS per connected node.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let before = status_kb(pid, "VmRSS:");
    let mut conns = Vec::new();
    for i in 0..many {
        conns.push(raw_node(&url, 101 + i as u8).await);
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let after = status_kb(pid, "VmRSS:");
    let listed = op.call("node.list", json!({})).await;
    let connected = listed["payload"]["nodes"]
        .as_array()
        .map_or(0, |a| a.iter().filter(|n| n["connected"] == true).count());
    println!(
        "gateway RSS: {:.1} MB with 1 node, {:.1} MB with {} nodes connected: {:.1} KB per node",
        before as f64 / 1024.0,
        after as f64 / 1024.0,
        connected,
        (after.saturating_sub(before)) as f64 / many as f64
    );
    answering.abort();
}
