//! The Telegram adapter end to end against the fake Bot API
//! (`support::fake_telegram`): real long polling, sends, edits, faults.

use std::time::Duration;

use serde_json::{json, Value};

use crate::support::fake_telegram::{FakeTelegram, Fault};
use crate::support::TestGateway;

pub const BOT_TOKEN: &str = "123456:TEST-token";

pub fn telegram_config(fake: &FakeTelegram, extra: Value) -> Value {
    let mut tg = json!({
        "botToken": BOT_TOKEN,
        "apiBaseUrl": fake.base,
        "dmPolicy": "allowlist",
        "allowFrom": [42, 43, 44],
        "pollTimeoutSeconds": 1,
        "editIntervalMs": 50,
        "typingIntervalSeconds": 1,
    });
    ferroclaw::config::merge_patch(&mut tg, &extra);
    json!({ "channels": { "telegram": tg } })
}

const LONG: Duration = Duration::from_secs(20);

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

fn answers(fake: &FakeTelegram, chat: i64, starts: &str) -> usize {
    fake.sent_to(chat)
        .iter()
        .filter(|s| s.text.starts_with(starts))
        .count()
}

#[tokio::test]
async fn replayed_updates_run_once_across_restarts_and_the_offset_moves_only_after_them() {
    let fake = FakeTelegram::start(BOT_TOKEN);
    let mut gw = TestGateway::with_config(telegram_config(&fake, json!({ "streamMode": "off" })));
    fake.dm(42, 1, "first");
    assert!(
        fake.until(LONG, |f| answers(f, 42, "You said: first") == 1)
            .await
    );
    // The platform delivers the same message again (a new update id).
    fake.replay_last();
    assert!(
        fake.until(LONG, |f| f.unconfirmed() == 0).await,
        "the replay was confirmed"
    );
    fake.dm(42, 2, "second");
    assert!(
        fake.until(LONG, |f| answers(f, 42, "You said: second") == 1)
            .await
    );
    // After a restart, a replay of a message seen before is still known.
    gw.restart();
    fake.replay_last();
    fake.dm(42, 3, "third");
    assert!(
        fake.until(LONG, |f| answers(f, 42, "You said: third") == 1)
            .await
    );
    assert_eq!(answers(&fake, 42, "You said: first"), 1);
    assert_eq!(
        answers(&fake, 42, "You said: second"),
        1,
        "{:?}",
        fake.sent()
    );
    assert_eq!(fake.sent_to(42).len(), 3);
    // The command menu was not set again at the restart.
    assert_eq!(fake.calls("setMyCommands").len(), 1);
    let mut c = crate::support::admin(&gw).await;
    let status = c.call("channels.status", json!({})).await;
    let acct = &status["payload"]["channelAccounts"]["telegram"][0];
    assert_eq!(acct["accountId"], "default");
    assert_eq!(acct["running"], true);
    assert_eq!(acct["healthState"], "healthy", "{status}");
    assert!(acct["lastInboundAt"].as_u64().is_some());
    assert!(acct["lastOutboundAt"].as_u64().is_some());
}

#[tokio::test]
async fn a_429_holds_every_method_of_the_token_until_retry_after() {
    let fake = FakeTelegram::start(BOT_TOKEN);
    let _gw = TestGateway::with_config(telegram_config(
        &fake,
        json!({ "streamMode": "off", "typingMode": "never" }),
    ));
    fake.dm(42, 1, "warm up");
    assert!(
        fake.until(LONG, |f| answers(f, 42, "You said: warm up") == 1)
            .await
    );
    fake.fault("sendMessage", Fault::RateLimit(2));
    fake.dm(42, 2, "limited");
    fake.dm(43, 3, "other chat");
    assert!(
        fake.until(LONG, |f| answers(f, 42, "You said: limited") == 1
            && answers(f, 43, "You said: other") == 1)
            .await
    );
    let limited_at = fake.calls("sendMessage")[1];
    let after: Vec<_> = [
        "sendMessage",
        "getUpdates",
        "editMessageText",
        "sendChatAction",
    ]
    .iter()
    .flat_map(|m| fake.calls(m))
    .filter(|t| *t > limited_at)
    .collect();
    assert!(!after.is_empty());
    for t in after {
        assert!(
            t.duration_since(limited_at) >= Duration::from_millis(1950),
            "a call {:?} after the 429",
            t.duration_since(limited_at)
        );
    }
}

#[tokio::test]
async fn a_409_backs_off_never_polls_twice_at_once_and_reports_the_conflict() {
    let fake = FakeTelegram::start(BOT_TOKEN);
    fake.fault("getUpdates", Fault::Conflict);
    fake.fault("getUpdates", Fault::Conflict);
    let gw = TestGateway::with_config(telegram_config(&fake, json!({ "streamMode": "off" })));
    fake.dm(42, 1, "after the conflict");
    assert!(
        fake.until(LONG, |f| answers(f, 42, "You said: after the conflict")
            == 1)
            .await
    );
    assert_eq!(fake.max_concurrent_polls(), 1);
    let mut c = crate::support::admin(&gw).await;
    let status = c
        .call("channels.status", json!({ "channel": "telegram" }))
        .await;
    let last = status["payload"]["channels"]["telegram"]["lastError"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(last.contains("409"), "{status}");
    let (_, _, metrics) = crate::support::http(gw.addr, "GET", "/metrics", &[]).await;
    assert!(
        metrics.contains("ferroclaw_channel_up{channel=\"telegram\",account=\"default\"} 1"),
        "{metrics}"
    );
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
fn pairing_gateway(fake: &FakeTelegram) -> TestGateway {
    TestGateway::with_config(telegram_config(
        fake,
        json!({ "dmPolicy": "pairing", "allowFrom": [], "streamMode": "off" }),
    ))
}

/// Waits for the pairing code a stranger was sent, and returns it.
async fn pairing_code(fake: &FakeTelegram, user: i64) -> String {
    let got = fake
        .until(LONG, |f| {
            f.sent_to(user)
                .iter()
                .any(|s| s.text.contains("Pairing code:"))
        })
        .await;
    assert!(got, "no pairing code for {user}: {:?}", fake.sent());
    let text = fake.sent_to(user)[0].text.clone();
    let after = text.split("Pairing code: ").nth(1).unwrap_or_default();
    after
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_string()
}

#[tokio::test]
async fn strangers_pair_with_a_code_an_operator_approves() {
    let fake = FakeTelegram::start(BOT_TOKEN);
    let gw = pairing_gateway(&fake);
    fake.dm(99, 1, "hello?");
    let sent_code = pairing_code(&fake, 99).await;
    fake.dm(99, 2, "hello again?");
    let mut c = crate::support::admin(&gw).await;
    let list = c.call("channels.pairing.list", json!({})).await;
    let requests = list["payload"]["requests"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(requests.len(), 1, "{list}");
    let code = requests[0]["requestId"].as_str().unwrap().to_string();
    assert_eq!(requests[0]["senderId"], "99");
    assert_eq!(list["payload"]["limits"]["pendingPerAccount"], 3);
    assert_eq!(
        sent_code, code,
        "the code listed is the one the stranger got"
    );
    // Nothing reached the agent, and the second message got no second code.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(fake.sent_to(99).len(), 1, "{:?}", fake.sent());
    let wrong = c
        .call(
            "channels.pairing.approve",
            json!({ "channel": "telegram", "accountId": "default", "requestId": "NOPE1234" }),
        )
        .await;
    assert_eq!(wrong["ok"], false);
    let ok = c
        .call(
            "channels.pairing.approve",
            json!({ "channel": "telegram", "accountId": "default", "requestId": code }),
        )
        .await;
    assert_eq!(ok["payload"]["senderId"], "99", "{ok}");
    assert_eq!(ok["payload"]["notification"], "sent");
    assert!(
        fake.until(LONG, |f| f
            .sent_to(99)
            .iter()
            .any(|s| s.text.contains("approved")))
            .await
    );
    fake.dm(99, 3, "now me");
    assert!(
        fake.until(LONG, |f| answers(f, 99, "You said: now me") == 1)
            .await
    );
    let after = c
        .call("channels.pairing.list", json!({ "channel": "telegram" }))
        .await;
    assert_eq!(after["payload"]["requests"], json!([]));
}

#[tokio::test]
async fn groups_answer_mentions_only_and_topics_are_their_own_sessions() {
    let fake = FakeTelegram::start(BOT_TOKEN);
    let gw = TestGateway::with_config(telegram_config(
        &fake,
        json!({ "streamMode": "off", "groups": { "-1001": { "requireMention": true } } }),
    ));
    fake.group(-1001, 42, 1, "nobody asked you", false, None);
    fake.group(-2002, 42, 2, "wrong group", true, None);
    fake.group(-1001, 42, 3, "in the topic", true, Some(7));
    assert!(fake.until(LONG, |f| !f.sent_to(-1001).is_empty()).await);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let sent = fake.sent_to(-1001);
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0].text, "You said: User42: in the topic");
    assert_eq!(sent[0].thread_id, Some(7));
    assert_eq!(sent[0].reply_to, Some(3));
    assert!(fake.sent_to(-2002).is_empty());
    let mut c = crate::support::admin(&gw).await;
    let list = c.call("sessions.list", json!({})).await;
    let keys: Vec<String> = list["payload"]["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["key"].as_str().unwrap().to_string())
        .collect();
    assert!(
        keys.contains(&"agent:main:telegram:group:-1001:topic:7".to_string()),
        "{keys:?}"
    );
}

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
            "message_id": mid, "date": 1_700_000_000, "chat": { "id": 42, "type": "private" },
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
    assert!(last.contains("image not loaded"), "{last}");
}

#[tokio::test]
async fn a_refused_token_backs_off_reports_unhealthy_and_leaves_the_gateway_alone() {
    let fake = FakeTelegram::start("999:other-token");
    let gw = TestGateway::with_config(telegram_config(&fake, json!({})));
    let mut c = crate::support::admin(&gw).await;
    let mut state = Value::Null;
    for _ in 0..100 {
        let s = c.call("channels.status", json!({})).await;
        state = s["payload"]["channels"]["telegram"].clone();
        if state["lastError"]
            .as_str()
            .is_some_and(|e| e.contains("401"))
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        state["lastError"]
            .as_str()
            .unwrap_or_default()
            .contains("401"),
        "{state}"
    );
    assert_ne!(state["healthState"], "healthy");
    // The WebSocket gateway is untouched.
    let events = crate::support::say(&mut c, "agent:main:main", "still here", "ws-1").await;
    assert_eq!(crate::support::final_text(&events), "You said: still here");
    let health = c.call("health", json!({})).await;
    assert!(
        health["payload"]["channels"]["telegram"].is_object(),
        "{health}"
    );
}

#[tokio::test]
async fn a_silent_platform_is_reported_degraded() {
    let fake = FakeTelegram::start(BOT_TOKEN);
    for _ in 0..3 {
        fake.fault("getUpdates", Fault::Hang(Duration::from_secs(4)));
    }
    let mut cfg = telegram_config(&fake, json!({}));
    cfg["gateway"] = json!({ "channelStaleEventThresholdMinutes": 0.01 });
    let gw = TestGateway::with_config(cfg);
    let mut c = crate::support::admin(&gw).await;
    let mut state = Value::Null;
    for _ in 0..100 {
        let s = c.call("channels.status", json!({})).await;
        state = s["payload"]["channels"]["telegram"].clone();
        if state["healthState"] == "degraded" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(state["healthState"], "degraded", "{state}");
    assert_eq!(state["running"], true);
}

#[tokio::test]
async fn logout_stops_polling_and_start_resumes_it() {
    let fake = FakeTelegram::start(BOT_TOKEN);
    let gw = TestGateway::with_config(telegram_config(&fake, json!({ "streamMode": "off" })));
    assert!(
        fake.until(LONG, |f| !f.calls("getUpdates").is_empty())
            .await
    );
    let mut c = crate::support::admin(&gw).await;
    let out = c
        .call("channels.logout", json!({ "channel": "telegram" }))
        .await;
    assert_eq!(out["payload"]["loggedOut"], true, "{out}");
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let polls = fake.calls("getUpdates").len();
    fake.dm(42, 1, "while out");
    tokio::time::sleep(Duration::from_millis(1200)).await;
    assert_eq!(
        fake.calls("getUpdates").len(),
        polls,
        "no poll while logged out"
    );
    let unknown = c
        .call("channels.logout", json!({ "channel": "smoke-signals" }))
        .await;
    assert_eq!(unknown["payload"]["cleared"], false, "{unknown}");
    c.call("channels.start", json!({ "channel": "telegram" }))
        .await;
    assert!(
        fake.until(LONG, |f| answers(f, 42, "You said: while out") == 1)
            .await
    );
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
    tokio::time::sleep(Duration::from_millis(300)).await;
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
async fn the_pairing_cli_lists_and_approves_through_the_gateway() {
    let fake = FakeTelegram::start(BOT_TOKEN);
    let gw = pairing_gateway(&fake);
    fake.dm(77, 1, "let me in");
    let code = pairing_code(&fake, 77).await;
    let bin = env!("CARGO_BIN_EXE_ferroclaw");
    let run = |args: &[&str]| {
        std::process::Command::new(bin)
            .args(args)
            .args(["--url", &gw.ws_url(), "--token", crate::support::TOKEN])
            .env_remove("OPENCLAW_GATEWAY_TOKEN")
            .output()
            .unwrap()
    };
    let list = run(&["pairing", "list"]);
    let out = String::from_utf8_lossy(&list.stdout);
    assert!(
        list.status.success() && out.contains(&code) && out.contains("77"),
        "{out}"
    );
    let wrong = run(&["pairing", "approve", "telegram", "ZZZZ9999"]);
    assert!(!wrong.status.success());
    assert!(String::from_utf8_lossy(&wrong.stderr).contains("no pairing request"));
    let ok = run(&["pairing", "approve", "telegram", &code.to_ascii_lowercase()]);
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    assert!(String::from_utf8_lossy(&ok.stdout).contains("approved 77"));
    fake.dm(77, 2, "thanks");
    assert!(
        fake.until(LONG, |f| answers(f, 77, "You said: thanks") == 1)
            .await
    );
}

#[tokio::test]
async fn a_stranger_on_an_open_channel_never_runs_a_command_on_the_host() {
    let fake = FakeTelegram::start(BOT_TOKEN);
    // Even with exec fully open for operators, a sender the allowlist does
    // not name gets no host command.
    let mut cfg = telegram_config(
        &fake,
        json!({ "dmPolicy": "open", "allowFrom": ["*", 42], "streamMode": "off" }),
    );
    cfg["tools"] = json!({ "exec": { "security": "full", "ask": "off" } });
    let gw = TestGateway::with_config(cfg);
    let workspace = gw.state_dir().join("workspace");
    fake.dm(
        666,
        1,
        "@tool exec {\"command\":\"touch pwned-by-stranger\"}",
    );
    assert!(fake.until(LONG, |f| !f.sent_to(666).is_empty()).await);
    let reply = fake.sent_to(666)[0].text.clone();
    assert!(reply.contains("not run"), "{reply}");
    assert!(!workspace.join("pwned-by-stranger").exists());
    // The allowlisted owner, in the same (main) session, may.
    fake.dm(42, 2, "@tool exec {\"command\":\"touch made-by-owner\"}");
    assert!(fake.until(LONG, |f| !f.sent_to(42).is_empty()).await);
    assert!(
        workspace.join("made-by-owner").exists(),
        "{:?}",
        fake.sent_to(42)
    );
    // And a stranger's message is never steered into the owner's run.
    fake.dm(42, 3, "@delay 100\nslow owner words to stream here");
    tokio::time::sleep(Duration::from_millis(150)).await;
    fake.dm(666, 4, "@tool exec {\"command\":\"touch steered-in\"}");
    assert!(
        fake.until(LONG, |f| f.sent_to(666).len() == 2).await,
        "{:?}",
        fake.sent()
    );
    assert!(!workspace.join("steered-in").exists());
}

#[tokio::test]
async fn the_shipped_exec_default_asks_an_operator_and_denies_without_an_answer() {
    // The base config's open exec removed: the shipped default applies.
    let mut cfg = json!({ "tools": { "exec": { "security": null, "ask": null, "approvalTimeoutSeconds": 1 } } });
    cfg["agents"] = json!({ "defaults": { "sandbox": { "mode": "off" } } });
    let gw = TestGateway::with_config(cfg);
    let mut c = crate::support::admin(&gw).await;
    let events = crate::support::say(
        &mut c,
        "main",
        "@tool exec {\"command\":\"touch by-default\"}",
        "ex-1",
    )
    .await;
    let text = crate::support::final_text(&events);
    assert!(text.contains("not run"), "{text}");
    assert!(!gw.state_dir().join("workspace/by-default").exists());
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
    tokio::time::sleep(Duration::from_millis(300)).await;
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

#[tokio::test]
async fn rapid_texts_are_debounced_into_one_turn_and_commands_go_at_once() {
    let fake = FakeTelegram::start(BOT_TOKEN);
    let mut cfg = telegram_config(&fake, json!({ "streamMode": "off" }));
    cfg["messages"] = json!({ "inbound": { "debounceMs": 400 } });
    let _gw = TestGateway::with_config(cfg);
    fake.dm(42, 1, "first part");
    fake.dm(42, 2, "second part");
    fake.dm(42, 3, "third part");
    assert!(fake.until(LONG, |f| !f.sent_to(42).is_empty()).await);
    tokio::time::sleep(Duration::from_millis(600)).await;
    let sent = fake.sent_to(42);
    assert_eq!(sent.len(), 1, "one turn: {sent:?}");
    assert_eq!(
        sent[0].text,
        "You said: first part\nsecond part\nthird part"
    );
    // A command flushes what waits and runs alone, at once.
    fake.dm(42, 4, "before the command");
    fake.dm(42, 5, "/status");
    assert!(
        fake.until(LONG, |f| f.sent_to(42).len() >= 3).await,
        "{:?}",
        fake.sent()
    );
    // The waiting text went on its own (not merged into the command); a
    // directive answers at once, so the two replies may come in either order.
    let texts: Vec<String> = fake.sent_to(42).iter().map(|s| s.text.clone()).collect();
    assert!(
        texts[1..].contains(&"You said: before the command".to_string()),
        "{texts:?}"
    );
    assert!(
        texts[1..].iter().any(|t| t.starts_with("Session ")),
        "{texts:?}"
    );
}

#[tokio::test]
async fn garbage_from_the_platform_is_skipped_and_the_adapter_keeps_going() {
    let fake = FakeTelegram::start(BOT_TOKEN);
    fake.fault("getUpdates", Fault::Garbage);
    fake.fault("getUpdates", Fault::Server(502));
    let gw = TestGateway::with_config(telegram_config(&fake, json!({ "streamMode": "off" })));
    // Updates that are not what the Bot API sends: skipped, the cursor moves past them.
    fake.push_raw(json!({ "message": "not an object" }));
    fake.push_raw(json!({ "message": { "message_id": "x", "chat": 5 } }));
    fake.push_raw(json!({ "edited_message": { "message_id": 1, "date": 1, "chat": { "id": 42, "type": "private" }, "text": "edit" } }));
    fake.push_raw(json!({ "callback_query": { "id": "1" } }));
    // A message from a chat nobody allowed, and one from the owner.
    fake.dm(31337, 1, "who are you");
    fake.dm(42, 2, "still answering?");
    assert!(
        fake.until(LONG, |f| answers(f, 42, "You said: still answering?") == 1)
            .await,
        "{:?}",
        fake.sent()
    );
    assert!(
        fake.until(LONG, |f| f.unconfirmed() == 0).await,
        "every update confirmed"
    );
    assert!(fake.sent_to(31337).is_empty());
    let mut c = crate::support::admin(&gw).await;
    let status = c.call("channels.status", json!({})).await;
    assert_eq!(
        status["payload"]["channels"]["telegram"]["running"], true,
        "{status}"
    );
}

async fn patch(c: &mut crate::support::Client, raw: String) -> Value {
    let hash = c.call("config.get", json!({})).await["payload"]["hash"].clone();
    c.call("config.patch", json!({ "raw": raw, "baseHash": hash }))
        .await
}

#[tokio::test]
async fn a_config_change_starts_accounts_and_rebuilds_the_routes_without_a_restart() {
    let fake = FakeTelegram::start(BOT_TOKEN);
    let gw = TestGateway::with_config(
        json!({ "agents": { "list": [{ "id": "main", "default": true }, { "id": "ops" }] } }),
    );
    let mut c = crate::support::admin(&gw).await;
    let section = telegram_config(&fake, json!({ "streamMode": "off" }));
    let r = patch(&mut c, section.to_string()).await;
    assert_eq!(r["ok"], true, "{r}");
    fake.dm(42, 1, "now you listen");
    assert!(
        fake.until(LONG, |f| answers(f, 42, "You said: now you listen") == 1)
            .await
    );
    let status = c.call("channels.status", json!({})).await;
    assert_eq!(status["payload"]["channelOrder"], json!(["telegram"]));
    // A peer binding sends this chat to the ops agent from now on.
    let bind = json!({ "bindings": [{ "agentId": "ops", "match": { "channel": "telegram", "peer": { "kind": "direct", "id": "42" } } }] });
    let r = patch(&mut c, bind.to_string()).await;
    assert_eq!(r["ok"], true, "{r}");
    fake.dm(42, 2, "and now?");
    assert!(
        fake.until(LONG, |f| answers(f, 42, "You said: and now?") == 1)
            .await
    );
    let list = c.call("sessions.list", json!({})).await;
    let keys: Vec<String> = list["payload"]["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["key"].as_str().unwrap().to_string())
        .collect();
    assert!(keys.contains(&"agent:ops:main".to_string()), "{keys:?}");
}
