//! What the store keeps per session key (`SessionEntry`, the `sessions`
//! tree, written by the router at creation and by the session after) and
//! which models a session's runs try (`ModelPlan`).

use crate::ids::RunId;
use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::provider::selection::{resolve_model, ModelChain, ModelRef};

/// What the store keeps per session key (the `sessions` tree). Field names
/// follow OpenClaw's session store rows.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionEntry {
    pub session_id: String,
    pub created_at: u64,
    pub updated_at: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking_level: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verbose_level: Option<String>,
    /// `provider/model` chosen for this session (`sessions.patch model`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_override: Option<String>,
    /// The auth profile the session sticks to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth_profile_override: Option<String>,
    /// The provider and model of the last answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_provider: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// `/queue` arguments in force (mode and options).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send_policy: Option<String>,
    #[serde(default)]
    pub input_tokens: u64,
    #[serde(default)]
    pub output_tokens: u64,
    /// The context's tokens after the last run (OpenClaw's meaning): the
    /// provider's count of its last call when reported, else the estimate.
    #[serde(default)]
    pub total_tokens: u64,
    /// Whether `total_tokens` is the provider's count.
    #[serde(default)]
    pub total_tokens_fresh: bool,
    #[serde(default)]
    pub cache_read: u64,
    #[serde(default)]
    pub cache_write: u64,
    /// Tokens per `provider/model` over the session's runs (costs are
    /// computed from them when read).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub usage_by_model: std::collections::BTreeMap<String, crate::usage::Totals>,
    /// The context window of the session's model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_tokens: Option<u64>,
    /// Compactions of this transcript.
    #[serde(default)]
    pub compaction_count: u32,
    /// The compaction cycle whose memory flush ran (one per cycle).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_flush_compaction_count: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_flush_at: Option<u64>,
    #[serde(default)]
    pub aborted_last_run: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_message_preview: Option<String>,
    /// `/reasoning off|on|stream` (None: stream).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_level: Option<String>,
    /// `/usage off|tokens|full`: a usage line under each reply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_usage: Option<String>,
    /// `/agent <id>`: the agent that answers this session instead of the key's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_override: Option<String>,
    /// A sub-agent: the session that spawned it (results are announced there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spawned_by: Option<String>,
    /// `sessions.fork`: the session this one was copied from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forked_from: Option<String>,
    /// The session's progress card (`progress_card`, `progressCard.*`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress_card: Option<super::card::ProgressCard>,
    /// `sessions.patch execHost` (`gateway` | `sandbox` | `node`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exec_host: Option<String>,
    /// `sessions.patch execNode`: the node (id or name) for host `node`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exec_node: Option<String>,
    /// `sessions.patch execSecurity` (`deny` | `allowlist` | `full`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exec_security: Option<String>,
    /// `sessions.patch execAsk` (`off` | `on-miss` | `always`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exec_ask: Option<String>,
    /// Skills this session's runs may use (a sub-agent's `skills`); None: all eligible.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skill_filter: Option<Vec<String>>,
    /// Sub-agent nesting depth (0 for sessions people talk to).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub spawn_depth: u32,
    /// How the last run ended (dashboards show it as the session's status).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_run: Option<LastRun>,
    /// The channel route the last channel message came by.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<Origin>,
}

/// Where a session's last channel message came from (OpenClaw's
/// `lastChannel`, `lastTo`, `lastAccountId`, `lastThreadId`).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Origin {
    pub channel: String,
    pub account_id: String,
    /// The chat replies go to.
    pub to: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_id: Option<String>,
    /// `direct | group | channel`.
    pub chat_type: String,
    /// The routing tier that chose the agent.
    pub matched_by: String,
}

/// The last settled run of a session.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LastRun {
    pub run_id: RunId,
    /// OpenClaw's words: `done`, `failed`, `killed`.
    pub status: String,
    pub started_at: u64,
    pub ended_at: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl SessionEntry {
    pub fn new(now: u64) -> SessionEntry {
        SessionEntry {
            session_id: ulid::Ulid::generate().to_string(),
            created_at: now,
            updated_at: now,
            ..Default::default()
        }
    }

    /// Whether a conversation under reset policy `p` is stale at `now_ms`
    /// (its transcript started at its session id's ULID time, an imported
    /// one at the entry's creation; last heard at `updated_at`) on a
    /// gateway whose local time is UTC + `utc_offset_secs`.
    pub fn stale(
        &self,
        p: &crate::routing::reset::ResetPolicy,
        now_ms: u64,
        utc_offset_secs: i32,
    ) -> Option<crate::routing::reset::Stale> {
        let started = ulid::Ulid::from_string(&self.session_id)
            .map(|u| u.timestamp_ms())
            .unwrap_or(self.created_at);
        crate::routing::reset::stale(p, started, self.updated_at, now_ms, utc_offset_secs)
    }

    /// `stale` now, by the gateway's clock and time zone.
    pub fn stale_now(
        &self,
        p: &crate::routing::reset::ResetPolicy,
    ) -> Option<crate::routing::reset::Stale> {
        let offset = chrono::Local::now().offset().local_minus_utc();
        self.stale(p, crate::now_ms(), offset)
    }

    /// The entry after `sessions.reset`: a new sessionId; the user's
    /// settings kept; the sticky profile, last model and counters cleared.
    pub(super) fn renewed(&self, now: u64) -> SessionEntry {
        SessionEntry {
            created_at: self.created_at,
            label: self.label.clone(),
            thinking_level: self.thinking_level.clone(),
            verbose_level: self.verbose_level.clone(),
            model_override: self.model_override.clone(),
            send_policy: self.send_policy.clone(),
            queue: self.queue.clone(),
            reasoning_level: self.reasoning_level.clone(),
            response_usage: self.response_usage.clone(),
            agent_override: self.agent_override.clone(),
            spawned_by: self.spawned_by.clone(),
            forked_from: self.forked_from.clone(),
            exec_host: self.exec_host.clone(),
            exec_node: self.exec_node.clone(),
            exec_security: self.exec_security.clone(),
            exec_ask: self.exec_ask.clone(),
            spawn_depth: self.spawn_depth,
            skill_filter: self.skill_filter.clone(),
            ..SessionEntry::new(now)
        }
    }
}

/// Which models a session's runs use: per agent and global, each a primary
/// and its fallbacks (`agents.defaults.model`, `agents.list[].model`).
#[derive(Debug, Clone, Default)]
pub struct ModelPlan {
    pub global: String,
    pub fallbacks: Vec<String>,
    /// agent id -> (primary, fallbacks).
    pub agents: HashMap<String, (String, Vec<String>)>,
}

impl ModelPlan {
    /// The models a run tries in order: the resolved model (session ->
    /// agent -> global), then the fallbacks, then the configured primary
    /// when an override was used. Duplicates and bad refs are dropped.
    pub fn candidates(
        &self,
        agent_id: &str,
        session: Option<&str>,
    ) -> Result<Vec<ModelRef>, crate::provider::selection::ModelRefError> {
        let agent = self.agents.get(agent_id);
        let (first, _) = resolve_model(
            &ModelChain {
                heartbeat: None,
                session,
                channel: None,
                agent: agent.map(|(p, _)| p.as_str()),
                global: &self.global,
            },
            false,
        )?;
        let fallbacks = match agent {
            Some((_, f)) if !f.is_empty() => f,
            _ => &self.fallbacks,
        };
        let primary = agent.map(|(p, _)| p.as_str()).unwrap_or(&self.global);
        let mut out = vec![first];
        for r in fallbacks.iter().map(String::as_str).chain([primary]) {
            match ModelRef::parse(r) {
                Ok(m) if !out.contains(&m) => out.push(m),
                Ok(_) => {}
                Err(e) => tracing::warn!(error = %e, "fallback model skipped"),
            }
        }
        Ok(out)
    }
}
