//! `agents.defaults.{heartbeat, compaction, contextPruning, memorySearch}`,
//! typed where they are read. Their defaults are in `config/default.json5`
//! only; an unknown enum value is refused at load with its key path, an
//! unknown key is warned about (like every typed section).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// `agents.defaults.heartbeat`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HeartbeatSettings {
    /// A duration (`30m`); `0m` turns scheduled beats off.
    pub every: String,
    /// `none` | `last` | a channel id (with `to`).
    pub target: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account_id: Option<String>,
    /// A model for heartbeat turns (first in the model chain).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    pub prompt: String,
    /// `{ start: "08:00", end: "22:00", timezone? }`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "super::shapes::active_hours")]
    pub active_hours: Option<Value>,
    /// What may stand beside `HEARTBEAT_OK` and still be an acknowledgement.
    pub ack_max_chars: u64,
}

/// `agents.defaults.compaction.mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum CompactionMode {
    /// Near the window (OpenClaw's `default` reads the same).
    #[serde(alias = "default")]
    Safeguard,
    /// At half the window at the latest.
    Aggressive,
    /// Never on its own.
    #[serde(alias = "off")]
    None,
}

/// `agents.defaults.compaction`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CompactionConfig {
    pub mode: CompactionMode,
    pub reserve_tokens: u64,
    pub reserve_tokens_floor: u64,
    pub keep_recent_tokens: u64,
    pub timeout_seconds: u64,
    pub memory_flush: MemoryFlushConfig,
}

/// `agents.defaults.compaction.memoryFlush`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MemoryFlushConfig {
    pub enabled: bool,
    pub soft_threshold_tokens: u64,
    pub prompt: String,
}

/// `agents.defaults.contextPruning.mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum PruningMode {
    CacheTtl,
    Sliding,
    #[serde(alias = "off")]
    None,
}

/// `agents.defaults.contextPruning`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContextPruningConfig {
    pub mode: PruningMode,
    /// A duration (`5m`).
    pub ttl: String,
    pub keep_last_assistants: u64,
    pub soft_trim_ratio: f64,
    pub hard_clear_ratio: f64,
    pub min_prunable_tool_chars: u64,
    pub soft_trim: SoftTrimConfig,
    pub hard_clear: HardClearConfig,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SoftTrimConfig {
    pub max_chars: u64,
    pub head_chars: u64,
    pub tail_chars: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HardClearConfig {
    pub enabled: bool,
    pub placeholder: String,
}

/// `agents.defaults.memorySearch`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MemorySearchConfig {
    pub enabled: bool,
    /// `local` (built in) or a provider with an OpenAI-compatible
    /// `/embeddings` (`openai`, or any `models.providers` id); unset:
    /// `openai` when `remote.baseUrl` is set, else `local`.
    pub provider: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    pub extra_paths: Vec<String>,
    pub query: MemoryQueryConfig,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote: Option<MemoryRemoteConfig>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MemoryQueryConfig {
    pub max_results: u64,
    pub min_score: f64,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MemoryRemoteConfig {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("writeOnly" = true))]
    pub api_key: Option<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(extend("writeOnly" = true))]
    pub headers: BTreeMap<String, String>,
}

/// `agents.defaults.models.<provider/model>` (OpenClaw's keys).
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentModelEntry {
    pub alias: Option<String>,
    /// Provider parameters for this model (free-form, the provider's).
    pub params: Option<Map<String, Value>>,
    #[schemars(schema_with = "super::shapes::object")]
    pub agent_runtime: Option<Value>,
    pub picker_runtimes: Option<Vec<String>>,
    pub code_mode: Option<bool>,
    pub streaming: Option<bool>,
}
