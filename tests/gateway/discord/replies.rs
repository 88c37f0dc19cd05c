//! What goes out to Discord and who is answered.

use std::time::Duration;

use serde_json::json;

use super::*;
use crate::support::fake_discord::{FakeDiscord, Fault, BOT_ID};
use crate::support::{admin, TestGateway};

#[tokio::test]
async fn a_dm_streams_as_one_message_edited_with_typing() {
    let fake = FakeDiscord::start(1000);
    let _gw = TestGateway::with_config(discord_config(&fake, json!({})));
    assert!(ready(&fake).await);
    fake.message(
        "D1",
        None,
        USER,
        &[],
        "@delay 40\nhello there my **good** friend",
    );
    let want = "You said: hello there my **good** friend";
    assert!(
        fake.until(LONG, |f| f
            .created_in("D1")
            .iter()
            .any(|c| c.content == want))
            .await,
        "{:?}",
        fake.created()
    );
    let made = fake.created_in("D1");
    assert_eq!(made.len(), 1, "{made:?}");
    assert!(made[0].edits >= 2, "previews then the final: {made:?}");
    assert!(fake.typing().iter().any(|c| c == "D1"));
}

#[tokio::test]
async fn guild_messages_need_the_guild_allowed_and_a_mention() {
    let fake = FakeDiscord::start(1000);
    let gw = TestGateway::with_config(discord_config(
        &fake,
        json!({ "streamMode": "off", "replyToMode": "first",
            "guilds": { "G1": { "channels": { "C2": { "allow": false } } } } }),
    ));
    assert!(ready(&fake).await);
    fake.message("C1", Some("G1"), USER, &[], "no mention here");
    fake.message(
        "C3",
        Some("G2"),
        USER,
        &[],
        &format!("<@{BOT_ID}> other guild"),
    );
    fake.message(
        "C2",
        Some("G1"),
        USER,
        &[],
        &format!("<@{BOT_ID}> closed channel"),
    );
    let id = fake.message(
        "C1",
        Some("G1"),
        USER,
        &[],
        &format!("<@{BOT_ID}> hello guild"),
    );
    assert!(
        fake.until(LONG, |f| !f.created_in("C1").is_empty()).await,
        "{:?}",
        fake.created()
    );
    crate::support::ledger::until_settled(gw.store(), &format!("discord/default/C1/{id}")).await;
    let c1 = fake.created_in("C1");
    assert_eq!(c1.len(), 1, "{c1:?}");
    assert!(c1[0].content.ends_with("@ferro hello guild"), "{c1:?}");
    assert_eq!(c1[0].reply_to.as_deref(), Some(id.as_str()));
    assert!(fake.created_in("C2").is_empty());
    assert!(fake.created_in("C3").is_empty());
}

#[tokio::test]
async fn a_thread_takes_its_channels_rule_and_roles_route_by_binding() {
    let fake = FakeDiscord::start(1000);
    let mut cfg = discord_config(
        &fake,
        json!({ "streamMode": "off", "guilds": { "G1": { "channels": { "C1": { "allow": true, "requireMention": false } } } } }),
    );
    cfg["bindings"] = json!([{ "agentId": "ops", "match": { "channel": "discord", "guildId": "G1", "roles": ["R-ops"] } }]);
    let gw = TestGateway::with_config(cfg);
    assert!(ready(&fake).await);
    fake.event(
        "THREAD_CREATE",
        json!({ "id": "T1", "parent_id": "C1", "guild_id": "G1", "type": 11 }),
    );
    fake.message("T1", Some("G1"), USER, &["R-ops"], "in the thread");
    assert!(
        fake.until(LONG, |f| answers(f, "T1", "You said:") == 1)
            .await,
        "{:?}",
        fake.created()
    );
    let mut c = admin(&gw).await;
    let list = c.call("sessions.list", json!({})).await;
    let keys: Vec<String> = list["payload"]["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["key"].as_str().unwrap().to_string())
        .collect();
    assert!(keys.iter().any(|k| k.starts_with("agent:ops:")), "{keys:?}");
}

#[tokio::test]
async fn a_429_waits_for_its_route_only() {
    let fake = FakeDiscord::start(1000);
    let mut cfg = discord_config(&fake, json!({ "streamMode": "off" }));
    cfg["session"] = json!({ "dmScope": "per-peer" });
    let _gw = TestGateway::with_config(cfg);
    assert!(ready(&fake).await);
    fake.fault("POST /channels/D1/messages", Fault::RateLimit(1.5, false));
    fake.message("D1", None, USER, &[], "slow lane");
    assert!(
        fake.until(LONG, |f| !f.calls("POST /channels/D1/messages").is_empty())
            .await
    );
    fake.message("D2", None, "4343", &[], "fast lane");
    assert!(
        fake.until(LONG, |f| answers(f, "D1", "You said: slow lane") == 1)
            .await
    );
    assert!(
        fake.until(LONG, |f| answers(f, "D2", "You said: fast lane") == 1)
            .await
    );
    let calls = fake.calls("POST /channels/D1/messages");
    assert_eq!(calls.len(), 2, "the 429, then the message");
    assert!(
        calls[1] - calls[0] >= Duration::from_millis(1500),
        "retry_after honoured"
    );
    let d1 = &fake.created_in("D1")[0];
    let d2 = &fake.created_in("D2")[0];
    assert!(d2.at < d1.at, "another route did not wait for D1's bucket");
}

#[tokio::test]
async fn a_long_reply_is_split_at_discords_limit() {
    let fake = FakeDiscord::start(1000);
    let gw = TestGateway::with_config(discord_config(
        &fake,
        json!({ "streamMode": "off", "textChunkLimit": 150 }),
    ));
    assert!(ready(&fake).await);
    let words: Vec<String> = (0..70).map(|n| format!("word{n}")).collect();
    let id = fake.message("D1", None, USER, &[], &words.join(" "));
    assert!(fake.until(LONG, |f| f.created_in("D1").len() >= 3).await);
    crate::support::ledger::until_settled(gw.store(), &format!("discord/default/D1/{id}")).await;
    let made = fake.created_in("D1");
    assert!(
        made.iter().all(|m| m.content.chars().count() <= 150),
        "{made:?}"
    );
    assert!(made.last().unwrap().content.ends_with("word69"));
}
