//! Memory methods: `memory.search` (ferroclaw's; OpenClaw's CLI searches
//! locally, so this is the gateway's door to the same search, answered in
//! the `memory_search` tool's shape) and `doctor.memory.status` (OpenClaw's
//! shape: `agentId`, `provider`, `embedding {ok, error?}`, plus what the
//! index holds).

use ferroclaw_actors::memory::{results_json, GetMemoryStatus, SearchMemory};
use serde::Deserialize;
use serde_json::{json, Value};

use super::{json, params, MethodResult};
use crate::protocol::errors::ErrorShape;
use crate::state::SharedState;

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct SearchParams {
    query: String,
    #[serde(default)]
    agent_id: Option<String>,
    #[serde(default)]
    max_results: Option<usize>,
    #[serde(default)]
    min_score: Option<f64>,
    /// The session asking (MEMORY.md only from private ones); none: the
    /// operator, who sees everything.
    #[serde(default)]
    session_key: Option<String>,
}

fn no_memory(agent: &str) -> ErrorShape {
    ErrorShape::invalid(format!(
        "memory search is not available for agent \"{agent}\" (unknown agent, or agents.defaults.memorySearch.enabled is false)"
    ))
}

/// `memory.search`.
pub async fn search(state: &SharedState, p: &Value) -> MethodResult {
    let p: SearchParams = params("memory.search", p)?;
    if p.query.trim().is_empty() {
        return Err(ErrorShape::invalid(
            "invalid memory.search params: query must not be empty",
        ));
    }
    if p.min_score.is_some_and(|m| !(0.0..=1.0).contains(&m)) {
        return Err(ErrorShape::invalid(
            "invalid memory.search params: minScore must be from 0 to 1",
        ));
    }
    let memories = &state.gateway.memories;
    let agent = p
        .agent_id
        .clone()
        .unwrap_or_else(|| memories.default_agent().to_string());
    let mem = memories
        .get(Some(&agent))
        .ok_or_else(|| no_memory(&agent))?;
    let private = p
        .session_key
        .as_deref()
        .is_none_or(ferroclaw_actors::context::is_private);
    let asked = mem.addr.send(SearchMemory {
        query: p.query,
        max: p.max_results.map(|m| m.clamp(1, 50)),
        min_score: p.min_score,
        private,
    });
    let r = asked
        .await
        .map_err(|_| ErrorShape::unavailable("memory index unavailable").retry_after(1000))?
        .map_err(super::store_err)?;
    let mut out = results_json(&r, false);
    out["agentId"] = json!(agent);
    json(out)
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct StatusParams {
    #[serde(default)]
    agent_id: Option<String>,
}

/// `doctor.memory.status`.
pub async fn status(state: &SharedState, p: &Value) -> MethodResult {
    let p: StatusParams = if p.is_null() {
        StatusParams::default()
    } else {
        params("doctor.memory.status", p)?
    };
    let memories = &state.gateway.memories;
    let agent = p
        .agent_id
        .clone()
        .unwrap_or_else(|| memories.default_agent().to_string());
    let Some(mem) = memories.get(Some(&agent)) else {
        return json(json!({
            "agentId": agent, "searchRuntimeRegistered": false,
            "embedding": {"ok": false, "error": "memory search unavailable"},
        }));
    };
    let s = mem
        .addr
        .send(GetMemoryStatus)
        .await
        .map_err(|_| ErrorShape::unavailable("memory index unavailable").retry_after(1000))?;
    let embedding = match &s.degraded {
        Some(e) => json!({"ok": false, "checked": true, "error": e}),
        None => json!({"ok": true, "checked": s.provider == "local"}),
    };
    let skipped: Vec<Value> = s
        .skipped
        .iter()
        .map(|(path, why)| json!({"path": path, "reason": why}))
        .collect();
    json(json!({
        "agentId": agent, "searchRuntimeRegistered": true,
        "provider": s.provider, "model": s.model, "embedding": embedding,
        "mode": if s.degraded.is_some() { "fts-only" } else { "hybrid" },
        "workspaceDir": s.workspace, "files": s.files, "chunks": s.chunks,
        "sweeps": s.sweeps, "skipped": skipped,
    }))
}
