//! `hooks`: the webhook endpoints (`/hooks/wake`, `/hooks/agent`, mapped
//! paths) and the `message_received` hook, typed where the edge reads
//! them. Defaults are in `config/default.json5`; keys ferroclaw does not
//! read (OpenClaw's `presets`, `gmail`...) are kept as written (`other`).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// `hooks`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HooksSettings {
    pub enabled: bool,
    /// Required when enabled: callers send it as a bearer token.
    #[schemars(extend("writeOnly" = true))]
    pub token: Option<String>,
    /// Where the endpoints are served (`/hooks`).
    pub path: String,
    pub max_body_bytes: u64,
    /// The session of `/hooks/agent` turns that name none (else `hook:<uuid>`).
    pub default_session_key: Option<String>,
    /// Whether a caller's `sessionKey` is honoured.
    pub allow_request_session_key: bool,
    /// The agents a caller may name (`"*"`: any); unset: any.
    pub allowed_agent_ids: Option<Vec<String>>,
    pub mappings: Vec<HookMapping>,
    /// `{ url, token? }`: every accepted channel message is posted there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_received: Option<Value>,
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// What a mapped path does.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum HookAction {
    #[default]
    Agent,
    Wake,
}

/// `hooks.mappings[]`: a path of its own, its templates read from the payload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HookMapping {
    #[serde(rename = "match")]
    pub matches: HookMatch,
    #[serde(default)]
    pub action: HookAction,
    #[serde(default)]
    pub message_template: Option<String>,
    #[serde(default)]
    pub text_template: Option<String>,
    #[serde(default)]
    pub wake_mode: Option<String>,
    /// The operator's session key for this path (templates allowed).
    #[serde(default)]
    pub session_key: Option<String>,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub agent_id: Option<String>,
    #[serde(default)]
    pub deliver: Option<bool>,
    #[serde(default)]
    pub channel: Option<String>,
    #[serde(default)]
    pub to: Option<String>,
    #[serde(default)]
    pub thinking: Option<String>,
    #[serde(default)]
    pub timeout_seconds: Option<u64>,
    /// OpenClaw's transform modules: refused (ferroclaw runs no JS).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transform: Option<Value>,
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HookMatch {
    #[serde(default)]
    pub path: String,
    #[serde(default)]
    pub source: Option<String>,
}
