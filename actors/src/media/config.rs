//! `tools.media` as ferroclaw reads it (OpenClaw's keys): the shared
//! capability-tagged `models[]`, and per capability (`audio`, `image`,
//! `video`) its own `models[]` and defaults. `models.providers` rides
//! along for provider entries.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::store::MediaKind;

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
    /// ferroclaw's: `tools.media.document` (`enabled`, `maxChars`) for
    /// the text of documents (`[Document]` blocks).
    #[serde(default)]
    pub document: Option<Capability>,
    #[serde(flatten)]
    pub other: Map<String, Value>,
    /// `models.providers`, for provider entries (not part of `tools.media`).
    #[serde(skip)]
    pub providers: std::collections::BTreeMap<String, crate::settings::ProviderSettings>,
    /// Which reply model a message gets, to tell whether it sees images.
    #[serde(skip)]
    pub reply: ReplyModels,
    /// `tools.links` (None: off).
    #[serde(skip)]
    pub links: Option<super::links::LinksConfig>,
    /// The transcriber found when `tools.media.audio` names none
    /// (`detect.rs`).
    #[serde(skip)]
    pub detected_audio: Option<ModelEntry>,
    /// The environment as `main.rs` hands it over (`<ID>_API_KEY`, `PATH`
    /// for detection): media never reads the process's own.
    #[serde(skip)]
    pub env: MediaEnv,
}

/// The gateway's `EnvReader`, for media (none by default: nothing is read).
#[derive(Clone)]
pub struct MediaEnv(pub crate::provider::hub::EnvReader);

impl MediaEnv {
    pub fn var(&self, name: &str) -> Option<String> {
        (self.0)(name).filter(|v| !v.is_empty())
    }
}

impl Default for MediaEnv {
    fn default() -> Self {
        MediaEnv(std::sync::Arc::new(|_: &str| None))
    }
}

impl std::fmt::Debug for MediaEnv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MediaEnv")
    }
}

/// The reply models as far as images go: the default one, each agent's,
/// and those whose catalog entry (`models.providers.<p>.models[].input`)
/// lists no `image` input. A model the catalog does not describe is
/// taken to see images (as the providers' current models do).
#[derive(Debug, Clone, Default)]
pub struct ReplyModels {
    pub default: String,
    pub agents: std::collections::BTreeMap<String, String>,
    pub blind: std::collections::BTreeSet<String>,
}

impl ReplyModels {
    fn from_settings(s: &crate::settings::Settings) -> ReplyModels {
        let blind = s
            .models
            .providers
            .iter()
            .flat_map(|(p, ps)| {
                ps.models
                    .iter()
                    .filter(|m| {
                        m.input
                            .as_ref()
                            .is_some_and(|i| !i.iter().any(|x| x == "image"))
                    })
                    .map(move |m| format!("{p}/{}", m.id))
            })
            .collect();
        let agents = s
            .agents
            .list
            .iter()
            .filter_map(|a| Some((a.id.clone(), a.model.as_ref()?.primary().to_string())))
            .collect();
        ReplyModels {
            default: s.agents.defaults.model.primary().to_string(),
            agents,
            blind,
        }
    }

    /// Whether the model that answers (`model`: the message's own, e.g. a
    /// channel's `modelOverride`; else `agent`'s; else the default) sees
    /// images.
    pub fn vision(&self, model: Option<&str>, agent: &str) -> bool {
        let m = model
            .filter(|m| !m.trim().is_empty())
            .or_else(|| self.agents.get(agent).map(String::as_str))
            .unwrap_or(&self.default);
        !self.blind.contains(m.trim())
    }
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
    /// Which of a message's attachments of this kind are understood.
    pub attachments: Option<AttachmentPolicy>,
    /// Declared before `other`, which keeps the keys left over.
    #[serde(flatten)]
    pub limits: Limits,
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// `tools.media.<kind>.attachments` (OpenClaw's): `mode: "first"` (the
/// default) understands the first attachment of the kind, `"all"` up to
/// `maxAttachments` of them (default `ALL_CAP`), labelled `[Image 1/2]`.
/// (`prefer` is not read: the first ones win.)
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AttachmentPolicy {
    pub mode: Option<String>,
    pub max_attachments: Option<usize>,
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// How many attachments of a kind `mode: "all"` understands when
/// `maxAttachments` does not say (each is a model call or a process).
pub const ALL_CAP: usize = 8;

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
    /// From `tools.media`, with `models.providers` for provider entries
    /// and the environment `env` gives (keys, `PATH`).
    pub fn from_settings(
        s: &crate::settings::Settings,
        env: &crate::provider::hub::EnvReader,
    ) -> MediaConfig {
        let mut c = MediaConfig::from_tools(&s.tools);
        c.env = MediaEnv(env.clone());
        c.providers = s.models.providers.clone();
        c.reply = ReplyModels::from_settings(s);
        c.links = super::links::LinksConfig::from_tools(&s.tools);
        if c.entries(MediaKind::Audio).is_empty()
            && c.audio.as_ref().and_then(|a| a.enabled) != Some(false)
        {
            let path = c.env.var("PATH");
            let var = |k: &str| c.env.var(k);
            let env = super::detect::Env {
                path: path.as_deref().map(std::ffi::OsStr::new),
                var: &var,
            };
            c.detected_audio = super::detect::audio(&env, &c.providers).map(|f| ModelEntry {
                kind: f.kind,
                command: f.command,
                args: f.args,
                provider: f.provider,
                ..ModelEntry::default()
            });
            if let Some(e) = &c.detected_audio {
                tracing::info!(entry = %entry_name(e), "audio transcriber detected (tools.media.audio names none)");
            }
        }
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

    /// How many of a message's attachments of `kind` are understood.
    pub fn attachment_cap(&self, kind: MediaKind) -> usize {
        let cap = match kind {
            MediaKind::Audio => self.audio.as_ref(),
            MediaKind::Image => self.image.as_ref(),
            MediaKind::Video => self.video.as_ref(),
            _ => None,
        };
        match cap.and_then(|c| c.attachments.as_ref()) {
            Some(p) if p.mode.as_deref() == Some("all") => {
                p.max_attachments.unwrap_or(ALL_CAP).max(1)
            }
            _ => 1,
        }
    }

    /// The audio entries in order: `audio.models`, then the shared ones
    /// tagged `audio`; none when `audio.enabled` is false.
    pub fn audio_entries(&self) -> Vec<&ModelEntry> {
        self.entries(MediaKind::Audio)
    }

    /// The most characters of one document's text (None: documents off).
    pub fn document_chars(&self) -> Option<usize> {
        let d = self.document.as_ref();
        match d.and_then(|d| d.enabled) {
            Some(false) => None,
            _ => Some(
                d.and_then(|d| d.limits.max_chars)
                    .unwrap_or(super::document::DEFAULT_MAX_CHARS),
            ),
        }
    }

    /// `tools.media.audio|image|video` for a kind (None for documents).
    pub fn capability(&self, kind: MediaKind) -> Option<&Capability> {
        match kind {
            MediaKind::Audio => self.audio.as_ref(),
            MediaKind::Image => self.image.as_ref(),
            MediaKind::Video => self.video.as_ref(),
            _ => None,
        }
    }

    /// A kind's entries in order: the capability's own `models`, then the
    /// shared ones tagged with it; none when its `enabled` is false.
    pub fn entries(&self, kind: MediaKind) -> Vec<&ModelEntry> {
        let Some(tag) = kind.capability() else {
            return Vec::new();
        };
        let cap = self.capability(kind);
        if cap.and_then(|c| c.enabled) == Some(false) {
            return Vec::new();
        }
        let named: Vec<&ModelEntry> = cap
            .map(|c| c.models.iter().collect::<Vec<_>>())
            .unwrap_or_default()
            .into_iter()
            .chain(
                self.models
                    .iter()
                    .filter(|m| m.capabilities.iter().any(|c| c == tag)),
            )
            .collect();
        match (named.is_empty(), kind, &self.detected_audio) {
            (true, MediaKind::Audio, Some(found)) => vec![found],
            _ => named,
        }
    }

    /// A kind's defaults: OpenClaw's (`maxBytes` 10 MB for images, 20 MB
    /// for audio, 50 MB for video; `maxChars` 500 for images and video)
    /// under what `tools.media.<kind>` sets.
    pub fn defaults(&self, kind: MediaKind) -> Limits {
        let (bytes, chars) = match kind {
            MediaKind::Image => (10 << 20, Some(500)),
            MediaKind::Video => (50 << 20, Some(500)),
            _ => (20 << 20, None),
        };
        let builtin = Limits {
            max_bytes: Some(bytes),
            max_chars: chars,
            ..Limits::default()
        };
        self.capability(kind)
            .map(|c| c.limits.over(&builtin))
            .unwrap_or(builtin)
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
