//! The speech plan: who speaks, with which provider and voice, and when
//! a reply is spoken (pure parts; the wire is driven in `tests/gateway/tts.rs`).

use super::directives::parse;
use super::plan::{cut, speakable, spoken, Silent};
use super::resolve::{auto, effective};
use super::*;
use crate::settings::{AgentTtsLayer, TtsAuto, TtsSettings};

fn settings(patch: serde_json::Value) -> TtsSettings {
    crate::settings::shipped_with("tts", patch)
}

fn no_env() -> crate::provider::hub::EnvReader {
    std::sync::Arc::new(|_: &str| None)
}

#[test]
fn the_provider_order_is_openclaws_precedence_with_fallbacks() {
    let s = settings(serde_json::json!({
        "provider": "elevenlabs",
        "providers": {
            "openai": { "baseUrl": "http://127.0.0.1:9/v1", "speakerVoice": "alloy" },
            "elevenlabs": { "apiKey": "k", "speakerVoiceId": "base" },
            "tts-local-cli": { "command": "espeak-ng" },
        },
        "personas": { "narrator": { "provider": "openai", "providers": { "openai": { "speakerVoice": "cedar" } } } },
    }));
    let prefs = TtsPrefs::default();
    let eff = effective(&s, None, &prefs, &Default::default(), &no_env(), true);
    let ids: Vec<&str> = eff.attempts.iter().map(|a| a.id.as_str()).collect();
    assert_eq!(ids, ["elevenlabs", "openai", "tts-local-cli"]);
    assert_eq!(eff.attempts[0].key.as_deref(), Some("k"));
    // The persona's provider and voice come before tts.provider.
    let prefs = TtsPrefs {
        persona: Some("Narrator".into()),
        ..Default::default()
    };
    let eff = effective(&s, None, &prefs, &Default::default(), &no_env(), true);
    assert_eq!(eff.attempts[0].id, "openai");
    assert_eq!(eff.attempts[0].config.voice.voice_name(), Some("cedar"));
    // An agent's voice, then a request's, over the provider's.
    let agent = AgentTtsLayer {
        providers: [(
            "elevenlabs".to_string(),
            crate::settings::TtsVoiceLayer {
                voice_id: Some("agent".into()),
                ..Default::default()
            },
        )]
        .into(),
        ..Default::default()
    };
    let eff = effective(
        &s,
        Some(&agent),
        &TtsPrefs::default(),
        &Default::default(),
        &no_env(),
        false,
    );
    assert_eq!(eff.attempts.len(), 1, "no fallback when asked for none");
    assert_eq!(eff.attempts[0].config.voice.voice_name(), Some("agent"));
    let over = VoiceOverrides {
        voice: Some("asked".into()),
        ..Default::default()
    };
    let eff = effective(
        &s,
        Some(&agent),
        &TtsPrefs::default(),
        &over,
        &no_env(),
        true,
    );
    assert_eq!(eff.attempts[0].config.voice.voice_name(), Some("asked"));
    // `/tts provider` wins over tts.provider.
    let prefs = TtsPrefs {
        provider: Some("tts-local-cli".into()),
        ..Default::default()
    };
    assert_eq!(
        effective(&s, None, &prefs, &Default::default(), &no_env(), true).attempts[0].id,
        "tts-local-cli"
    );
}

#[test]
fn a_provider_without_a_key_is_not_configured_unless_the_environment_has_one() {
    let s = settings(serde_json::json!({}));
    let eff = effective(
        &s,
        None,
        &TtsPrefs::default(),
        &Default::default(),
        &no_env(),
        true,
    );
    assert!(eff.attempts.is_empty());
    let env: crate::provider::hub::EnvReader =
        std::sync::Arc::new(|k: &str| (k == "XI_API_KEY").then(|| "x".to_string()));
    let eff = effective(
        &s,
        None,
        &TtsPrefs::default(),
        &Default::default(),
        &env,
        true,
    );
    assert_eq!(eff.attempts[0].id, "elevenlabs");
    assert_eq!(eff.attempts[0].key.as_deref(), Some("x"));
}

#[test]
fn the_chat_then_the_host_then_the_agent_then_the_config_decide_the_mode() {
    let s = settings(serde_json::json!({ "auto": "inbound" }));
    let mut prefs = TtsPrefs::default();
    assert_eq!(auto(&s, None, &prefs, Some("k")), TtsAuto::Inbound);
    let agent = AgentTtsLayer {
        auto: Some(TtsAuto::Tagged),
        ..Default::default()
    };
    assert_eq!(auto(&s, Some(&agent), &prefs, Some("k")), TtsAuto::Tagged);
    prefs.auto = Some(TtsAuto::Off);
    assert_eq!(auto(&s, Some(&agent), &prefs, Some("k")), TtsAuto::Off);
    prefs.chats.insert("k".into(), TtsAuto::Always);
    assert_eq!(auto(&s, Some(&agent), &prefs, Some("k")), TtsAuto::Always);
    assert_eq!(auto(&s, Some(&agent), &prefs, Some("other")), TtsAuto::Off);
}

#[test]
fn auto_tts_speaks_by_mode_and_skips_media_short_and_code_replies() {
    let allowed = settings(serde_json::json!({})).model_overrides;
    let d = parse("The kitchen lights are on now.", &allowed);
    assert_eq!(spoken(&d, TtsAuto::Off, true, false), Err(Silent::Off));
    assert_eq!(
        spoken(&d, TtsAuto::Inbound, false, false),
        Err(Silent::NotVoice)
    );
    assert_eq!(
        spoken(&d, TtsAuto::Inbound, true, false).unwrap(),
        "The kitchen lights are on now."
    );
    assert_eq!(
        spoken(&d, TtsAuto::Tagged, true, false),
        Err(Silent::NotTagged)
    );
    assert_eq!(spoken(&d, TtsAuto::Always, false, true), Err(Silent::Media));
    assert_eq!(
        spoken(&parse("Ok.", &allowed), TtsAuto::Always, false, false),
        Err(Silent::Short)
    );
    let code = parse(
        "Run:\n```\nlet a = 1;\nlet b = 2;\nprintln!(\"{a}{b}\");\n```",
        &allowed,
    );
    assert_eq!(
        spoken(&code, TtsAuto::Always, false, false),
        Err(Silent::Code)
    );
    let tagged = parse(
        "Shown.[[tts:text]]Only heard, never shown.[[/tts:text]]",
        &allowed,
    );
    assert_eq!(
        spoken(&tagged, TtsAuto::Tagged, false, false).unwrap(),
        "Only heard, never shown."
    );
    assert_eq!(tagged.visible, "Shown.");
}

#[test]
fn markdown_is_not_read_out_and_a_cut_ends_at_a_sentence() {
    assert_eq!(
        speakable("# Title\n- **bold** item with `code`\nsee [the docs](https://x.test) or https://y.test now"),
        "Title\nbold item with code\nsee the docs or now"
    );
    assert_eq!(cut("One two. Three four five.", 12), "One two.");
    assert_eq!(cut("One two three four", 12), "One two");
    assert_eq!(cut("short", 15), "short");
}

#[test]
fn audio_formats_are_told_by_their_bytes() {
    assert_eq!(AudioFormat::of(b"OggS\0\x02"), AudioFormat::Ogg);
    assert_eq!(AudioFormat::of(b"RIFF\0\0\0\0WAVEfmt "), AudioFormat::Wav);
    assert_eq!(AudioFormat::of(b"ID3\x04"), AudioFormat::Mp3);
    assert_eq!(AudioFormat::of(&[0xFF, 0xFB, 0x90]), AudioFormat::Mp3);
    assert_eq!(AudioFormat::of(b"{\"error\":1}"), AudioFormat::Other);
}
