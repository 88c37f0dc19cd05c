//! The channels' delivery contract under crashes, against the real binary
//! and the fake Bot API: messages from several chats arrive while the
//! gateway is SIGKILLed at random points (proptest draws the schedule) and
//! restarted. At the end every update the platform handed out was
//! confirmed, every one was handed to its session once (one run per
//! message), every run's reply is settled in the outbox, and nothing
//! reached Telegram twice: each sent chunk is one Telegram message, each
//! reply text is in its chat at most once, and a chunk whose send had no
//! answer (`unknown`) is the only way a reply may be missing.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use ferroclaw_actors::channels::ledger::{OutState, OutboxItem};
use ferroclaw_actors::store::{Store, Tree};
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, TestRunner};
use serde_json::{json, Value};

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

async fn quiet(fake: &FakeTelegram) {
    let mut last = (usize::MAX, 0usize);
    let mut stable = 0;
    for _ in 0..300 {
        let now = (
            fake.sent().len(),
            fake.sent().iter().map(|s| s.edits).sum::<usize>(),
        );
        if now == last && fake.unconfirmed() == 0 {
            stable += 1;
            if stable >= 15 {
                return;
            }
        } else {
            stable = 0;
        }
        last = now;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
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
    let mut pushed: Vec<(i64, i64, String)> = Vec::new();
    let mut crashes = 0;
    for (i, (chat, delay, pause, crash)) in steps.iter().enumerate() {
        let chat = 100 + chat;
        let id = i as i64 + 1;
        let words = format!("m{id}x one two three");
        fake.dm(chat, id, &format!("@delay {delay}\n{words}"));
        pushed.push((chat, id, format!("You said: {words}")));
        tokio::time::sleep(Duration::from_millis(u64::from(*pause))).await;
        if *crash {
            sigkill(&mut child);
            crashes += 1;
            child = spawn_gateway(dir.path()).0;
        }
    }
    quiet(&fake).await;
    sigkill(&mut child);
    assert!(crashes >= 2, "the schedule crashed {crashes} times");
    assert_eq!(fake.unconfirmed(), 0, "every update was confirmed");

    let store = Store::open(dir.path()).unwrap();
    let open: Vec<(String, Value)> = store.scan(Tree::ChannelDeliveries, "").unwrap();
    assert!(open.is_empty(), "deliveries left unfinished: {open:?}");
    let waiting: Vec<(String, Value)> = store.scan(Tree::ChannelDispatch, "").unwrap();
    assert!(waiting.is_empty(), "updates never handed over: {waiting:?}");
    let chunks: Vec<OutboxItem> = store
        .scan::<OutboxItem>(Tree::Outbox, "")
        .unwrap()
        .into_iter()
        .map(|(_, c)| c)
        .collect();
    let sent = fake.sent();
    // Each sent chunk is exactly one Telegram message with its text (the
    // final chunk of a partial stream edits the preview's message).
    let mut by_id: HashMap<String, usize> = HashMap::new();
    for c in &chunks {
        if let OutState::Sent { message_id, .. } = &c.state {
            if c.edit_of.is_none() {
                *by_id.entry(message_id.clone()).or_default() += 1;
            }
            let m = sent
                .iter()
                .find(|s| s.message_id.to_string() == *message_id);
            let m = m
                .unwrap_or_else(|| panic!("chunk {} sent as {message_id}, not in Telegram", c.key));
            assert_eq!(m.chat_id.to_string(), c.target);
            if !c.key.ends_with("preview") {
                assert_eq!(m.text, c.text, "chunk {}", c.key);
            }
        }
        assert!(
            !matches!(c.state, OutState::Pending | OutState::Sending { .. }),
            "{c:?}"
        );
    }
    assert!(
        by_id.values().all(|n| *n == 1),
        "one message per chunk: {by_id:?}"
    );
    // Every Telegram message is a chunk the outbox knows (nothing untracked,
    // nothing sent twice).
    for m in &sent {
        let known = chunks.iter().any(|c| match &c.state {
            OutState::Sent { message_id, .. } => *message_id == m.message_id.to_string(),
            OutState::Unknown { .. } => c.target == m.chat_id.to_string(),
            _ => false,
        });
        assert!(known, "a Telegram message no chunk accounts for: {m:?}");
    }
    // Every message: one run, answered at most once, and answered unless its
    // reply's send had no answer.
    let mut outcomes: BTreeMap<i64, &str> = BTreeMap::new();
    for (chat, id, answer) in &pushed {
        let run = format!("telegram:telegram/default/{chat}/{id}");
        let mine: Vec<&OutboxItem> = chunks
            .iter()
            .filter(|c| c.key.contains(&format!("/{run}/")))
            .collect();
        let landed = sent
            .iter()
            .filter(|s| s.chat_id == *chat && s.text == *answer)
            .count();
        assert!(landed <= 1, "{answer} reached chat {chat} {landed} times");
        let unknown = mine
            .iter()
            .any(|c| matches!(c.state, OutState::Unknown { .. }));
        let noticed = mine.iter().any(|c| c.text.starts_with('⚠'));
        let outcome = match (landed, noticed, unknown) {
            (1, false, _) => "answered",
            (0, true, _) => "interrupted",
            (0, false, true) => "unknown",
            other => panic!("message {id} in chat {chat}: {other:?}; chunks {mine:?}"),
        };
        outcomes.insert(*id, outcome);
    }
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
