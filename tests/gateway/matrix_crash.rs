//! Matrix's delivery contract under crashes, against the real binary and a
//! real Synapse: three people write to the bot in their direct chats while
//! the gateway is SIGKILLed at random points (proptest draws the schedule)
//! and restarted; some messages arrive while no gateway syncs. The
//! restarted gateway syncs on from its stored `since` token. At the end
//! every message was handed to its session once, every reply is settled in
//! the outbox, each sent chunk is one event in the homeserver's own room
//! timeline with its text, and no reply is there twice (a chunk resent
//! after a crash carries its outbox key as txnId: Synapse returns the first
//! event).

use std::collections::HashMap;
use std::time::Duration;

use serde_json::json;

use super::channel_crash::{
    after_last_crash, check, drive, quiet, schedule, tail_answered, Landed, Pushed,
};
use super::matrix::until;
use crate::support::process::{sigkill, spawn_gateway, Gateway};
use crate::support::synapse::{synapse, unique, Human};

const PASSWORD: &str = "bot-pass-0123456789";

#[tokio::test]
async fn sigkill_under_load_never_sends_twice_nor_loses_a_message() {
    let hs = synapse();
    let bot = unique("crashbot");
    let bot_id = hs.register(&bot, PASSWORD);
    let mut people: Vec<Human> = Vec::new();
    for _ in 0..3 {
        people.push(hs.human(&unique("p")).await);
    }
    let mut rooms = Vec::new();
    for p in &people {
        rooms.push(p.dm(&bot_id).await);
    }
    let dir = tempfile::tempdir().unwrap();
    let allow: Vec<&str> = people.iter().map(|p| p.user_id.as_str()).collect();
    let cfg = json!({
        "channels": { "matrix": { "homeserver": hs.url, "userId": bot_id, "password": PASSWORD,
            "dm": { "policy": "allowlist", "allowFrom": allow }, "pollTimeoutSeconds": 5 } },
        "messages": { "queue": { "mode": "followup", "debounceMs": 0, "cap": 100 } },
    });
    std::fs::write(dir.path().join("ferroclaw.json"), cfg.to_string()).unwrap();
    let (mut child, _, _): (Gateway, _, _) = spawn_gateway(dir.path());
    for (p, room) in people.iter().zip(&rooms) {
        assert!(
            until(Duration::from_secs(60), async || p
                .joined(room, &bot_id)
                .await)
            .await
        );
    }
    let steps = schedule("matrix_crash", 3, 24);
    let push = |i: usize, c: u8, body: &str| {
        let (p, room) = (&people[c as usize], &rooms[c as usize]);
        let event = p.say_sync(room, &format!("c{i}"), body);
        Pushed {
            key: format!("matrix/default/{room}/{event}"),
            chat: room.clone(),
            answer: String::new(),
        }
    };
    let (pushed, crashes) = drive(dir.path(), &mut child, &steps, push).await;
    // The homeserver confirms nothing: the messages pushed after the last restart
    // answered (the test requires it below) say the gateway took every
    // message, since one replayed after a restart comes before them.
    quiet(&child, async || {
        let mut said = Vec::new();
        for (p, room) in people.iter().zip(&rooms) {
            for e in p.messages_from(room, &bot_id).await {
                said.push((
                    room.clone(),
                    e["content"]["body"].as_str().unwrap_or("").to_string(),
                ));
            }
        }
        after_last_crash(&steps).map(|i| &pushed[i]).all(|p| {
            said.iter()
                .any(|(room, text)| *room == p.chat && text.contains(&p.answer))
        })
    })
    .await;
    sigkill(&mut child);
    assert!(
        crashes >= 2,
        "the schedule crashed {crashes} times (two at least by construction)"
    );
    let mut landed = Vec::new();
    let mut per_text: HashMap<String, usize> = HashMap::new();
    for (p, room) in people.iter().zip(&rooms) {
        for e in p.messages_from(room, &bot_id).await {
            let text = e["content"]["body"].as_str().unwrap_or("").to_string();
            if text.starts_with("You said") {
                *per_text.entry(text.clone()).or_default() += 1;
            }
            landed.push(Landed {
                chat: room.clone(),
                id: e["event_id"].as_str().unwrap_or("").to_string(),
                text,
            });
        }
    }
    let twice: Vec<_> = per_text.iter().filter(|(_, n)| **n > 1).collect();
    assert!(
        twice.is_empty(),
        "an answer in the homeserver's timeline twice: {twice:?}"
    );
    let outcomes = check(dir.path(), "matrix", "matrix", crashes, &landed, &pushed);
    let answered = outcomes.values().filter(|o| **o == "answered").count();
    eprintln!(
        "matrix crash: {crashes} crashes, {} messages: {answered} answered, {outcomes:?}",
        pushed.len()
    );
    tail_answered(&steps, &outcomes);
}
