//! `tts` (OpenClaw's keys): replies spoken as voice notes. The legacy
//! `messages.tts` is moved here at load (`src/config.rs`, as OpenClaw's
//! doctor does), with `enabled` read as `auto` and the direct provider
//! blocks (`tts.openai`, `tts.elevenlabs`) as `providers.<id>`. Per agent,
//! `agents.list[].tts` lays voices, a persona or a mode over it (never
//! keys: those stay here). Defaults are in `config/default.json5`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// When replies are spoken: `off`, `always`, `inbound` (only a reply to
/// a voice note), `tagged` (only a reply with a `[[tts:...]]` directive or
/// a `[[tts:text]]` block).
// No comment per variant: the schema stays a plain `enum`, which
// OpenClaw's Control UI renders as a choice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum TtsAuto {
    Off,
    Always,
    Inbound,
    Tagged,
}

impl TtsAuto {
    pub fn parse(s: &str) -> Option<TtsAuto> {
        serde_json::from_value(Value::String(s.trim().to_ascii_lowercase())).ok()
    }

    pub fn as_str(self) -> &'static str {
        match self {
            TtsAuto::Off => "off",
            TtsAuto::Always => "always",
            TtsAuto::Inbound => "inbound",
            TtsAuto::Tagged => "tagged",
        }
    }
}

/// Spoken replies: when, by which provider, with which voice.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = secret_tts)]
pub struct TtsSettings {
    pub auto: TtsAuto,
    /// `final` (the final reply) or `all` (blocks too: ferroclaw speaks
    /// the final reply either way).
    pub mode: String,
    /// The first provider tried (unset: the first configured, in the
    /// order OpenAI, ElevenLabs, Local CLI).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub persona: Option<String>,
    pub personas: BTreeMap<String, TtsPersona>,
    /// The model that summarises a reply over the length limit (unset:
    /// the agent's model).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary_model: Option<String>,
    pub model_overrides: TtsModelOverrides,
    pub providers: BTreeMap<String, TtsProviderSettings>,
    /// The most characters one synthesis takes (`/tts audio`, the tool,
    /// `tts.convert` fail over it; a reply is summarised or cut first).
    pub max_text_length: usize,
    pub timeout_ms: u64,
    /// ferroclaw's: the spoken summary's target length (`/tts limit`
    /// changes it per host), and whether a longer reply is summarised
    /// (else cut).
    pub max_length: usize,
    pub summarize: bool,
    /// OpenClaw's retired `prefsPath` (its doctor keeps the old file in
    /// use): the preferences file (`~/` under home, relative under the
    /// state dir); unset: `<state>/settings/tts.json`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefs_path: Option<String>,
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// `tts.modelOverrides`: what `[[tts:...]]` directives may change.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TtsModelOverrides {
    pub enabled: bool,
    pub allow_provider: bool,
    pub allow_seed: bool,
}

/// `tts.personas.<id>`: a stable spoken identity.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TtsPersona {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// `preserve-persona` (unset), `provider-defaults` or `fail`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback_policy: Option<String>,
    /// Per provider: voice, model, settings laid over `tts.providers`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub providers: BTreeMap<String, TtsVoiceLayer>,
}

/// A provider's voice and model, as a persona or an agent sets them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TtsVoiceLayer {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speaker_voice: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speaker_voice_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub voice: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub voice_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// ElevenLabs' voice settings (`stability`, `similarityBoost`,
    /// `style`, `useSpeakerBoost`, `speed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub voice_settings: Option<Map<String, Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speed: Option<f64>,
}

/// `tts.providers.<id>`: OpenAI (`openai`, any OpenAI-compatible
/// `/audio/speech` by `baseUrl`), ElevenLabs (`elevenlabs`) and the local
/// command (`tts-local-cli`) are run; other ids are kept and listed as
/// not supported.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TtsProviderSettings {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("writeOnly" = true))]
    pub api_key: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    #[serde(flatten)]
    pub voice: TtsVoiceLayer,
    /// OpenAI: `mp3`, `opus`, `wav`... (unset: Opus for voice notes, MP3
    /// otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_format: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra_body: Option<Map<String, Value>>,
    /// ElevenLabs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub apply_text_normalization: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub language_code: Option<String>,
    /// Local CLI: the program, its arguments (`{{Text}}`, `{{OutputPath}}`,
    /// `{{OutputDir}}`, `{{OutputBase}}`), what it writes (`wav`, `mp3`,
    /// `opus`), its time limit, folder and environment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_format: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("writeOnly" = true))]
    pub env: Option<BTreeMap<String, String>>,
    /// Microsoft's switch (its provider is not run by ferroclaw).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// `agents.list[].tts`: what one agent changes (no keys).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentTtsLayer {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto: Option<TtsAuto>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub persona: Option<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub providers: BTreeMap<String, TtsVoiceLayer>,
}

impl TtsVoiceLayer {
    /// `over` laid on this layer (its set fields win; a voice or a model
    /// it names replaces this layer's, whichever alias either uses).
    pub fn with(&self, over: &TtsVoiceLayer) -> TtsVoiceLayer {
        let voice = if over.voice_name().is_some() {
            over
        } else {
            self
        };
        let model = if over.model_name().is_some() {
            over
        } else {
            self
        };
        TtsVoiceLayer {
            model: model.model.clone(),
            model_id: model.model_id.clone(),
            speaker_voice: voice.speaker_voice.clone(),
            speaker_voice_id: voice.speaker_voice_id.clone(),
            voice: voice.voice.clone(),
            voice_id: voice.voice_id.clone(),
            instructions: over
                .instructions
                .clone()
                .or_else(|| self.instructions.clone()),
            seed: over.seed.or(self.seed),
            voice_settings: over
                .voice_settings
                .clone()
                .or_else(|| self.voice_settings.clone()),
            speed: over.speed.or(self.speed),
        }
    }

    /// The voice: the canonical field first, then the legacy aliases.
    pub fn voice_name(&self) -> Option<&str> {
        [
            &self.speaker_voice,
            &self.speaker_voice_id,
            &self.voice,
            &self.voice_id,
        ]
        .into_iter()
        .flatten()
        .map(|s| s.trim())
        .find(|s| !s.is_empty())
    }

    pub fn model_name(&self) -> Option<&str> {
        [&self.model, &self.model_id]
            .into_iter()
            .flatten()
            .map(|s| s.trim())
            .find(|s| !s.is_empty())
    }
}

/// A legacy `messages.tts.<id>` block OpenClaw's doctor does not move (an
/// id other than its four) stays under `tts.<id>`: its key is a secret.
fn secret_tts(schema: &mut schemars::Schema) {
    super::mark(schema, &["*.apiKey"]);
}
