//! `gateway.nodes`: which commands nodes may be invoked with.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `gateway.nodes` (OpenClaw's keys).
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodesSettings {
    pub commands: NodeCommandSettings,
    #[serde(flatten)]
    pub other: serde_json::Map<String, Value>,
}

/// `gateway.nodes.commands`: `allow` adds commands (the dangerous ones,
/// `camera.snap` ..., only this way), `deny` removes them.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodeCommandSettings {
    pub allow: Vec<String>,
    pub deny: Vec<String>,
}
