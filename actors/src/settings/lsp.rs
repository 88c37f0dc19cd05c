//! `tools.lsp` (ferroclaw's): stdio language servers the agent's `lsp_*`
//! tools ask (beside those enabled bundles bring: Claude `.lsp.json`,
//! manifest `lspServers`), each started for a workspace root on its first
//! use and stopped when idle. Defaults are in `config/default.json5`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// `tools.lsp`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LspSettings {
    /// Language servers by name (the tools are `lsp_<op>_<name>`).
    pub servers: BTreeMap<String, LspServerSettings>,
    /// One request (hover, definition...).
    pub request_timeout_ms: u64,
    /// Spawn and `initialize`.
    pub startup_timeout_ms: u64,
    /// A server without a request this long is stopped.
    pub idle_timeout_ms: u64,
    /// How long a diagnostics call waits for the server's report.
    pub diagnostics_wait_ms: u64,
}

/// One language server (Claude's `.lsp.json` entry shape).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LspServerSettings {
    /// The program (required to start it: an empty one fails then).
    #[serde(default)]
    pub command: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(extend("writeOnly" = true))]
    pub env: BTreeMap<String, String>,
    /// File extension (`.py`) -> LSP language id (`python`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub extension_to_language: BTreeMap<String, String>,
    /// Only `stdio` runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transport: Option<String>,
    /// Sent as `initializationOptions`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "super::shapes::object")]
    pub initialization_options: Option<Value>,
    #[serde(flatten)]
    pub other: Map<String, Value>,
}
