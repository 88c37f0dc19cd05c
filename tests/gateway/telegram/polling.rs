//! The inbound side: long polling, replays, platform faults (429, 409,
//! garbage, silence, a refused token), logout and live config changes.

use std::time::Duration;

use serde_json::{json, Value};

use super::*;
use crate::support::fake_telegram::{FakeTelegram, Fault};
use crate::support::TestGateway;

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
    // The command menu is set once at the first start (its marker is
    // stored as the call returns, long before the next exchange ends).
    assert!(
        fake.until(LONG, |f| f.calls("setMyCommands").len() == 1)
            .await
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
    // Time is what is tested: a poll in flight at the logout ends, then
    // no poll comes in a window well past the poll loop's turnaround.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let polls = fake.calls("getUpdates").len();
    fake.dm(42, 1, "while out");
    // Time is what is tested, again: a message waits, and still no poll comes.
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
    assert_eq!(
        fake.sent_to(42)[0].text,
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
    // The barrier's answer comes after both: the three texts were one turn
    // (no reply to any of them alone came), the command and the text two.
    super::barrier(&fake, 42, 6).await;
    let texts: Vec<String> = fake.sent_to(42).iter().map(|s| s.text.clone()).collect();
    assert_eq!(texts.len(), 4, "one turn each, three before: {texts:?}");
    assert!(
        texts[1..3].contains(&"You said: before the command".to_string()),
        "{texts:?}"
    );
    assert!(
        texts[1..3].iter().any(|t| t.starts_with("Session ")),
        "{texts:?}"
    );
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
    // A send policy applied live keeps the next reply in the session.
    let deny = json!({ "session": { "sendPolicy": { "default": "deny" } } });
    let r = patch(&mut c, deny.to_string()).await;
    assert_eq!(r["ok"], true, "{r}");
    fake.dm(42, 3, "quietly please");
    let mut answered = false;
    for _ in 0..100 {
        let h = c
            .call("chat.history", json!({ "sessionKey": "agent:ops:main" }))
            .await;
        if h["payload"]["messages"]
            .to_string()
            .contains("You said: quietly please")
        {
            answered = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(answered, "the run answered in the session");
    crate::support::ledger::until_settled(gw.store(), "telegram/default/42/3").await;
    assert_eq!(
        answers(&fake, 42, "You said: quietly please"),
        0,
        "{:?}",
        fake.sent()
    );
}

/// `channels.status` says how the account listens and where its token
/// came from: the config file's `botToken`, or `TELEGRAM_BOT_TOKEN`.
#[tokio::test]
async fn channel_status_names_the_mode_and_where_the_token_came_from() {
    let fake = FakeTelegram::start(BOT_TOKEN);
    let source = |gw: &TestGateway| {
        let gw_url = gw.ws_url();
        async move {
            let mut c = crate::support::Client::connect(&gw_url).await;
            c.handshake(crate::support::connect_params(
                "cli",
                "cli",
                &["operator.admin"],
                Some(crate::support::TOKEN),
            ))
            .await;
            let s = c.call("channels.status", json!({})).await;
            let a = s["payload"]["channelAccounts"]["telegram"][0].clone();
            (a["mode"].clone(), a["tokenSource"].clone())
        }
    };
    let gw = TestGateway::with_config(telegram_config(&fake, json!({})));
    assert_eq!(source(&gw).await, (json!("polling"), json!("config")));
    drop(gw);
    let mut cfg = telegram_config(&fake, json!({}));
    cfg["channels"]["telegram"]
        .as_object_mut()
        .unwrap()
        .remove("botToken");
    let gw = TestGateway::with_env(cfg, &[], &[("TELEGRAM_BOT_TOKEN", BOT_TOKEN)]);
    assert_eq!(source(&gw).await, (json!("polling"), json!("env")));
}
