//! `skills`, typed where the context reads it: per-skill overrides
//! (`entries.<name>`: `enabled`, `env`, `apiKey`). OpenClaw's loader and
//! installer keys (`allowBundled`, `load`, `install`) and a skill's own
//! `config` are kept as written (`other`): ferroclaw bundles no skills,
//! scans the workspace's and the state dir's `skills/` folders and
//! installs nothing, so they change nothing here. Defaults are in
//! `config/default.json5`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// `skills`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SkillsSettings {
    pub entries: BTreeMap<String, SkillEntry>,
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// `skills.entries.<name>` (OpenClaw's keys). A wrong type is an error
/// naming the key (`skills.entries.x.enabled`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SkillEntry {
    /// false: never offered, even when its requirements are met.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// Set in the env of the run's tool processes (never in the prompt).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(extend("writeOnly" = true))]
    pub env: BTreeMap<String, String>,
    /// Goes to the skill's primary env var (`metadata.openclaw.primaryEnv`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("writeOnly" = true))]
    pub api_key: Option<String>,
    #[serde(flatten)]
    pub other: Map<String, Value>,
}
