//! `tools.media` as ferroclaw reads it (OpenClaw's keys): the shared
//! capability-tagged `models[]`, and per capability (`audio`, `image`,
//! `video`) its own `models[]` and defaults. `models.providers` rides
//! along for provider entries.

use super::store::MediaKind;
pub use crate::settings::{
    AttachmentMode, AttachmentPolicy, Capability, CapabilityLimits, DocumentSettings, Limits,
    MediaModelEntry as ModelEntry,
};

/// `tools.media`, with what understanding needs beside it.
#[derive(Debug, Clone)]
pub struct MediaConfig {
    pub models: Vec<ModelEntry>,
    pub audio: Capability,
    pub image: Capability,
    pub video: Capability,
    pub document: DocumentSettings,
    /// `models.providers`, for provider entries (not part of `tools.media`).
    pub providers: std::collections::BTreeMap<String, crate::settings::ProviderSettings>,
    /// Which reply model a message gets, to tell whether it sees images.
    pub reply: ReplyModels,
    /// `tools.links` (None: off).
    pub links: Option<super::links::LinksConfig>,
    /// The transcriber found when `tools.media.audio` names none
    /// (`detect.rs`).
    pub detected_audio: Option<ModelEntry>,
    /// The environment as `main.rs` hands it over (`<ID>_API_KEY`, `PATH`
    /// for detection): media never reads the process's own.
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
        if c.entries(MediaKind::Audio).is_empty() && c.audio.enabled {
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

    /// From `tools.media` alone (no providers, reply models, links or
    /// environment).
    pub fn from_tools(tools: &crate::settings::ToolsSettings) -> MediaConfig {
        let m = &tools.media;
        MediaConfig {
            models: m.models.clone(),
            audio: m.audio.clone(),
            image: m.image.clone(),
            video: m.video.clone(),
            document: m.document.clone(),
            providers: Default::default(),
            reply: ReplyModels::default(),
            links: None,
            detected_audio: None,
            env: MediaEnv::default(),
        }
    }

    /// The shipped `tools.media` with `patch` laid over it, for tests.
    #[cfg(test)]
    pub fn shipped_with(patch: serde_json::Value) -> MediaConfig {
        let mut tools = crate::settings::shipped().tools;
        tools.media = crate::settings::shipped_with("tools.media", patch);
        MediaConfig::from_tools(&tools)
    }

    /// How many of a message's attachments of `kind` are understood.
    pub fn attachment_cap(&self, kind: MediaKind) -> usize {
        match self.capability(kind).map(|c| &c.attachments) {
            Some(p) if p.mode == AttachmentMode::All => p.max_attachments.max(1),
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
        self.document.enabled.then_some(self.document.max_chars)
    }

    /// `tools.media.audio|image|video` for a kind (None for documents).
    pub fn capability(&self, kind: MediaKind) -> Option<&Capability> {
        match kind {
            MediaKind::Audio => Some(&self.audio),
            MediaKind::Image => Some(&self.image),
            MediaKind::Video => Some(&self.video),
            _ => None,
        }
    }

    /// A kind's entries in order: the capability's own `models`, then the
    /// shared ones tagged with it; none when its `enabled` is false.
    pub fn entries(&self, kind: MediaKind) -> Vec<&ModelEntry> {
        let (Some(tag), Some(cap)) = (kind.capability(), self.capability(kind)) else {
            return Vec::new();
        };
        if !cap.enabled {
            return Vec::new();
        }
        let named: Vec<&ModelEntry> = cap
            .models
            .iter()
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

    /// A kind's limits (`tools.media.<kind>`; a document's are its own).
    pub fn defaults(&self, kind: MediaKind) -> Option<&CapabilityLimits> {
        self.capability(kind).map(|c| &c.limits)
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

#[cfg(test)]
impl Default for MediaConfig {
    fn default() -> Self {
        MediaConfig::shipped_with(serde_json::json!({}))
    }
}
