//! The Telegram adapter end to end against the fake Bot API
//! (`support::fake_telegram`): real long polling, sends, edits, faults.
//! `polling.rs` the inbound side and platform faults, `replies.rs` what
//! goes out (streaming, `send`, `deliver`, `wake`, policies), `access.rs`
//! who may talk and run commands; this file the shared set-up.

mod access;
mod late;
mod order;
mod polling;
mod probe;
mod replies;

use std::time::Duration;

use serde_json::{json, Value};

use crate::support::fake_telegram::FakeTelegram;
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

pub const LONG: Duration = Duration::from_secs(20);

pub fn answers(fake: &FakeTelegram, chat: i64, starts: &str) -> usize {
    fake.sent_to(chat)
        .iter()
        .filter(|s| s.text.starts_with(starts))
        .count()
}

/// A barrier for "nothing more was sent to `user`": the allowed `user`
/// says `barrier <message_id>` and its answer arrives. One chat's messages
/// run in order in its session and its replies leave the outbox in order,
/// so a reply owed to anything said there before would have come first.
pub async fn barrier(fake: &FakeTelegram, user: i64, message_id: i64) {
    let said = format!("barrier {message_id}");
    fake.dm(user, message_id, &said);
    let arrived = fake
        .until(LONG, |f| {
            f.sent_to(user).iter().any(|s| s.text.contains(&said))
        })
        .await;
    assert!(arrived, "the barrier was never answered: {:?}", fake.sent());
}

pub fn pairing_gateway(fake: &FakeTelegram) -> TestGateway {
    TestGateway::with_config(telegram_config(
        fake,
        json!({ "dmPolicy": "pairing", "allowFrom": [], "streamMode": "off" }),
    ))
}

/// Waits for the pairing code a stranger was sent, and returns it.
pub async fn pairing_code(fake: &FakeTelegram, user: i64) -> String {
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
pub async fn patch(c: &mut crate::support::Client, raw: String) -> Value {
    let hash = c.call("config.get", json!({})).await["payload"]["hash"].clone();
    c.call("config.patch", json!({ "raw": raw, "baseHash": hash }))
        .await
}
