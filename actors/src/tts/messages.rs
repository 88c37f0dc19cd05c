//! What the `Speaker` is asked: configure, synthesise, plan a reply's
//! voice, run a `/tts` command, report and change its state.

use std::collections::BTreeMap;

use actix::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{SpeechTarget, TtsError, VoiceOverrides};
use crate::settings::{AgentTtsLayer, TtsAuto, TtsSettings};

/// The settings after a config change.
#[derive(Debug, Clone, Message)]
#[rtype(result = "()")]
pub struct ConfigureSpeech {
    pub tts: TtsSettings,
    pub agents: BTreeMap<String, AgentTtsLayer>,
    pub models: SpeechModels,
}

/// The models a long reply's summary may use: `tts.summaryModel`, else
/// the agent's, else the default (`provider/model`).
#[derive(Debug, Clone, Default)]
pub struct SpeechModels {
    pub default: String,
    pub agents: BTreeMap<String, String>,
}

/// How a text over the limits is treated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Fit {
    /// Refused over `maxTextLength` (`/tts audio`, the tool, the methods).
    Strict,
    /// A reply: summarised (or cut) to the host's `maxLength`.
    Reply,
}

/// One synthesis: cached, else the providers in order.
#[derive(Debug, Clone, Message)]
#[rtype(result = "Result<Spoken, TtsError>")]
pub struct Synthesize {
    pub text: String,
    pub target: SpeechTarget,
    pub agent: Option<String>,
    pub overrides: VoiceOverrides,
    /// Other providers are tried when the first fails.
    pub fallback: bool,
    /// A caller's own limit per provider request (else `tts.timeoutMs`).
    pub timeout_ms: Option<u64>,
    pub fit: Fit,
}

/// Audio made (or found in the cache).
#[derive(Debug, Clone)]
pub struct Spoken {
    pub media: crate::media::MediaRef,
    pub provider: String,
    /// `opus`, `wav`, `mp3`.
    pub format: String,
    /// Ogg/Opus: a channel's voice note takes it as it is.
    pub voice_compatible: bool,
    pub cached: bool,
}

/// A reply's voice, to synthesise when its outbox item is sent (stored
/// with the item: a restart synthesises the same request, from the cache).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SpeechJob {
    pub text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    #[serde(default, skip_serializing_if = "VoiceOverrides::is_empty")]
    pub overrides: VoiceOverrides,
    pub fit: Fit,
}

/// A finished reply's visible text and whether it is spoken.
#[derive(Debug, Clone, Message)]
#[rtype(result = "ReplyPlan")]
pub struct PlanReply {
    pub agent: Option<String>,
    pub session_key: String,
    pub run_id: String,
    /// The reply (None: nothing to show, e.g. `/tts audio`'s run).
    pub text: Option<String>,
    /// It answers a voice note (`auto: inbound`).
    pub voice_in: bool,
    /// A stranger's turn: directives in the reply are stripped, never
    /// obeyed (its text may echo the stranger's).
    pub untrusted: bool,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReplyPlan {
    /// The text to send (directives out; None: nothing).
    pub visible: Option<String>,
    pub speech: Option<SpeechJob>,
}

/// The run's voice is in the outbox: its `/tts audio` record goes.
#[derive(Debug, Clone, Message)]
#[rtype(result = "()")]
pub struct ForgetRun {
    pub run_id: String,
}

/// `/tts ...` in a session; the answer to show.
#[derive(Debug, Clone, Message)]
#[rtype(result = "String")]
pub struct TtsCommand {
    pub args: String,
    pub session_key: String,
    pub run_id: String,
    pub agent: Option<String>,
    /// The session's latest assistant reply (`/tts latest`).
    pub latest: Option<String>,
}

/// `tts.status` (OpenClaw's payload).
#[derive(Debug, Clone, Message)]
#[rtype(result = "Value")]
pub struct TtsStatusQuery;

/// `tts.providers`, `talk.catalog`'s speech group, `tts.personas`.
#[derive(Debug, Clone, Message)]
#[rtype(result = "SpeechCatalog")]
pub struct ListSpeech;

#[derive(Debug, Clone, Default)]
pub struct SpeechCatalog {
    /// (id, label, configured, models, voices), in auto-select order.
    pub providers: Vec<ProviderEntry>,
    pub active: Option<String>,
    pub personas: Vec<Value>,
    pub persona: Option<String>,
}

#[derive(Debug, Clone)]
pub struct ProviderEntry {
    pub id: String,
    pub label: String,
    pub configured: bool,
    pub models: Vec<String>,
    pub voices: Vec<String>,
}

/// A preference the methods change; the answer OpenClaw's method gives.
#[derive(Debug, Clone, Message)]
#[rtype(result = "Result<PrefChange, TtsError>")]
pub struct SetTtsPref {
    pub change: PrefChange,
}

#[derive(Debug, Clone)]
pub enum PrefChange {
    Auto(TtsAuto),
    Provider(String),
    /// None: no persona.
    Persona(Option<String>),
}
