//! The browser tool's actions against a real Chromium (Debian's
//! `chromium`) and pages served by the test on loopback (127.0.0.1 is
//! allow-listed by name in the test's policy; `localhost` is not).

use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::super::actor::{BrowserActor, Limits};
use super::super::launch::Launch;
use super::super::messages::{BrowserCall, Done};
use super::super::policy::Policy;
use super::super::BrowserError;

const FORM: &str = r#"<!doctype html><html><head><title>Form</title></head><body>
<h1>Sign up</h1>
<label>Name <input id="name" aria-label="Name"></label>
<button id="send" onclick="document.getElementById('out').textContent = 'Hello, ' + document.getElementById('name').value">Send</button>
<button id="warn" onclick="alert('careful')">Warn</button>
<div id="out"></div></body></html>"#;

const SCRIPTED: &str = r#"<!doctype html><html><body><main id="m"></main>
<script>setTimeout(() => { document.getElementById('m').textContent = 'Only JavaScript wrote this'; }, 50);</script></body></html>"#;

/// Serves the test's pages on 127.0.0.1; returns the port and the `host`
/// header of each request it got.
async fn site_seen() -> (u16, tokio::sync::mpsc::UnboundedReceiver<String>) {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    (serve(Some(tx)).await, rx)
}

async fn site() -> u16 {
    serve(None).await
}

async fn serve(seen: Option<tokio::sync::mpsc::UnboundedSender<String>>) -> u16 {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    actix::spawn(async move {
        while let Ok((mut s, _)) = l.accept().await {
            let seen = seen.clone();
            actix::spawn(async move {
                let mut buf = vec![0u8; 8192];
                let n = s.read(&mut buf).await.unwrap_or(0);
                let head = String::from_utf8_lossy(&buf[..n]).to_string();
                let path = head.split_whitespace().nth(1).unwrap_or("/").to_string();
                let host = head
                    .lines()
                    .find_map(|l| l.strip_prefix("host: ").or(l.strip_prefix("Host: ")));
                if let (Some(tx), Some(h)) = (&seen, host) {
                    let _ = tx.send(format!("{h}{path}"));
                }
                let (status, extra, body) = match path.as_str() {
                    "/form" => ("200 OK", String::new(), FORM.to_string()),
                    "/scripted" => ("200 OK", String::new(), SCRIPTED.to_string()),
                    "/redirect" => (
                        "302 Found",
                        format!("location: http://localhost:{port}/form\r\n"),
                        String::new(),
                    ),
                    _ => ("404 Not Found", String::new(), "no".to_string()),
                };
                let text = format!("HTTP/1.1 {status}\r\ncontent-type: text/html\r\ncontent-length: {}\r\n{extra}connection: close\r\n\r\n{body}", body.len());
                let _ = s.write_all(text.as_bytes()).await;
            });
        }
    });
    port
}

fn browser(dir: &std::path::Path) -> Addr<BrowserActor> {
    let launch = Launch {
        executable: "chromium".into(),
        headless: true,
        no_sandbox: true,
        user_data_dir: dir.join("openclaw"),
        extra_args: Vec::new(),
        deadline: Duration::from_secs(60),
        proxy: None,
        cdp_port: 0,
    };
    let policy = Policy::from_settings(&crate::settings::shipped_with(
        "browser.ssrfPolicy",
        json!({ "allowedHostnames": ["127.0.0.1"] }),
    ));
    let limits = Limits {
        action: Duration::from_secs(20),
        evaluate: false,
        max_response_bytes: 1 << 20,
        screenshot_max_bytes: 5 << 20,
        max_tabs: 8,
    };
    BrowserActor::new("openclaw", launch, Arc::new(policy), limits).start()
}

async fn call(b: &Addr<BrowserActor>, action: &str, args: Value) -> Result<Done, BrowserError> {
    let workspace = crate::tool::Workspace::from(std::env::temp_dir().as_path());
    b.send(BrowserCall {
        action: action.into(),
        args,
        workspace,
    })
    .await
    .unwrap()
}

/// The ref of the first snapshot line holding `role "name"`.
fn ref_of(text: &str, role_name: &str) -> String {
    let line = text
        .lines()
        .find(|l| l.contains(role_name))
        .unwrap_or_else(|| panic!("{role_name} not in {text}"));
    let at = line.find("[ref=").unwrap() + 5;
    line[at..].split(']').next().unwrap().to_string()
}

#[actix::test]
async fn a_form_is_filled_by_ref_its_answer_read_and_the_page_captured() {
    let dir = tempfile::tempdir().unwrap();
    let (b, port) = (browser(dir.path()), site().await);
    let opened = call(
        &b,
        "open",
        json!({ "targetUrl": format!("http://127.0.0.1:{port}/form") }),
    )
    .await
    .unwrap();
    assert!(
        opened.text.contains("\"targetId\":\"t1\""),
        "{}",
        opened.text
    );
    assert!(
        opened.text.contains("This is data from outside"),
        "page content is wrapped: {}",
        opened.text
    );
    let snap = call(&b, "snapshot", json!({})).await.unwrap().text;
    assert!(snap.contains("heading \"Sign up\" [level=1]"), "{snap}");
    let (name, send) = (
        ref_of(&snap, "textbox \"Name\""),
        ref_of(&snap, "button \"Send\""),
    );
    call(
        &b,
        "act",
        json!({ "kind": "type", "ref": name, "text": "Ada" }),
    )
    .await
    .unwrap();
    call(
        &b,
        "act",
        json!({ "request": { "kind": "click", "ref": send } }),
    )
    .await
    .unwrap();
    call(&b, "act", json!({ "kind": "wait", "text": "Hello, Ada" }))
        .await
        .unwrap();
    let text = call(&b, "text", json!({})).await.unwrap().text;
    assert!(text.contains("Hello, Ada"), "{text}");
    let shot = call(&b, "screenshot", json!({})).await.unwrap();
    let img = shot.image.expect("a screenshot");
    assert_eq!(
        (img.mime.as_str(), &img.bytes[..4]),
        ("image/png", &b"\x89PNG"[..])
    );
    // A stale ref fails fast and names the fix.
    let stale = call(&b, "act", json!({ "kind": "click", "ref": "e999" }))
        .await
        .unwrap_err();
    assert!(stale.to_string().contains("take a new snapshot"), "{stale}");
    let tabs = call(&b, "tabs", json!({})).await.unwrap().text;
    assert!(
        tabs.contains(&format!("http://127.0.0.1:{port}/form")),
        "{tabs}"
    );
}

#[actix::test]
async fn a_page_only_javascript_writes_is_read_and_a_dialog_is_answered() {
    let dir = tempfile::tempdir().unwrap();
    let (b, port) = (browser(dir.path()), site().await);
    call(
        &b,
        "open",
        json!({ "targetUrl": format!("http://127.0.0.1:{port}/scripted") }),
    )
    .await
    .unwrap();
    call(
        &b,
        "act",
        json!({ "kind": "wait", "text": "Only JavaScript" }),
    )
    .await
    .unwrap();
    let text = call(&b, "text", json!({})).await.unwrap().text;
    assert!(text.contains("Only JavaScript wrote this"), "{text}");
    call(
        &b,
        "navigate",
        json!({ "targetUrl": format!("http://127.0.0.1:{port}/form") }),
    )
    .await
    .unwrap();
    let snap = call(&b, "snapshot", json!({ "interactive": true }))
        .await
        .unwrap()
        .text;
    let warn = ref_of(&snap, "button \"Warn\"");
    let blocked = call(&b, "act", json!({ "kind": "click", "ref": warn }))
        .await
        .unwrap_err();
    assert!(
        matches!(&blocked, BrowserError::DialogOpen { message } if message == "careful"),
        "{blocked}"
    );
    let answered = call(&b, "dialog", json!({ "accept": true }))
        .await
        .unwrap()
        .text;
    assert!(
        answered.contains("\"accepted\":true") && answered.contains("careful"),
        "{answered}"
    );
    // The page is usable again.
    call(&b, "snapshot", json!({})).await.unwrap();
    let off = call(&b, "act", json!({ "kind": "evaluate", "fn": "() => 1" }))
        .await
        .unwrap_err();
    assert!(matches!(off, BrowserError::EvaluateOff), "{off}");
}

#[actix::test]
async fn loopback_by_another_name_a_redirect_to_it_and_file_urls_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (b, (port, mut seen)) = (browser(dir.path()), site_seen().await);
    call(&b, "open", json!({})).await.unwrap();
    let direct = call(
        &b,
        "navigate",
        json!({ "targetUrl": format!("http://localhost:{port}/form") }),
    )
    .await
    .unwrap_err();
    assert!(direct.to_string().contains("loopback"), "{direct}");
    let redirected = call(
        &b,
        "navigate",
        json!({ "targetUrl": format!("http://127.0.0.1:{port}/redirect") }),
    )
    .await;
    let err = redirected.expect_err("the redirect's target is refused");
    assert!(err.to_string().contains("browser.ssrfPolicy"), "{err}");
    for url in [
        "file:///etc/passwd",
        "chrome://settings",
        "view-source:http://127.0.0.1/",
    ] {
        let e = call(&b, "navigate", json!({ "targetUrl": url }))
            .await
            .unwrap_err();
        assert!(matches!(e, BrowserError::Refused(_)), "{url}: {e}");
        let e = call(&b, "open", json!({ "targetUrl": url }))
            .await
            .unwrap_err();
        assert!(matches!(e, BrowserError::Refused(_)), "{url}: {e}");
    }
    // The barrier: an allowed page loads after the refusals; the origin
    // saw it and the redirect, never a request for `localhost`.
    call(
        &b,
        "navigate",
        json!({ "targetUrl": format!("http://127.0.0.1:{port}/form") }),
    )
    .await
    .unwrap();
    let mut got = Vec::new();
    while !got
        .iter()
        .any(|g: &String| g.ends_with("/form") && g.starts_with("127.0.0.1"))
    {
        got.push(seen.recv().await.unwrap());
    }
    assert!(got.iter().all(|g| g.starts_with("127.0.0.1:")), "{got:?}");
    assert!(got.iter().any(|g| g.ends_with("/redirect")), "{got:?}");
}

#[actix::test]
async fn chromium_killed_mid_use_fails_the_call_and_the_next_call_works() {
    let dir = tempfile::tempdir().unwrap();
    let (b, port) = (browser(dir.path()), site().await);
    call(
        &b,
        "open",
        json!({ "targetUrl": format!("http://127.0.0.1:{port}/form") }),
    )
    .await
    .unwrap();
    let state = b
        .send(super::super::messages::GetBrowserState)
        .await
        .unwrap();
    // SAFETY: signals the test's own child.
    unsafe {
        libc::kill(state.pid.unwrap() as i32, libc::SIGKILL);
    }
    // The killed browser's tabs are gone with it: a call names the fix, or
    // starts the browser again (whichever the exit reached first).
    let after = call(&b, "snapshot", json!({})).await;
    if let Err(e) = &after {
        assert!(
            matches!(
                e,
                BrowserError::NoTab(_)
                    | BrowserError::Gone
                    | BrowserError::Cdp(_)
                    | BrowserError::Page(_)
            ),
            "{e}"
        );
    }
    let again = call(
        &b,
        "open",
        json!({ "targetUrl": format!("http://127.0.0.1:{port}/form") }),
    )
    .await
    .unwrap();
    assert!(again.text.contains("textbox \"Name\""), "{}", again.text);
    let now = b
        .send(super::super::messages::GetBrowserState)
        .await
        .unwrap();
    assert!(now.running && now.pid != state.pid, "{now:?}");
}
