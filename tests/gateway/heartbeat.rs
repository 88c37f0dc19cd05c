//! Heartbeats end to end: `HEARTBEAT_OK` never reaches the chat and an
//! alert does once, an empty HEARTBEAT.md costs no model call, and the
//! settings apply live (bad ones refused).

use std::time::Duration;

use serde_json::{json, Value};

use super::cron::provider_config;
use super::telegram::{telegram_config, BOT_TOKEN, LONG};
use crate::support::fake_provider::{last_text, FakeProvider, Script};
use crate::support::fake_telegram::FakeTelegram;
use crate::support::{admin, TestGateway};

fn heartbeat_provider(fake: &FakeProvider, beat: &'static std::sync::Mutex<&'static str>) {
    fake.respond_with(move |body: &Value| {
        let text = last_text(body);
        if text.contains("HEARTBEAT") {
            Script::text(&[*beat.lock().unwrap()])
        } else {
            Script::text(&["echo: ", "hi"])
        }
    });
}

#[tokio::test]
async fn heartbeat_ok_never_reaches_telegram_and_an_alert_does_once() {
    static BEAT: std::sync::Mutex<&'static str> = std::sync::Mutex::new("HEARTBEAT_OK");
    let provider = FakeProvider::start().await;
    heartbeat_provider(&provider, &BEAT);
    let tg = FakeTelegram::start(BOT_TOKEN);
    let mut cfg = telegram_config(&tg, json!({ "streamMode": "off" }));
    ferroclaw::config::merge_patch(&mut cfg, &provider_config(&provider));
    ferroclaw::config::merge_patch(
        &mut cfg,
        &json!({"agents": {"defaults": {"heartbeat": {
        "every": "0m", "target": "last", "model": "fake/cheap" }}}}),
    );
    let gw = TestGateway::with_files(
        cfg,
        &[(
            "workspace/HEARTBEAT.md",
            "# Checklist\n- look at the disk\n",
        )],
    );
    let mut c = admin(&gw).await;
    // The main session's last route becomes this Telegram chat.
    tg.dm(42, 1, "hello");
    assert!(tg.until(LONG, |f| !f.sent_to(42).is_empty()).await);
    crate::support::ledger::until_settled(gw.store(), "telegram/default/42/1").await;
    // The reply's typing (sent beside it, not before it) has arrived too.
    assert!(
        tg.until(LONG, |f| f.actions().iter().any(|(chat, _)| *chat == 42))
            .await,
        "a channel turn shows typing"
    );
    let before = tg.sent_to(42).len();
    let typing_before = tg.actions().len();

    let r = c
        .call("wake", json!({"mode": "now", "text": "check things"}))
        .await;
    assert!(
        r["payload"]["runId"]
            .as_str()
            .unwrap()
            .starts_with("heartbeat:"),
        "{r}"
    );
    let run = r["payload"]["runId"].as_str().unwrap().to_string();
    let ev = c.event("heartbeat").await;
    assert_eq!(ev["payload"]["status"], "ok-token", "{ev}");
    // Chat surfaces see the run end, never the acknowledgement.
    let frames: Vec<Value> = c
        .backlog_events("chat")
        .into_iter()
        .chain(c.backlog_events("agent"))
        .collect();
    let of_run: Vec<&Value> = frames
        .iter()
        .filter(|f| f["payload"]["runId"] == run.as_str())
        .collect();
    let fin = of_run
        .iter()
        .find(|f| f["payload"]["state"] == "final")
        .expect("a final");
    assert!(fin["payload"]["message"].is_null(), "{fin}");
    assert!(
        of_run
            .iter()
            .all(|f| !f.to_string().contains("HEARTBEAT_OK")),
        "{of_run:?}"
    );
    let last = c.call("last-heartbeat", json!({})).await;
    assert_eq!(last["payload"]["status"], "ok-token");
    // The heartbeat ran on its own model (the first step of the chain).
    let bodies: Vec<Value> = provider
        .requests
        .lock()
        .unwrap()
        .iter()
        .map(|(b, _)| b.clone())
        .collect();
    let hb = bodies
        .iter()
        .rev()
        .find(|b| last_text(b).contains("HEARTBEAT"))
        .unwrap();
    assert_eq!(hb["model"], "cheap", "{hb}");

    *BEAT.lock().unwrap() = "The disk is 95% full.";
    c.call("wake", json!({"mode": "now", "text": "check again"}))
        .await;
    let ev = c.event("heartbeat").await;
    assert_eq!(ev["payload"]["status"], "sent", "{ev}");
    assert_eq!(ev["payload"]["to"], "42");
    crate::support::ledger::until_quiet(gw.store()).await;
    let after: Vec<String> = tg.sent_to(42)[before..]
        .iter()
        .map(|s| s.text.clone())
        .collect();
    assert_eq!(
        after,
        vec!["The disk is 95% full.".to_string()],
        "only the alert, once"
    );
    assert!(tg.sent().iter().all(|s| !s.text.contains("HEARTBEAT_OK")));
    assert_eq!(
        tg.actions().len(),
        typing_before,
        "heartbeats never show typing"
    );
}

#[tokio::test]
async fn an_empty_heartbeat_file_costs_no_model_call() {
    static BEAT: std::sync::Mutex<&'static str> = std::sync::Mutex::new("HEARTBEAT_OK");
    let provider = FakeProvider::start().await;
    heartbeat_provider(&provider, &BEAT);
    let mut cfg = provider_config(&provider);
    ferroclaw::config::merge_patch(
        &mut cfg,
        &json!({"agents": {"defaults": {"heartbeat": {"every": "1s"}}}}),
    );
    let empty = "# Heartbeat\n\n<!-- add tasks here -->\n- [ ]\n\n```\n```\n";
    let gw = TestGateway::with_files(cfg, &[("workspace/HEARTBEAT.md", empty)]);
    let mut c = admin(&gw).await;
    let ev = c.event("heartbeat").await;
    assert_eq!(
        (
            ev["payload"]["status"].as_str(),
            ev["payload"]["reason"].as_str()
        ),
        (Some("skipped"), Some("empty-heartbeat-file")),
        "{ev}"
    );
    c.event("heartbeat").await;
    assert_eq!(provider.request_count(), 0, "no tokens spent");
    let status = c.call("status", json!({})).await;
    assert_eq!(
        status["payload"]["heartbeat"]["agents"][0]["everyMs"], 1000,
        "{status}"
    );
    let off = c.call("set-heartbeats", json!({"enabled": false})).await;
    assert_eq!(off["payload"], json!({"ok": true, "enabled": false}));
}

#[tokio::test]
async fn heartbeat_settings_apply_live_and_bad_ones_are_refused() {
    let gw = TestGateway::start();
    let mut c = admin(&gw).await;
    let every = |s: &Value| s["payload"]["heartbeat"]["agents"][0]["everyMs"].clone();
    let status = c.call("status", json!({})).await;
    assert_eq!(every(&status), 1_800_000, "OpenClaw's default, 30m");
    let r = super::telegram::patch(
        &mut c,
        r#"{"agents":{"defaults":{"heartbeat":{"every":"45m"}}}}"#.into(),
    )
    .await;
    assert_eq!(r["ok"], true, "{r}");
    let s = status_until(&mut c, |s| every(s) == 2_700_000).await;
    assert_eq!(every(&s), 2_700_000);
    let bad = super::telegram::patch(
        &mut c,
        r#"{"agents":{"defaults":{"heartbeat":{"every":"often"}}}}"#.into(),
    )
    .await;
    assert_eq!(bad["ok"], false, "{bad}");
    assert!(
        bad["error"]["message"]
            .as_str()
            .unwrap()
            .contains("heartbeat.every"),
        "{bad}"
    );
    let off = super::telegram::patch(
        &mut c,
        r#"{"agents":{"defaults":{"heartbeat":{"every":"0m"}}}}"#.into(),
    )
    .await;
    assert_eq!(off["ok"], true, "{off}");
    let s = status_until(&mut c, |s| {
        s["payload"]["heartbeat"]["agents"][0]["enabled"] == false
    })
    .await;
    assert_eq!(
        s["payload"]["heartbeat"]["agents"][0]["enabled"], false,
        "{s}"
    );
}

/// `status` asked again (every 20 ms, at most 10 s) until `done` holds of
/// it; the last answer.
async fn status_until(c: &mut crate::support::Client, done: impl Fn(&Value) -> bool) -> Value {
    let mut s = Value::Null;
    for _ in 0..500 {
        s = c.call("status", json!({})).await;
        if done(&s) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    s
}
