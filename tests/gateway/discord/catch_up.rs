//! What was said while Discord kept no session for the bot (the gateway
//! was down past the resume window): after the new `READY`, each channel's
//! history from the last message taken is read back, answered once and in
//! order, with the guild rules and role bindings a live event would get;
//! what is older than `catchUp.maxAgeMinutes` gets one note instead.

use serde_json::json;

use super::*;
use crate::support::fake_discord::FakeDiscord;
use crate::support::{admin, TestGateway};

fn said(fake: &FakeDiscord, channel: &str, text: &str) -> Vec<usize> {
    fake.created_in(channel)
        .iter()
        .enumerate()
        .filter(|(_, c)| c.content.ends_with(text))
        .map(|(i, _)| i)
        .collect()
}

#[tokio::test]
async fn messages_sent_while_the_session_expired_are_read_back_and_answered_once_in_order() {
    let fake = FakeDiscord::start(1000);
    let guild = json!({ "streamMode": "off",
        "guilds": { "G1": { "channels": { "C1": { "allow": true, "requireMention": false } } } } });
    let mut cfg = discord_config(&fake, guild);
    cfg["bindings"] = json!([{ "agentId": "ops",
        "match": { "channel": "discord", "guildId": "G1", "roles": ["R-ops"] } }]);
    let mut gw = TestGateway::with_config(cfg);
    assert!(ready(&fake).await);
    fake.event(
        "THREAD_CREATE",
        json!({ "id": "T1", "parent_id": "C1", "guild_id": "G1", "type": 11 }),
    );
    fake.message("D1", None, USER, &[], "hello");
    fake.message("T1", Some("G1"), USER, &["R-ops"], "in the thread");
    // A stranger's DM is taken (and refused): its channel has a mark.
    fake.message("D7", None, "777", &[], "stranger before");
    assert!(
        fake.until(LONG, |f| answers(f, "D1", "You said: hello") == 1
            && said(f, "T1", ": in the thread").len() == 1)
            .await,
        "{:?}",
        fake.created()
    );
    gw.stop();
    fake.expire_session();
    let ancient = fake.message("D1", None, USER, &[], "ancient");
    fake.backdate("D1", &ancient, 30 * 3600);
    fake.message("D1", None, USER, &[], "while away one");
    fake.message("D1", None, USER, &[], "while away two");
    fake.message("T1", Some("G1"), USER, &["R-ops"], "thread while away");
    // The stranger's new message is read back too, and still refused.
    fake.message("D7", None, "777", &[], "stranger while away");
    gw.resume();
    assert!(
        fake.until(LONG, |f| answers(f, "D1", "You said: while away two") == 1
            && said(f, "T1", ": thread while away").len() == 1)
            .await,
        "{:?}",
        fake.created()
    );
    assert!(
        !fake.history_reads().is_empty(),
        "read back from the history"
    );
    let (identifies, ..) = fake.gateway_stats();
    assert_eq!(identifies, 2, "the expired session was identified anew");
    // The note comes once the catch-up's batch was taken; a live message
    // after it is the barrier.
    let noted = |f: &FakeDiscord| {
        f.created_in("D1")
            .iter()
            .any(|c| c.content.starts_with("(While I was away"))
    };
    assert!(fake.until(LONG, noted).await, "{:?}", fake.created());
    fake.message("D1", None, USER, &[], "barrier");
    assert!(
        fake.until(LONG, |f| answers(f, "D1", "You said: barrier") == 1)
            .await
    );
    let (one, two) = (
        said(&fake, "D1", "You said: while away one"),
        said(&fake, "D1", "You said: while away two"),
    );
    assert_eq!((one.len(), two.len()), (1, 1), "{:?}", fake.created());
    assert!(one[0] < two[0], "in order: {:?}", fake.created());
    assert!(said(&fake, "D1", "You said: ancient").is_empty());
    let notes: Vec<_> = fake
        .created_in("D1")
        .into_iter()
        .filter(|c| !c.content.contains("You said:"))
        .collect();
    assert_eq!(notes.len(), 1, "one note for the skipped one: {notes:?}");
    assert!(notes[0].content.starts_with("(While I was away, 1 message"));
    assert_eq!(said(&fake, "T1", ": thread while away").len(), 1);
    assert!(fake.created_in("D7").is_empty(), "{:?}", fake.created());
    // The thread's message was routed by its member roles, as live.
    let mut c = admin(&gw).await;
    let list = c.call("sessions.list", json!({})).await;
    let ops = list["payload"]["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| {
            s["key"]
                .as_str()
                .is_some_and(|k| k.starts_with("agent:ops:"))
        });
    assert_eq!(ops.count(), 1, "{list}");
}
