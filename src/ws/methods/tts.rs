//! `tts.*` (OpenClaw's server methods: status, providers, personas,
//! enable/disable, setProvider/setPersona, convert, speak) and
//! `talk.catalog`'s speech group, answered by the `Speaker`. ferroclaw
//! has no Talk sessions (realtime voice, live transcription): the
//! catalog says so with empty, not-ready groups rather than inventing
//! providers.

use base64::Engine;
use ferroclaw_actors::settings::TtsAuto;
use ferroclaw_actors::tts::{
    Fit, ListSpeech, PrefChange, SetTtsPref, SpeechTarget, Synthesize, TtsError, TtsStatusQuery,
    VoiceOverrides,
};
use serde::Deserialize;
use serde_json::{json, Value};

use super::{empty_params, json, params, MethodResult};
use crate::protocol::errors::ErrorShape;
use crate::state::SharedState;

/// The channels whose voice notes are Ogg/Opus (a `channel` hint).
const VOICE_NOTE_CHANNELS: &[&str] = &["telegram", "whatsapp", "matrix", "signal", "feishu"];

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ConvertParams {
    text: Option<String>,
    channel: Option<String>,
    provider: Option<String>,
    model_id: Option<String>,
    voice_id: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SpeakParams {
    text: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ProviderParams {
    provider: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PersonaParams {
    persona: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CatalogParams {
    #[allow(dead_code)]
    provider: Option<String>,
    #[allow(dead_code)]
    model: Option<String>,
}

fn unavailable(e: TtsError) -> ErrorShape {
    match e {
        TtsError::TooLong { .. }
        | TtsError::Empty
        | TtsError::UnknownProvider(_)
        | TtsError::UnknownPersona(_) => ErrorShape::invalid(e.to_string()),
        e => ErrorShape::unavailable(e.to_string()),
    }
}

fn stopped<E>(_: E) -> ErrorShape {
    ErrorShape::unavailable("the speaker is unavailable")
}

pub async fn method(state: &SharedState, method: &str, p: Value) -> MethodResult {
    let speaker = &state.gateway.speech;
    match method {
        "tts.status" => {
            empty_params(method, &p)?;
            json(speaker.send(TtsStatusQuery).await.map_err(stopped)?)
        }
        "tts.providers" | "tts.personas" | "talk.catalog" => catalog(state, method, p).await,
        "tts.enable" | "tts.disable" => {
            empty_params(method, &p)?;
            let auto = if method == "tts.enable" {
                TtsAuto::Always
            } else {
                TtsAuto::Off
            };
            set(state, PrefChange::Auto(auto)).await
        }
        "tts.setProvider" => {
            let p: ProviderParams = params(method, &p)?;
            let id = p.provider.filter(|s| !s.trim().is_empty()).ok_or_else(|| {
                ErrorShape::invalid("Invalid provider. Use a registered TTS provider id.")
            })?;
            set(state, PrefChange::Provider(id)).await
        }
        "tts.setPersona" => {
            let p: PersonaParams = params(method, &p)?;
            let persona = p.persona.map(|s| s.trim().to_string()).filter(|s| {
                !s.is_empty()
                    && !matches!(s.to_ascii_lowercase().as_str(), "off" | "none" | "default")
            });
            set(state, PrefChange::Persona(persona)).await
        }
        "tts.convert" => convert(state, p).await,
        _ => speak(state, p).await,
    }
}

async fn set(state: &SharedState, change: PrefChange) -> MethodResult {
    let asked = SetTtsPref { change };
    let answer = state.gateway.speech.send(asked).await.map_err(stopped)?;
    json(match answer.map_err(unavailable)? {
        PrefChange::Auto(a) => json!({ "enabled": a != TtsAuto::Off }),
        PrefChange::Provider(id) => json!({ "provider": id }),
        PrefChange::Persona(id) => json!({ "persona": id }),
    })
}

async fn catalog(state: &SharedState, method: &str, p: Value) -> MethodResult {
    if method == "talk.catalog" {
        if !p.is_null() {
            let _: CatalogParams = params(method, &p)?;
        }
    } else {
        empty_params(method, &p)?;
    }
    let cat = state
        .gateway
        .speech
        .send(ListSpeech)
        .await
        .map_err(stopped)?;
    let entries: Vec<Value> = cat
        .providers
        .iter()
        .map(|e| json!({ "id": e.id, "name": e.label, "configured": e.configured, "models": e.models, "voices": e.voices }))
        .collect();
    match method {
        "tts.providers" => json(json!({ "providers": entries, "active": cat.active })),
        "tts.personas" => json(json!({ "active": cat.persona, "personas": cat.personas })),
        _ => {
            let speech: Vec<Value> = cat
                .providers
                .iter()
                .map(|e| {
                    json!({ "id": e.id, "label": e.label, "configured": e.configured,
                        "models": e.models, "voices": e.voices, "modes": ["stt-tts"], "brains": ["agent-consult"] })
                })
                .collect();
            let mut group = json!({ "providers": speech });
            if let Some(a) = cat.active {
                group["activeProvider"] = json!(a);
            }
            json(json!({
                "modes": ["stt-tts"], "transports": [], "brains": ["agent-consult"],
                "speech": group,
                "transcription": { "ready": false, "providers": [] },
                "realtime": { "ready": false, "providers": [] },
            }))
        }
    }
}

async fn convert(state: &SharedState, p: Value) -> MethodResult {
    let p: ConvertParams = params("tts.convert", &p)?;
    let text = p.text.map(|t| t.trim().to_string()).unwrap_or_default();
    if text.is_empty() {
        return Err(ErrorShape::invalid("tts.convert requires text"));
    }
    let voice_note = p
        .channel
        .as_deref()
        .is_some_and(|c| VOICE_NOTE_CHANNELS.contains(&c.trim().to_ascii_lowercase().as_str()));
    let overrides = VoiceOverrides {
        provider: p.provider.clone(),
        voice: p.voice_id.clone(),
        model: p.model_id.clone(),
        ..Default::default()
    };
    let explicit = !overrides.is_empty();
    let ask = Synthesize {
        text,
        target: if voice_note {
            SpeechTarget::VoiceNote
        } else {
            SpeechTarget::AudioFile
        },
        agent: None,
        overrides,
        fallback: !explicit,
        timeout_ms: None,
        fit: Fit::Strict,
    };
    let spoken = state.gateway.speech.send(ask).await.map_err(stopped)?;
    let s = spoken.map_err(unavailable)?;
    json(json!({
        "audioPath": s.media.path.display().to_string(),
        "provider": s.provider,
        "outputFormat": s.format,
        "voiceCompatible": s.voice_compatible,
    }))
}

async fn speak(state: &SharedState, p: Value) -> MethodResult {
    let p: SpeakParams = params("tts.speak", &p)?;
    let text = p.text.trim().to_string();
    if text.is_empty() {
        return Err(ErrorShape::invalid("tts.speak requires text"));
    }
    let ask = Synthesize {
        text,
        target: SpeechTarget::AudioFile,
        agent: None,
        overrides: VoiceOverrides::default(),
        fallback: true,
        timeout_ms: None,
        fit: Fit::Strict,
    };
    let spoken = state.gateway.speech.send(ask).await.map_err(stopped)?;
    let s = match spoken {
        Err(TtsError::TooLong { len, max }) => {
            return Err(ErrorShape::invalid(format!(
                "tts.speak text too long ({len} chars, max {max})"
            )))
        }
        r => r.map_err(unavailable)?,
    };
    let bytes = tokio::fs::read(&s.media.path)
        .await
        .map_err(|e| ErrorShape::unavailable(format!("the audio: {e}")))?;
    let ext = s
        .media
        .file_name
        .as_deref()
        .and_then(|n| n.rsplit('.').next())
        .unwrap_or("bin");
    json(json!({
        "audioBase64": base64::engine::general_purpose::STANDARD.encode(bytes),
        "provider": s.provider,
        "outputFormat": s.format,
        "mimeType": s.media.content_type,
        "fileExtension": format!(".{ext}"),
    }))
}
