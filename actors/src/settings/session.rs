//! `session`: how sessions are keyed, kept, reset and allowed to send
//! (OpenClaw's keys; defaults in `config/default.json5`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

#[cfg(test)]
use super::shipped;
use super::{parse_duration, DmScope, GroupScope};

/// The `session` section.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionSettings {
    pub dm_scope: DmScope,
    pub group_scope: GroupScope,
    /// The main session's name (`agent:<id>:<mainKey>`).
    pub main_key: String,
    /// Canonical name -> the ids one person has on several channels
    /// (`telegram:123`, or a bare id): their direct messages share a session.
    pub identity_links: BTreeMap<String, Vec<String>>,
    pub maintenance: MaintenanceSettings,
    /// When a channel conversation's session is stale (`routing/reset.rs`).
    pub reset: Option<ResetSettings>,
    /// Refines `reset` per conversation kind.
    pub reset_by_type: ResetByType,
    /// `<channel>`: replaces `reset` and `resetByType` there.
    pub reset_by_channel: BTreeMap<String, ResetSettings>,
    /// What a reset section that does not say takes (ferroclaw's key: a
    /// shipped `reset` section would turn resets on for everyone).
    pub reset_defaults: ResetDefaults,
    /// Whether a session's replies may go to its chat.
    pub send_policy: SendPolicy,
    /// Keys read by later features.
    #[serde(flatten)]
    pub other: serde_json::Map<String, Value>,
}

/// `session.resetDefaults`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ResetDefaults {
    /// The hour of a daily reset whose section does not say (OpenClaw's: 4).
    pub at_hour: i64,
}

/// `session.reset` and its refinements (OpenClaw's keys). A section
/// without `mode` is `daily`; `atHour` unset is `resetDefaults.atHour`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResetSettings {
    pub mode: Option<ResetMode>,
    pub at_hour: Option<i64>,
    pub idle_minutes: Option<i64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ResetMode {
    None,
    Daily,
    Idle,
}

/// `session.resetByType`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ResetByType {
    pub direct: Option<ResetSettings>,
    pub group: Option<ResetSettings>,
    pub thread: Option<ResetSettings>,
}

/// `session.sendPolicy` (OpenClaw's): the first rule that matches decides,
/// else `default`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SendPolicy {
    pub default: AllowDeny,
    pub rules: Vec<SendRule>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum AllowDeny {
    Allow,
    Deny,
}

/// One `session.sendPolicy.rules[]` entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SendRule {
    pub action: AllowDeny,
    /// Unset: every session.
    #[serde(rename = "match", default)]
    pub matches: Option<SendMatch>,
}

/// What a send rule matches; every key set must match.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SendMatch {
    /// A channel id (any case).
    pub channel: Option<String>,
    /// `direct` | `group` | `channel`.
    pub chat_type: Option<String>,
    pub key_prefix: Option<String>,
    /// OpenClaw's key before normalisation (ferroclaw's keys are
    /// canonical: not read).
    pub raw_key_prefix: Option<String>,
}

/// `session.maintenance` (OpenClaw's keys): what the router prunes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MaintenanceSettings {
    /// `enforce` removes; `warn` only reports.
    pub mode: MaintenanceMode,
    /// A duration (`"30d"`) or milliseconds.
    pub prune_after: DurationSetting,
    pub max_entries: u64,
    /// OpenClaw's disk and rotation keys, not read.
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum MaintenanceMode {
    Enforce,
    Warn,
}

/// A duration as OpenClaw writes one: text (`"30d"`, `"12h"`) or
/// milliseconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum DurationSetting {
    Millis(u64),
    Text(String),
}

impl DurationSetting {
    /// In milliseconds; None when the text is not a duration.
    pub fn millis(&self) -> Option<u64> {
        match self {
            DurationSetting::Millis(ms) => Some(*ms),
            DurationSetting::Text(t) => parse_duration(t).map(|d| d.as_millis() as u64),
        }
    }
}

/// The shipped `session` section, for unit tests.
#[cfg(test)]
impl Default for SessionSettings {
    fn default() -> Self {
        shipped().session
    }
}
