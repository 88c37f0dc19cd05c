//! The gateway root (an actor): `GatewayActor` owns the health cache (a
//! summary refreshed every `healthRefreshIntervalMs` and after connects,
//! broadcast as `health` with a bumped `stateVersion.health`), the live
//! settings snapshot (config hot apply reaches the provider hub through it),
//! the shutdown broadcast, and the heap trimmer (`heap.rs`). Started last by
//! `tree/`; the edge asks it for health and tells it of config changes.
//!
//! Files: `messages.rs` (its inbox), `actor.rs` (the actor); this file holds
//! the health summary's shape.

mod actor;
pub mod heap;
mod messages;

use std::sync::Arc;

use serde::Serialize;
use serde_json::value::RawValue;

pub use actor::{GatewayActor, GatewayParts};
pub use messages::*;

/// The health summary (OpenClaw's HealthSummary field names).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HealthSummary {
    pub ok: bool,
    pub ts: u64,
    pub duration_ms: u64,
    pub channels: serde_json::Map<String, serde_json::Value>,
    pub channel_order: Vec<String>,
    pub channel_labels: serde_json::Map<String, serde_json::Value>,
    pub heartbeat_seconds: u64,
    pub default_agent_id: String,
    pub agents: Vec<AgentHealth>,
    pub sessions: SessionsHealth,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentHealth {
    pub agent_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub is_default: bool,
    /// None (null): no heartbeat actor answered.
    pub heartbeat: Option<crate::cron::beat::HeartbeatHealth>,
    pub sessions: SessionsHealth,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionsHealth {
    pub path: String,
    pub count: u64,
    pub recent: Vec<RecentSession>,
}

/// One of `health`'s recent sessions (`updatedAt` and `age` null when the
/// session was never updated).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RecentSession {
    pub key: String,
    pub updated_at: Option<u64>,
    pub age: Option<u64>,
}

/// The cached health summary, serialised once.
#[derive(Debug, Clone)]
pub struct HealthSnapshot {
    pub summary: Arc<RawValue>,
}
