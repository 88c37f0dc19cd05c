//! `gateway`: the owner's agent reads its config (secrets redacted), looks
//! up a section's schema, patches the config under the hash lock, and the
//! real binary restarts in place when asked (same pid, a new listener, the
//! note queued for the session that asked, the same call never restarting
//! twice). An embedded gateway says it cannot restart itself.

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{json, Value};

use super::*;
use crate::support::process::{ferroclaw, Gateway};
use crate::support::{admin_at, TOKEN};

async fn invoke_at(addr: &str, token: &str, args: Value) -> (u16, String) {
    invoke_tool(
        addr,
        token,
        json!({"tool": "gateway", "args": args, "sessionKey": "main"}),
    )
    .await
}

#[tokio::test]
async fn the_owners_agent_reads_and_patches_the_config() {
    let (tg, gw) = start(json!({}));
    let addr = gw.addr.to_string();
    let (status, got) = invoke_at(&addr, TOKEN, json!({"action": "config.get"})).await;
    assert_eq!(status, 200, "{got}");
    let got: Value = serde_json::from_str(&got).unwrap();
    let hash = got["hash"].as_str().unwrap().to_string();
    let token = got["parsed"]["channels"]["telegram"]["botToken"]
        .as_str()
        .unwrap();
    assert_ne!(
        token,
        super::super::telegram::BOT_TOKEN,
        "the bot token is redacted: {got}"
    );

    let (_, schema) = invoke_at(
        &addr,
        TOKEN,
        json!({"action": "config.schema.lookup", "path": "cron"}),
    )
    .await;
    let schema: Value = serde_json::from_str(&schema).unwrap();
    let keys: Vec<&Value> = schema["children"]
        .as_array()
        .unwrap_or_else(|| panic!("{schema}"))
        .iter()
        .map(|c| &c["key"])
        .collect();
    assert!(keys.contains(&&json!("maxConcurrentRuns")), "{schema}");

    // A stale hash is refused; the current one writes and applies.
    let patch = r#"{cron: {maxConcurrentRuns: 2}}"#;
    let (status, stale) = invoke_at(
        &addr,
        TOKEN,
        json!({"action": "config.patch", "raw": patch, "baseHash": "stale"}),
    )
    .await;
    assert_eq!(status, 400);
    assert!(stale.contains("config changed since last load"), "{stale}");
    let (status, done) = invoke_at(
        &addr,
        TOKEN,
        json!({"action": "config.patch", "raw": patch, "baseHash": hash}),
    )
    .await;
    assert_eq!(status, 200, "{done}");
    let file = std::fs::read_to_string(gw.config_path()).unwrap();
    assert!(file.contains("\"maxConcurrentRuns\": 2"), "{file}");
    // The bot token written back is the real one, not the redaction.
    assert!(file.contains(super::super::telegram::BOT_TOKEN), "{file}");
    // Embedded (this test's in-process gateway): no restart of its own.
    let (status, restart) = invoke_at(&addr, TOKEN, json!({"action": "restart"})).await;
    assert_eq!(status, 400);
    assert!(restart.contains("unsupported here"), "{restart}");
    let (_, update) = invoke_at(&addr, TOKEN, json!({"action": "update.status"})).await;
    assert!(update.contains("\"selfUpdate\":\"unsupported"), "{update}");
    // Never for a stranger, whatever the owner widened.
    drop(gw);
    let (tg2, _gw2) = start(json!({"tools": {"untrusted": {"allow": ["*", "gateway"]}}}));
    let r = ask(
        &tg2,
        STRANGER,
        1,
        &tool("gateway", json!({"action": "config.get"})),
    )
    .await;
    assert!(r.contains("Unknown tool"), "{r}");
    drop(tg);
}

/// The real binary on a fresh state dir, its stderr lines on a channel.
fn spawn(state: &std::path::Path) -> (Gateway, mpsc::Receiver<String>) {
    let mut child = ferroclaw(state)
        .args(["gateway", "--port", "0"])
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    (Gateway(child, String::new()), rx)
}

fn listening(rx: &mpsc::Receiver<String>) -> String {
    loop {
        let line = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("the gateway printed its address");
        if let Some(rest) = line.split("listening on ws://").nth(1) {
            return rest.trim().to_string();
        }
    }
}

#[tokio::test]
async fn the_binary_restarts_in_place_and_tells_the_session_why() {
    let dir = tempfile::tempdir().unwrap();
    let (mut child, lines) = spawn(dir.path());
    let first = listening(&lines);
    let token = std::fs::read_to_string(dir.path().join("gateway.token")).unwrap();
    let token = token.trim();
    let pid = child.id();
    let (status, text) = invoke_at(
        &first,
        token,
        json!({"action": "restart", "note": "picked up the new key"}),
    )
    .await;
    assert_eq!(status, 200, "{text}");
    assert!(text.contains("\"restarting\":true"), "{text}");
    // The same process comes back on a new listener (port 0 again).
    let second = listening(&lines);
    assert_eq!(child.id(), pid);
    assert!(child.try_wait().unwrap().is_none(), "the process ended");
    let mut c = admin_at(&format!("ws://{second}"), token).await;
    let st = c.call("status", json!({})).await;
    assert_eq!(
        st["payload"]["queuedSystemEvents"],
        json!(["Gateway restarted: picked up the new key"]),
        "{st}"
    );
    assert!(!dir.path().join("restart-sentinel.json").exists());
    let _ = child.kill();
}
