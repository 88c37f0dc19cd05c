//! The Control UI's Browser panel on ferroclaw's browser: OpenClaw's own
//! built UI in Chromium opens a page in the gateway's browser, clicks and
//! types on its picture, navigates, goes back, reloads and closes the tab
//! (`tests/browser/control_ui_browser.test.mjs`); the page reports the click
//! and the typing to the test's server. And what the panel is refused, with
//! the codes its UI acts on: no live screencast, evaluate off by default,
//! no download of the displayed page, no browser on a node; the screenshot
//! route serves the media store's files only, behind the token.

use std::time::Duration;

use serde_json::{json, Value};
use tokio::sync::mpsc::UnboundedReceiver;

use super::browser::{browser_config, serve_pages};
use super::*;
use crate::gateway::control_ui::installed_ui;
use crate::support::TOKEN;

/// A button over the top half and a field over the bottom half, so a click
/// lands by proportion whatever size the panel shows the page at; each
/// reports to the server (`/clicked`, `/typed?v=`).
const ONE: &str = r#"<!doctype html><html><head><title>Page one</title></head><body style="margin:0">
<button style="position:fixed;left:0;top:0;width:100%;height:40%" onclick="fetch('/clicked')">Press me</button>
<input style="position:fixed;left:0;top:60%;width:100%;height:40%" oninput="fetch('/typed?v=' + encodeURIComponent(this.value))">
</body></html>"#;
const TWO: &str =
    r#"<!doctype html><html><head><title>Page two</title></head><body><h1>Two</h1></body></html>"#;

/// Serves the two pages on 127.0.0.1; returns its port and each request's path.
async fn pages() -> (u16, UnboundedReceiver<String>) {
    serve_pages(|path| match path {
        "/one" => ONE,
        "/two" => TWO,
        _ => "",
    })
    .await
}

/// Waits (up to 30 s) until the server saw `path` (`report`: what the
/// panel did, for the failure).
async fn saw(rx: &mut UnboundedReceiver<String>, path: &str, report: &Value) {
    let wait = async {
        while let Some(p) = rx.recv().await {
            if p == path {
                return;
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(30), wait)
        .await
        .unwrap_or_else(|_| panic!("the page never asked for {path}: {report}"));
}

#[tokio::test(flavor = "multi_thread")]
async fn openclaws_browser_panel_drives_the_gateways_browser() {
    let (port, mut seen) = pages().await;
    let mut browser = browser_config();
    browser["evaluateEnabled"] = json!(true);
    let root = installed_ui().display().to_string();
    // The chat header asks for the workspace's icon; without one the answer
    // is 404 (OpenClaw's too) and Chromium logs it as a console error.
    let gw = TestGateway::with_files(
        json!({
            "gateway": { "controlUi": { "root": root } },
            "browser": browser,
        }),
        &[("workspace/favicon.svg", super::super::control_ui::SVG)],
    );
    let (one, two) = (
        format!("http://127.0.0.1:{port}/one"),
        format!("http://127.0.0.1:{port}/two"),
    );
    let shots = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("control-ui-browser");
    let base = format!("http://{}", gw.addr);
    let report = crate::support::browser::browser_script(
        "control_ui_browser.test.mjs",
        &[base.as_ref(), TOKEN.as_ref(), one.as_ref(), two.as_ref()],
        &shots,
    )
    .await;
    saw(&mut seen, "/clicked", &report).await;
    saw(&mut seen, "/typed?v=hi", &report).await;
    let shown = &report["shown"];
    assert!(shown["width"].as_f64().unwrap_or(0.0) > 100.0, "{report}");
    assert_eq!(report["urlAfterBack"], json!(one), "{report}");
    let answers: Vec<&str> = report["answers"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for wanted in [
        "POST /tabs/open ok",
        "POST /act clickCoords ok",
        "POST /act press ok",
        "POST /act evaluate ok",
        "POST /navigate ok",
    ] {
        assert!(answers.contains(&wanted), "{wanted}: {report}");
    }
    assert!(
        report["closed"]
            .as_str()
            .is_some_and(|c| c.ends_with(" ok")),
        "{report}"
    );
    // The one refusal is the live screencast, with the code on which the
    // panel falls back to screenshots. Nothing else failed, but what the
    // panel still asks of the tab it just closed (its own race: "no such
    // tab", after the close was answered).
    let closed_at = answers
        .iter()
        .position(|a| a.starts_with("DELETE /tabs/") && a.ends_with(" ok"))
        .unwrap();
    for (i, a) in answers.iter().enumerate() {
        let fine = a.ends_with(" ok") || a.ends_with(" SCREENCAST_UNSUPPORTED") || i > closed_at;
        assert!(fine, "{a} failed: {report}");
    }
    let failed = report["failedCalls"].as_array().unwrap();
    assert!(
        failed.iter().all(|f| f.as_str().is_some_and(|f| {
            f.contains("screencast is not supported") || f.contains("no such tab")
        })),
        "{report}"
    );
    assert!(
        answers.contains(&"POST /screencast SCREENCAST_UNSUPPORTED"),
        "{report}"
    );
    for list in ["consoleErrors", "pageErrors", "httpErrors"] {
        // Short: the whole report is in the assertions above.
        assert_eq!(report[list], json!([]), "{list}: {}", report[list]);
    }
}

async fn request(c: &mut crate::support::Client, params: Value) -> Value {
    c.call("browser.request", params).await
}

#[tokio::test(flavor = "multi_thread")]
async fn what_the_panel_cannot_have_is_refused_with_the_code_its_ui_acts_on() {
    let (port, _seen) = pages().await;
    let root = installed_ui().display().to_string();
    let gw = TestGateway::with_config(json!({
        "gateway": { "controlUi": { "root": root } },
        "browser": browser_config(),
    }));
    let mut c = admin(&gw).await;
    let url = format!("http://127.0.0.1:{port}/one");
    let opened = request(
        &mut c,
        json!({"method": "POST", "path": "/tabs/open", "body": {"url": url}}),
    )
    .await;
    assert_eq!(opened["ok"], true, "{opened}");
    let id = opened["payload"]["targetId"].as_str().unwrap().to_string();

    let cast = request(
        &mut c,
        json!({"method": "POST", "path": "/screencast", "body": {"targetId": id}}),
    )
    .await;
    assert_eq!(
        cast["error"]["details"]["code"], "SCREENCAST_UNSUPPORTED",
        "{cast}"
    );
    let eval = request(
        &mut c,
        json!({"method": "POST", "path": "/act",
        "body": {"kind": "evaluate", "targetId": id, "fn": "() => 1"}}),
    )
    .await;
    assert_eq!(
        eval["error"]["details"]["code"], "ACT_EVALUATE_DISABLED",
        "{eval}"
    );
    assert!(
        eval["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("evaluateEnabled=false"),
        "{eval}"
    );
    let blocked = request(
        &mut c,
        json!({"method": "POST", "path": "/navigate",
        "body": {"targetId": id, "url": "http://10.0.0.1/"}}),
    )
    .await;
    assert_eq!(
        blocked["error"]["details"]["reason"], "navigation_blocked",
        "{blocked}"
    );
    let asset = request(
        &mut c,
        json!({"method": "POST", "path": "/download",
        "body": {"targetId": id, "currentDocument": true, "expectedUrl": url}}),
    )
    .await;
    assert!(
        asset["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("ssrfPolicy"),
        "{asset}"
    );
    let node = request(
        &mut c,
        json!({"method": "GET", "path": "/tabs", "target": "node", "node": "mac"}),
    )
    .await;
    assert_eq!(node["error"]["code"], "INVALID_REQUEST", "{node}");

    // Typing at the focused element: the Control UI's paste.
    let field = request(
        &mut c,
        json!({"method": "POST", "path": "/act",
        "body": {"kind": "clickCoords", "targetId": id, "x": 20, "y": 500}}),
    )
    .await;
    assert_eq!(field["ok"], true, "{field}");
    let pasted = request(
        &mut c,
        json!({"method": "POST", "path": "/act",
        "body": {"kind": "insertText", "targetId": id, "text": "pasted"}}),
    )
    .await;
    assert_eq!(pasted["ok"], true, "{pasted}");

    // The screenshot is read back through the UI's media route, with the
    // token only, and only from the media store.
    let shot = request(
        &mut c,
        json!({"method": "POST", "path": "/screenshot", "body": {"targetId": id, "type": "png"}}),
    )
    .await;
    let path = shot["payload"]["path"].as_str().unwrap().to_string();
    let http = reqwest::Client::new();
    let media = format!("http://{}/__openclaw__/assistant-media", gw.addr);
    let get = |source: &str, token: bool, meta: bool| {
        let mut r = http.get(&media).query(&[("source", source)]);
        if meta {
            r = r.query(&[("meta", "1")]);
        }
        if token {
            r = r.bearer_auth(TOKEN);
        }
        r.send()
    };
    let png = get(&path, true, false).await.unwrap();
    assert_eq!(png.status(), 200);
    assert_eq!(png.headers()["content-type"], "image/png");
    assert_eq!(&png.bytes().await.unwrap()[..4], b"\x89PNG");
    assert_eq!(get(&path, false, false).await.unwrap().status(), 401);
    let meta: Value = get(&path, true, true).await.unwrap().json().await.unwrap();
    assert_eq!(meta["available"], true, "{meta}");
    let secret = gw.dir.path().join("secret.png");
    std::fs::write(&secret, b"\x89PNG not in the store").unwrap();
    let config = secret.display().to_string();
    for outside in [config.as_str(), "/etc/passwd", "../../etc/passwd"] {
        assert_eq!(
            get(outside, true, false).await.unwrap().status(),
            404,
            "{outside}"
        );
        let meta: Value = get(outside, true, true)
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(meta["available"], false, "{meta}");
    }
}
