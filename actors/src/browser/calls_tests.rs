//! The browser tool's actions against a real Chromium (Debian's
//! `chromium`) and pages served by the test on loopback (127.0.0.1 is
//! allow-listed by name in the test's policy; `localhost` is not).

use serde_json::json;

use super::super::test_kit::{browser, call, ref_of, serve, Reply};
use super::super::BrowserError;

const FORM: &str = r#"<!doctype html><html><head><title>Form</title></head><body>
<h1>Sign up</h1>
<label>Name <input id="name" aria-label="Name"></label>
<button id="send" onclick="document.getElementById('out').textContent = 'Hello, ' + document.getElementById('name').value">Send</button>
<button id="warn" onclick="alert('careful')">Warn</button>
<div id="out"></div></body></html>"#;

const SCRIPTED: &str = r#"<!doctype html><html><body><main id="m"></main>
<script>setTimeout(() => { document.getElementById('m').textContent = 'Only JavaScript wrote this'; }, 50);</script></body></html>"#;

/// A link whose page loads a moment later: its script holds `load` back.
const LINKS: &str = r#"<!doctype html><html><head><title>Links</title></head><body>
<a href="/late">Onward</a></body></html>"#;
const LATE: &str = r#"<!doctype html><html><head><title>Late</title></head><body>
<p id="p">arrived</p><img src="/slow.png"></body></html>"#;

/// The test's pages.
fn pages(path: &str, port: u16) -> Reply {
    match path {
        "/form" => Reply::html(FORM),
        "/links" => Reply::html(LINKS),
        "/late" => Reply::html(LATE),
        "/scripted" => Reply::html(SCRIPTED),
        "/redirect" => Reply {
            status: "302 Found",
            headers: format!("location: http://localhost:{port}/form\r\n"),
            body: Vec::new(),
        },
        _ => Reply::not_found(),
    }
}

async fn site_seen() -> (u16, tokio::sync::mpsc::UnboundedReceiver<String>) {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    (serve(Some(tx), pages).await, rx)
}

async fn site() -> u16 {
    serve(None, pages).await
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

#[test]
fn snapshot_defaults_efficient_applies_only_when_a_call_names_no_mode_or_format() {
    let o = super::options(&json!({}), true);
    assert!(o.interactive && o.compact, "the configured default");
    let full = super::options(&json!({ "snapshotFormat": "ai" }), true);
    assert!(!full.interactive && !full.compact, "a named format wins");
    let plain = super::options(&json!({}), false);
    assert!(!plain.interactive, "unset: the full snapshot");
}

#[actix::test]
async fn a_click_that_navigates_is_answered_once_the_new_page_has_loaded() {
    let dir = tempfile::tempdir().unwrap();
    let (b, port) = (browser(dir.path()), site().await);
    let url = format!("http://127.0.0.1:{port}/links");
    call(&b, "open", json!({ "targetUrl": url })).await.unwrap();
    let snap = call(&b, "snapshot", json!({})).await.unwrap().text;
    let link = ref_of(&snap, "link \"Onward\"");
    let clicked = call(&b, "act", json!({ "kind": "click", "ref": link }))
        .await
        .unwrap();
    // The answer names the page the click led to, and that page is there
    // to read: no wait between the click and the next call.
    assert_eq!(
        clicked.head["url"],
        format!("http://127.0.0.1:{port}/late"),
        "{}",
        clicked.text
    );
    let after = call(&b, "snapshot", json!({})).await.unwrap().text;
    assert!(after.contains("arrived"), "{after}");
}

#[actix::test]
async fn new_settings_apply_live_bounds_in_place_a_new_policy_by_starting_again() {
    use super::super::messages::{GetBrowserState, ReconfigureBrowser};
    use super::super::test_kit::{limits, parts};
    use actix::Actor;
    let dir = tempfile::tempdir().unwrap();
    let (launch, policy) = parts(dir.path());
    let b = super::super::BrowserActor::new(
        "openclaw",
        launch.clone(),
        policy.clone(),
        limits(dir.path()),
    )
    .start();
    let url = format!("http://127.0.0.1:{}/form", site().await);
    call(&b, "open", json!({ "targetUrl": url })).await.unwrap();
    let first = b.send(GetBrowserState).await.unwrap();

    // Evaluate on, same policy: the page is still there; its result is as
    // it is for the operator's routes and outside data for the model.
    let on = super::super::Limits {
        evaluate: true,
        ..limits(dir.path())
    };
    let same = ReconfigureBrowser {
        launch: launch.clone(),
        limits: on.clone(),
        policy,
        relaunch: false,
    };
    b.send(same).await.unwrap();
    let got = call(
        &b,
        "act",
        json!({ "kind": "evaluate", "fn": "() => document.title" }),
    )
    .await
    .unwrap();
    assert_eq!(got.head["result"], "Form");
    assert!(
        got.text.contains("EXTERNAL_UNTRUSTED_CONTENT") && got.text.contains("Form"),
        "{}",
        got.text
    );
    assert_eq!(b.send(GetBrowserState).await.unwrap().pid, first.pid);

    // A new policy: Chromium is closed (the next call starts another,
    // behind a new proxy) and the page is refused.
    let none = std::sync::Arc::new(super::super::policy::Policy::from_settings(
        &crate::settings::shipped_with("browser.ssrfPolicy", json!({})),
    ));
    let narrower = ReconfigureBrowser {
        launch,
        limits: on,
        policy: none,
        relaunch: false,
    };
    b.send(narrower).await.unwrap();
    assert!(!b.send(GetBrowserState).await.unwrap().running);
    let refused = call(&b, "open", json!({ "targetUrl": url }))
        .await
        .unwrap_err();
    assert!(matches!(refused, BrowserError::Refused(_)), "{refused}");
}

/// A page that asks for a missing file and for a host the policy refuses.
const FETCHES: &str = r#"<!doctype html><html><head><title>Fetches</title></head><body>
<script>fetch('/missing.json').catch(() => {}); fetch('http://localhost:' + location.port + '/form').catch(() => {});</script>
</body></html>"#;

#[actix::test]
async fn requests_lists_what_the_page_asked_for_filtered_and_cleared() {
    let dir = tempfile::tempdir().unwrap();
    let (tx, mut seen) = tokio::sync::mpsc::unbounded_channel();
    let b = browser(dir.path());
    let port = serve(Some(tx), |path, _| match path {
        "/fetches" => Reply::html(FETCHES),
        _ => Reply::not_found(),
    })
    .await;
    let url = format!("http://127.0.0.1:{port}/fetches");
    call(&b, "open", json!({ "targetUrl": url })).await.unwrap();
    // The server saw the missing file asked for: its answer is on the way.
    let wait = async {
        while let Some(p) = seen.recv().await {
            if p.ends_with("/missing.json") {
                return;
            }
        }
    };
    tokio::time::timeout(std::time::Duration::from_secs(20), wait)
        .await
        .unwrap();
    // Each answer lands in the log when the browser reports it, in any order.
    let missing = format!("GET 404 fetch http://127.0.0.1:{port}/missing.json");
    let refused = format!("localhost:{port}/form");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let log = loop {
        let log = call(&b, "requests", json!({})).await.unwrap();
        let page = log.page.clone().unwrap_or_default();
        if page.contains(&missing) && page.contains("GET failed") && page.contains(&refused) {
            break page;
        }
        assert!(std::time::Instant::now() < deadline, "{page}");
        tokio::task::yield_now().await;
    };
    assert!(log.contains(&format!("GET 200 document {url}")), "{log}");
    let only = call(
        &b,
        "requests",
        json!({ "filter": "MISSING", "clear": true }),
    )
    .await
    .unwrap();
    let only = only.page.unwrap_or_default();
    assert_eq!(only.lines().count(), 1, "{only}");
    let cleared = call(&b, "requests", json!({})).await.unwrap();
    assert_eq!(cleared.head["total"], 0, "{}", cleared.text);
}
