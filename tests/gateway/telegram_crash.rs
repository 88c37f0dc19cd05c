//! The channels' delivery contract under crashes, against the real binary
//! and the fake Bot API: messages from several chats arrive while the
//! gateway is SIGKILLed at random points (proptest draws the schedule) and
//! restarted. At the end every update the platform handed out was
//! confirmed, every one was handed to its session once (one run per
//! message), every run's reply is settled in the outbox, and nothing
//! reached Telegram twice: each sent chunk is one Telegram message, each
//! reply text is in its chat at most once, and a chunk whose send had no
//! answer (`unknown`) is the only way a reply may be missing.

use serde_json::json;

use super::channel_crash::{check, drive, quiet, schedule, tail_answered, Landed, Pushed};
use super::telegram::BOT_TOKEN;
use crate::support::fake_telegram::FakeTelegram;
use crate::support::process::{sigkill, spawn_gateway, Gateway};

fn write_config(dir: &std::path::Path, fake: &FakeTelegram, stream: &str, voice: bool) {
    let mut cfg = json!({
        "channels": { "telegram": {
            "botToken": BOT_TOKEN, "apiBaseUrl": fake.base, "dmPolicy": "allowlist",
            "allowFrom": (100..106).collect::<Vec<i64>>(), "pollTimeoutSeconds": 1,
            "streamMode": stream, "editIntervalMs": 30, "typingMode": "never",
        } },
        "messages": { "queue": { "mode": "followup", "debounceMs": 0, "cap": 100 } },
    });
    if voice {
        let engine = super::tts::espeak_cli();
        cfg["tts"] = json!({ "auto": "always", "providers": { "tts-local-cli": engine } });
    }
    std::fs::write(dir.join("ferroclaw.json"), cfg.to_string()).unwrap();
}

/// A photo from chat 100, kept in the media store; its id.
async fn stored_photo(fake: &FakeTelegram, dir: &std::path::Path) -> String {
    fake.add_file("ph", super::attachments::png());
    fake.push(
        "message",
        json!({ "message_id": 9999, "date": crate::support::unix_s(), "chat": { "id": 100, "type": "private" },
                "from": { "id": 100, "first_name": "A" },
                "photo": [{ "file_id": "ph", "file_unique_id": "ph", "width": 9, "height": 9 }] }),
    );
    assert!(
        fake.until(std::time::Duration::from_secs(20), |f| !f
            .sent_to(100)
            .is_empty())
            .await
    );
    let media = dir.join("media");
    std::fs::read_dir(&media)
        .unwrap()
        .flatten()
        .flat_map(|d| std::fs::read_dir(d.path()).unwrap().flatten())
        .map(|f| f.file_name().to_string_lossy().to_string())
        .find(|n| !n.contains('.'))
        .expect("the stored photo")
}

/// What every reply carries besides its text.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Extra {
    Nothing,
    /// A stored photo sent back (a `MEDIA:` line): an upload is an outbox
    /// item like a text chunk, sent once.
    Media,
    /// The reply spoken (`tts.auto: always`, espeak-ng): a voice note is
    /// one more item, synthesised when it is sent, sent once.
    Voice,
}

async fn crash_case(stream: &str, extra: Extra) {
    let media = extra == Extra::Media;
    let fake = FakeTelegram::start(BOT_TOKEN);
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path(), &fake, stream, extra == Extra::Voice);
    let (mut child, _, _): (Gateway, _, _) = spawn_gateway(dir.path());
    let line = match media {
        true => format!("\nMEDIA: media:{}", stored_photo(&fake, dir.path()).await),
        false => String::new(),
    };
    let steps = schedule(&format!("telegram_crash ({stream}, {extra:?})"), 6, 36);
    let (pushed, crashes) = drive(dir.path(), &mut child, &steps, |i, chat, text| {
        let chat = 100 + i64::from(chat);
        let id = i as i64 + 1;
        fake.dm(chat, id, &format!("{text}{line}"));
        Pushed {
            chat: chat.to_string(),
            key: format!("telegram/default/{chat}/{id}"),
            answer: String::new(),
        }
    })
    .await;
    quiet(&child, async || fake.unconfirmed() == 0).await;
    sigkill(&mut child);
    assert!(
        crashes >= 2,
        "the schedule crashed {crashes} times (two at least by construction)"
    );
    assert_eq!(fake.unconfirmed(), 0, "every update was confirmed");
    let landed: Vec<Landed> = fake
        .sent()
        .into_iter()
        .map(|s| Landed {
            chat: s.chat_id.to_string(),
            id: s.message_id.to_string(),
            text: s.text,
        })
        .collect();
    let outcomes = check(
        dir.path(),
        "telegram",
        &format!("telegram ({stream}, {extra:?})"),
        crashes,
        &landed,
        &pushed,
    );
    if media {
        // Uploads are chunks `check` matched one to one; at least one landed.
        let uploads = fake.uploads().len();
        assert!(
            uploads >= 1 && uploads <= pushed.len(),
            "{uploads} uploads for {} replies",
            pushed.len()
        );
    }
    if extra == Extra::Voice {
        // Voice notes are chunks `check` matched one to one (no message
        // twice); each is Ogg/Opus, and every reply after the last crash
        // was spoken.
        let notes: Vec<_> = fake
            .uploads()
            .into_iter()
            .filter(|p| p.name == "voice")
            .collect();
        // Only the agent's words are spoken: an interrupted message's
        // notice is not.
        let tail = super::channel_crash::after_last_crash(&steps).len();
        let spoken = outcomes.values().filter(|o| **o != "interrupted").count();
        assert!(
            notes.len() >= tail && notes.len() <= spoken,
            "{} voice notes for {spoken} replies ({tail} after the last crash)",
            notes.len(),
        );
        assert!(notes
            .iter()
            .all(|n| super::tts::ogg_codec(&n.data) == Some("opus")));
        eprintln!("{} voice notes, each once", notes.len());
    }
    let answered = outcomes.values().filter(|o| **o == "answered").count();
    eprintln!(
        "telegram crash ({stream}, {extra:?}): {crashes} crashes, {} messages: {answered} answered, {:?}",
        pushed.len(),
        outcomes
    );
    tail_answered(&steps, &outcomes);
}

#[tokio::test]
async fn sigkill_under_load_never_sends_twice_nor_drops_an_update_whole_replies() {
    crash_case("off", Extra::Nothing).await;
}

#[tokio::test]
async fn sigkill_under_load_never_uploads_a_reply_file_twice() {
    crash_case("off", Extra::Media).await;
}

#[tokio::test]
async fn sigkill_under_load_never_sends_twice_nor_drops_an_update_streamed_previews() {
    crash_case("partial", Extra::Nothing).await;
}

#[tokio::test]
async fn sigkill_under_load_never_sends_a_voice_note_twice() {
    crash_case("off", Extra::Voice).await;
}
