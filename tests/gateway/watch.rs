//! What OpenClaw's Control UI opens a chat with, over a real socket:
//! session subscriptions and the `session.message` / `sessions.changed`
//! events they bring (in order: the `chat` final before the run-settled
//! signal), `chat.startup`, `chat.history`'s session row, `sessions.describe`,
//! `chat.metadata` and `sessions.catalog.list`.

use std::time::Duration;

use serde_json::{json, Value};

use crate::support::device::{now_ms, Device};
use crate::support::{admin, connect_params, Client, TestGateway, TOKEN};

/// Every frame until the `sessions.changed` that says run `run_id` settled.
async fn until_settled(c: &mut Client, run_id: &str) -> Vec<Value> {
    let settles = |f: &Value| {
        f["event"] == "sessions.changed"
            && f["payload"]["runId"] == run_id
            && f["payload"]["phase"] == "end"
    };
    let mut seen = c.take_backlog();
    while !seen.last().is_some_and(settles) {
        if let Some(i) = seen.iter().position(settles) {
            seen.truncate(i + 1);
            break;
        }
        let f = tokio::time::timeout(Duration::from_secs(10), c.recv())
            .await
            .expect("the run settles")
            .expect("open");
        seen.push(f);
    }
    seen
}

fn position(frames: &[Value], pred: impl Fn(&Value) -> bool) -> usize {
    frames
        .iter()
        .position(pred)
        .unwrap_or_else(|| panic!("not among {frames:#?}"))
}

#[tokio::test]
async fn a_subscribed_dashboard_sees_the_message_the_run_start_the_reply_and_then_the_run_settle() {
    let gw = TestGateway::start();
    let mut ui = admin(&gw).await;
    let r = ui.call("sessions.subscribe", json!({})).await;
    assert_eq!(r["payload"], json!({ "subscribed": true }), "{r}");
    let r = ui
        .call(
            "chat.send",
            json!({"sessionKey": "main", "message": "hello ui", "idempotencyKey": "ui-1"}),
        )
        .await;
    assert_eq!(r["payload"]["runId"], "ui-1", "{r}");
    let frames = until_settled(&mut ui, "ui-1").await;
    let user = position(&frames, |f| {
        f["event"] == "session.message" && f["payload"]["message"]["role"] == "user"
    });
    let started = position(&frames, |f| {
        f["event"] == "sessions.changed" && f["payload"]["phase"] == "start"
    });
    let reply = position(&frames, |f| {
        f["event"] == "session.message" && f["payload"]["message"]["role"] == "assistant"
    });
    let fin = position(&frames, |f| {
        f["event"] == "chat" && f["payload"]["state"] == "final"
    });
    let settled = frames.len() - 1;
    assert!(user < started && started < fin && reply < fin && fin < settled);
    // The reply streams after the start (a startup `status` may precede it).
    let streamed = position(&frames, |f| {
        f["event"] == "chat" && f["payload"]["state"] != "status"
    });
    assert!(streamed > started);

    // The user's message names the key it was sent with; the stored reply
    // and the chat final share one key, so a client shows it once.
    let u = &frames[user]["payload"];
    assert_eq!(u["sessionKey"], "agent:main:main");
    assert_eq!(u["agentId"], "main");
    assert_eq!(u["runId"], "ui-1");
    assert_eq!(u["message"]["__openclaw"]["idempotencyKey"], "ui-1");
    assert!(u["messageId"].is_string());
    assert_eq!(u["session"]["key"], "agent:main:main");
    let stored_key = &frames[reply]["payload"]["message"]["__openclaw"]["idempotencyKey"];
    assert_eq!(
        stored_key,
        &frames[fin]["payload"]["message"]["__openclaw"]["idempotencyKey"]
    );
    assert_eq!(stored_key, "ui-1:reply");

    let s = &frames[started]["payload"];
    assert_eq!(
        (s["status"].as_str(), s["hasActiveRun"].as_bool()),
        (Some("running"), Some(true))
    );
    assert_eq!(s["activeRunIds"], json!(["ui-1"]));
    assert_eq!(s["session"]["status"], "running");
    let e = &frames[settled]["payload"];
    assert_eq!(e["status"], "done");
    assert_eq!(e["hasActiveRun"], false);
    assert_eq!(e["activeRunIds"], json!([]));
    assert!(e["outputTokens"].as_u64().unwrap() > 0, "{e}");
    assert!(e["endedAt"].as_u64() >= e["startedAt"].as_u64());
    assert!(e["ts"].is_u64());
    assert!(frames
        .iter()
        .all(|f| f["seq"].is_u64() || f["type"] != "event"));

    // The row keeps how the last run ended.
    let d = ui
        .call("sessions.describe", json!({"key": "agent:main:main"}))
        .await;
    let row = &d["payload"]["session"];
    assert_eq!(row["status"], "done", "{d}");
    assert_eq!(row["lastRunId"], "ui-1");
    assert_eq!(row["hasActiveRun"], false);
    let d = ui
        .call("sessions.describe", json!({"key": "nobody-yet"}))
        .await;
    assert_eq!(d["payload"], json!({ "session": null }));
}

#[tokio::test]
async fn message_subscriptions_are_per_session_and_end_with_unsubscribe() {
    let gw = TestGateway::start();
    let mut watcher = admin(&gw).await;
    let mut sender = admin(&gw).await;
    let r = watcher
        .call(
            "sessions.messages.subscribe",
            json!({"key": "watched", "includeApprovals": true}),
        )
        .await;
    let p = &r["payload"];
    assert_eq!(p["subscribed"], true, "{r}");
    assert_eq!(p["key"], "agent:main:watched");
    assert_eq!(p["approvalReplay"]["sessionKey"], "agent:main:watched");
    assert_eq!(p["approvalReplay"]["approvals"], json!([]));
    for (key, id) in [("other", "o-1"), ("watched", "w-1")] {
        let r = sender
            .call(
                "chat.send",
                json!({"sessionKey": key, "message": "hi", "idempotencyKey": id}),
            )
            .await;
        assert_eq!(r["ok"], true, "{r}");
        // Both runs end before the next is sent.
        loop {
            let c = sender.event("chat").await;
            if c["payload"]["runId"] == id && c["payload"]["state"] == "final" {
                break;
            }
        }
    }
    let m = watcher.event("session.message").await;
    assert_eq!(m["payload"]["sessionKey"], "agent:main:watched", "{m}");
    // Only events of the watched session, nothing of "other".
    watcher.call("health", json!({})).await;
    assert!(watcher
        .backlog_events("session.message")
        .iter()
        .chain(watcher.backlog_events("sessions.changed").iter())
        .all(|e| e["payload"]["sessionKey"] == "agent:main:watched"));
    // The sender never subscribed: it got none of them.
    sender.call("health", json!({})).await;
    assert!(sender.backlog_events("session.message").is_empty());
    assert!(sender.backlog_events("sessions.changed").is_empty());

    let r = watcher
        .call("sessions.messages.unsubscribe", json!({"key": "watched"}))
        .await;
    assert_eq!(
        r["payload"],
        json!({"subscribed": false, "key": "agent:main:watched"})
    );
    sender
        .call(
            "chat.send",
            json!({"sessionKey": "watched", "message": "again", "idempotencyKey": "w-2"}),
        )
        .await;
    loop {
        let c = sender.event("chat").await;
        if c["payload"]["runId"] == "w-2" && c["payload"]["state"] == "final" {
            break;
        }
    }
    watcher.call("health", json!({})).await;
    assert!(watcher.backlog_events("session.message").is_empty());
}

#[tokio::test]
async fn subscriptions_are_bounded_checked_and_need_read_access() {
    let gw = TestGateway::start();
    let mut c = admin(&gw).await;
    for i in 0..256 {
        let r = c
            .call(
                "sessions.messages.subscribe",
                json!({"key": format!("k{i}")}),
            )
            .await;
        assert_eq!(r["ok"], true, "{r}");
    }
    let r = c
        .call(
            "sessions.messages.subscribe",
            json!({"key": "one-too-many"}),
        )
        .await;
    assert_eq!(r["ok"], false);
    assert_eq!(r["error"]["code"], "INVALID_REQUEST");
    assert!(r["error"]["message"]
        .as_str()
        .unwrap()
        .contains("too many session subscriptions"));
    // Again for one already watched is fine; the connection still works.
    let r = c
        .call("sessions.messages.subscribe", json!({"key": "k3"}))
        .await;
    assert_eq!(r["ok"], true);
    let r = c
        .call(
            "sessions.messages.subscribe",
            json!({"key": "agent:main:x", "agentId": "ops"}),
        )
        .await;
    assert_eq!(r["error"]["code"], "INVALID_REQUEST", "{r}");
    let r = c.call("sessions.messages.subscribe", json!({})).await;
    assert_eq!(r["error"]["code"], "INVALID_REQUEST", "{r}");
    let r = c.call("sessions.unsubscribe", json!({"x": 1})).await;
    assert_eq!(r["error"]["code"], "INVALID_REQUEST", "{r}");

    // Without operator.read: refused, as OpenClaw does.
    let mut w = Client::connect(&gw.ws_url()).await;
    w.handshake(connect_params(
        "test",
        "test",
        &["operator.pairing"],
        Some(TOKEN),
    ))
    .await;
    for m in ["sessions.subscribe", "chat.startup", "sessions.describe"] {
        let r = w
            .call(m, json!({"key": "main", "sessionKey": "main"}))
            .await;
        assert_eq!(r["error"]["message"], "missing scope: operator.read", "{m}");
    }
}

#[tokio::test]
async fn chat_startup_is_the_history_with_the_row_defaults_and_pending_inputs() {
    let gw = TestGateway::start();
    let mut c = admin(&gw).await;
    // Before the session exists.
    let r = c
        .call(
            "chat.startup",
            json!({"sessionKey": "agent:main:main", "limit": 80, "maxBytes": 262144}),
        )
        .await;
    let p = &r["payload"];
    assert_eq!(p["messages"], json!([]), "{r}");
    assert_eq!(p["sessionInfo"], Value::Null);
    assert_eq!(p["defaults"]["modelProvider"], "offline");
    assert_eq!(p["defaults"]["model"], "echo");
    assert_eq!(p["pendingInputs"], json!({"items": [], "total": 0}));

    for (i, text) in ["one", "two", "three"].iter().enumerate() {
        c.call(
            "chat.send",
            json!({"sessionKey": "main", "message": text, "idempotencyKey": format!("s-{i}")}),
        )
        .await;
        loop {
            let e = c.event("chat").await;
            if e["payload"]["runId"] == format!("s-{i}") && e["payload"]["state"] == "final" {
                break;
            }
        }
    }
    let r = c
        .call("chat.startup", json!({"sessionKey": "main", "limit": 80}))
        .await;
    let p = &r["payload"];
    let msgs = p["messages"].as_array().unwrap();
    assert_eq!(msgs.len(), 6, "{r}");
    let seqs: Vec<u64> = msgs
        .iter()
        .map(|m| m["__openclaw"]["seq"].as_u64().unwrap())
        .collect();
    assert_eq!(seqs, [1, 2, 3, 4, 5, 6]);
    assert_eq!(msgs[0]["__openclaw"]["idempotencyKey"], "s-0");
    assert_eq!(msgs[1]["__openclaw"]["idempotencyKey"], "s-0:reply");
    assert!(msgs[0]["__openclaw"]["id"].is_string());
    assert_eq!(p["sessionInfo"]["key"], "agent:main:main");
    assert_eq!(p["sessionInfo"]["status"], "done");
    assert_eq!(p["sessionInfo"]["lastRunId"], "s-2");
    // maxBytes keeps the newest messages that fit.
    let one = serde_json::to_string(&msgs[5]).unwrap().len();
    let r = c
        .call(
            "chat.startup",
            json!({"sessionKey": "main", "maxBytes": one + 1}),
        )
        .await;
    let kept = r["payload"]["messages"].as_array().unwrap();
    assert_eq!(kept.len(), 1, "{r}");
    assert_eq!(kept[0]["__openclaw"]["seq"], 6);
    // chat.history carries the same row.
    let h = c.call("chat.history", json!({"sessionKey": "main"})).await;
    assert_eq!(h["payload"]["sessionInfo"]["status"], "done", "{h}");
    // A short id names no ferroclaw session: unresolved, not an error.
    let r = c
        .call("chat.startup", json!({"shortId": "abcdefabcdef"}))
        .await;
    assert_eq!(r["payload"], json!({"resolution": {"ok": false}}), "{r}");
    let r = c
        .call("chat.startup", json!({"sessionKey": "main", "bogus": 1}))
        .await;
    assert_eq!(r["error"]["code"], "INVALID_REQUEST", "{r}");
}

#[tokio::test]
async fn chat_metadata_lists_the_models_and_there_are_no_external_session_catalogs() {
    let gw = TestGateway::start();
    let mut c = admin(&gw).await;
    let r = c
        .call(
            "chat.metadata",
            json!({"agentId": "main", "sessionKey": "agent:main:main"}),
        )
        .await;
    let p = &r["payload"];
    assert!(
        p["models"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["provider"] == "offline" && m["id"] == "echo"),
        "{r}"
    );
    assert_eq!(p["runtimeSelectionLocked"], false);
    let r = c
        .call(
            "sessions.catalog.list",
            json!({"allowPartialResults": true, "limitPerHost": 50}),
        )
        .await;
    assert_eq!(r["payload"], json!({"catalogs": []}), "{r}");
    let r = c
        .call("sessions.catalog.list", json!({"catalogId": "claude-code"}))
        .await;
    assert_eq!(
        r["error"]["message"], "unknown session catalog: claude-code",
        "{r}"
    );
    let r = c
        .call("sessions.catalog.list", json!({"cursors": {}}))
        .await;
    assert_eq!(r["error"]["code"], "INVALID_REQUEST", "{r}");
}

#[tokio::test]
async fn the_control_ui_gets_the_timings_of_its_own_messages_and_no_one_else_does() {
    let gw = TestGateway::start();
    let dev = Device::new(9);
    let mut ui = Client::connect(&gw.ws_url()).await;
    let nonce = ui.nonce();
    let hello = ui
        .handshake(dev.connect_params(
            "openclaw-control-ui",
            "webchat",
            "operator",
            &["operator.admin"],
            Some(TOKEN),
            &nonce,
            now_ms(),
            true,
        ))
        .await;
    assert_eq!(hello["ok"], true, "{hello}");
    let events = hello["payload"]["features"]["events"].as_array().unwrap();
    assert!(events.iter().any(|e| e == "chat.send_timing"));
    let mut cli = admin(&gw).await;
    let r = ui
        .call(
            "chat.send",
            json!({"sessionKey": "main", "message": "time me", "idempotencyKey": "t-1"}),
        )
        .await;
    assert_eq!(r["ok"], true, "{r}");
    let mut phases = Vec::new();
    let mut last = 0.0;
    while phases.last().map(String::as_str) != Some("dispatch-completed") {
        let e = ui.event("chat.send_timing").await;
        let p = &e["payload"];
        assert_eq!(p["runId"], "t-1", "{e}");
        assert_eq!(p["sessionKey"], "agent:main:main");
        assert_eq!(p["agentId"], "main");
        let since = p["receivedToPhaseMs"].as_f64().unwrap();
        assert!(since >= last, "{e}");
        last = since;
        assert!(p["ackToPhaseMs"].as_f64().unwrap() >= 0.0);
        assert!(e.get("seq").is_none(), "targeted, not broadcast: {e}");
        phases.push(p["phase"].as_str().unwrap().to_string());
    }
    for want in [
        "agent-run-started",
        "first-assistant-event",
        "dispatch-completed",
    ] {
        assert!(phases.iter().any(|p| p == want), "{want} in {phases:?}");
    }
    assert_eq!(
        phases
            .iter()
            .filter(|p| *p == "first-assistant-event")
            .count(),
        1
    );
    // A CLI's own sends are not timed, and it never sees the UI's.
    cli.call(
        "chat.send",
        json!({"sessionKey": "main", "message": "untimed", "idempotencyKey": "t-2"}),
    )
    .await;
    loop {
        let c = cli.event("chat").await;
        if c["payload"]["runId"] == "t-2" && c["payload"]["state"] == "final" {
            break;
        }
    }
    cli.call("health", json!({})).await;
    assert!(cli.backlog_events("chat.send_timing").is_empty());
}
