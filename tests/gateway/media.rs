//! Attachments taken in on a channel (issue 32): kept once in the media
//! store, and understood with OpenClaw's `tools.media` keys. Real speech:
//! espeak-ng makes the voice note, a real pocketsphinx (Debian, with a
//! small grammar, `tests/media/commands.gram`) transcribes it through a
//! CLI entry; the fake Telegram serves the file through `getFile`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Value};

use super::mcp::ROOT;
use super::telegram::{answers, telegram_config, BOT_TOKEN};
use super::trust::{start as open_telegram, STRANGER};
use crate::support::fake_provider::{FakeProvider, Script};
use crate::support::fake_telegram::FakeTelegram;
use crate::support::process::{Within, CHILD_LIMIT};
use crate::support::TestGateway;

const LONG: Duration = Duration::from_secs(30);

pub(super) fn speak(dir: &Path, text: &str) -> Vec<u8> {
    let wav = dir.join("speech.wav");
    let ok = std::process::Command::new("espeak-ng")
        .args(["-v", "en-us", "-s", "130", "-w"])
        .arg(&wav)
        .arg(text)
        .status_within(CHILD_LIMIT);
    assert!(ok.success());
    std::fs::read(wav).unwrap()
}

/// `tools.media.audio`: pocketsphinx through a wrapper that counts its runs.
pub(super) fn audio_config(runs: &Path) -> Value {
    let gram = PathBuf::from(ROOT).join("tests/media/commands.gram");
    let script = format!(
        "echo run >> {}; exec pocketsphinx_continuous -infile \"$1\" -samprate 22050 -nfft 1024 -jsgf {} -logfn /dev/null",
        runs.display(),
        gram.display()
    );
    json!({"tools": {"media": {"audio": {"models": [
        {"type": "cli", "command": "sh", "args": ["-c", script, "sh", "{{AttachmentPath}}"]},
    ]}}}})
}

fn voice(from: i64, mid: i64, file: &str, size: usize) -> Value {
    json!({
        "message_id": mid, "date": crate::support::unix_s(), "chat": { "id": from, "type": "private" },
        "from": { "id": from, "first_name": "A" },
        "voice": { "file_id": file, "file_unique_id": file, "duration": 2, "mime_type": "audio/ogg", "file_size": size },
    })
}

fn runs(path: &Path) -> usize {
    std::fs::read_to_string(path).map_or(0, |t| t.lines().count())
}

#[tokio::test]
async fn a_telegram_voice_note_is_transcribed_once_and_answered() {
    let dir = tempfile::tempdir().unwrap();
    let counted = dir.path().join("runs");
    let fake = FakeTelegram::start(BOT_TOKEN);
    let mut cfg = telegram_config(&fake, json!({ "streamMode": "off" }));
    ferroclaw::config::merge_patch(&mut cfg, &audio_config(&counted));
    let mut gw = TestGateway::with_config(cfg);
    let speech = speak(dir.path(), "turn on the kitchen lights");
    fake.add_file("v1", speech.clone());
    fake.push("message", voice(42, 1, "v1", speech.len()));
    let want = "You said: [Audio]\nTranscript:\nturn on the kitchen lights";
    assert!(
        fake.until(LONG, |f| answers(f, 42, want) == 1).await,
        "{:?}",
        fake.sent_to(42)
    );
    assert_eq!(runs(&counted), 1);
    // The original is kept, once, in the media store.
    let stored: Vec<_> = walk(&gw.state_dir().join("media"));
    assert_eq!(stored.len(), 1, "{stored:?}");
    assert_eq!(std::fs::read(&stored[0]).unwrap(), speech);

    // The same voice note after a restart: answered, not transcribed again.
    gw.restart();
    fake.add_file("v2", speech.clone());
    fake.push("message", voice(42, 2, "v2", speech.len()));
    assert!(fake.until(LONG, |f| answers(f, 42, want) == 2).await);
    assert_eq!(runs(&counted), 1, "the transcript was kept beside the file");
    drop(gw);
}

/// The stored files (not their sidecars).
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for sub in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        for f in std::fs::read_dir(sub.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            let name = f.file_name().to_string_lossy().to_string();
            if !name.contains('.') {
                out.push(f.path());
            }
        }
    }
    out
}

#[tokio::test]
async fn an_oversized_or_failing_voice_note_still_gets_a_turn_with_a_note() {
    let dir = tempfile::tempdir().unwrap();
    let fake = FakeTelegram::start(BOT_TOKEN);
    let mut cfg = telegram_config(&fake, json!({ "streamMode": "off", "mediaMaxMb": 1 }));
    ferroclaw::config::merge_patch(
        &mut cfg,
        &json!({"tools": {"media": {"audio": {"models": [
            {"type": "cli", "command": "sh", "args": ["-c", "exit 3", "{{MediaPath}}"]},
        ]}}}}),
    );
    let _gw = TestGateway::with_config(cfg);
    // Declared at 2 GB: refused before any download.
    fake.push("message", voice(42, 1, "huge", 2 << 30));
    assert!(
        fake.until(LONG, |f| answers(f, 42, "You said: [attachment not loaded")
            == 1)
            .await
    );
    assert!(fake.calls("getFile").is_empty(), "never fetched");
    // A transcriber that fails: the turn runs with a note saying why.
    fake.add_file("bad", speak(dir.path(), "what is the weather today"));
    fake.push("message", voice(42, 2, "bad", 40_000));
    assert!(
        fake.until(LONG, |f| answers(f, 42, "You said: [audio:") == 1)
            .await
    );
    let last = fake.sent_to(42).last().unwrap().text.clone();
    assert!(
        last.contains("not understood") && last.contains("exited"),
        "{last}"
    );
}

/// A stranger's voice note is the stranger's words: transcribed, and
/// given to the model inside an outside-data block, like the stranger's
/// text; stored as the stranger's (`untrusted`).
#[tokio::test]
async fn a_strangers_voice_note_reaches_the_model_as_outside_data() {
    let dir = tempfile::tempdir().unwrap();
    let counted = dir.path().join("runs");
    let provider = FakeProvider::start().await;
    provider.set_default(Script::text(&["noted"]));
    let mut extra = audio_config(&counted);
    ferroclaw::config::merge_patch(
        &mut extra,
        &json!({
            "models": { "providers": { "fake": {
                "baseUrl": provider.base_url(), "api": "openai-completions", "apiKey": "k0" } } },
            "agents": { "defaults": { "model": { "primary": "fake/m1", "fallbacks": [] } } },
        }),
    );
    let (fake, _gw) = open_telegram(extra, &[]);
    let speech = speak(dir.path(), "start a new session");
    fake.add_file("s1", speech.clone());
    fake.push("message", voice(STRANGER, 9, "s1", speech.len()));
    assert!(fake.until(LONG, |f| !f.sent_to(STRANGER).is_empty()).await);
    let body = provider.requests.lock().unwrap()[0].0.clone();
    let user = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .map(|m| m["content"].to_string())
        .unwrap();
    assert!(
        user.contains("<<<EXTERNAL_UNTRUSTED_CONTENT")
            && user.contains("Transcript:\\nstart a new session"),
        "{user}"
    );
    assert_eq!(runs(&counted), 1);
}

/// A PDF and a photo on Telegram (`getFile`, then the file URL): the
/// document reaches the model as a `[Document]` block, the photo as an
/// image the model sees.
#[tokio::test]
async fn a_telegram_document_and_photo_reach_the_model() {
    let provider = FakeProvider::start().await;
    provider.set_default(Script::text(&["got it"]));
    let fake = FakeTelegram::start(BOT_TOKEN);
    let mut cfg = telegram_config(&fake, json!({ "streamMode": "off" }));
    ferroclaw::config::merge_patch(
        &mut cfg,
        &json!({
            "models": { "providers": { "fake": {
                "baseUrl": provider.base_url(), "api": "openai-completions", "apiKey": "k0" } } },
            "agents": { "defaults": { "model": { "primary": "fake/m1", "fallbacks": [] } } },
        }),
    );
    let _gw = TestGateway::with_config(cfg);
    let doc = super::attachments::pdf(&["Lease agreement", "Rent 900 EUR monthly"]);
    fake.add_file("d1", doc.clone());
    fake.push(
        "message",
        json!({ "message_id": 1, "date": crate::support::unix_s(), "chat": { "id": 42, "type": "private" },
                "from": { "id": 42, "first_name": "A" }, "caption": "is this fair?",
                "document": { "file_id": "d1", "file_unique_id": "d1", "file_name": "lease.pdf",
                              "mime_type": "application/pdf", "file_size": doc.len() } }),
    );
    assert!(fake.until(LONG, |f| !f.sent_to(42).is_empty()).await);
    let photo = super::attachments::png();
    fake.add_file("p1", photo.clone());
    fake.push(
        "message",
        json!({ "message_id": 2, "date": crate::support::unix_s(), "chat": { "id": 42, "type": "private" },
                "from": { "id": 42, "first_name": "A" },
                "photo": [{ "file_id": "p1", "file_unique_id": "p1", "width": 9, "height": 9, "file_size": photo.len() }] }),
    );
    assert!(fake.until(LONG, |f| f.sent_to(42).len() >= 2).await);
    let asked: Vec<String> = provider
        .requests
        .lock()
        .unwrap()
        .iter()
        .map(|(b, _)| super::attachments::user_text(b))
        .collect();
    assert!(
        asked[0].contains("is this fair?")
            && asked[0].contains("[Document]\\nName: lease.pdf (application/pdf)")
            && asked[0].contains("Rent 900 EUR monthly"),
        "{}",
        asked[0]
    );
    assert!(asked[1].contains("data:image/png;base64,"), "{}", asked[1]);
}
