//! `tools.media` as ferroclaw reads it (OpenClaw's keys): the shared
//! capability-tagged `models[]`, and per capability (`audio`, `image`,
//! `video`) its own `models[]` and defaults. `models.providers` rides
//! along for provider entries.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// `tools.media`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MediaConfig {
    #[serde(default)]
    pub models: Vec<ModelEntry>,
    #[serde(default)]
    pub audio: Option<Capability>,
    #[serde(default)]
    pub image: Option<Capability>,
    #[serde(default)]
    pub video: Option<Capability>,
    #[serde(flatten)]
    pub other: Map<String, Value>,
    /// `models.providers`, for provider entries (not part of `tools.media`).
    #[serde(skip)]
    pub providers: std::collections::BTreeMap<String, crate::settings::ProviderSettings>,
}

/// What a capability sets as defaults and an entry may override.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Limits {
    pub prompt: Option<String>,
    pub max_chars: Option<usize>,
    pub max_bytes: Option<u64>,
    pub timeout_seconds: Option<f64>,
    pub language: Option<String>,
}

impl Limits {
    /// These, with `defaults` where these say nothing.
    pub fn over(&self, defaults: &Limits) -> Limits {
        Limits {
            prompt: self.prompt.clone().or(defaults.prompt.clone()),
            max_chars: self.max_chars.or(defaults.max_chars),
            max_bytes: self.max_bytes.or(defaults.max_bytes),
            timeout_seconds: self.timeout_seconds.or(defaults.timeout_seconds),
            language: self.language.clone().or(defaults.language.clone()),
        }
    }
}

/// `tools.media.audio|image|video`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Capability {
    pub enabled: Option<bool>,
    #[serde(default)]
    pub models: Vec<ModelEntry>,
    /// Declared before `other`, which keeps the keys left over.
    #[serde(flatten)]
    pub limits: Limits,
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// One `models[]` entry: `type: "cli"` (command + args) or a provider.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelEntry {
    #[serde(rename = "type")]
    pub kind: Option<String>,
    pub command: Option<String>,
    #[serde(default)]
    pub args: Vec<String>,
    pub provider: Option<String>,
    pub model: Option<String>,
    #[serde(default)]
    pub capabilities: Vec<String>,
    /// Declared before `other`, which keeps the keys left over.
    #[serde(flatten)]
    pub limits: Limits,
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

impl MediaConfig {
    /// From `tools.media`, with `models.providers` for provider entries.
    pub fn from_settings(s: &crate::settings::Settings) -> MediaConfig {
        let mut c = MediaConfig::from_tools(&s.tools);
        c.providers = s.models.providers.clone();
        c
    }

    /// From `tools.media` (absent or malformed: nothing configured, said once).
    pub fn from_tools(tools: &crate::settings::ToolsSettings) -> MediaConfig {
        match tools.other.get("media") {
            None => MediaConfig::default(),
            Some(v) => serde_json::from_value(v.clone()).unwrap_or_else(|e| {
                tracing::warn!(error = %e, "tools.media not understood; media understanding off");
                MediaConfig::default()
            }),
        }
    }

    /// The audio entries in order: `audio.models`, then the shared ones
    /// tagged `audio`; none when `audio.enabled` is false.
    pub fn audio_entries(&self) -> Vec<&ModelEntry> {
        let cap = self.audio.as_ref();
        if cap.and_then(|c| c.enabled) == Some(false) {
            return Vec::new();
        }
        cap.map(|c| c.models.iter().collect::<Vec<_>>())
            .unwrap_or_default()
            .into_iter()
            .chain(
                self.models
                    .iter()
                    .filter(|m| m.capabilities.iter().any(|c| c == "audio")),
            )
            .collect()
    }
}

pub fn entry_name(e: &ModelEntry) -> String {
    match (&e.command, &e.provider, &e.model) {
        (Some(c), _, _) => format!("cli:{c}"),
        (None, Some(p), Some(m)) => format!("{p}/{m}"),
        (None, Some(p), None) => p.clone(),
        _ => "unnamed entry".into(),
    }
}
