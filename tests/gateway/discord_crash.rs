//! Discord's delivery contract under crashes, against the real binary and
//! the fake Discord: messages from several DMs arrive over the gateway
//! while the gateway process is SIGKILLed at random points (proptest draws
//! the schedule) and restarted, so each restart resumes or identifies
//! again and Discord replays or the ledger remembers; replies stream as a
//! preview edited by REST. At the end every message was handed to its
//! session once, every reply is settled in the outbox, and nothing reached
//! Discord twice (`channel_crash::check`).

use std::time::Duration;

use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, TestRunner};
use serde_json::json;

use super::channel_crash::{check, quiet, Landed, Pushed};
use crate::support::fake_discord::{FakeDiscord, TOKEN};
use crate::support::process::{sigkill, spawn_gateway, Gateway};

/// One message: (dm, words streamed every `delay` ms, pause after, crash).
type Step = (u8, u16, u16, bool);

fn schedule() -> impl Strategy<Value = Vec<Step>> {
    prop::collection::vec((0u8..6, 0u16..25, 0u16..250, prop::bool::weighted(0.2)), 30)
}

#[tokio::test]
async fn sigkill_under_load_never_posts_twice_nor_loses_a_message() {
    let fake = FakeDiscord::start(1000);
    let dir = tempfile::tempdir().unwrap();
    let users: Vec<String> = (0..6).map(|n| format!("10{n}")).collect();
    let cfg = json!({
        "channels": { "discord": {
            "token": TOKEN, "apiBaseUrl": fake.api, "gatewayUrl": fake.gateway,
            "dmPolicy": "allowlist", "allowFrom": users, "streamMode": "partial",
            "editIntervalMs": 30,
        } },
        "messages": { "queue": { "mode": "followup", "debounceMs": 0 } },
    });
    std::fs::write(dir.path().join("ferroclaw.json"), cfg.to_string()).unwrap();
    let (mut child, _, _): (Gateway, _, _) = spawn_gateway(dir.path());
    // Messages sent before the bot ever connected are not Discord's to
    // deliver: the load starts once it identified.
    assert!(
        fake.until(Duration::from_secs(20), |f| f.gateway_stats().0 == 1
            && f.gateway_stats().4)
            .await
    );
    let mut runner = TestRunner::new(Config {
        cases: 1,
        ..Config::default()
    });
    let steps = schedule().new_tree(&mut runner).unwrap().current();
    let mut pushed: Vec<Pushed> = Vec::new();
    let mut crashes = 0;
    for (i, (dm, delay, pause, crash)) in steps.iter().enumerate() {
        let channel = format!("D10{dm}");
        let words = format!("m{i}x one two three");
        let id = fake.message(
            &channel,
            None,
            &format!("10{dm}"),
            &[],
            &format!("@delay {delay}\n{words}"),
        );
        pushed.push(Pushed {
            key: format!("discord/default/{channel}/{id}"),
            chat: channel,
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
            let c = fake.created();
            (c.len(), c.iter().map(|c| c.edits).sum())
        },
        || true,
    )
    .await;
    sigkill(&mut child);
    assert!(crashes >= 2, "the schedule crashed {crashes} times");
    let (identifies, resumes, ..) = fake.gateway_stats();
    assert_eq!(identifies, 1, "every restart resumed the stored session");
    assert!(
        resumes as usize >= crashes,
        "{resumes} resumes for {crashes} crashes"
    );
    let landed: Vec<Landed> = fake
        .created()
        .into_iter()
        .map(|c| Landed {
            chat: c.channel,
            id: c.id,
            text: c.content,
        })
        .collect();
    let outcomes = check(dir.path(), "discord", &landed, &pushed);
    let answered = outcomes.values().filter(|o| **o == "answered").count();
    eprintln!(
        "discord crash: {crashes} crashes, {} messages: {answered} answered, {outcomes:?}",
        pushed.len()
    );
    assert!(answered >= pushed.len() / 2, "{outcomes:?}");
}
