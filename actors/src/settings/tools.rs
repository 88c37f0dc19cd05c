//! `tools`: the keys ferroclaw reads itself, typed (`exec`, `fs`,
//! `askUser`, `resultMaxChars`); the rest goes to the tool policy as written.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::secret_tools;

/// `tools`: what ferroclaw reads itself is typed; the rest (allow, deny,
/// untrusted, profiles, web, hooks...) goes to the tool policy as OpenClaw
/// wrote it.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = secret_tools)]
pub struct ToolsSettings {
    pub exec: ExecToolSettings,
    pub fs: FsToolSettings,
    /// `tools.askUser` (ferroclaw's: OpenClaw's wait is fixed at 900 s).
    pub ask_user: AskUserToolSettings,
    /// Characters of a tool result kept (head and tail), at least 1000.
    pub result_max_chars: u64,
    #[serde(flatten)]
    pub other: serde_json::Map<String, Value>,
}

impl ToolsSettings {
    /// The section as JSON (the policy and fetch parsers read it whole).
    pub fn as_json(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

/// `tools.exec`.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExecToolSettings {
    /// `gateway` | `sandbox` | `node`; unset: from `agents.defaults.sandbox.mode`.
    #[serde(default)]
    pub host: Option<String>,
    /// With host `node`: the node (id or name) commands run on.
    #[serde(default)]
    pub node: Option<String>,
    /// `deny` | `allowlist` | `full`.
    pub security: String,
    /// `off` | `on-miss` | `always`.
    pub ask: String,
    /// Seconds an exec approval waits for an operator.
    pub approval_timeout_seconds: u64,
    #[serde(flatten)]
    pub other: serde_json::Map<String, Value>,
}

/// `tools.askUser`.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AskUserToolSettings {
    /// The wait when the model gives no `timeoutSeconds` (30 to 3600).
    pub timeout_seconds: u64,
}

/// `tools.fs`.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FsToolSettings {
    /// File tools stay inside the agent workspace.
    pub workspace_only: bool,
    #[serde(flatten)]
    pub other: serde_json::Map<String, Value>,
}
