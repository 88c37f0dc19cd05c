//! Slack's delivery contract under crashes, against the real binary and
//! the fake Slack: messages from several DMs arrive over Socket Mode while
//! the gateway is SIGKILLed at random points (proptest draws the schedule)
//! and restarted; replies stream as a preview updated by `chat.update`.
//! At the end every envelope was acknowledged, every message was handed to
//! its session once, every reply is settled in the outbox, and nothing
//! reached Slack twice: each sent chunk is one Slack message, each reply
//! text is in its channel at most once, and a chunk whose post had no
//! answer (`unknown`) is the only way a reply may be missing.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use ferroclaw_actors::channels::ledger::{OutState, OutboxItem};
use ferroclaw_actors::store::{Store, Tree};
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, TestRunner};
use serde_json::{json, Value};

use crate::support::fake_slack::{FakeSlack, APP_TOKEN, BOT_TOKEN};
use crate::support::process::{sigkill, spawn_gateway, Gateway};

/// One message: (dm, words streamed every `delay` ms, pause after, crash).
type Step = (u8, u16, u16, bool);

fn schedule() -> impl Strategy<Value = Vec<Step>> {
    prop::collection::vec((0u8..6, 0u16..25, 0u16..250, prop::bool::weighted(0.2)), 30)
}

async fn quiet(fake: &FakeSlack) {
    let mut last = (usize::MAX, 0usize);
    let mut stable = 0;
    for _ in 0..300 {
        let posted = fake.posted();
        let now = (posted.len(), posted.iter().map(|p| p.edits).sum::<usize>());
        if now == last && fake.unacked() == 0 {
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

#[tokio::test]
async fn sigkill_under_load_never_posts_twice_nor_loses_an_event() {
    let fake = FakeSlack::start();
    let dir = tempfile::tempdir().unwrap();
    let users: Vec<String> = (0..6).map(|n| format!("U10{n}")).collect();
    let cfg = json!({
        "channels": { "slack": {
            "botToken": BOT_TOKEN, "appToken": APP_TOKEN, "apiBaseUrl": fake.api,
            "dmPolicy": "allowlist", "allowFrom": users, "streamMode": "partial",
            "editIntervalMs": 30, "pingIntervalSeconds": 1,
        } },
        "messages": { "queue": { "mode": "followup", "debounceMs": 0 } },
    });
    std::fs::write(dir.path().join("ferroclaw.json"), cfg.to_string()).unwrap();
    let (mut child, _, _): (Gateway, _, _) = spawn_gateway(dir.path());
    let mut runner = TestRunner::new(Config {
        cases: 1,
        ..Config::default()
    });
    let steps = schedule().new_tree(&mut runner).unwrap().current();
    let mut pushed: Vec<(String, String, String)> = Vec::new();
    let mut crashes = 0;
    for (i, (dm, delay, pause, crash)) in steps.iter().enumerate() {
        let channel = format!("D10{dm}");
        let words = format!("m{i}x one two three");
        let (_, ts) = fake.message(
            &channel,
            "im",
            &format!("U10{dm}"),
            &format!("@delay {delay}\n{words}"),
            None,
        );
        pushed.push((channel, ts, format!("You said: {words}")));
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
    assert_eq!(fake.unacked(), 0, "every envelope was acknowledged");

    let store = Store::open(dir.path()).unwrap();
    let open: Vec<(String, Value)> = store.scan(Tree::ChannelDeliveries, "").unwrap();
    assert!(open.is_empty(), "deliveries left unfinished: {open:?}");
    let waiting: Vec<(String, Value)> = store.scan(Tree::ChannelDispatch, "").unwrap();
    assert!(
        waiting.is_empty(),
        "messages never handed over: {waiting:?}"
    );
    let chunks: Vec<OutboxItem> = store
        .scan::<OutboxItem>(Tree::Outbox, "")
        .unwrap()
        .into_iter()
        .map(|(_, c)| c)
        .collect();
    let posted = fake.posted();
    let mut by_ts: HashMap<String, usize> = HashMap::new();
    for c in &chunks {
        if let OutState::Sent { message_id, .. } = &c.state {
            if c.edit_of.is_none() {
                *by_ts.entry(message_id.clone()).or_default() += 1;
            }
            let m = posted.iter().find(|p| p.ts == *message_id);
            let m =
                m.unwrap_or_else(|| panic!("chunk {} sent as {message_id}, not in Slack", c.key));
            assert_eq!(m.channel, c.target);
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
        by_ts.values().all(|n| *n == 1),
        "one message per chunk: {by_ts:?}"
    );
    for m in &posted {
        let known = chunks.iter().any(|c| match &c.state {
            OutState::Sent { message_id, .. } => *message_id == m.ts,
            OutState::Unknown { .. } => c.target == m.channel,
            _ => false,
        });
        assert!(known, "a Slack message no chunk accounts for: {m:?}");
    }
    let mut outcomes: BTreeMap<usize, &str> = BTreeMap::new();
    for (i, (channel, ts, answer)) in pushed.iter().enumerate() {
        let run = format!("slack:slack/default/{channel}/{ts}");
        let mine: Vec<&OutboxItem> = chunks
            .iter()
            .filter(|c| c.key.contains(&format!("/{run}/")))
            .collect();
        let landed = posted
            .iter()
            .filter(|p| p.channel == *channel && p.text == *answer)
            .count();
        assert!(landed <= 1, "{answer} reached {channel} {landed} times");
        let unknown = mine
            .iter()
            .any(|c| matches!(c.state, OutState::Unknown { .. }));
        let noticed = mine.iter().any(|c| c.text.starts_with('⚠'));
        let outcome = match (landed, noticed, unknown) {
            (1, false, _) => "answered",
            (0, true, _) => "interrupted",
            (0, false, true) => "unknown",
            other => panic!("message {i} in {channel}: {other:?}; chunks {mine:?}"),
        };
        outcomes.insert(i, outcome);
    }
    let answered = outcomes.values().filter(|o| **o == "answered").count();
    eprintln!(
        "slack crash: {crashes} crashes, {} messages: {answered} answered, {outcomes:?}",
        pushed.len()
    );
    assert!(answered >= pushed.len() / 2, "{outcomes:?}");
}
