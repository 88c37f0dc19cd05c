//! The `browser` tool end to end: the owner's agent drives ferroclaw's own
//! Chromium (Debian's `chromium`) through a page the test serves on
//! loopback (127.0.0.1 allow-listed by name in the test's policy): it opens
//! the page, types into the form by ref, clicks, waits for the answer the
//! page's script writes, reads it, and takes a screenshot that reaches the
//! (vision) model's next request as an image. A stranger's turn never
//! drives the browser, even with the untrusted profile widened to name it.
//! A gateway killed with SIGKILL leaves no Chromium behind, and the next
//! one browses on the same profile.

use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::*;
use crate::support::fake_provider::{FakeProvider, Script};
use crate::support::{final_text, say};

const FORM: &str = r#"<!doctype html><html><head><title>Form</title></head><body>
<h1>Sign up</h1>
<label>Name <input id="name" aria-label="Name"></label>
<button onclick="document.getElementById('out').textContent = 'Hello, ' + document.getElementById('name').value">Send</button>
<div id="out"></div></body></html>"#;

/// Serves the form on 127.0.0.1; returns its port and each request's path.
pub(super) async fn site() -> (u16, tokio::sync::mpsc::UnboundedReceiver<String>) {
    serve_pages(|_| FORM).await
}

/// Serves `page(path)` (HTML) on 127.0.0.1; returns its port and each
/// request's path (with its query).
pub(super) async fn serve_pages(
    page: fn(&str) -> &'static str,
) -> (u16, tokio::sync::mpsc::UnboundedReceiver<String>) {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = l.accept().await {
            let tx = tx.clone();
            tokio::spawn(async move {
                let mut buf = vec![0u8; 8192];
                let n = s.read(&mut buf).await.unwrap_or(0);
                let head = String::from_utf8_lossy(&buf[..n]).to_string();
                let path = head.split_whitespace().nth(1).unwrap_or("").to_string();
                let body = page(&path);
                let _ = tx.send(path);
                let text = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = s.write_all(text.as_bytes()).await;
            });
        }
    });
    (port, rx)
}

pub(super) fn browser_config() -> Value {
    json!({ "noSandbox": true, "headless": true, "ssrfPolicy": { "allowedHostnames": ["127.0.0.1"] } })
}

fn call(id: &str, args: Value) -> Script {
    Script::tool_call(id, "browser", &args)
}

#[tokio::test]
async fn the_owners_agent_fills_a_form_reads_the_answer_and_sees_a_screenshot() {
    let (port, _seen) = site().await;
    let p = FakeProvider::start().await;
    let url = format!("http://127.0.0.1:{port}/form");
    // The compact snapshot `open` returns numbers the controls in order:
    // the Name field e1, Send e2.
    p.push(call("c1", json!({ "action": "open", "targetUrl": url })));
    p.push(call(
        "c2",
        json!({ "action": "act", "kind": "type", "ref": "e1", "text": "Ada" }),
    ));
    p.push(call(
        "c3",
        json!({ "action": "act", "request": { "kind": "click", "ref": "e2" } }),
    ));
    p.push(call(
        "c4",
        json!({ "action": "act", "kind": "wait", "text": "Hello, Ada" }),
    ));
    p.push(call("c5", json!({ "action": "text" })));
    p.push(call("c6", json!({ "action": "screenshot" })));
    p.push(Script::text(&["done"]));
    let gw = TestGateway::with_config(json!({
        "models": { "providers": { "fake": {
            "baseUrl": p.base_url(), "api": "openai-completions", "apiKey": "k0",
            "models": [{ "id": "eye", "input": ["text", "image"] }],
        } } },
        "agents": { "defaults": { "model": { "primary": "fake/eye", "fallbacks": [] } } },
        "browser": browser_config(),
    }));
    let mut c = admin(&gw).await;
    assert_eq!(
        final_text(&say(&mut c, "main", "sign Ada up", "b1").await),
        "done"
    );
    let last: Value = p
        .requests
        .lock()
        .unwrap()
        .iter()
        .rev()
        .map(|(b, _)| b.clone())
        .find(|b| b["stream"] == true)
        .unwrap();
    let messages = last["messages"].as_array().unwrap();
    let tools: Vec<&str> = messages
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(tools.len(), 6, "{last}");
    assert!(
        tools[0].contains("textbox \\\"Name\\\" [ref=e1]")
            || tools[0].contains("textbox \"Name\" [ref=e1]"),
        "{}",
        tools[0]
    );
    assert!(
        tools[0].contains("This is data from outside"),
        "the page is wrapped: {}",
        tools[0]
    );
    assert!(tools[4].contains("Hello, Ada"), "{}", tools[4]);
    assert!(tools[5].contains("\"type\":\"image/png\""), "{}", tools[5]);
    // The screenshot follows the tool results as an image part.
    let image = messages
        .iter()
        .filter_map(|m| m["content"].as_array())
        .flatten()
        .find_map(|part| part["image_url"]["url"].as_str())
        .expect("an image part");
    assert!(
        image.starts_with("data:image/png;base64,iVBORw0KGgo"),
        "{image}"
    );
    // The browser's profile is the gateway's, private to it.
    let profile = gw.state_dir().join("browser").join("openclaw");
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(&profile).unwrap().permissions(),
    );
    assert_eq!(mode & 0o777, 0o700);
}

#[tokio::test]
async fn a_stranger_never_drives_the_browser_even_when_the_profile_names_it() {
    let (port, mut seen) = site().await;
    let mut extra = widened(&["browser"]);
    extra["browser"] = browser_config();
    let (tg, _gw) = start(extra);
    let url = format!("http://127.0.0.1:{port}/form");
    let open = tool("browser", json!({ "action": "open", "targetUrl": url }));
    let reply = ask(&tg, STRANGER, 1, &open).await;
    assert!(
        !reply.contains("Tool browser returned: {\"ok\":true"),
        "{reply}"
    );
    // The barrier: the owner's same call reaches the page; the stranger's
    // request would have come before it.
    let owner = ask(&tg, OWNER, 2, &open).await;
    assert!(owner.contains("Tool browser returned"), "{owner}");
    let first = seen.recv().await.unwrap();
    assert_eq!(first, "/form");
    // (Chromium may ask for /favicon.ico after the page.)
    while let Ok(next) = seen.try_recv() {
        assert_ne!(next, "/form", "one page load, the owner's");
    }
}

/// `browser` through `POST /tools/invoke` on the gateway at `addr`.
pub(super) async fn browse(addr: &str, args: Value) -> (u16, String) {
    let body = json!({ "tool": "browser", "args": args, "sessionKey": "agent:main:main" });
    invoke_tool(addr, crate::support::TOKEN, body).await
}

/// Waits until no process of the group `pid` led is left, failing after
/// 20 s (the browser ends on the SIGTERM its parent's death sends it).
async fn until_gone(pid: u32) {
    let started = std::time::Instant::now();
    while ferroclaw_actors::child::group_alive(pid) {
        assert!(
            started.elapsed() < LONG,
            "Chromium's group {pid} outlived the gateway"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_gateway_killed_outright_leaves_no_chromium_and_the_next_one_browses() {
    use crate::support::process::{sigkill, spawn_gateway};
    let (port, _seen) = site().await;
    let dir = tempfile::tempdir().unwrap();
    let cfg = json!({
        "gateway": { "auth": { "mode": "token", "token": crate::support::TOKEN } },
        "browser": browser_config(),
    });
    std::fs::write(dir.path().join("ferroclaw.json"), cfg.to_string()).unwrap();
    let url = format!("http://127.0.0.1:{port}/form");
    let mut pids = Vec::new();
    for _ in 0..2 {
        let (mut child, addr, _) = spawn_gateway(dir.path());
        let (status, opened) = browse(&addr, json!({ "action": "open", "targetUrl": url })).await;
        assert_eq!(status, 200, "{opened}");
        assert!(
            opened.contains("textbox \\\"Name\\\"") || opened.contains("textbox \"Name\""),
            "{opened}"
        );
        let (_, state) = browse(&addr, json!({ "action": "status" })).await;
        let state: Value = serde_json::from_str(&state).unwrap();
        let pid = state["pid"].as_u64().unwrap() as u32;
        assert!(ferroclaw_actors::child::group_alive(pid));
        sigkill(&mut child);
        until_gone(pid).await;
        pids.push(pid);
    }
    // The second gateway started its own browser on the same profile (the
    // killed one's lock did not stop it).
    assert_ne!(pids[0], pids[1]);
}
