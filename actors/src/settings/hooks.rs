//! `hooks`: the webhook endpoints (`/hooks/wake`, `/hooks/agent`, mapped
//! paths), the `message_received` hook, and ferroclaw's command hooks at
//! OpenClaw's typed hook points (`commands.<hook name>[]`), typed where the
//! edge and the hook table read them. Defaults are in `config/default.json5`; keys ferroclaw does not
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
    #[schemars(schema_with = "super::shapes::object")]
    pub message_received: Option<Value>,
    /// ferroclaw's: commands run at OpenClaw's hook points, by hook name
    /// (`before_tool_call`, `message_sending`...).
    pub commands: std::collections::BTreeMap<String, Vec<CommandHookSettings>>,
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// `hooks.commands.<hook name>[]`: one command, the event as JSON on its
/// stdin, its decision as JSON on its stdout. It runs with the gateway's
/// environment (no `env` here: a list item cannot hold a secret safely;
/// a wrapper script reads its own).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CommandHookSettings {
    /// A shell line (`sh -c`).
    pub command: String,
    /// Tool hooks: the tool ids it sees (empty: all).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub matcher: Vec<String>,
    /// Unset: the point's default (15 s; `agent_end` 30 s, `gateway_stop` 5 s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// `block` (fail closed) or `continue` (fail open); unset: the point's
    /// own (`before_tool_call` blocks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_error: Option<String>,
    /// Higher runs first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
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
    #[schemars(schema_with = "super::shapes::object")]
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
