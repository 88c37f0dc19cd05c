//! What goes out: streamed previews, formatting, unknown outcomes, media,
//! `send`, `deliver`, `wake`, send policy, models and the runtime line, a
//! reply held through rate limits.

use std::time::Duration;

use serde_json::json;

use super::*;
use crate::support::fake_telegram::{FakeTelegram, Fault};
use crate::support::TestGateway;

#[tokio::test]
async fn a_message_streams_as_edits_of_one_preview_and_ends_formatted() {
    let fake = FakeTelegram::start(BOT_TOKEN);
    let gw = TestGateway::with_config(telegram_config(&fake, json!({})));
    fake.dm(42, 1, "@delay 40\nhello there my **good** friend");
    let want = "You said: hello there my <b>good</b> friend";
    assert!(
        fake.until(LONG, |f| f.sent_to(42).iter().any(|s| s.text == want))
            .await,
        "{:?}\n{}",
        fake.sent(),
        std::fs::read_to_string(gw.state_dir().join("logs/ferroclaw.log")).unwrap_or_default()
    );
    let sent = fake.sent_to(42);
    assert_eq!(sent.len(), 1, "one message, edited: {sent:?}");
    assert!(sent[0].html);
    assert!(sent[0].edits >= 2, "previews then the final: {sent:?}");
    assert!(fake
        .actions()
        .iter()
        .any(|(c, a)| *c == 42 && a == "typing"));
    // The command menu was set once.
    assert_eq!(fake.calls("setMyCommands").len(), 1);
}

#[tokio::test]
async fn formatted_text_telegram_refuses_goes_out_as_plain_text() {
    let fake = FakeTelegram::start(BOT_TOKEN);
    let _gw = TestGateway::with_config(telegram_config(&fake, json!({ "streamMode": "off" })));
    fake.fault("sendMessage", Fault::ParseEntities);
    fake.dm(42, 1, "a **bold** claim");
    assert!(fake.until(LONG, |f| !f.sent_to(42).is_empty()).await);
    let sent = fake.sent_to(42);
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].text, "You said: a **bold** claim");
    assert!(!sent[0].html);
}

#[tokio::test]
async fn a_send_without_an_answer_is_not_sent_again() {
    let fake = FakeTelegram::start(BOT_TOKEN);
    let _gw = TestGateway::with_config(telegram_config(
        &fake,
        json!({ "streamMode": "off", "requestTimeoutSeconds": 1 }),
    ));
    fake.fault(
        "sendMessage",
        Fault::AppliedNoAnswer(Duration::from_secs(3)),
    );
    fake.dm(42, 1, "once only");
    assert!(
        fake.until(LONG, |f| answers(f, 42, "You said: once only") == 1)
            .await
    );
    fake.dm(42, 2, "next");
    assert!(
        fake.until(LONG, |f| answers(f, 42, "You said: next") == 1)
            .await
    );
    assert_eq!(
        answers(&fake, 42, "You said: once only"),
        1,
        "{:?}",
        fake.sent()
    );
}

/// A gateway whose Telegram DMs need pairing.

#[tokio::test]
async fn photos_reach_the_model_and_oversized_ones_are_named_not_loaded() {
    let fake = FakeTelegram::start(BOT_TOKEN);
    let _gw = TestGateway::with_config(telegram_config(
        &fake,
        json!({ "streamMode": "off", "mediaMaxMb": 0.001 }),
    ));
    fake.add_file("small", vec![0xff, 0xd8, 0xff, 0xe0, 1, 2, 3]);
    let photo = |id: &str, size: u64, mid: i64| {
        json!({
            "message_id": mid, "date": crate::support::unix_s(), "chat": { "id": 42, "type": "private" },
            "from": { "id": 42, "first_name": "A" }, "caption": format!("look {mid}"),
            "photo": [{ "file_id": id, "file_unique_id": id, "width": 10, "height": 10, "file_size": size }],
        })
    };
    fake.push("message", photo("small", 7, 1));
    assert!(
        fake.until(LONG, |f| answers(f, 42, "You said: look 1") == 1)
            .await
    );
    assert_eq!(fake.calls("getFile").len(), 1);
    fake.push("message", photo("huge", 50_000_000, 2));
    assert!(
        fake.until(LONG, |f| answers(f, 42, "You said: look 2") == 1)
            .await
    );
    assert_eq!(
        fake.calls("getFile").len(),
        1,
        "an oversized photo is not fetched"
    );
    let last = fake.sent_to(42).last().unwrap().text.clone();
    assert!(last.contains("not loaded"), "{last}");
}

#[tokio::test]
async fn send_delivers_once_per_idempotency_key_even_after_a_restart() {
    let fake = FakeTelegram::start(BOT_TOKEN);
    let mut gw = TestGateway::with_config(telegram_config(&fake, json!({})));
    let mut c = crate::support::admin(&gw).await;
    let params = json!({ "to": "42", "channel": "telegram", "message": "**reminder**: water the plants", "idempotencyKey": "send-1" });
    let first = c.call("send", params.clone()).await;
    assert_eq!(first["ok"], true, "{first}");
    assert_eq!(first["payload"]["runId"], "send-1");
    assert_eq!(first["payload"]["channel"], "telegram");
    assert_eq!(first["payload"]["chatId"], "42");
    let id = first["payload"]["messageId"].as_str().unwrap().to_string();
    gw.restart();
    let mut c = crate::support::admin(&gw).await;
    // Past the method's 5-minute cache too: the outbox knows the key.
    let again = c.call("send", params).await;
    assert_eq!(again["payload"]["messageId"], json!(id), "{again}");
    let sent = fake.sent_to(42);
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0].text, "<b>reminder</b>: water the plants");
    // Bad targets and requests get clear errors.
    let no_chat = c
        .call(
            "send",
            json!({ "to": "not-a-chat", "message": "x", "idempotencyKey": "send-2" }),
        )
        .await;
    assert_eq!(no_chat["ok"], false);
    assert!(
        no_chat["error"]["message"]
            .as_str()
            .unwrap()
            .contains("send failed"),
        "{no_chat}"
    );
    let unknown = c
        .call(
            "send",
            json!({ "to": "1", "channel": "pigeon", "message": "x", "idempotencyKey": "send-3" }),
        )
        .await;
    assert_eq!(unknown["error"]["code"], "INVALID_REQUEST", "{unknown}");
    let empty = c
        .call(
            "send",
            json!({ "to": "1", "message": " ", "idempotencyKey": "send-4" }),
        )
        .await;
    assert_eq!(empty["error"]["code"], "INVALID_REQUEST", "{empty}");
    // Photos and documents go by URL (Telegram fetches them).
    let media = c
        .call("send", json!({ "to": "42", "message": "the plan", "mediaUrls": ["https://example.invalid/plan.png", "https://example.invalid/plan.pdf"], "idempotencyKey": "send-5" }))
        .await;
    assert_eq!(media["ok"], true, "{media}");
    let texts: Vec<String> = fake.sent_to(42).iter().map(|s| s.text.clone()).collect();
    assert!(
        texts.contains(&"[photo] https://example.invalid/plan.png".to_string()),
        "{texts:?}"
    );
    assert!(
        texts.contains(&"[document] https://example.invalid/plan.pdf".to_string()),
        "{texts:?}"
    );
    let local = c
        .call(
            "send",
            json!({ "to": "42", "mediaUrl": "/etc/passwd", "idempotencyKey": "send-6" }),
        )
        .await;
    assert!(
        local["error"]["message"]
            .as_str()
            .unwrap()
            .contains("http(s)"),
        "{local}"
    );
}

#[tokio::test]
async fn chat_send_with_deliver_answers_in_the_sessions_chat_too() {
    let fake = FakeTelegram::start(BOT_TOKEN);
    let gw = TestGateway::with_config(telegram_config(&fake, json!({ "streamMode": "off" })));
    fake.dm(42, 1, "hi from telegram");
    assert!(
        fake.until(LONG, |f| answers(f, 42, "You said: hi from telegram") == 1)
            .await
    );
    let mut c = crate::support::admin(&gw).await;
    let r = c
        .call("chat.send", json!({ "sessionKey": "main", "message": "from the dashboard", "idempotencyKey": "dash-1", "deliver": true }))
        .await;
    assert_eq!(r["ok"], true, "{r}");
    assert!(
        fake.until(LONG, |f| answers(f, 42, "You said: from the dashboard")
            == 1)
            .await,
        "{:?}",
        fake.sent()
    );
    // Without deliver nothing goes to the chat.
    let events = crate::support::say(&mut c, "main", "dashboard only", "dash-2").await;
    assert_eq!(
        crate::support::final_text(&events),
        "You said: dashboard only"
    );
    super::barrier(&fake, 42, 2).await;
    assert_eq!(answers(&fake, 42, "You said: dashboard only"), 0);
    let row = c.call("sessions.list", json!({})).await;
    let main = row["payload"]["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["key"] == "agent:main:main")
        .cloned()
        .unwrap();
    assert_eq!(main["lastChannel"], "telegram", "{main}");
    assert_eq!(main["lastTo"], "42", "{main}");
}

#[tokio::test]
async fn wake_queues_a_system_event_and_now_runs_a_turn() {
    let fake = FakeTelegram::start(BOT_TOKEN);
    let gw = TestGateway::with_config(telegram_config(&fake, json!({})));
    let mut c = crate::support::admin(&gw).await;
    let later = c
        .call(
            "wake",
            json!({ "mode": "next-heartbeat", "text": "the build finished" }),
        )
        .await;
    assert_eq!(
        later["payload"],
        json!({ "ok": true, "mode": "next-heartbeat" }),
        "{later}"
    );
    let now = c
        .call(
            "wake",
            json!({ "mode": "now", "text": "the deploy finished" }),
        )
        .await;
    let run = now["payload"]["runId"].as_str().unwrap().to_string();
    let waited = c
        .call("agent.wait", json!({ "runId": run, "timeoutMs": 10000 }))
        .await;
    assert_eq!(waited["payload"]["status"], "ok", "{waited}");
    let bad = c.call("wake", json!({ "mode": "soon", "text": "x" })).await;
    assert_eq!(bad["error"]["code"], "INVALID_REQUEST");
    let sub = c
        .call(
            "wake",
            json!({ "mode": "now", "text": "x", "sessionKey": "agent:main:subagent:abc" }),
        )
        .await;
    assert_eq!(sub["error"]["code"], "INVALID_REQUEST");
}

#[tokio::test]
async fn send_off_keeps_replies_in_the_session_and_model_by_channel_picks_the_model() {
    let fake = FakeTelegram::start(BOT_TOKEN);
    let mut cfg = telegram_config(&fake, json!({ "streamMode": "off" }));
    cfg["channels"]["modelByChannel"] = json!({ "telegram": "offline/telegram-model" });
    let gw = TestGateway::with_config(cfg);
    fake.dm(42, 1, "which model?");
    assert!(
        fake.until(LONG, |f| answers(f, 42, "You said: which model?") == 1)
            .await
    );
    let mut c = crate::support::admin(&gw).await;
    let list = c.call("sessions.list", json!({})).await;
    let main = list["payload"]["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["key"] == "agent:main:main")
        .cloned()
        .unwrap();
    assert_eq!(main["model"], "telegram-model", "{main}");
    // The owner turns delivery off: the confirmation still arrives, later replies stay in the session.
    fake.dm(42, 2, "/send off");
    assert!(
        fake.until(LONG, |f| f
            .sent_to(42)
            .iter()
            .any(|s| s.text.contains("Send policy set to off")))
            .await,
        "{:?}",
        fake.sent()
    );
    fake.dm(42, 3, "are you there?");
    let mut seen = false;
    for _ in 0..100 {
        let history = c
            .call("chat.history", json!({ "sessionKey": "main" }))
            .await;
        if history["payload"]["messages"]
            .to_string()
            .contains("You said: are you there?")
        {
            seen = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(seen, "the run answered in the session");
    crate::support::ledger::until_settled(gw.store(), "telegram/default/42/3").await;
    assert_eq!(
        answers(&fake, 42, "You said: are you there?"),
        0,
        "{:?}",
        fake.sent()
    );
}

#[tokio::test]
async fn the_model_is_told_the_channel_and_its_capabilities_even_in_the_main_session() {
    use crate::support::fake_provider::{FakeProvider, Script};
    let fake = FakeTelegram::start(BOT_TOKEN);
    let provider = FakeProvider::start().await;
    provider.set_default(Script::text(&["hi"]));
    let mut cfg = telegram_config(&fake, json!({ "streamMode": "off" }));
    ferroclaw::config::merge_patch(
        &mut cfg,
        &json!({
            "models": { "providers": { "fake": { "baseUrl": provider.base_url(), "api": "openai-completions", "apiKey": "k" } } },
            "agents": { "defaults": { "model": "fake/m1" } },
        }),
    );
    let gw = TestGateway::with_config(cfg);
    fake.dm(42, 1, "hello");
    assert!(fake.until(LONG, |f| f.sent_to(42).len() == 1).await);
    let mut c = crate::support::admin(&gw).await;
    crate::support::say(&mut c, "main", "from the web", "w-1").await;
    let prompts: Vec<String> = provider
        .requests
        .lock()
        .unwrap()
        .iter()
        .map(|(b, _)| {
            b["messages"][0]["content"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    assert_eq!(prompts.len(), 2);
    assert!(
        prompts[0].contains("channel=telegram | capabilities=markdown,images,edits"),
        "{}",
        prompts[0]
    );
    assert!(prompts[1].contains("channel=webchat"), "{}", prompts[1]);
}

/// The outbox's rule for a reply refused for rate is every outlet's: after
/// the limiter's three tries, Telegram's fourth 429 holds the reply, and it
/// is sent once after the wait (Slack's test: `slack::replies`).
#[tokio::test]
async fn a_reply_refused_for_rate_four_times_is_held_and_sent_once() {
    let fake = FakeTelegram::start(BOT_TOKEN);
    let _gw = TestGateway::with_config(telegram_config(&fake, json!({ "streamMode": "off" })));
    for _ in 0..4 {
        fake.fault("sendMessage", Fault::RateLimit(1));
    }
    fake.dm(42, 1, "patience");
    assert!(
        fake.until(LONG, |f| answers(f, 42, "You said: patience") == 1)
            .await,
        "{:?}",
        fake.calls("sendMessage")
    );
    assert_eq!(
        fake.calls("sendMessage").len(),
        5,
        "four 429s, then the send"
    );
    fake.dm(42, 2, "after");
    assert!(
        fake.until(LONG, |f| answers(f, 42, "You said: after") == 1)
            .await
    );
    assert_eq!(answers(&fake, 42, "You said: patience"), 1);
}
