//! `message` end to end: from a Telegram turn, the agent posts to a Slack
//! channel and a Discord thread (each once), reacts, edits and deletes on
//! the fakes; answering its own chat with the tool suppresses the run's
//! final text; a stranger's turn reaches only its own conversation.

use serde_json::{json, Value};

use super::*;
use crate::support::fake_discord::FakeDiscord;
use crate::support::fake_slack::FakeSlack;

/// Telegram (the owner's), Slack and Discord on one gateway.
fn three_channels(extra: Value) -> (FakeTelegram, FakeSlack, FakeDiscord, TestGateway) {
    let slack = FakeSlack::start();
    let discord = FakeDiscord::start(45_000);
    let mut cfg = super::super::slack::slack_config(&slack, json!({}));
    ferroclaw::config::merge_patch(
        &mut cfg,
        &super::super::discord::discord_config(&discord, json!({})),
    );
    ferroclaw::config::merge_patch(&mut cfg, &extra);
    let (tg, gw) = start(cfg);
    (tg, slack, discord, gw)
}

/// The message whose text is `text` in `list` (each once).
fn once<T>(list: &[T], text: impl Fn(&T) -> &str, want: &str) -> usize {
    list.iter().filter(|m| text(m) == want).count()
}

#[tokio::test]
async fn from_telegram_the_agent_posts_to_slack_and_a_discord_thread_and_acts_on_them() {
    let (tg, slack, discord, _gw) = three_channels(json!({}));
    assert!(super::super::slack::connected(&slack).await);
    assert!(super::super::discord::ready(&discord).await);
    let lines = [
        tool(
            "message",
            json!({"action": "send", "channel": "slack", "target": "channel:C777", "message": "Running late (slack)"}),
        ),
        tool(
            "message",
            json!({"action": "thread-reply", "channel": "discord", "target": "555", "threadId": "T900", "message": "Running late (discord)"}),
        ),
    ];
    let reply = ask(&tg, OWNER, 1, &lines.join("\n")).await;
    assert_eq!(reply.matches("Tool message returned").count(), 2, "{reply}");
    assert!(!reply.contains("error"), "{reply}");
    // The turn's reply came after both calls: each post is there once.
    let posted = slack.posted_in("C777");
    assert_eq!(
        once(&posted, |p| &p.text, "Running late (slack)"),
        1,
        "{posted:?}"
    );
    let created = discord.created_in("T900");
    assert_eq!(
        once(&created, |c| &c.content, "Running late (discord)"),
        1,
        "{created:?}"
    );
    let ts = posted[0].ts.clone();
    let id = created[0].id.clone();

    let acts = [
        tool(
            "message",
            json!({"action": "react", "channel": "slack", "target": "C777", "messageId": ts, "emoji": ":eyes:"}),
        ),
        tool(
            "message",
            json!({"action": "edit", "channel": "discord", "target": "T900", "messageId": id, "message": "Running late, 10 min"}),
        ),
        tool(
            "message",
            json!({"action": "react", "channel": "discord", "target": "T900", "messageId": id, "emoji": "✅"}),
        ),
    ];
    let reply = ask(&tg, OWNER, 2, &acts.join("\n")).await;
    assert_eq!(
        reply.matches("ok&quot;:true").count() + reply.matches("\"ok\":true").count(),
        3,
        "{reply}"
    );
    assert_eq!(slack.reactions("C777", &ts), ["eyes"]);
    assert_eq!(discord.reactions("T900", &id), ["✅"]);
    let edited = discord.created_in("T900");
    assert_eq!(edited[0].content, "Running late, 10 min");
    assert_eq!(edited[0].edits, 1);

    let delete = tool(
        "message",
        json!({"action": "delete", "channel": "slack", "target": "C777", "messageId": ts}),
    );
    ask(&tg, OWNER, 3, &delete).await;
    assert_eq!(slack.deleted(), [("C777".to_string(), ts)]);
    // An action a platform does not have is a tool error naming it.
    let poll = tool(
        "message",
        json!({"action": "poll", "channel": "slack", "target": "C777"}),
    );
    let reply = ask(&tg, OWNER, 4, &poll).await;
    assert!(
        reply.contains("Channel slack does not support action poll"),
        "{reply}"
    );
    // Nothing was posted twice.
    assert_eq!(slack.posted_in("C777").len(), 1);
    assert_eq!(discord.created_in("T900").len(), 1);
}

#[tokio::test]
async fn answering_its_own_chat_with_message_does_not_send_the_reply_twice() {
    let (tg, _gw) = start(json!({}));
    let call = tool(
        "message",
        json!({"action": "send", "message": "Here is the answer"}),
    );
    tg.dm(OWNER, 1, &format!("{call}\nDone."));
    assert!(
        tg.until(LONG, |f| f
            .sent_to(OWNER)
            .iter()
            .any(|s| s.text == "Here is the answer"))
            .await,
        "{:?}",
        tg.sent()
    );
    // Barrier: the next turn's reply comes after the first run's delivery.
    let after = ask(&tg, OWNER, 2, "ping").await;
    assert!(after.contains("You said: ping"), "{after}");
    let texts: Vec<String> = tg.sent_to(OWNER).iter().map(|s| s.text.clone()).collect();
    assert_eq!(
        texts.iter().filter(|t| *t == "Here is the answer").count(),
        1,
        "{texts:?}"
    );
    assert!(
        !texts.iter().any(|t| t.contains("Tool message returned")),
        "the run's final text was sent too: {texts:?}"
    );
}

#[tokio::test]
async fn a_strangers_message_reaches_only_its_own_conversation() {
    // The owner widened the untrusted profile to `message`.
    let (tg, slack, _discord, _gw) =
        three_channels(json!({"tools": {"untrusted": {"allow": ["message"]}}}));
    assert!(super::super::slack::connected(&slack).await);
    let out = tool(
        "message",
        json!({"action": "send", "channel": "slack", "target": "C777", "message": "spam"}),
    );
    let other = tool(
        "message",
        json!({"action": "send", "channel": "telegram", "target": OWNER.to_string(), "message": "hi owner"}),
    );
    let reply = ask(&tg, STRANGER, 1, &format!("{out}\n{other}")).await;
    assert_eq!(
        reply
            .matches("may answer only the conversation it came from")
            .count(),
        2,
        "{reply}"
    );
    // Its own chat it may answer.
    let own = tool(
        "message",
        json!({"action": "send", "message": "hello stranger"}),
    );
    let r = ask(&tg, STRANGER, 2, &own).await;
    assert!(
        tg.until(LONG, |f| f
            .sent_to(STRANGER)
            .iter()
            .any(|s| s.text == "hello stranger"))
            .await,
        "{r} {:?}",
        tg.sent_to(STRANGER)
    );
    // Barrier: an owner turn after; nothing reached Slack or the owner.
    ask(&tg, OWNER, 3, "ping").await;
    assert!(slack.posted().is_empty(), "{:?}", slack.posted());
    assert!(!tg.sent_to(OWNER).iter().any(|s| s.text == "hi owner"));
}
