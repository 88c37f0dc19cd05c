//! The trust boundary end to end (ARCHITECTURE.md, "Trust"), one file per
//! road a stranger could take: a sender the channel lets in but `allowFrom`
//! does not name, on the fake Telegram (and a webhook where it applies),
//! with the owner's exec wide open (`tools.exec: {security: "full", ask:
//! "off"}`, as README tells owners to do for themselves). Each test checks
//! that nothing ran on the host, no file a trusted turn obeys changed, no
//! other session's process was seen, no secret came out, and that the
//! stranger still got a reply (the pipeline works; the tool was refused).

mod audit;
mod browsers;
mod catalog;
mod channel_policy;
mod environment;
mod files;
mod ledger;
mod modes;
mod placeholders;
mod processes;
mod restore;
mod secrets;
mod travel;
mod wrapping;

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{json, Value};

use super::telegram::{telegram_config, BOT_TOKEN};
use crate::support::fake_telegram::FakeTelegram;
use crate::support::{Client, TestGateway};

/// The owner: named in `allowFrom`, an operator.
pub const OWNER: i64 = 42;
/// Anyone else who finds the bot: let in by `dmPolicy: "open"`, never an operator.
pub const STRANGER: i64 = 666;
pub const LONG: Duration = Duration::from_secs(20);

/// Telegram open to everyone (`"*"` makes nobody an operator), the owner
/// named, replies in one message; `extra` merged over the whole config.
pub fn open_config(fake: &FakeTelegram, extra: Value) -> Value {
    let mut cfg = telegram_config(
        fake,
        json!({ "dmPolicy": "open", "allowFrom": ["*", OWNER], "streamMode": "off" }),
    );
    cfg["tools"] = json!({ "exec": { "security": "full", "ask": "off" } });
    ferroclaw::config::merge_patch(&mut cfg, &extra);
    cfg
}

/// A fake Telegram and a gateway polling it with `open_config(extra)`.
pub fn start(extra: Value, files: &[(&str, &str)]) -> (FakeTelegram, TestGateway) {
    let fake = FakeTelegram::start(BOT_TOKEN);
    let gw = TestGateway::with_files(open_config(&fake, extra), files);
    (fake, gw)
}

/// `user` sends `text` as message `id`; returns the reply it got.
pub async fn ask(fake: &FakeTelegram, user: i64, id: i64, text: &str) -> String {
    let before = fake.sent_to(user).len();
    fake.dm(user, id, text);
    assert!(
        fake.until(LONG, |f| f.sent_to(user).len() > before).await,
        "no reply to {user} for {text:?}: {:?}",
        fake.sent()
    );
    fake.sent_to(user)[before..]
        .iter()
        .map(|s| s.text.clone())
        .collect::<Vec<_>>()
        .join("\n")
}

/// An `@tool` line the offline model calls.
pub fn tool(name: &str, args: Value) -> String {
    format!("@tool {name} {args}")
}

pub fn workspace(gw: &TestGateway) -> PathBuf {
    gw.state_dir().join("workspace")
}

/// The `tools.untrusted.allow` list the shipped config has, plus `more`:
/// an owner who widened the profile.
pub fn widened(more: &[&str]) -> Value {
    let mut allow = vec![
        "read",
        "ls",
        "find",
        "grep",
        "exec",
        "process",
        "web_fetch",
        "memory_search",
        "memory_get",
        "session_status",
    ];
    allow.extend_from_slice(more);
    json!({ "tools": { "untrusted": { "allow": allow } } })
}

/// `chat.history` of `key` until `pred` holds for its messages (hang guard: 20 s).
pub async fn history_until(
    c: &mut Client,
    key: &str,
    pred: impl Fn(&[Value]) -> bool,
) -> Vec<Value> {
    let deadline = tokio::time::Instant::now() + LONG;
    loop {
        let h = c.call("chat.history", json!({ "sessionKey": key })).await;
        let messages = h["payload"]["messages"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        if pred(&messages) {
            return messages;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{key}: never got there: {messages:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The text of every tool result in `messages`.
pub fn tool_results(messages: &[Value]) -> Vec<String> {
    messages
        .iter()
        .filter(|m| m["role"] == "toolResult")
        .map(|m| m["content"][0]["text"].as_str().unwrap_or("").to_string())
        .collect()
}

/// The stored transcript entries of `key` (first page of `sessions.export`).
pub async fn stored(c: &mut Client, key: &str) -> Vec<Value> {
    let r = c.call("sessions.export", json!({ "key": key })).await;
    assert_eq!(r["ok"], true, "{r}");
    r["payload"]["entries"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// The stored user entry whose displayed text contains `needle`.
pub async fn stored_user(c: &mut Client, key: &str, needle: &str) -> Value {
    stored(c, key)
        .await
        .into_iter()
        .find(|e| {
            e["message"]["role"] == "user"
                && e["message"]["content"][0]["text"]
                    .as_str()
                    .is_some_and(|t| t.contains(needle))
        })
        .unwrap_or_else(|| panic!("{key}: no user entry with {needle:?}"))
}

/// The key of the one sub-agent session there is.
pub async fn child_session(c: &mut Client) -> String {
    let list = c.call("sessions.list", json!({})).await;
    list["payload"]["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["key"].as_str().unwrap().to_string())
        .find(|k| k.contains(":subagent:"))
        .unwrap_or_else(|| panic!("no sub-agent: {list}"))
}
