//! sessions.list, sessions.patch, sessions.reset, sessions.delete: the
//! session store as OpenClaw's clients see it (protocol.md 5.3); and
//! ferroclaw's sessions.export, which pages a transcript out as OpenClaw
//! JSONL entries with its sessions.json row (`ferroclaw export`).

use ferroclaw_actors::router::{DeleteSession, ListSessions, SessionRow};
use ferroclaw_actors::session::{PatchSession, ResetSession, SessionPatch};
use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::{down, session_for, session_key, store_err};
use super::{json, params, MethodResult};
use crate::protocol::errors::ErrorShape;
use crate::protocol::session_rows::{kind, row};
use crate::state::SharedState;

/// `sessions.patch` fields OpenClaw has that ferroclaw does not act on.
const UNSUPPORTED_PATCH: &[&str] = &[
    "elevatedLevel",
    "spawnedBy",
    "spawnDepth",
    "spawnToolPolicy",
    "groupActivation",
];

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ListParams {
    #[serde(default)]
    limit: Option<usize>,
    #[serde(default)]
    active_minutes: Option<u64>,
    #[serde(default)]
    include_last_message: Option<bool>,
    #[serde(default)]
    label: Option<String>,
    #[serde(default)]
    agent_id: Option<String>,
    #[serde(default)]
    search: Option<String>,
    #[serde(default)]
    include_global: Option<bool>,
    #[serde(default)]
    spawned_by: Option<String>,
}

/// Every stored session.
pub(crate) async fn all_sessions(state: &SharedState) -> Result<Vec<SessionRow>, ErrorShape> {
    state
        .gateway
        .router
        .send(ListSessions)
        .await
        .map_err(down)?
        .map_err(store_err)
}

/// Whether `sessions.list`'s filters keep row `r` (`search` lowercased,
/// `agent`: the `agent:<id>:` prefix).
fn wanted(
    p: &ListParams,
    r: &SessionRow,
    now: u64,
    (search, agent): (Option<&str>, Option<&str>),
) -> bool {
    p.active_minutes
        .is_none_or(|m| now.saturating_sub(r.entry.updated_at) <= m * 60_000)
        && p.label
            .as_ref()
            .is_none_or(|l| r.entry.label.as_ref() == Some(l))
        && agent.is_none_or(|a| r.key.starts_with(a))
        && (p.include_global.unwrap_or(true) || kind(&r.key) != "global")
        && p.spawned_by
            .as_ref()
            .is_none_or(|parent| r.entry.spawned_by.as_ref() == Some(parent))
        && search.is_none_or(|s| {
            r.key.to_lowercase().contains(s)
                || r.entry
                    .label
                    .as_ref()
                    .is_some_and(|l| l.to_lowercase().contains(s))
        })
}

pub async fn list(state: &SharedState, p: &Value) -> MethodResult {
    let p: ListParams = params("sessions.list", p)?;
    let rows = all_sessions(state).await?;
    let now = ferroclaw_actors::now_ms();
    let search = p.search.as_deref().map(str::to_lowercase);
    let agent_prefix = p
        .agent_id
        .as_deref()
        .map(|a| format!("agent:{}:", a.to_lowercase()));
    let running = state
        .gateway
        .runs
        .send(ferroclaw_actors::runs::BusySessions)
        .await
        .map_err(down)?;
    let matching: Vec<Value> = rows
        .iter()
        .filter(|r| wanted(&p, r, now, (search.as_deref(), agent_prefix.as_deref())))
        .map(|r| {
            let live_run = running.contains(&r.key);
            row(
                &r.key,
                &r.entry,
                live_run,
                p.include_last_message.unwrap_or(false),
            )
        })
        .collect();
    let total = matching.len();
    let limit = p.limit.unwrap_or(total).max(1);
    let sessions: Vec<Value> = matching.into_iter().take(limit).collect();
    let settings = state.live.settings();
    let default = ferroclaw_actors::provider::selection::ModelRef::parse(
        settings.agents.defaults.model.primary(),
    )
    .ok();
    json(json!({
        "ts": now,
        "path": state.state_dir.join("store").display().to_string(),
        "count": sessions.len(),
        "totalCount": total,
        "hasMore": total > sessions.len(),
        "defaults": {
            "modelProvider": default.as_ref().map(|m| m.provider.clone()),
            "model": default.as_ref().map(|m| m.model.clone()),
            "contextTokens": settings.agents.defaults.context_tokens,
        },
        "sessions": sessions,
    }))
}

/// A patch field: absent (leave), null (clear) or a string (set).
fn field(p: &Map<String, Value>, name: &str) -> Result<Option<Option<String>>, ErrorShape> {
    match p.get(name) {
        None => Ok(None),
        Some(Value::Null) => Ok(Some(None)),
        Some(Value::String(s)) => Ok(Some(Some(s.trim().to_string()))),
        Some(_) => Err(ErrorShape::invalid(format!(
            "invalid sessions.patch params: at /{name}: must be string or null"
        ))),
    }
}

/// The fields `sessions.patch` may change, read: an unknown key or one
/// ferroclaw does not support is refused by name.
fn patch_of(obj: &serde_json::Map<String, Value>) -> Result<SessionPatch, ErrorShape> {
    const KNOWN: &[&str] = &[
        "key",
        "label",
        "thinkingLevel",
        "verboseLevel",
        "model",
        "sendPolicy",
        "reasoningLevel",
        "responseUsage",
        "execHost",
        "execNode",
        "execSecurity",
        "execAsk",
    ];
    for k in obj.keys() {
        if UNSUPPORTED_PATCH.contains(&k.as_str()) {
            return Err(ErrorShape::invalid(format!(
                "sessions.patch: {k} is not supported by ferroclaw"
            )));
        }
        if !KNOWN.contains(&k.as_str()) {
            return Err(ErrorShape::invalid(format!(
                "invalid sessions.patch params: at root: must NOT have additional properties ({k})"
            )));
        }
    }
    Ok(SessionPatch {
        label: field(obj, "label")?,
        thinking_level: field(obj, "thinkingLevel")?,
        verbose_level: field(obj, "verboseLevel")?,
        model: field(obj, "model")?,
        send_policy: field(obj, "sendPolicy")?,
        reasoning_level: field(obj, "reasoningLevel")?,
        response_usage: field(obj, "responseUsage")?,
        exec_host: field(obj, "execHost")?,
        exec_node: field(obj, "execNode")?,
        exec_security: field(obj, "execSecurity")?,
        exec_ask: field(obj, "execAsk")?,
    })
}

pub async fn patch(state: &SharedState, p: &Value) -> MethodResult {
    let Some(obj) = p.as_object() else {
        return Err(ErrorShape::invalid(
            "invalid sessions.patch params: at root: must be object",
        ));
    };
    let Some(raw_key) = obj.get("key").and_then(Value::as_str) else {
        return Err(ErrorShape::invalid(
            "invalid sessions.patch params: must have required property 'key'",
        ));
    };
    let patch = patch_of(obj)?;
    let key = session_key(state, raw_key)?;
    let session = session_for(state, key.clone()).await?;
    let entry = session
        .send(PatchSession { patch })
        .await
        .map_err(down)?
        .map_err(store_err)?;
    let settings = state.live.settings();
    let resolved = entry
        .model_override
        .clone()
        .unwrap_or_else(|| settings.agents.defaults.model.primary().to_string());
    let resolved = ferroclaw_actors::provider::selection::ModelRef::parse(&resolved).ok();
    let mut out = json!({
        "ok": true,
        "path": state.state_dir.join("store").display().to_string(),
        "key": key.as_str(),
        "entry": entry,
    });
    if let Some(m) = resolved {
        out["resolved"] = json!({ "modelProvider": m.provider, "model": m.model });
    }
    json(out)
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ResetParams {
    key: String,
    #[serde(default)]
    reason: Option<String>,
}

pub async fn reset(state: &SharedState, p: &Value) -> MethodResult {
    let p: ResetParams = params("sessions.reset", p)?;
    if let Some(r) = &p.reason {
        if r != "new" && r != "reset" {
            return Err(ErrorShape::invalid(
                "invalid sessions.reset params: at /reason: must be \"new\" or \"reset\"",
            ));
        }
    }
    let key = session_key(state, &p.key)?;
    let session = session_for(state, key.clone()).await?;
    let entry = session
        .send(ResetSession)
        .await
        .map_err(down)?
        .map_err(store_err)?;
    json(json!({ "ok": true, "key": key.as_str(), "entry": entry }))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct DeleteParams {
    key: String,
    #[serde(default)]
    delete_transcript: Option<bool>,
}

pub async fn delete(state: &SharedState, p: &Value) -> MethodResult {
    let p: DeleteParams = params("sessions.delete", p)?;
    let key = session_key(state, &p.key)?;
    let keep = !p.delete_transcript.unwrap_or(true);
    // The session id, for the archived list when the transcript is kept.
    let entry = match keep {
        true => super::lookup(state, &key).await?,
        false => None,
    };
    let deleted = state
        .gateway
        .router
        .send(DeleteSession {
            key: key.clone(),
            keep_transcript: keep,
        })
        .await
        .map_err(down)?
        .map_err(store_err)?;
    let archived: Vec<String> = entry
        .filter(|_| deleted)
        .map(|e| vec![e.session_id])
        .unwrap_or_default();
    json(json!({ "ok": true, "key": key.as_str(), "deleted": deleted, "archived": archived }))
}

/// Transcript bytes per `sessions.export` page by default, and at most
/// (well under the 25 MiB frame limit).
const EXPORT_PAGE: usize = 1024 * 1024;
const EXPORT_PAGE_MAX: usize = 16 * 1024 * 1024;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ExportParams {
    key: String,
    #[serde(default)]
    cursor: Option<String>,
    #[serde(default)]
    max_bytes: Option<usize>,
}

/// `sessions.export` (admin): `{key, cursor?, maxBytes?}` -> `{key, agentId,
/// sessionId, row, entries, cursor?}`: the session's row in OpenClaw's
/// `sessions.json` shape and one page of its transcript lines, oldest
/// first; `cursor` is present while more follow (pass it back for the next
/// page). Read from the store (sled's consistent reads) off the worker thread.
pub async fn export(state: &SharedState, p: &Value) -> MethodResult {
    let p: ExportParams = params("sessions.export", p)?;
    let key = session_key(state, &p.key)?;
    let max = p
        .max_bytes
        .unwrap_or(EXPORT_PAGE)
        .clamp(1024, EXPORT_PAGE_MAX);
    let asked = ferroclaw_actors::router::ExportTranscript {
        key: key.clone(),
        cursor: p.cursor,
        max_bytes: max,
    };
    let page = state
        .gateway
        .router
        .send(asked)
        .await
        .map_err(down)?
        .map_err(|e| {
            tracing::error!(session_key = %key, error = %e, "transcript export failed");
            ErrorShape::unavailable(format!("cannot read the transcript: {e}"))
        })?
        .ok_or_else(|| ErrorShape::invalid(format!("unknown session: {key}")))?;
    let entry = page.entry;
    let mut out = json!({
        "key": key.as_str(),
        "agentId": key.agent_id(),
        "sessionId": entry.session_id,
        "row": ferroclaw_actors::openclaw::openclaw_row(&entry),
        "entries": page.entries,
    });
    if let Some(c) = page.next {
        out["cursor"] = json!(c);
    }
    json(out)
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct CompactParams {
    key: String,
    #[serde(default)]
    max_lines: Option<usize>,
    #[serde(default)]
    agent_id: Option<String>,
    #[serde(default)]
    instructions: Option<String>,
}

/// `sessions.compact`: summarises the session's older context now (the
/// transcript keeps every message; `maxLines` caps the messages the
/// context keeps).
pub async fn compact(state: &SharedState, p: &Value) -> MethodResult {
    let p: CompactParams = params("sessions.compact", p)?;
    if p.max_lines == Some(0) {
        return Err(ErrorShape::invalid(
            "invalid sessions.compact params: maxLines must be at least 1",
        ));
    }
    let key = super::agent_session_key(state, &p.key, p.agent_id.as_deref())?;
    let session = session_for(state, key.clone()).await?;
    let r = session
        .send(ferroclaw_actors::session::CompactSession {
            instructions: p.instructions,
            max_lines: p.max_lines,
        })
        .await
        .map_err(down)?;
    let mut out = json!({ "ok": true, "key": key.as_str(), "compacted": r.compacted });
    if r.compacted {
        out["kept"] = json!(r.kept);
        out["dropped"] = json!(r.dropped);
        out["tokensBefore"] = json!(r.tokens_before);
        if let Some(why) = r.fallback {
            out["fallback"] = json!({ "kind": "deterministic", "reason": why });
        }
    } else {
        out["reason"] = json!(r.reason);
    }
    json(out)
}
