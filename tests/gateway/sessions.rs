//! Session methods and chat inputs over the real WebSocket: sessions.list,
//! sessions.patch, sessions.reset, sessions.delete, chat.inject, chat.send
//! attachments, thinking levels, `/stop`, chat.abort's runId check and
//! chat.history's display sanitising.

use base64::Engine;
use serde_json::{json, Value};

use super::chat::chat_until_done;
use crate::support::{admin, Client, TestGateway};

async fn say(c: &mut Client, key: &str, text: &str, id: &str) -> Vec<Value> {
    let r = c
        .call(
            "chat.send",
            json!({"sessionKey": key, "message": text, "idempotencyKey": id}),
        )
        .await;
    assert_eq!(r["ok"], true, "{r}");
    chat_until_done(c, id).await
}

fn err(r: &Value) -> String {
    assert_eq!(r["ok"], false, "{r}");
    r["error"]["message"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn sessions_are_listed_patched_reset_and_deleted() {
    let gw = TestGateway::start();
    let mut c = admin(&gw).await;
    say(&mut c, "main", "hello", "a1").await;
    say(&mut c, "work", "@tokens 4", "b1").await;
    let list = c
        .call("sessions.list", json!({"includeLastMessage": true}))
        .await["payload"]
        .clone();
    assert_eq!(list["count"], 2, "{list}");
    let keys: Vec<&str> = list["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["key"].as_str().unwrap())
        .collect();
    assert_eq!(keys, ["agent:main:work", "agent:main:main"], "newest first");
    let main = &list["sessions"][1];
    assert_eq!(main["kind"], "direct");
    assert_eq!(main["modelProvider"], "offline");
    assert_eq!(main["lastMessagePreview"], "You said: hello");
    assert!(main["totalTokens"].as_u64().unwrap() > 0);
    assert_eq!(list["defaults"]["model"], "echo");

    // patch: label, thinking level, model override; null clears.
    let r = c
        .call(
            "sessions.patch",
            json!({"key": "main", "label": "Home", "thinkingLevel": "high", "model": "offline/other"}),
        )
        .await;
    assert_eq!(r["payload"]["key"], "agent:main:main", "{r}");
    assert_eq!(r["payload"]["entry"]["label"], "Home");
    assert_eq!(r["payload"]["resolved"]["model"], "other");
    say(&mut c, "main", "which model", "a2").await;
    let list = c.call("sessions.list", json!({"label": "Home"})).await["payload"].clone();
    assert_eq!(list["count"], 1);
    assert_eq!(list["sessions"][0]["model"], "other", "{list}");
    assert_eq!(list["sessions"][0]["thinkingLevel"], "high");
    let h = c.call("chat.history", json!({"sessionKey": "main"})).await;
    assert_eq!(h["payload"]["thinkingLevel"], "high");
    let r = c
        .call("sessions.patch", json!({"key": "main", "label": null}))
        .await;
    assert!(r["payload"]["entry"].get("label").is_none(), "{r}");
    for (bad, want) in [
        (
            json!({"key": "main", "thinkingLevel": "huge"}),
            "invalid thinkingLevel",
        ),
        (json!({"key": "main", "model": "no-slash"}), "invalid model"),
        (
            json!({"key": "main", "elevatedLevel": "on"}),
            "not supported",
        ),
        (json!({"key": "main", "bogus": 1}), "additional properties"),
        (json!({"label": "x"}), "'key'"),
        (json!({"key": "main", "label": 5}), "must be string or null"),
    ] {
        let m = err(&c.call("sessions.patch", bad.clone()).await);
        assert!(m.contains(want), "{bad}: {m}");
    }

    // reset: a new transcript, settings kept.
    let before = c.call("chat.history", json!({"sessionKey": "main"})).await["payload"].clone();
    let r = c
        .call("sessions.reset", json!({"key": "main", "reason": "new"}))
        .await;
    assert_eq!(r["payload"]["ok"], true, "{r}");
    assert_ne!(r["payload"]["entry"]["sessionId"], before["sessionId"]);
    assert_eq!(r["payload"]["entry"]["thinkingLevel"], "high");
    let after = c.call("chat.history", json!({"sessionKey": "main"})).await["payload"].clone();
    assert!(after["messages"].as_array().unwrap().is_empty(), "{after}");
    let ctx = say(&mut c, "main", "@context", "a3").await;
    assert_eq!(
        ctx.last().unwrap()["payload"]["message"]["content"][0]["text"],
        "context: 1 messages"
    );

    // delete: gone from the list; a kept transcript is reported as archived.
    let r = c
        .call(
            "sessions.delete",
            json!({"key": "work", "deleteTranscript": false}),
        )
        .await;
    assert_eq!(r["payload"]["deleted"], true, "{r}");
    assert_eq!(r["payload"]["archived"].as_array().unwrap().len(), 1);
    let r = c.call("sessions.delete", json!({"key": "work"})).await;
    assert_eq!(r["payload"]["deleted"], false);
    let list = c.call("sessions.list", json!({})).await["payload"].clone();
    assert_eq!(list["count"], 1);
    let h = c.call("chat.history", json!({"sessionKey": "work"})).await["payload"].clone();
    assert!(h["messages"].as_array().unwrap().is_empty());
}

#[tokio::test]
async fn inject_stop_abort_checks_and_thinking_levels() {
    let gw = TestGateway::start();
    let mut c = admin(&gw).await;
    let r = c
        .call(
            "chat.inject",
            json!({"sessionKey": "main", "message": "Reminder: standup at 10", "label": "cron"}),
        )
        .await;
    assert_eq!(r["payload"]["ok"], true, "{r}");
    let ev = c.event("chat").await;
    assert_eq!(ev["payload"]["state"], "final");
    assert!(ev["payload"]["message"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains("standup"));
    let h = c.call("chat.history", json!({"sessionKey": "main"})).await["payload"].clone();
    assert_eq!(h["messages"][0]["role"], "assistant", "{h}");
    assert!(err(&c
        .call(
            "chat.inject",
            json!({"sessionKey": "main", "message": "x", "label": "l".repeat(101)})
        )
        .await)
    .contains("label"));

    // /stop aborts the running turn.
    c.call(
        "chat.send",
        json!({"sessionKey": "main", "message": "@tokens 500\n@delay 20", "idempotencyKey": "long"}),
    )
    .await;
    loop {
        let ev = c.event("chat").await;
        if ev["payload"]["runId"] == "long" && ev["payload"]["state"] == "delta" {
            break;
        }
    }
    // A runId of this run under another session key is refused.
    let m = err(&c
        .call(
            "chat.abort",
            json!({"sessionKey": "other", "runId": "long"}),
        )
        .await);
    assert_eq!(m, "runId does not match sessionKey");
    let r = c
        .call(
            "chat.send",
            json!({"sessionKey": "main", "message": "/stop", "idempotencyKey": "stop1"}),
        )
        .await;
    assert_eq!(
        r["payload"],
        json!({"ok": true, "aborted": true, "runIds": ["long"]})
    );
    let events = chat_until_done(&mut c, "long").await;
    assert_eq!(events.last().unwrap()["payload"]["state"], "aborted");
    let r = c
        .call("chat.abort", json!({"sessionKey": "main", "runId": "gone"}))
        .await;
    assert_eq!(r["payload"]["aborted"], false);

    // Thinking levels are checked.
    let m = err(
        &c.call(
            "chat.send",
            json!({"sessionKey": "main", "message": "hi", "idempotencyKey": "t1", "thinking": "max"}),
        )
        .await,
    );
    assert!(m.contains("thinking"), "{m}");
    let r = c
        .call(
            "chat.send",
            json!({"sessionKey": "main", "message": "hi", "idempotencyKey": "t2", "thinking": "low"}),
        )
        .await;
    assert_eq!(r["payload"]["status"], "started");
}

#[tokio::test]
async fn attachments_are_checked_stored_and_kept_out_of_history_display() {
    let gw = TestGateway::start();
    let mut c = admin(&gw).await;
    let b64 = |bytes: &[u8]| base64::engine::general_purpose::STANDARD.encode(bytes);
    let png = b64(b"\x89PNG\r\n\x1a\n-not-really-an-image");
    let r = c
        .call(
            "chat.send",
            json!({"sessionKey": "main", "message": "look", "idempotencyKey": "img1",
            "attachments": [
                {"type": "image", "mimeType": "image/png", "fileName": "a.png", "content": png},
                {"mimeType": "text/plain", "fileName": "notes.txt", "content": b64(b"line one")},
            ]}),
        )
        .await;
    assert_eq!(r["payload"]["status"], "started", "{r}");
    let text = chat_until_done(&mut c, "img1").await.last().unwrap()["payload"]["message"]
        ["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        text.contains("look")
            && text.contains("[Document]\nName: notes.txt (text/plain)\nContent:\nline one"),
        "{text}"
    );
    let h = c.call("chat.history", json!({"sessionKey": "main"})).await["payload"].clone();
    let image = &h["messages"][0]["content"][1];
    assert_eq!(image["type"], "image", "{h}");
    assert_eq!(image["omitted"], true);
    assert!(
        image.get("data").is_none(),
        "no inline image data in history"
    );
    // It names its original, kept in the media store (`GET /media/<id>`).
    let id = image["mediaId"].as_str().expect("the image's media id");
    assert_eq!(h["messages"][0]["media"][0]["id"], id);

    let big = b64(&vec![0u8; 5 * 1024 * 1024 + 10]);
    for (i, (att, want)) in [
        (
            json!({"mimeType": "image/png", "content": "!!!not base64!!!"}),
            "not valid base64",
        ),
        (
            json!({"mimeType": "image/png", "content": big}),
            "larger than 5 MB",
        ),
        (
            json!({"mimeType": "application/zip", "content": b64(b"PK")}),
            "unsupported type",
        ),
        (json!({"mimeType": "image/png"}), "content"),
    ]
    .into_iter()
    .enumerate()
    {
        let r = c
            .call(
                "chat.send",
                json!({"sessionKey": "main", "message": "x", "idempotencyKey": format!("bad{i}"), "attachments": [att]}),
            )
            .await;
        let m = err(&r);
        assert!(m.contains(want), "{m}");
    }
    let h2 = c.call("chat.history", json!({"sessionKey": "main"})).await["payload"].clone();
    assert_eq!(
        h2["messages"].as_array().unwrap().len(),
        h["messages"].as_array().unwrap().len(),
        "refused sends stored nothing"
    );
}

#[tokio::test]
async fn history_strips_directive_tags_and_caps_long_fields() {
    let gw = TestGateway::start();
    let mut c = admin(&gw).await;
    say(
        &mut c,
        "main",
        "[[reply_to_current]] hello [[keep me]]",
        "d1",
    )
    .await;
    let long = "x".repeat(20_000);
    say(&mut c, "main", &long, "d2").await;
    let h = c.call("chat.history", json!({"sessionKey": "main"})).await["payload"].clone();
    let msgs = h["messages"].as_array().unwrap();
    assert_eq!(
        msgs[1]["content"][0]["text"], "You said: hello [[keep me]]",
        "reply directives are display-only noise; other brackets stay"
    );
    let shown = msgs[2]["content"][0]["text"].as_str().unwrap();
    assert!(shown.chars().count() < 12_100 && shown.ends_with("…[truncated]"));
    let short = c
        .call(
            "chat.history",
            json!({"sessionKey": "main", "maxChars": 50}),
        )
        .await["payload"]
        .clone();
    let t = short["messages"][3]["content"][0]["text"].as_str().unwrap();
    assert!(t.chars().count() <= 50 + 12, "{t}");
}

/// `session.mainKey` names the main session everywhere: the handshake,
/// `agents.list`, `main` in a send, the `agent` method's default and a
/// cron job's `main` target.
#[tokio::test]
async fn the_configured_main_key_names_the_main_session_everywhere() {
    let gw = TestGateway::with_config(serde_json::json!({"session": {"mainKey": "home"}}));
    let mut c = Client::connect(&gw.ws_url()).await;
    let hello = c
        .handshake(crate::support::connect_params(
            "cli",
            "cli",
            &["operator.admin"],
            Some(crate::support::TOKEN),
        ))
        .await;
    let defaults = &hello["payload"]["snapshot"]["sessionDefaults"];
    assert_eq!(
        (&defaults["mainKey"], &defaults["mainSessionKey"]),
        (&json!("home"), &json!("agent:main:home")),
        "{hello}"
    );
    let r = c.call("agents.list", json!({})).await;
    assert_eq!(r["payload"]["mainKey"], "home", "{r}");
    crate::support::say(&mut c, "main", "@tokens 2", "mk1").await;
    let r = c
        .call(
            "agent",
            json!({"message": "@tokens 2", "idempotencyKey": "mk2"}),
        )
        .await;
    assert_eq!(r["ok"], true, "{r}");
    let job = json!({"name": "note", "schedule": {"kind": "every", "everyMs": 3_600_000},
        "sessionTarget": "main", "wakeMode": "next-heartbeat",
        "payload": {"kind": "systemEvent", "text": "water the plants"}});
    let id = c.call("cron.add", job).await["payload"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    c.call("cron.run", json!({"id": id})).await;
    let r = c.call("sessions.list", json!({})).await;
    let keys: Vec<&str> = r["payload"]["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["key"].as_str())
        .collect();
    assert_eq!(
        keys,
        ["agent:main:home"],
        "one main session, named by mainKey: {r}"
    );
}
