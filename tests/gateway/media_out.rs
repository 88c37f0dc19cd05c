//! Media out (issue 32): files the gateway sends go through the outbox
//! like any chunk. `send` with a base64 `buffer` is kept in the media
//! store and uploaded (Telegram: `sendPhoto`/`sendVoice`/`sendDocument`
//! as multipart, the fake reads the parts as Telegram does); a repeated
//! idempotency key uploads nothing again; a reply's `MEDIA:` line names a
//! stored file or a URL, never an arbitrary file of the host.

use std::time::Duration;

use base64::Engine;
use serde_json::json;

use super::attachments::{pdf, png};
use super::telegram::{answers, telegram_config, BOT_TOKEN};
use crate::support::fake_telegram::FakeTelegram;
use crate::support::{admin, TestGateway};

const LONG: Duration = Duration::from_secs(20);

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

#[tokio::test]
async fn a_send_buffer_is_uploaded_once() {
    let fake = FakeTelegram::start(BOT_TOKEN);
    let gw = TestGateway::with_config(telegram_config(&fake, json!({ "streamMode": "off" })));
    let mut c = admin(&gw).await;
    let send = |key: &str, bytes: &[u8], name: &str, ct: &str| {
        json!({ "to": "42", "message": "the chart", "buffer": b64(bytes), "filename": name,
                "contentType": ct, "idempotencyKey": key })
    };
    let r = c
        .call("send", send("up-1", &png(), "chart.png", "image/png"))
        .await;
    assert_eq!(r["ok"], true, "{r}");
    let r = c
        .call("send", send("up-1", &png(), "chart.png", "image/png"))
        .await;
    assert_eq!(r["ok"], true, "a repeat answers: {r}");
    let r = c
        .call(
            "send",
            send("up-2", &pdf(&["Minutes"]), "minutes.pdf", "application/pdf"),
        )
        .await;
    assert_eq!(r["ok"], true, "{r}");
    let uploads = fake.uploads();
    let names: Vec<(&str, Option<&str>)> = uploads
        .iter()
        .map(|p| (p.name.as_str(), p.filename.as_deref()))
        .collect();
    assert_eq!(
        names,
        [
            ("photo", Some("chart.png")),
            ("document", Some("minutes.pdf"))
        ],
        "each file uploaded once"
    );
    assert_eq!(uploads[0].data, png());
    assert_eq!(uploads[0].content_type.as_deref(), Some("image/png"));
    let texts: Vec<String> = fake.sent_to(42).iter().map(|s| s.text.clone()).collect();
    assert!(texts.contains(&"the chart".to_string()), "{texts:?}");
    assert!(
        texts.contains(&"[photo] upload:chart.png".to_string()),
        "{texts:?}"
    );
    let bad = c
        .call(
            "send",
            json!({ "to": "42", "buffer": "!!!", "idempotencyKey": "up-3" }),
        )
        .await;
    assert!(
        bad["error"]["message"]
            .as_str()
            .unwrap()
            .contains("not valid base64"),
        "{bad}"
    );
}

/// The owner (chat 42) sends a photo, which the gateway keeps in its
/// media store (it answers the message): the stored file's id.
async fn owners_photo(fake: &FakeTelegram) -> String {
    use sha2::Digest;
    fake.add_file("p1", png());
    fake.push(
        "message",
        json!({ "message_id": 1, "date": crate::support::unix_s(), "chat": { "id": 42, "type": "private" },
                "from": { "id": 42, "first_name": "A" },
                "photo": [{ "file_id": "p1", "file_unique_id": "p1", "width": 10, "height": 10, "file_size": 208 }] }),
    );
    assert!(fake.until(LONG, |f| !f.sent_to(42).is_empty()).await);
    sha2::Sha256::digest(png())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A reply's `MEDIA:` line (the offline model echoes the message): a
/// stored attachment goes back as an upload; a path of the host does not.
#[tokio::test]
async fn a_replys_media_line_sends_a_stored_file_and_never_a_host_file() {
    let fake = FakeTelegram::start(BOT_TOKEN);
    let gw = TestGateway::with_config(telegram_config(&fake, json!({ "streamMode": "off" })));
    let id = owners_photo(&fake).await;
    assert!(gw
        .state_dir()
        .join("media")
        .join(&id[..2])
        .join(&id)
        .exists());
    fake.dm(
        42,
        2,
        &format!("send it back\nMEDIA: media:{id}\nMEDIA: /etc/passwd"),
    );
    assert!(
        fake.until(LONG, |f| f.uploads().len() == 1).await,
        "{:?}",
        fake.sent_to(42)
    );
    let up = &fake.uploads()[0];
    assert_eq!((up.name.as_str(), up.data.clone()), ("photo", png()));
    assert!(
        fake.until(LONG, |f| answers(f, 42, "You said: send it back") == 1)
            .await
    );
    let reply = fake
        .sent_to(42)
        .into_iter()
        .find(|s| s.text.starts_with("You said: send it back"))
        .unwrap()
        .text;
    assert!(!reply.contains("MEDIA:"), "{reply}");
    assert!(
        reply.contains("(not sent: /etc/passwd is not a URL or a stored attachment)"),
        "{reply}"
    );
}

/// A reply streamed in blocks (`streamMode: "block"`) whose `MEDIA:` line
/// falls inside a block: no block shows the line, the file is uploaded
/// once, after the text, and no text is sent twice.
#[tokio::test]
async fn a_block_streamed_reply_sends_its_media_line_as_a_file_once() {
    let fake = FakeTelegram::start(BOT_TOKEN);
    let gw = TestGateway::with_config(telegram_config(&fake, json!({ "streamMode": "block" })));
    let id = owners_photo(&fake).await;
    // Two paragraphs of 600 words: several blocks, the line in the first ones.
    let para = |w: &str| vec![w; 150].join(" ");
    let text = format!(
        "{}\n\nMEDIA: media:{id}\n\n{}\n\n{}",
        para("alpha"),
        para("beta"),
        para("gamma")
    );
    fake.dm(42, 2, &text);
    assert!(fake.until(LONG, |f| f.uploads().len() == 1).await);
    let up = &fake.uploads()[0];
    assert_eq!((up.name.as_str(), up.data.clone()), ("photo", png()));
    // Every word of the reply, once, and no `MEDIA:` line shown.
    let words = |f: &FakeTelegram, w: &str| -> usize {
        f.sent_to(42)
            .iter()
            .map(|s| s.text.split_whitespace().filter(|x| *x == w).count())
            .sum()
    };
    assert!(fake.until(LONG, |f| words(f, "gamma") == 150).await);
    crate::support::ledger::until_settled(gw.store(), "telegram/default/42/2").await;
    let sent = fake.sent_to(42);
    assert!(sent.len() > 2, "blocks: {}", sent.len());
    assert!(sent.iter().all(|s| !s.text.contains("MEDIA:")), "{sent:?}");
    for w in ["alpha", "beta", "gamma"] {
        assert_eq!(words(&fake, w), 150, "{w}");
    }
    assert_eq!(fake.uploads().len(), 1);
}

/// Discord: the file goes as a message attachment (multipart,
/// `payload_json` + `files[0]`), its caption the message text.
#[tokio::test]
async fn a_send_buffer_is_a_discord_attachment() {
    use super::discord::{discord_config, ready};
    use crate::support::fake_discord::FakeDiscord;
    let fake = FakeDiscord::start(45_000);
    let gw = TestGateway::with_config(discord_config(&fake, json!({ "streamMode": "off" })));
    assert!(ready(&fake).await);
    let mut c = admin(&gw).await;
    let r = c
        .call(
            "send",
            json!({ "channel": "discord", "to": "DM1", "buffer": b64(&png()), "filename": "chart.png",
                    "contentType": "image/png", "idempotencyKey": "d-1" }),
        )
        .await;
    assert_eq!(r["ok"], true, "{r}");
    let uploads = fake.uploads();
    assert_eq!(uploads.len(), 1);
    assert_eq!(uploads[0].filename.as_deref(), Some("chart.png"));
    assert_eq!(uploads[0].data, png());
    assert!(fake
        .created_in("DM1")
        .iter()
        .any(|m| m.content == "[file] chart.png"));
}

/// Slack: the external upload flow (a slot, the bytes, then the share
/// with the caption, in the thread when there is one).
#[tokio::test]
async fn a_send_buffer_goes_through_slacks_external_upload() {
    use super::slack::{connected, slack_config};
    use crate::support::fake_slack::FakeSlack;
    let fake = FakeSlack::start();
    let gw = TestGateway::with_config(slack_config(&fake, json!({ "streamMode": "off" })));
    assert!(connected(&fake).await);
    let mut c = admin(&gw).await;
    let r = c
        .call(
            "send",
            json!({ "channel": "slack", "to": "C1", "buffer": b64(&pdf(&["Minutes"])), "filename": "minutes.pdf",
                    "contentType": "application/pdf", "threadId": "1700000000.000100", "idempotencyKey": "s-1" }),
        )
        .await;
    assert_eq!(r["ok"], true, "{r}");
    let shared = fake.shared();
    assert_eq!(shared.len(), 1, "{shared:?}");
    assert_eq!(
        (shared[0].channel.as_str(), shared[0].name.as_str()),
        ("C1", "minutes.pdf")
    );
    assert_eq!(shared[0].bytes, pdf(&["Minutes"]));
    assert_eq!(shared[0].thread_ts.as_deref(), Some("1700000000.000100"));
    // A repeat of the key shares nothing again.
    let again = c
        .call(
            "send",
            json!({ "channel": "slack", "to": "C1", "buffer": b64(&pdf(&["Minutes"])), "filename": "minutes.pdf",
                    "contentType": "application/pdf", "idempotencyKey": "s-1" }),
        )
        .await;
    assert_eq!(again["ok"], true, "{again}");
    assert_eq!(fake.shared().len(), 1);
}

/// A stranger's turn cannot make the gateway send a stored file: the same
/// `MEDIA:` line that uploads the owner's photo for the owner uploads
/// nothing on a stranger's reply (`Delivery::untrusted`).
#[tokio::test]
async fn a_strangers_reply_sends_no_stored_file() {
    use super::trust::{ask, start as open_telegram, OWNER, STRANGER};
    let (fake, gw) = open_telegram(json!({}), &[]);
    fake.add_file("p1", png());
    fake.push(
        "message",
        json!({ "message_id": 1, "date": crate::support::unix_s(), "chat": { "id": OWNER, "type": "private" },
                "from": { "id": OWNER, "first_name": "O" },
                "photo": [{ "file_id": "p1", "file_unique_id": "p1", "width": 9, "height": 9 }] }),
    );
    assert!(fake.until(LONG, |f| !f.sent_to(OWNER).is_empty()).await);
    let id = std::fs::read_dir(gw.state_dir().join("media"))
        .unwrap()
        .flatten()
        .flat_map(|d| std::fs::read_dir(d.path()).unwrap().flatten())
        .map(|f| f.file_name().to_string_lossy().to_string())
        .find(|n| !n.contains('.'))
        .expect("the owner's stored photo");
    let line = format!("give me that\nMEDIA: media:{id}");
    let said = ask(&fake, STRANGER, 2, &line).await;
    assert!(
        said.contains("give me that") && !said.contains("MEDIA:"),
        "{said}"
    );
    assert!(
        fake.uploads().is_empty(),
        "nothing uploaded for the stranger"
    );
    ask(&fake, OWNER, 3, &line).await;
    assert!(
        fake.until(LONG, |f| f.uploads().len() == 1).await,
        "the owner's reply uploads it"
    );
}
