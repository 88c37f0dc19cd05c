//! `browser.*` applied live (`config.patch`), as OpenClaw applies it: new
//! snapshot defaults reach the next snapshot with the same Chromium and
//! its tabs; a narrower SSRF policy closes Chromium and the next call is
//! refused what the policy no longer allows; `evaluateEnabled` works at
//! once for the operator, unwrapped (and says the model's tool list
//! changes at the next start);
//! `browser.enabled: false` closes Chromium and refuses every call.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::browser::{browser_config, site};
use super::*;
use crate::support::Client;

async fn request(c: &mut Client, method: &str, path: &str, body: Value) -> Value {
    let params = json!({ "method": method, "path": path, "body": body });
    c.call("browser.request", params).await
}

/// `config.patch` of `raw`; what it says needs a restart.
async fn patch(c: &mut Client, raw: Value) -> Value {
    let got = c.call("config.get", json!({})).await;
    let hash = got["payload"]["hash"].as_str().unwrap().to_string();
    let r = c
        .call(
            "config.patch",
            json!({ "raw": raw.to_string(), "baseHash": hash }),
        )
        .await;
    assert_eq!(r["ok"], true, "{r}");
    r["payload"]["restartRequired"].clone()
}

/// Calls `ask` until `done` holds for its answer (the change reaches the
/// browser through two mailboxes), for at most 30 s.
async fn until(
    c: &mut Client,
    what: &str,
    ask: (&str, &str, Value),
    done: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let r = request(c, ask.0, ask.1, ask.2.clone()).await;
        if done(&r) {
            return r;
        }
        assert!(Instant::now() < deadline, "{what}: {r}");
        tokio::task::yield_now().await;
    }
}

/// Waits (up to 30 s) until process `pid` has ended.
async fn gone(pid: u64) {
    let alive = || {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .is_ok_and(|s| s.split_whitespace().nth(2) != Some("Z"))
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while alive() {
        assert!(Instant::now() < deadline, "Chromium {pid} still runs");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn browser_settings_apply_to_the_running_gateway() {
    let (port, _seen) = site().await;
    let gw = TestGateway::with_config(json!({ "browser": browser_config() }));
    let mut c = admin(&gw).await;
    let url = format!("http://127.0.0.1:{port}/form");
    let opened = request(&mut c, "POST", "/tabs/open", json!({ "url": url })).await;
    assert_eq!(opened["ok"], true, "{opened}");
    let id = opened["payload"]["targetId"].clone();
    let snap = request(&mut c, "GET", "/snapshot", json!({ "targetId": id })).await;
    assert!(
        snap.to_string().contains("heading \\\"Sign up\\\""),
        "{snap}"
    );
    let status = request(&mut c, "GET", "/", json!({})).await;
    let pid = status["payload"]["pid"].as_u64().unwrap();

    // Bounds: the next snapshot is the compact one, same Chromium, same tab.
    let restart = patch(
        &mut c,
        json!({ "browser": { "snapshotDefaults": { "mode": "efficient" } } }),
    )
    .await;
    assert_eq!(restart, json!([]));
    until(
        &mut c,
        "an efficient snapshot",
        ("GET", "/snapshot", json!({ "targetId": id })),
        |r| r["ok"] == true && !r.to_string().contains("heading"),
    )
    .await;
    let status = request(&mut c, "GET", "/", json!({})).await;
    assert_eq!(status["payload"]["pid"], json!(pid), "{status}");

    // Evaluate on and a narrower policy, together (`config.patch` is
    // limited to 3 a minute): Chromium is started again under both; the
    // page is refused from now on, a blank tab evaluates.
    let both =
        json!({ "browser": { "evaluateEnabled": true, "ssrfPolicy": { "allowedHostnames": [] } } });
    assert_eq!(
        patch(&mut c, both).await,
        json!(["browser.evaluateEnabled"])
    );
    let open = ("POST", "/tabs/open", json!({ "url": url }));
    let refused = until(&mut c, "the page refused", open, |r| {
        r["error"]["details"]["reason"] == "navigation_blocked"
    })
    .await;
    assert!(
        refused["error"]["message"]
            .to_string()
            .contains("ssrfPolicy"),
        "{refused}"
    );
    gone(pid).await;
    let blank = request(
        &mut c,
        "POST",
        "/tabs/open",
        json!({ "url": "about:blank" }),
    )
    .await;
    let eval = json!({ "kind": "evaluate", "targetId": blank["payload"]["targetId"], "fn": "() => 6 * 7" });
    let r = request(&mut c, "POST", "/act", eval).await;
    assert_eq!(r["payload"]["result"], 42, "{r}");

    // Disabled: Chromium closed, every call refused.
    let status = request(&mut c, "GET", "/", json!({})).await;
    let last = status["payload"]["pid"].as_u64();
    let restart = patch(&mut c, json!({ "browser": { "enabled": false } })).await;
    assert_eq!(restart, json!(["browser.enabled"]));
    // A call BrowserTools took before the change may end with "the
    // profile's browser stopped"; the next ones are refused.
    until(
        &mut c,
        "the browser disabled",
        ("GET", "/tabs", json!({})),
        |r| {
            r["error"]["message"]
                .to_string()
                .contains("browser.enabled is false")
        },
    )
    .await;
    gone(last.expect("a Chromium ran before")).await;
}
