//! Voice out on every channel (issue 54): with `tts.auto: "always"` and
//! espeak-ng as the Local CLI engine, the owner's message gets its text
//! reply and, once, the channel's native voice shape: WhatsApp an `audio`
//! message with `voice: true` over an uploaded Ogg/Opus file; Matrix (a
//! real Synapse) `m.audio` with the MSC3245 voice flag, the file in the
//! homeserver's media repository saying the reply; Signal an Ogg/Opus
//! attachment; Slack and Discord an audio file (the engine's WAV).

use std::time::Duration;

use serde_json::{json, Value};

use super::tts::{espeak_cli, hear, ogg_codec};
use crate::support::TestGateway;

const LONG: Duration = Duration::from_secs(60);
const SAID: &str = "please say hello to the whole team";
const ANSWER: &str = "You said: please say hello to the whole team";

/// `channel` (its config) with replies spoken by espeak-ng.
fn spoken(mut channel: Value) -> Value {
    ferroclaw::config::merge_patch(
        &mut channel,
        &json!({ "tts": { "auto": "always", "providers": { "tts-local-cli": espeak_cli() } } }),
    );
    channel
}

#[tokio::test]
async fn whatsapp_gets_an_audio_message_flagged_voice_over_an_ogg_opus_upload() {
    use crate::support::fake_whatsapp::{config, deliver, text_body, FakeWhatsApp};
    let fake = FakeWhatsApp::start();
    let gw = TestGateway::with_config(spoken(config(&fake, json!({}))));
    let url = format!("http://{}", gw.addr);
    let owner = "15551230001";
    assert_eq!(
        deliver(&url, &text_body(owner, "V1", SAID), 50)
            .await
            .last(),
        Some(&200)
    );
    assert!(
        fake.until(LONG, |f| !f.sent_to(owner, "audio").is_empty())
            .await
    );
    let texts = fake.sent_to(owner, "text");
    assert_eq!(
        texts.iter().filter(|s| s.text == ANSWER).count(),
        1,
        "{texts:?}"
    );
    let audio = fake.sent_to(owner, "audio");
    assert_eq!(audio.len(), 1, "{audio:?}");
    assert_eq!(audio[0].body["audio"]["voice"], true, "{:?}", audio[0].body);
    let id = audio[0].body["audio"]["id"].as_str().expect("by media id");
    assert!(id.starts_with("UPLOAD"), "{id}");
    let up = fake.uploads();
    assert_eq!(up.len(), 1);
    assert_eq!(up[0].1, "audio/ogg");
    assert_eq!(ogg_codec(&up[0].2), Some("opus"));
}

#[tokio::test]
async fn matrix_gets_m_audio_with_the_voice_flag_and_it_says_the_reply() {
    use super::matrix::{bot, until};
    use crate::support::synapse::{synapse, unique};
    let me = synapse().human(&unique("tts")).await;
    let (bot_id, cfg) = bot(json!({ "dm": { "policy": "allowlist", "allowFrom": [me.user_id] } }));
    let dm = me.dm(&bot_id).await;
    let _gw = TestGateway::with_config(spoken(cfg));
    assert!(until(LONG, async || me.joined(&dm, &bot_id).await).await);
    me.say(&dm, "t1", SAID).await;
    let audio = async || {
        me.messages_from(&dm, &bot_id)
            .await
            .into_iter()
            .filter(|e| e["content"]["msgtype"] == "m.audio")
            .collect::<Vec<Value>>()
    };
    assert!(until(LONG, async || audio().await.len() == 1).await);
    let texts: Vec<Value> = me.messages_from(&dm, &bot_id).await;
    let answers = texts
        .iter()
        .filter(|e| e["content"]["body"] == ANSWER)
        .count();
    assert_eq!(answers, 1, "{texts:?}");
    let note = &audio().await[0]["content"];
    assert!(
        note.get("org.matrix.msc3245.voice").is_some(),
        "the voice flag: {note}"
    );
    assert!(note.get("org.matrix.msc1767.audio").is_some(), "{note}");
    assert_eq!(note["info"]["mimetype"], "audio/ogg", "{note}");
    let bytes = me.download(note["url"].as_str().unwrap()).await;
    assert_eq!(ogg_codec(&bytes), Some("opus"));
    let dir = tempfile::tempdir().unwrap();
    let heard = hear(dir.path(), &bytes);
    assert!(heard.contains("hello to the whole team"), "heard {heard:?}");
}

#[tokio::test]
async fn signal_gets_an_ogg_opus_attachment() {
    use crate::support::fake_signal::{config, text, Drive, FakeSignal};
    let fake = FakeSignal::start();
    let _gw = TestGateway::with_config(spoken(config(&fake.url, json!({}))));
    let owner = "+15551230001";
    fake.inject(text(owner, 1_700_000_000_101, SAID)).await;
    let with_file = async || {
        fake.sent_to(owner)
            .await
            .into_iter()
            .filter(|c| c["params"]["attachments"].is_array())
            .collect::<Vec<Value>>()
    };
    assert!(super::matrix::until(LONG, async || with_file().await.len() == 1).await);
    let answers = fake
        .sent_to(owner)
        .await
        .iter()
        .filter(|c| c["params"]["message"] == ANSWER)
        .count();
    assert_eq!(answers, 1);
    let sent = &with_file().await[0];
    let uri = sent["params"]["attachments"][0].as_str().unwrap();
    let (head, data) = uri.split_once(";base64,").unwrap();
    assert!(
        head.starts_with("data:audio/ogg;filename=voice.ogg"),
        "{head}"
    );
    use base64::Engine;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data)
        .unwrap();
    assert_eq!(ogg_codec(&bytes), Some("opus"));
}

#[tokio::test]
async fn slack_gets_an_audio_file_shared_once() {
    use super::slack::{connected, slack_config, USER};
    use crate::support::fake_slack::FakeSlack;
    let fake = FakeSlack::start();
    let cfg = slack_config(&fake, json!({ "streamMode": "off" }));
    let _gw = TestGateway::with_config(spoken(cfg));
    assert!(connected(&fake).await);
    fake.message("D1", "im", USER, SAID, None);
    assert!(fake.until(LONG, |f| f.shared().len() == 1).await);
    assert_eq!(super::slack::answers(&fake, "D1", ANSWER), 1);
    let shared = fake.shared();
    assert_eq!(shared[0].channel, "D1");
    assert_eq!(shared[0].name, "voice.wav");
    assert_eq!(&shared[0].bytes[..4], b"RIFF", "the engine's WAV as made");
}

#[tokio::test]
async fn discord_gets_an_audio_attachment_once() {
    use super::discord::{discord_config, ready, USER};
    use crate::support::fake_discord::FakeDiscord;
    let fake = FakeDiscord::start(45_000);
    let cfg = discord_config(&fake, json!({ "streamMode": "off" }));
    let _gw = TestGateway::with_config(spoken(cfg));
    assert!(ready(&fake).await);
    fake.message("DM1", None, USER, &[], SAID);
    assert!(fake.until(LONG, |f| f.uploads().len() == 1).await);
    assert_eq!(super::discord::answers(&fake, "DM1", ANSWER), 1);
    let up = fake.uploads();
    assert_eq!(up[0].filename.as_deref(), Some("voice.wav"));
    assert_eq!(up[0].content_type.as_deref(), Some("audio/wav"));
    assert_eq!(&up[0].data[..4], b"RIFF");
}
