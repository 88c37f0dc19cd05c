//! The operator's side of the browser: `browser.request` (OpenClaw's
//! browser control routes through the gateway) driven by ferroclaw's own
//! `browser` subcommand and by OpenClaw's real `openclaw browser` CLI,
//! against a real Chromium and a page served on loopback; the browser's
//! state in `status` and `/metrics`; and the method kept from a caller
//! without `operator.admin`.

use serde_json::{json, Value};

use super::browser::{browser_config, site};
use super::*;
use crate::gateway::nodes::{ferroclaw, stdout};

#[tokio::test(flavor = "multi_thread")]
async fn the_operator_drives_the_browser_from_ferroclaws_cli_and_openclaws() {
    let (port, _seen) = site().await;
    let gw = TestGateway::with_config(json!({ "browser": browser_config() }));
    let url = format!("http://127.0.0.1:{port}/form");
    let started = stdout(&ferroclaw(&gw, &["browser", "start"]).await);
    assert_eq!(started.trim(), "browser [openclaw] running: true");
    let opened = stdout(&ferroclaw(&gw, &["browser", "open", &url]).await);
    assert!(
        opened.starts_with(&format!("opened: {url}\ntab: t1\n")),
        "{opened}"
    );
    let tabs = stdout(&ferroclaw(&gw, &["browser", "tabs"]).await);
    assert!(
        tabs.contains(&format!("1. Form [tab: t1]\n   {url}")),
        "{tabs}"
    );
    let snap = stdout(&ferroclaw(&gw, &["browser", "snapshot"]).await);
    assert!(snap.contains("textbox \"Name\" [ref="), "{snap}");
    let shot = stdout(&ferroclaw(&gw, &["browser", "screenshot"]).await);
    let png = std::fs::read(shot.trim()).unwrap();
    assert_eq!(&png[..4], b"\x89PNG");
    let status = stdout(&ferroclaw(&gw, &["browser", "--json", "status"]).await);
    let status: Value = serde_json::from_str(&status).unwrap();
    // The form, and the blank tab Chromium starts with (`tabs` listed it).
    assert_eq!(
        (status["running"].clone(), status["tabs"].clone()),
        (json!(true), json!(2))
    );

    // OpenClaw's own CLI, unchanged, reads the same browser.
    let home = tempfile::tempdir().unwrap();
    let oc = |args: &[&str]| {
        let mut cmd = crate::gateway::interop::openclaw_command(&gw, home.path(), args);
        crate::support::process::output_within(&mut cmd, crate::gateway::interop::CLI_LIMIT)
    };
    let oc_status = oc(&["browser", "status"]);
    let text = String::from_utf8_lossy(&oc_status.stdout);
    assert!(text.contains("running: true"), "{oc_status:?}");
    let oc_snap = oc(&["browser", "snapshot"]);
    let text = String::from_utf8_lossy(&oc_snap.stdout);
    assert!(text.contains("textbox \"Name\""), "{oc_snap:?}");

    // The state is in `status` and `/metrics` too.
    let mut c = admin(&gw).await;
    let st = c.call("status", json!({})).await;
    assert_eq!(
        st["payload"]["browser"]["profiles"][0]["running"], true,
        "{st}"
    );
    let metrics = reqwest::get(format!("http://{}/metrics", gw.addr))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics.contains("ferroclaw_browser_up{profile=\"openclaw\"} 1"),
        "{metrics}"
    );
    assert!(
        metrics.contains("ferroclaw_browser_tabs{profile=\"openclaw\"} 2"),
        "{metrics}"
    );

    let stopped = stdout(&ferroclaw(&gw, &["browser", "stop"]).await);
    assert_eq!(stopped.trim(), "browser [openclaw] running: false");
    // A route ferroclaw's browser lacks is refused by name.
    let r = c
        .call(
            "browser.request",
            json!({ "method": "POST", "path": "/cookies/set" }),
        )
        .await;
    assert_eq!(r["error"]["code"], "INVALID_REQUEST", "{r}");
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("not supported"),
        "{r}"
    );
}
