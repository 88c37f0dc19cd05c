//! Slack's delivery contract under crashes, against the real binary and
//! the fake Slack: messages from several DMs arrive over Socket Mode while
//! the gateway is SIGKILLed at random points (proptest draws the schedule)
//! and restarted; replies stream as a preview updated by `chat.update`.
//! At the end every envelope was acknowledged, every message was handed to
//! its session once, every reply is settled in the outbox, and nothing
//! reached Slack twice: each sent chunk is one Slack message, each reply
//! text is in its channel at most once, and a chunk whose post had no
//! answer (`unknown`) is the only way a reply may be missing.

use serde_json::json;

use super::channel_crash::{check, drive, quiet, schedule, tail_answered, Landed, Pushed};
use crate::support::fake_slack::{FakeSlack, APP_TOKEN, BOT_TOKEN};
use crate::support::process::{sigkill, spawn_gateway, Gateway};

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
        "messages": { "queue": { "mode": "followup", "debounceMs": 0, "cap": 100 } },
    });
    std::fs::write(dir.path().join("ferroclaw.json"), cfg.to_string()).unwrap();
    let (mut child, _, _): (Gateway, _, _) = spawn_gateway(dir.path());
    let steps = schedule("slack_crash", 6, 30);
    let (pushed, crashes) = drive(dir.path(), &mut child, &steps, |_, dm, text| {
        let channel = format!("D10{dm}");
        let (_, ts) = fake.message(&channel, "im", &format!("U10{dm}"), text, None);
        Pushed {
            key: format!("slack/default/{channel}/{ts}"),
            chat: channel,
            answer: String::new(),
        }
    })
    .await;
    quiet(&child, async || fake.unacked() == 0).await;
    sigkill(&mut child);
    assert!(
        crashes >= 2,
        "the schedule crashed {crashes} times (two at least by construction)"
    );
    assert_eq!(fake.unacked(), 0, "every envelope was acknowledged");
    let landed: Vec<Landed> = fake
        .posted()
        .into_iter()
        .map(|p| Landed {
            chat: p.channel,
            id: p.ts,
            text: p.text,
        })
        .collect();
    let outcomes = check(dir.path(), "slack", "slack", crashes, &landed, &pushed);
    let answered = outcomes.values().filter(|o| **o == "answered").count();
    eprintln!(
        "slack crash: {crashes} crashes, {} messages: {answered} answered, {outcomes:?}",
        pushed.len()
    );
    tail_answered(&steps, &outcomes);
}
