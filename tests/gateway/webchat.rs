//! The web chat at `/chat`: served from the binary with its security
//! headers; the committed bundle is what its sources build to; and the page
//! itself, in Debian's Chromium driven by playwright-core
//! (`tests/browser/chat.test.mjs`), against a gateway on the offline model:
//! token entry, streaming, markdown and code, a tool panel, thinking, abort,
//! errors, the selectors, "+ Chat" and history after a reload; and across a
//! restart of the real gateway binary (`tests/browser/reconnect.test.mjs`):
//! the page shows it is disconnected, retries with growing delays and comes
//! back by itself. Screenshots of every step are kept in
//! `target/tmp/webchat-screenshots/`.

use std::path::Path;
use std::process::Command;

use serde_json::{json, Value};

use crate::support::browser::{browser_script, node};
use crate::support::process::{Within, CHILD_LIMIT};
use crate::support::{admin, http, Client, TestGateway, TOKEN};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

#[tokio::test]
async fn the_page_and_its_assets_are_served_from_the_binary_with_a_strict_csp() {
    let gw = TestGateway::start();
    let (status, headers, body) = http(gw.addr, "GET", "/chat", &[]).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        header(&headers, "content-type"),
        Some("text/html; charset=utf-8")
    );
    assert_eq!(
        header(&headers, "content-security-policy"),
        Some(ferroclaw::http::webchat::CSP)
    );
    assert_eq!(header(&headers, "x-content-type-options"), Some("nosniff"));
    assert_eq!(header(&headers, "cache-control"), Some("no-cache"));
    assert!(
        body.contains(&format!(
            r#"<meta name="ferroclaw-version" content="{}">"#,
            ferroclaw::VERSION
        )),
        "{body}"
    );
    assert!(
        !body.contains("http://") && !body.contains("https://"),
        "no other host is referenced: {body}"
    );
    // Both assets are linked with their content hash, and served.
    for (name, kind) in [("chat.js", "text/javascript"), ("chat.css", "text/css")] {
        let at = body.find(&format!("/chat/{name}?v=")).expect(name);
        let link: String = body[at..].chars().take_while(|c| *c != '"').collect();
        assert!(link.len() > format!("/chat/{name}?v=").len() + 8, "{link}");
        let (status, headers, asset) = http(gw.addr, "GET", &link, &[]).await;
        assert_eq!(status, 200, "{link}");
        assert!(
            header(&headers, "content-type").is_some_and(|t| t.starts_with(kind)),
            "{headers:?}"
        );
        assert_eq!(
            header(&headers, "cache-control"),
            Some("public, max-age=31536000, immutable")
        );
        assert!(asset.len() > 5_000, "{name} is the bundle");
    }
    let (status, _, _) = http(gw.addr, "HEAD", "/chat/", &[]).await;
    assert_eq!(status, 200);
    let (status, headers, _) = http(gw.addr, "POST", "/chat", &[]).await;
    assert_eq!(status, 405);
    assert_eq!(header(&headers, "allow"), Some("GET, HEAD"));
    // A WebSocket client may still connect on /chat.
    let c = Client::connect(&format!("ws://{}/chat", gw.addr)).await;
    assert_eq!(c.challenge["event"], "connect.challenge");
}

#[test]
fn the_committed_bundle_is_what_its_sources_build_to() {
    let ui = Path::new(ROOT).join("src/http/webchat/ui");
    assert!(
        ui.join("node_modules/esbuild/package.json").is_file(),
        "the web chat's build tools are missing: run `bash tests/browser/setup.sh` (tests/run.sh does)"
    );
    let out = Command::new(node())
        .arg("build.mjs")
        .arg("--check")
        .current_dir(&ui)
        .within(CHILD_LIMIT);
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test]
async fn the_web_chat_works_in_a_real_browser() {
    let gw = TestGateway::start();
    // A session whose commands need an operator's approval (the page answers them).
    let mut c = admin(&gw).await;
    let patched = c
        .call(
            "sessions.patch",
            json!({ "key": "agent:main:web:approvals", "execAsk": "always" }),
        )
        .await;
    assert_eq!(patched["ok"], true, "{patched}");
    let shots = Path::new(env!("CARGO_TARGET_TMPDIR")).join("webchat-screenshots");
    let base = format!("http://{}", gw.addr);
    let report = browser_script("chat.test.mjs", &[base.as_ref(), TOKEN.as_ref()], &shots).await;
    let seen = &report["seen"];
    assert_eq!(seen["defaultKey"], "agent:main:web:main");
    assert_eq!(seen["toolOutput"], "panel-check-42");
    assert_eq!(seen["thinking"], "weigh the options first");
    assert_eq!(seen["offsite"], json!([]));
    assert!(
        seen["denied"]
            .as_str()
            .is_some_and(|t| t.contains("the operator denied this command")),
        "{seen}"
    );
    for step in [
        "token-dialog",
        "approval",
        "streaming",
        "tool-panel",
        "aborted",
        "reloaded",
    ] {
        let found = std::fs::read_dir(&shots)
            .unwrap()
            .filter_map(|e| e.ok())
            .any(|e| {
                e.file_name()
                    .to_string_lossy()
                    .ends_with(&format!("{step}.png"))
            });
        assert!(found, "screenshot of {step} in {}", shots.display());
    }

    // What the browser did is what the gateway holds.
    let list = c.call("sessions.list", json!({})).await;
    let keys: Vec<&str> = list["payload"]["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["key"].as_str())
        .collect();
    let new_key = seen["newKey"].as_str().unwrap();
    assert!(
        keys.contains(&"agent:main:web:main") && keys.contains(&new_key),
        "{keys:?}"
    );
    let h = c
        .call(
            "chat.history",
            json!({ "sessionKey": "agent:main:web:main" }),
        )
        .await;
    assert_eq!(
        h["payload"]["thinkingLevel"], "high",
        "the selector patched the session"
    );
    let results: Vec<String> = h["payload"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "toolResult")
        .map(|m| {
            m["content"][0]["text"]
                .as_str()
                .unwrap_or("")
                .trim_end()
                .to_string()
        })
        .collect();
    assert_eq!(results, ["panel-check-42"]);
}

#[tokio::test]
async fn the_page_reconnects_with_backoff_after_the_gateway_restarts() {
    let state = tempfile::tempdir().unwrap();
    std::fs::write(
        state.path().join("ferroclaw.json"),
        format!(r#"{{ gateway: {{ auth: {{ mode: "token", token: "{TOKEN}" }} }} }}"#),
    )
    .unwrap();
    let shots = Path::new(env!("CARGO_TARGET_TMPDIR")).join("webchat-reconnect-screenshots");
    let bin = crate::support::process::BIN;
    let report = browser_script(
        "reconnect.test.mjs",
        &[bin.as_ref(), state.path().as_os_str(), TOKEN.as_ref()],
        &shots,
    )
    .await;
    let states: Vec<&str> = report["seen"]["states"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        states
            .iter()
            .any(|s| s.contains("the gateway is not reachable")),
        "{states:?}"
    );
    assert_eq!(report["seen"]["users"], 2);
}

/// Issue 32 in the page: a transcript's image is shown from the media
/// store and its PDF offered as a file; a `/btw` answer shows apart from
/// the conversation (`tests/browser/media.test.mjs`).
#[tokio::test]
async fn the_web_chat_shows_stored_media_and_side_answers() {
    use base64::Engine;
    let gw = TestGateway::start();
    let mut c = admin(&gw).await;
    // A real 1x1 PNG (the browser decodes it) and a PDF made here.
    let png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR4nGNgYAAAAAMAASsJTYQAAAAASUVORK5CYII=";
    let pdf =
        base64::engine::general_purpose::STANDARD.encode(super::attachments::pdf(&["Invoice 42"]));
    let r = c
        .call(
            "chat.send",
            json!({ "sessionKey": "agent:main:web:main", "message": "look", "idempotencyKey": "wm-1",
                "attachments": [
                    { "type": "image", "mimeType": "image/png", "fileName": "dot.png", "content": png },
                    { "mimeType": "application/pdf", "fileName": "inv.pdf", "content": pdf },
                ] }),
        )
        .await;
    assert_eq!(r["ok"], true, "{r}");
    crate::support::chat_until_done(&mut c, "wm-1").await;
    let h = c
        .call(
            "chat.history",
            json!({ "sessionKey": "agent:main:web:main" }),
        )
        .await;
    let image_id = h["payload"]["messages"][0]["media"][0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let shots = Path::new(env!("CARGO_TARGET_TMPDIR")).join("webchat-media-screenshots");
    let base = format!("http://{}", gw.addr);
    let args: [&std::ffi::OsStr; 3] = [base.as_ref(), TOKEN.as_ref(), image_id.as_ref()];
    let report = browser_script("media.test.mjs", &args, &shots).await;
    let seen = &report["seen"];
    assert_eq!(seen["image"], json!({ "width": 1, "height": 1 }), "{seen}");
    assert!(
        seen["side"]
            .as_str()
            .unwrap()
            .contains("btw: what is this chat about?"),
        "{seen}"
    );
}
