//! The MCP servers' life cycle beyond boot: lazy servers (`lazy: true`)
//! listed once and remembered in the state dir, stopped (process group
//! gone) after `idleTimeoutMs` without a call, started again by the next
//! call, offered after a restart without being started at boot; and
//! `mcp.servers` edits applied while the gateway runs.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::mcp::{alive, node, offline_call, servers_until, ROOT};
use crate::support::{admin, chat_until_done, final_text, Client, TestGateway};

fn config(dir: &Path) -> Value {
    json!({"mcp": {"servers": {"lazy": {
        "command": node(),
        "args": [PathBuf::from(ROOT).join("tests/mcp/fault_server.mjs"), "legacy"],
        "env": {"FAULT_LOG": dir.join("lazy.log")},
        "lazy": true,
        "idleTimeoutMs": 300,
    }}}})
}

/// How many times the server was started (its `initialize`s).
fn starts(dir: &Path) -> usize {
    std::fs::read_to_string(dir.join("lazy.log"))
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains("\"method\":\"initialize\""))
        .count()
}

async fn call_ok(c: &mut Client, id: &str) -> String {
    offline_call(c, "lazy__ok", id).await;
    final_text(&chat_until_done(c, id).await)
}

fn idle_with_tools(s: &[Value]) -> bool {
    s.first()
        .is_some_and(|s| s["state"] == "idle" && s["tools"].as_u64() > Some(0))
}

#[tokio::test]
async fn a_lazy_server_starts_for_a_call_and_stops_when_idle() {
    let dir = tempfile::tempdir().unwrap();
    let mut gw = TestGateway::with_config(config(dir.path()));
    let mut c = admin(&gw).await;
    // No list yet: it starts once to learn its tools, remembers them, and
    // stops after 300 ms unused.
    let up = servers_until(&mut c, |s| s.first().is_some_and(|s| s["state"] == "ready")).await;
    let pid = up[0]["pid"].as_u64().unwrap();
    servers_until(&mut c, idle_with_tools).await;
    assert!(gw.state_dir().join("mcp/lazy.tools.json").exists());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while alive(pid) {
        assert!(
            std::time::Instant::now() < deadline,
            "the idle server's process is gone"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(starts(dir.path()), 1);

    // A call starts it and is answered.
    assert!(call_ok(&mut c, "l1").await.contains("ok says l1"));
    assert_eq!(starts(dir.path()), 2);
    servers_until(&mut c, idle_with_tools).await;

    // After a restart: offered at once, not started at boot.
    drop(c);
    gw.restart();
    let mut c = admin(&gw).await;
    servers_until(&mut c, idle_with_tools).await;
    let offered = c.call("tools.catalog", json!({})).await;
    assert!(offered.to_string().contains("lazy__ok"), "{offered}");
    assert_eq!(starts(dir.path()), 2, "not started at boot");
    assert!(call_ok(&mut c, "l2").await.contains("ok says l2"));
    assert_eq!(starts(dir.path()), 3);
}

/// `mcp.servers` edited while the gateway runs (`config.patch`, as
/// `openclaw mcp set` edits the file): an added server starts, a changed
/// one restarts with its new settings, a removed one stops (its process
/// gone), no restart of the gateway asked for.
#[tokio::test]
async fn mcp_servers_added_changed_and_removed_apply_live() {
    let dir = tempfile::tempdir().unwrap();
    let gw = TestGateway::start();
    let mut c = admin(&gw).await;
    let mut server = config(dir.path())["mcp"]["servers"]["lazy"].clone();
    server.as_object_mut().unwrap().remove("lazy");
    patch(
        &mut c,
        json!({"mcp": {"servers": {"live": server.clone()}}}),
    )
    .await;
    let up = servers_until(&mut c, |s| {
        s.first()
            .is_some_and(|s| s["name"] == "live" && s["state"] == "ready")
    })
    .await;
    let first = up[0]["pid"].as_u64().unwrap();
    assert!(call_live(&mut c, "r1").await.contains("ok says r1"));

    // Changed: a new process with the new settings.
    server["toolFilter"] = json!({"exclude": ["hang"]});
    patch(&mut c, json!({"mcp": {"servers": {"live": server}}})).await;
    let up = servers_until(&mut c, |s| {
        s.first()
            .is_some_and(|s| s["state"] == "ready" && s["pid"].as_u64() != Some(first))
    })
    .await;
    assert!(
        !up[0]["toolNames"].to_string().contains("live__hang"),
        "{up:?}"
    );
    let second = up[0]["pid"].as_u64().unwrap();
    assert!(!alive(first), "the old process is gone");

    // Removed: stopped, its tools no longer offered.
    patch(&mut c, json!({"mcp": {"servers": {"live": null}}})).await;
    servers_until(&mut c, |s| s.is_empty()).await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while alive(second) {
        assert!(
            std::time::Instant::now() < deadline,
            "the removed server's process is gone"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let text = call_live(&mut c, "r2").await;
    assert!(!text.contains("ok says"), "{text}");
}

async fn call_live(c: &mut Client, id: &str) -> String {
    offline_call(c, "live__ok", id).await;
    final_text(&chat_until_done(c, id).await)
}

/// `config.patch` of `raw`; nothing in `mcp` asks for a restart.
async fn patch(c: &mut Client, raw: Value) {
    let got = c.call("config.get", json!({})).await;
    let hash = got["payload"]["hash"].as_str().unwrap().to_string();
    let r = c
        .call(
            "config.patch",
            json!({"raw": raw.to_string(), "baseHash": hash}),
        )
        .await;
    assert_eq!(r["ok"], true, "{r}");
    assert!(
        !r["payload"]["restartRequired"].to_string().contains("mcp"),
        "{r}"
    );
}
