//! The real gateway binary SIGKILLed while OpenClaw's node host runs a
//! command for it: after the restart the node reconnects, still approved,
//! and the call's idempotency key is refused (its answer never came), never
//! sent to the node again; a new key runs.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::support::node_host::{self, NodeHost};
use crate::support::process::{ferroclaw, sigkill, Gateway};
use crate::support::{admin_at, Client, TOKEN};

fn spawn(state: &Path, port: u16) -> Gateway {
    let child = ferroclaw(state)
        .args(["gateway", "--port", &port.to_string()])
        .stderr(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "the gateway never listened");
        std::thread::sleep(Duration::from_millis(50));
    }
    Gateway(child, String::new())
}

fn lines(p: &Path) -> usize {
    std::fs::read_to_string(p).map_or(0, |s| s.lines().count())
}

async fn connected(op: &mut Client) -> serde_json::Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let l = op.call("node.list", json!({})).await;
        if let Some(n) = l["payload"]["nodes"].as_array().and_then(|a| a.first()) {
            if n["connected"] == true {
                return n.clone();
            }
        }
        assert!(Instant::now() < deadline, "the node never came back: {l}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_gateway_killed_mid_invoke_never_runs_the_key_twice() {
    let state = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let cfg = json!({ "gateway": { "auth": { "mode": "token", "token": TOKEN } } });
    std::fs::write(state.path().join("ferroclaw.json"), cfg.to_string()).unwrap();
    let url = format!("ws://127.0.0.1:{port}");
    let mut gw = spawn(state.path(), port);
    let mut op = admin_at(&url, TOKEN).await;
    let home = tempfile::tempdir().unwrap();
    let _host = NodeHost::start_on(port, home.path(), "crash-node");
    let requested = node_host::approve_next(&mut op).await;
    let node_id = requested["nodeId"].as_str().unwrap().to_string();

    let marker = home.path().join("started.txt");
    let line = format!("echo started >> {}; sleep 3", marker.display());
    let call = |key: &str| {
        json!({ "nodeId": node_id, "command": "system.run", "idempotencyKey": key,
                "params": { "command": ["sh", "-c", line] }, "timeoutMs": 60000 })
    };
    op.send_req("node.invoke", call("crash-1")).await;
    let deadline = Instant::now() + Duration::from_secs(20);
    while lines(&marker) == 0 {
        assert!(Instant::now() < deadline, "the command never started");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    sigkill(&mut gw);
    drop(op);

    let _gw = spawn(state.path(), port);
    let mut op = admin_at(&url, TOKEN).await;
    let node = connected(&mut op).await;
    assert_eq!(
        node["approvalState"], "approved",
        "kept across the restart: {node}"
    );
    let again = op.call("node.invoke", call("crash-1")).await;
    assert_eq!(
        again["error"]["details"]["code"], "OUTCOME_UNKNOWN",
        "{again}"
    );
    // Time is what is tested: no resend of the unknown call comes in a
    // window past the node's reconnect and the invoke timeout.
    tokio::time::sleep(Duration::from_secs(4)).await;
    assert_eq!(lines(&marker), 1, "sent once, never again");
    let fresh = op.call("node.invoke", call("crash-2")).await;
    assert_eq!(fresh["ok"], true, "{fresh}");
    assert_eq!(lines(&marker), 2);
}
