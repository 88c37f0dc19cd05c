//! Messages that reached WhatsApp and Signal while the gateway was stopped
//! come when it is back (Meta's webhook retries, signal-cli's event
//! stream from the stored event id), one request or event at a time:
//! those within `catchUp.maxAgeMinutes` are answered once and in order,
//! the older with their age; the ones beyond get one note for the chat
//! however many requests brought them; a stranger's old message gets
//! nothing. Telegram's (`telegram/late.rs`), Slack's and Discord's
//! (`slack/catch_up.rs`, `discord/catch_up.rs`) and Matrix's
//! (`matrix.rs`) are tested with their adapters.

use std::time::Duration;

use serde_json::json;

use crate::support::fake_signal::{self, text_received, Drive, FakeSignal};
use crate::support::fake_whatsapp::{self, text_body, text_body_at, FakeWhatsApp, Sender};
use crate::support::{unix_ms, unix_s, TestGateway};

const LONG: Duration = Duration::from_secs(20);
const HOUR: i64 = 3600;
const EARLIER: &str = "(Replying to your message from 2 h ago.)\n\nYou said: earlier";

/// How many of a chat's texts are the note for its two old messages.
fn notes(texts: &[String]) -> usize {
    texts
        .iter()
        .filter(|t| t.starts_with("(While I was away, 2 messages reached me"))
        .count()
}

/// What the owner got: one note, and the answers within the bound in
/// order (the 2-hour-old one with its age).
fn one_note_and_answered_in_order(got: &[String]) {
    assert_eq!(notes(got), 1, "{got:?}");
    let answers: Vec<&str> = got
        .iter()
        .filter(|t| t.contains("You said:"))
        .map(String::as_str)
        .collect();
    let want = [
        "You said: hello",
        EARLIER,
        "You said: now",
        "You said: barrier",
    ];
    assert_eq!(answers, want);
}

#[tokio::test]
async fn whatsapp_messages_from_while_stopped_are_answered_within_the_bound() {
    const OWNER: &str = "15551230001";
    const STRANGER: &str = "15559990000";
    let fake = FakeWhatsApp::start();
    let mut gw = TestGateway::with_config(fake_whatsapp::config(&fake, json!({})));
    let meta = Sender::start(&format!("http://{}", gw.addr));
    let texts = |f: &FakeWhatsApp, to: &str| -> Vec<String> {
        f.sent_to(to, "text").into_iter().map(|s| s.text).collect()
    };
    meta.send(&text_body(OWNER, "W1", "hello"));
    assert!(
        fake.until(LONG, |f| texts(f, OWNER) == ["You said: hello"])
            .await
    );
    gw.stop();
    let now = unix_s();
    meta.send(&text_body_at(OWNER, "W2", "ancient", now - 30 * HOUR));
    meta.send(&text_body_at(OWNER, "W3", "also ancient", now - 26 * HOUR));
    meta.send(&text_body_at(OWNER, "W4", "earlier", now - 2 * HOUR - 60));
    meta.send(&text_body_at(
        STRANGER,
        "W9",
        "stranger from before",
        now - 30 * HOUR,
    ));
    meta.send(&text_body(OWNER, "W5", "now"));
    gw.resume();
    meta.retarget(&format!("http://{}", gw.addr));
    assert!(
        fake.until(LONG, |f| texts(f, OWNER).last().map(String::as_str)
            == Some("You said: now"))
            .await,
        "{:?}",
        texts(&fake, OWNER)
    );
    // Every body was answered 200; the note comes once the backlog stopped
    // coming; a live message after it is the barrier.
    assert_eq!(meta.unanswered(), 0);
    assert!(
        fake.until(LONG, |f| notes(&texts(f, OWNER)) == 1).await,
        "{:?}",
        texts(&fake, OWNER)
    );
    meta.send(&text_body(OWNER, "W6", "barrier"));
    assert!(
        fake.until(LONG, |f| texts(f, OWNER).last().map(String::as_str)
            == Some("You said: barrier"))
            .await
    );
    let got = texts(&fake, OWNER);
    one_note_and_answered_in_order(&got);
    assert!(texts(&fake, STRANGER).is_empty(), "{:?}", fake.sent());
}

#[tokio::test]
async fn signal_messages_from_while_stopped_are_answered_within_the_bound() {
    const OWNER: &str = "+15551230001";
    const STRANGER: &str = "+15559990000";
    let fake = FakeSignal::start();
    let cfg = fake_signal::config(
        &fake.url,
        json!({ "dmPolicy": "allowlist", "allowFrom": [OWNER] }),
    );
    let mut gw = TestGateway::with_config(cfg);
    let texts = async |to: &str| -> Vec<String> {
        fake.sent_to(to)
            .await
            .iter()
            .filter_map(|c| c["params"]["message"].as_str().map(str::to_string))
            .collect()
    };
    fake.inject(text_received(OWNER, 1, "hello", unix_ms()))
        .await;
    assert!(fake.until_sent(LONG, OWNER, "You said: hello", 1).await);
    gw.stop();
    let (now, hour) = (unix_ms(), 3_600_000);
    fake.inject(text_received(OWNER, 2, "ancient", now - 30 * hour))
        .await;
    fake.inject(text_received(OWNER, 3, "also ancient", now - 26 * hour))
        .await;
    fake.inject(text_received(OWNER, 4, "earlier", now - 2 * hour - 60_000))
        .await;
    fake.inject(text_received(
        STRANGER,
        9,
        "stranger from before",
        now - 30 * hour,
    ))
    .await;
    fake.inject(text_received(OWNER, 5, "now", now)).await;
    gw.resume();
    assert!(fake.until_sent(LONG, OWNER, "You said: now", 1).await);
    assert!(
        fake.until_sent(LONG, OWNER, "(While I was away, 2 messages", 1)
            .await,
        "{:?}",
        texts(OWNER).await
    );
    fake.inject(text_received(OWNER, 6, "barrier", unix_ms()))
        .await;
    assert!(fake.until_sent(LONG, OWNER, "You said: barrier", 1).await);
    let got = texts(OWNER).await;
    one_note_and_answered_in_order(&got);
    assert!(texts(STRANGER).await.is_empty(), "{:?}", fake.calls().await);
}
