//! The channels' delivery contract under crashes, against the real binary
//! and the fake Bot API: messages from several chats arrive while the
//! gateway is SIGKILLed at random points (proptest draws the schedule) and
//! restarted. At the end every update the platform handed out was
//! confirmed, every one was handed to its session once (one run per
//! message), every run's reply is settled in the outbox, and nothing
//! reached Telegram twice: each sent chunk is one Telegram message, each
//! reply text is in its chat at most once, and a chunk whose send had no
//! answer (`unknown`) is the only way a reply may be missing.

use std::time::Duration;

use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, TestRunner};
use serde_json::json;

use super::channel_crash::{check, quiet, Landed, Pushed};
use super::telegram::BOT_TOKEN;
use crate::support::fake_telegram::FakeTelegram;
use crate::support::process::{sigkill, spawn_gateway, Gateway};

/// One message of the load: (chat, words streamed every `delay` ms, pause after).
type Step = (i64, u16, u16, bool);

fn schedule() -> impl Strategy<Value = Vec<Step>> {
    prop::collection::vec(
        (0i64..6, 0u16..25, 0u16..250, prop::bool::weighted(0.2)),
        36,
    )
}

fn write_config(dir: &std::path::Path, fake: &FakeTelegram, stream: &str) {
    let cfg = json!({
        "channels": { "telegram": {
            "botToken": BOT_TOKEN, "apiBaseUrl": fake.base, "dmPolicy": "allowlist",
            "allowFrom": (100..106).collect::<Vec<i64>>(), "pollTimeoutSeconds": 1,
            "streamMode": stream, "editIntervalMs": 30, "typingMode": "never",
        } },
        "messages": { "queue": { "mode": "followup", "debounceMs": 0 } },
    });
    std::fs::write(dir.join("ferroclaw.json"), cfg.to_string()).unwrap();
}

async fn crash_case(stream: &str) {
    let fake = FakeTelegram::start(BOT_TOKEN);
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path(), &fake, stream);
    let (mut child, _, _): (Gateway, _, _) = spawn_gateway(dir.path());
    let mut runner = TestRunner::new(Config {
        cases: 1,
        ..Config::default()
    });
    let steps = schedule().new_tree(&mut runner).unwrap().current();
    let mut pushed: Vec<Pushed> = Vec::new();
    let mut crashes = 0;
    for (i, (chat, delay, pause, crash)) in steps.iter().enumerate() {
        let chat = 100 + chat;
        let id = i as i64 + 1;
        let words = format!("m{id}x one two three");
        fake.dm(chat, id, &format!("@delay {delay}\n{words}"));
        pushed.push(Pushed {
            chat: chat.to_string(),
            key: format!("telegram/default/{chat}/{id}"),
            answer: format!("You said: {words}"),
        });
        tokio::time::sleep(Duration::from_millis(u64::from(*pause))).await;
        if *crash {
            sigkill(&mut child);
            crashes += 1;
            child = spawn_gateway(dir.path()).0;
        }
    }
    quiet(
        || {
            let sent = fake.sent();
            (sent.len(), sent.iter().map(|s| s.edits).sum())
        },
        || fake.unconfirmed() == 0,
    )
    .await;
    sigkill(&mut child);
    assert!(crashes >= 2, "the schedule crashed {crashes} times");
    assert_eq!(fake.unconfirmed(), 0, "every update was confirmed");
    let landed: Vec<Landed> = fake
        .sent()
        .into_iter()
        .map(|s| Landed {
            chat: s.chat_id.to_string(),
            id: s.message_id.to_string(),
            text: s.text,
        })
        .collect();
    let outcomes = check(dir.path(), "telegram", &landed, &pushed);
    let answered = outcomes.values().filter(|o| **o == "answered").count();
    eprintln!(
        "telegram crash ({stream}): {crashes} crashes, {} messages: {answered} answered, {:?}",
        pushed.len(),
        outcomes
    );
    assert!(answered >= pushed.len() / 2, "{outcomes:?}");
}

#[tokio::test]
async fn sigkill_under_load_never_sends_twice_nor_drops_an_update_whole_replies() {
    crash_case("off").await;
}

#[tokio::test]
async fn sigkill_under_load_never_sends_twice_nor_drops_an_update_streamed_previews() {
    crash_case("partial").await;
}
