//! Discord's delivery contract under crashes, against the real binary and
//! the fake Discord: messages from several DMs arrive over the gateway
//! while the gateway process is SIGKILLed at random points (proptest draws
//! the schedule) and restarted, so each restart resumes or identifies
//! again and Discord replays or the ledger remembers; replies stream as a
//! preview edited by REST. At the end every message was handed to its
//! session once, every reply is settled in the outbox, and nothing reached
//! Discord twice (`channel_crash::check`).

use std::time::Duration;

use serde_json::json;

use super::channel_crash::{
    after_last_crash, check, drive, quiet, schedule, tail_answered, Landed, Pushed,
};
use crate::support::fake_discord::{FakeDiscord, TOKEN};
use crate::support::process::{sigkill, spawn_gateway, Gateway};

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
        "messages": { "queue": { "mode": "followup", "debounceMs": 0, "cap": 100 } },
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
    // One message answered before the first crash: its record's flush
    // made the session from READY durable too, so a restart that reaches
    // the gateway resumes (a crash between READY and that flush would
    // rightly identify again).
    fake.message("D100", None, "100", &[], "warm up");
    assert!(
        fake.until(Duration::from_secs(20), |f| f
            .created_in("D100")
            .iter()
            .any(|c| c.content.contains("You said: warm up")))
            .await
    );
    let steps = schedule("discord_crash", 6, 30);
    let (pushed, crashes) = drive(dir.path(), &mut child, &steps, |_, dm, text| {
        let channel = format!("D10{dm}");
        let id = fake.message(&channel, None, &format!("10{dm}"), &[], text);
        Pushed {
            key: format!("discord/default/{channel}/{id}"),
            chat: channel,
            answer: String::new(),
        }
    })
    .await;
    // Discord confirms nothing: the messages pushed after the last restart
    // answered (the test requires it below) say the gateway took every
    // message, since one replayed after a restart comes before them.
    quiet(&child, async || {
        after_last_crash(&steps).all(|i| {
            let p = &pushed[i];
            fake.created_in(&p.chat)
                .iter()
                .any(|c| c.content.contains(&p.answer))
        })
    })
    .await;
    sigkill(&mut child);
    assert!(
        crashes >= 2,
        "the schedule crashed {crashes} times (two at least by construction)"
    );
    // A restart SIGKILLed again before it reached the gateway (the pause
    // after a crash may be shorter than a start) never spoke there. One
    // identify in all: every socket that spoke after it resumed the stored
    // session. The last restart spoke (it answered the messages pushed
    // after it: `tail_answered` below), so it resumed too.
    let (identifies, resumes, opened, ..) = fake.gateway_stats();
    assert_eq!(
        identifies, 1,
        "every restart that reached the gateway resumed the stored session"
    );
    assert!(resumes >= 1, "the last restart resumed: {resumes} resumes");
    let landed: Vec<Landed> = fake
        .created()
        .into_iter()
        .map(|c| Landed {
            chat: c.channel,
            id: c.id,
            text: c.content,
        })
        .collect();
    let outcomes = check(dir.path(), "discord", "discord", crashes, &landed, &pushed);
    let answered = outcomes.values().filter(|o| **o == "answered").count();
    eprintln!(
        "discord crash: {crashes} crashes, {opened} sockets, {resumes} resumes, {} messages: {answered} answered, {outcomes:?}",
        pushed.len()
    );
    tail_answered(&steps, &outcomes);
}
