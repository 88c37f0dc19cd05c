//! `tools.media` and `tools.links` (OpenClaw's keys, ferroclaw's marked):
//! what understanding media and links may do. Each capability's limits
//! are shipped in `config/default.json5`; an entry of `models[]` overrides
//! what it names (`Limits::over`).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// `tools.media`: the shared capability-tagged `models[]`, and per
/// capability its own `models[]` and limits.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MediaSettings {
    pub models: Vec<MediaModelEntry>,
    pub audio: Capability,
    pub image: Capability,
    pub video: Capability,
    /// ferroclaw's: the text of documents (`[Document]` blocks).
    pub document: DocumentSettings,
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// `tools.media.audio|image|video`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Capability {
    /// False: none of this kind is understood (audio: nor is a
    /// transcriber looked for).
    pub enabled: bool,
    pub models: Vec<MediaModelEntry>,
    /// Which of a message's attachments of this kind are understood.
    pub attachments: AttachmentPolicy,
    /// Declared before `other`, which keeps the keys left over.
    #[serde(flatten)]
    pub limits: CapabilityLimits,
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// What a capability sets for its entries.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CapabilityLimits {
    pub prompt: Option<String>,
    /// Characters of the text kept (unset: all).
    pub max_chars: Option<usize>,
    /// A larger file is not given to an entry.
    pub max_bytes: u64,
    pub timeout_seconds: f64,
    pub language: Option<String>,
}

/// What one `models[]` entry may set over its capability's limits.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Limits {
    pub prompt: Option<String>,
    pub max_chars: Option<usize>,
    pub max_bytes: Option<u64>,
    pub timeout_seconds: Option<f64>,
    pub language: Option<String>,
}

impl Limits {
    /// These, with `under`'s where these say nothing.
    pub fn over(&self, under: &CapabilityLimits) -> CapabilityLimits {
        CapabilityLimits {
            prompt: self.prompt.clone().or(under.prompt.clone()),
            max_chars: self.max_chars.or(under.max_chars),
            max_bytes: self.max_bytes.unwrap_or(under.max_bytes),
            timeout_seconds: self.timeout_seconds.unwrap_or(under.timeout_seconds),
            language: self.language.clone().or(under.language.clone()),
        }
    }
}

/// `tools.media.<kind>.attachments` (OpenClaw's): `first` understands the
/// first attachment of the kind, `all` up to `maxAttachments` of them,
/// labelled `[Image 1/2]`. (`prefer` is not read: the first ones win.)
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AttachmentPolicy {
    pub mode: AttachmentMode,
    pub max_attachments: usize,
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum AttachmentMode {
    First,
    All,
}

/// `tools.media.document` (ferroclaw's).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DocumentSettings {
    pub enabled: bool,
    /// The most characters of one document's text.
    pub max_chars: usize,
}

/// One `models[]` entry: `type: "cli"` (command + args) or a provider.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MediaModelEntry {
    /// `cli` | `provider` (unset: `provider`).
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

/// `tools.links`: on with `enabled: true`, or (OpenClaw's) when `models[]`
/// names CLI entries and `enabled` is unset.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LinksSettings {
    pub enabled: Option<bool>,
    /// Bare URLs of a message fetched, at most (1 to 10).
    pub max_links: usize,
    pub timeout_seconds: f64,
    pub models: Vec<LinkEntry>,
    /// ferroclaw's: characters of each page's text.
    pub max_chars: usize,
    /// ferroclaw's: a stranger's links are fetched too.
    pub allow_untrusted: bool,
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

impl LinksSettings {
    pub fn on(&self) -> bool {
        self.enabled.unwrap_or(!self.models.is_empty())
    }
}

/// One `tools.links.models[]` entry (OpenClaw's are CLI entries).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LinkEntry {
    /// `cli` (unset: `cli`; other kinds are not run).
    #[serde(rename = "type")]
    pub kind: Option<String>,
    pub command: String,
    #[serde(default)]
    pub args: Vec<String>,
    pub timeout_seconds: Option<f64>,
}
