//! A reply to a message sent long before (while the gateway was down, or
//! after a long queue) starts with a note of its age; a prompt reply does
//! not; `messages.lateReplyNoticeMinutes: 0` turns the note off.

use serde_json::{json, Value};

use super::*;
use crate::support::fake_telegram::FakeTelegram;
use crate::support::{unix_s, TestGateway};

fn sent_ago(user: i64, message_id: i64, text: &str, secs: i64) -> Value {
    json!({
        "message_id": message_id, "date": unix_s() - secs,
        "chat": { "id": user, "type": "private" },
        "from": { "id": user, "is_bot": false, "first_name": "U" }, "text": text,
    })
}

#[tokio::test]
async fn a_reply_three_hours_after_the_message_says_so_and_a_prompt_one_does_not() {
    let fake = FakeTelegram::start(BOT_TOKEN);
    let _gw = TestGateway::with_config(telegram_config(&fake, json!({ "streamMode": "off" })));
    fake.push("message", sent_ago(42, 1, "from before", 3 * 3600 + 60));
    let late = "(Replying to your message from 3 h ago.)\n\nYou said: from before";
    assert!(
        fake.until(LONG, |f| f.sent_to(42).iter().any(|s| s.text == late))
            .await,
        "{:?}",
        fake.sent()
    );
    // Nine minutes is within the default ten.
    fake.push("message", sent_ago(42, 2, "just now", 9 * 60));
    assert!(
        fake.until(LONG, |f| answers(f, 42, "You said: just now") == 1)
            .await,
        "{:?}",
        fake.sent()
    );
    assert_eq!(fake.sent_to(42).len(), 2);
}

#[tokio::test]
async fn the_note_can_be_turned_off() {
    let fake = FakeTelegram::start(BOT_TOKEN);
    let mut cfg = telegram_config(&fake, json!({ "streamMode": "off" }));
    cfg["messages"] = json!({ "lateReplyNoticeMinutes": 0 });
    let _gw = TestGateway::with_config(cfg);
    fake.push("message", sent_ago(42, 1, "from last night", 20 * 3600));
    assert!(
        fake.until(LONG, |f| answers(f, 42, "You said: from last night") == 1)
            .await,
        "{:?}",
        fake.sent()
    );
}

/// Messages sent while the gateway was stopped: on start, those within
/// `catchUp` are answered once, in order, the older one with its age; the
/// one beyond `maxAgeMinutes` is not answered, and the chat gets one note.
#[tokio::test]
async fn what_arrived_while_stopped_is_answered_within_the_bound_and_the_rest_gets_one_note() {
    let fake = FakeTelegram::start(BOT_TOKEN);
    let mut gw = TestGateway::with_config(telegram_config(&fake, json!({ "streamMode": "off" })));
    fake.dm(42, 1, "hello");
    assert!(
        fake.until(LONG, |f| answers(f, 42, "You said: hello") == 1)
            .await
    );
    gw.stop();
    fake.push("message", sent_ago(42, 2, "ancient", 30 * 3600));
    fake.push("message", sent_ago(42, 3, "earlier", 2 * 3600 + 60));
    fake.push("message", sent_ago(42, 4, "now", 0));
    // A stranger's old message is skipped too, and the stranger is told nothing.
    fake.push(
        "message",
        sent_ago(99, 9, "stranger from before", 30 * 3600),
    );
    gw.resume();
    let earlier = "(Replying to your message from 2 h ago.)\n\nYou said: earlier";
    let got = |f: &FakeTelegram| {
        f.sent_to(42)
            .iter()
            .map(|s| s.text.clone())
            .collect::<Vec<_>>()
    };
    // The note goes once the batches stopped coming.
    assert!(
        fake.until(LONG, |f| got(f).iter().any(|t| t == earlier)
            && answers(f, 42, "You said: now") == 1
            && answers(f, 42, "(While I was away") == 1)
            .await,
        "{:?}",
        got(&fake)
    );
    super::barrier(&fake, 42, 5).await;
    let texts = got(&fake);
    let at = |t: &str| texts.iter().position(|x| x == t).unwrap();
    assert!(at(earlier) < at("You said: now"), "in order: {texts:?}");
    let notes: Vec<&String> = texts
        .iter()
        .filter(|t| t.starts_with("(While I was away"))
        .collect();
    assert_eq!(notes.len(), 1, "{texts:?}");
    assert!(
        notes[0].contains("1 message reached me, the oldest from 30 h ago"),
        "{texts:?}"
    );
    assert!(!texts.iter().any(|t| t.contains("ancient")), "{texts:?}");
    assert!(fake.sent_to(99).is_empty(), "{:?}", fake.sent_to(99));
    // The skipped one is recorded: a restart neither answers nor notes it again.
    gw.restart();
    super::barrier(&fake, 42, 6).await;
    let again = got(&fake);
    assert_eq!(
        again
            .iter()
            .filter(|t| t.starts_with("(While I was away"))
            .count(),
        1,
        "{again:?}"
    );
    assert_eq!(
        again.iter().filter(|t| *t == earlier).count(),
        1,
        "{again:?}"
    );
}

/// More than `maxMessages` from one chat while stopped: its newest are
/// answered, the rest are covered by one note.
#[tokio::test]
async fn a_chat_over_max_messages_gets_its_newest_answered() {
    let fake = FakeTelegram::start(BOT_TOKEN);
    let extra =
        json!({ "streamMode": "off", "catchUp": { "maxAgeMinutes": 1440, "maxMessages": 2 } });
    let mut gw = TestGateway::with_config(telegram_config(&fake, extra));
    fake.dm(42, 1, "hello");
    assert!(
        fake.until(LONG, |f| answers(f, 42, "You said: hello") == 1)
            .await
    );
    gw.stop();
    for (id, text) in [(2, "one"), (3, "two"), (4, "three"), (5, "four")] {
        fake.push("message", sent_ago(42, id, text, 60));
    }
    gw.resume();
    assert!(
        fake.until(LONG, |f| answers(f, 42, "You said: four") == 1
            && answers(f, 42, "(While I was away") == 1)
            .await,
        "{:?}",
        fake.sent()
    );
    super::barrier(&fake, 42, 6).await;
    let texts: Vec<String> = fake.sent_to(42).iter().map(|s| s.text.clone()).collect();
    for (text, n) in [
        ("You said: one", 0),
        ("You said: two", 0),
        ("You said: three", 1),
        ("You said: four", 1),
    ] {
        assert_eq!(
            texts.iter().filter(|t| *t == text).count(),
            n,
            "{text}: {texts:?}"
        );
    }
    assert_eq!(
        texts
            .iter()
            .filter(|t| t.contains("2 messages reached me"))
            .count(),
        1,
        "{texts:?}"
    );
}
