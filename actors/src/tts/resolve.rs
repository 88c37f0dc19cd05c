//! Which providers a synthesis tries, in order, and each one's voice:
//! OpenClaw's precedence. The provider: a request's own (a directive with
//! `allowProvider`, `tts.convert`'s), then `/tts provider`, the persona's,
//! the agent's, `tts.provider`, else the first configured; the other
//! configured providers follow as fallbacks. A provider's settings:
//! `tts.providers.<id>`, the agent's layer, the persona's, the request's.

use super::directives::VoiceOverrides;
use super::prefs::TtsPrefs;
use crate::provider::hub::EnvReader;
use crate::settings::{
    AgentTtsLayer, TtsAuto, TtsPersona, TtsProviderSettings, TtsSettings, TtsVoiceLayer,
};

/// The providers ferroclaw runs (id, label), in auto-select order.
pub const PROVIDERS: &[(&str, &str)] = &[
    ("openai", "OpenAI"),
    ("elevenlabs", "ElevenLabs"),
    ("tts-local-cli", "Local CLI"),
];

/// How a provider is called.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProviderKind {
    OpenAi,
    ElevenLabs,
    LocalCli,
}

impl ProviderKind {
    pub fn of(id: &str) -> Option<ProviderKind> {
        match canonical(id).as_str() {
            "openai" => Some(ProviderKind::OpenAi),
            "elevenlabs" => Some(ProviderKind::ElevenLabs),
            "tts-local-cli" => Some(ProviderKind::LocalCli),
            _ => None,
        }
    }
}

/// A provider id as OpenClaw normalises it (`local-cli`, `cli` are the
/// local command; `edge` is `microsoft`).
pub fn canonical(id: &str) -> String {
    let id = id.trim().to_ascii_lowercase();
    match id.as_str() {
        "local-cli" | "cli" | "tts-cli" => "tts-local-cli".into(),
        "edge" => "microsoft".into(),
        "xi" | "eleven" | "eleven-labs" => "elevenlabs".into(),
        _ => id,
    }
}

/// One provider to try, with its settings laid together.
#[derive(Debug, Clone)]
pub struct Attempt {
    pub id: String,
    pub kind: ProviderKind,
    pub config: TtsProviderSettings,
    /// The API key (the config's, else the provider's variable).
    pub key: Option<String>,
    /// Skipped without a call (the persona's `fail` policy): why.
    pub skip: Option<String>,
}

/// What one synthesis works from.
#[derive(Debug, Clone)]
pub struct Effective {
    pub persona: Option<String>,
    pub attempts: Vec<Attempt>,
    pub max_length: usize,
    pub summarize: bool,
}

/// The key a provider reads from the environment.
fn env_key(kind: ProviderKind, env: &EnvReader) -> Option<String> {
    let names: &[&str] = match kind {
        ProviderKind::OpenAi => &["OPENAI_API_KEY"],
        ProviderKind::ElevenLabs => &["ELEVENLABS_API_KEY", "XI_API_KEY"],
        ProviderKind::LocalCli => &[],
    };
    names
        .iter()
        .find_map(|n| env(n).filter(|v| !v.trim().is_empty()))
}

/// Whether provider `id` can be called as configured.
pub fn configured(tts: &TtsSettings, id: &str, env: &EnvReader) -> bool {
    let Some(kind) = ProviderKind::of(id) else {
        return false;
    };
    let c = tts.providers.get(id).cloned().unwrap_or_default();
    match kind {
        ProviderKind::LocalCli => c.command.as_deref().is_some_and(|c| !c.trim().is_empty()),
        // A local OpenAI-compatible server needs no real key.
        ProviderKind::OpenAi => {
            c.api_key.is_some() || c.base_url.is_some() || env_key(kind, env).is_some()
        }
        ProviderKind::ElevenLabs => c.api_key.is_some() || env_key(kind, env).is_some(),
    }
}

/// The persona in effect: `/tts persona`, else the agent's, else `tts.persona`.
pub fn persona<'a>(
    tts: &TtsSettings,
    agent: Option<&'a AgentTtsLayer>,
    prefs: &'a TtsPrefs,
) -> Option<String> {
    prefs
        .persona
        .clone()
        .or_else(|| agent.and_then(|a| a.persona.clone()))
        .or_else(|| tts.persona.clone())
        .map(|p| p.trim().to_ascii_lowercase())
        .filter(|p| tts.personas.contains_key(p))
}

/// The auto mode in effect for a session: its `/tts chat`, the host's
/// `/tts on|off`, the agent's, `tts.auto`.
pub fn auto(
    tts: &TtsSettings,
    agent: Option<&AgentTtsLayer>,
    prefs: &TtsPrefs,
    session: Option<&str>,
) -> TtsAuto {
    session
        .and_then(|s| prefs.chats.get(s).copied())
        .or(prefs.auto)
        .or_else(|| agent.and_then(|a| a.auto))
        .unwrap_or(tts.auto)
}

/// The providers to try for one synthesis.
pub fn effective(
    tts: &TtsSettings,
    agent: Option<&AgentTtsLayer>,
    prefs: &TtsPrefs,
    over: &VoiceOverrides,
    env: &EnvReader,
    fallback: bool,
) -> Effective {
    let persona_id = persona(tts, agent, prefs);
    let persona = persona_id.as_ref().and_then(|p| tts.personas.get(p));
    let chosen = over
        .provider
        .clone()
        .or_else(|| prefs.provider.clone())
        .or_else(|| persona.and_then(|p| p.provider.clone()))
        .or_else(|| agent.and_then(|a| a.provider.clone()))
        .or_else(|| tts.provider.clone())
        .map(|p| canonical(&p));
    let mut order: Vec<String> = chosen.iter().cloned().collect();
    if fallback || chosen.is_none() {
        for (id, _) in PROVIDERS {
            let id = id.to_string();
            if !order.contains(&id) && configured(tts, &id, env) {
                order.push(id);
            }
        }
    }
    let attempts = order
        .into_iter()
        .filter_map(|id| attempt(tts, agent, persona, over, env, id))
        .collect();
    Effective {
        persona: persona_id,
        attempts,
        max_length: prefs.max_length.unwrap_or(tts.max_length),
        summarize: prefs.summarize.unwrap_or(tts.summarize),
    }
}

/// One provider's request: its settings with the agent's, the persona's
/// and the request's voice layered on, and why it is skipped (a persona
/// whose policy is `fail` has no voice for it).
fn attempt(
    tts: &TtsSettings,
    agent: Option<&AgentTtsLayer>,
    persona: Option<&TtsPersona>,
    over: &VoiceOverrides,
    env: &EnvReader,
    id: String,
) -> Option<Attempt> {
    let kind = ProviderKind::of(&id)?;
    let mut config = tts.providers.get(&id).cloned().unwrap_or_default();
    let mut voice = config.voice.clone();
    if let Some(layer) = agent.and_then(|a| a.providers.get(&id)) {
        voice = voice.with(layer);
    }
    let bound = persona.and_then(|p| p.providers.get(&id));
    if let Some(layer) = bound {
        voice = voice.with(layer);
    }
    config.voice = voice.with(&request_layer(over));
    if let Some(s) = over.extra.get("languageCode") {
        config.language_code = Some(s.clone());
    }
    if let Some(s) = over.extra.get("applyTextNormalization") {
        config.apply_text_normalization = Some(s.clone());
    }
    let fail = persona.is_some_and(|p| p.fallback_policy.as_deref() == Some("fail"));
    let skip = (fail && bound.is_none()).then(|| "the persona has no voice for it".to_string());
    Some(Attempt {
        key: config.api_key.clone().or_else(|| env_key(kind, env)),
        id,
        kind,
        config,
        skip,
    })
}

/// A request's voice, model, speed and seed as a layer.
fn request_layer(over: &VoiceOverrides) -> TtsVoiceLayer {
    let mut settings = serde_json::Map::new();
    for (k, v) in &over.extra {
        let value = match v.as_str() {
            "true" => serde_json::Value::Bool(true),
            "false" => serde_json::Value::Bool(false),
            s => match s.parse::<f64>() {
                Ok(n) => serde_json::json!(n),
                Err(_) => continue,
            },
        };
        if matches!(
            k.as_str(),
            "stability" | "similarityBoost" | "style" | "useSpeakerBoost"
        ) {
            settings.insert(k.clone(), value);
        }
    }
    TtsVoiceLayer {
        speaker_voice: over.voice.clone(),
        model: over.model.clone(),
        speed: over.speed,
        seed: over.seed,
        voice_settings: (!settings.is_empty()).then_some(settings),
        ..Default::default()
    }
}
