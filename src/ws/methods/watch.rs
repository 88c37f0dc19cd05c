//! What OpenClaw's Control UI opens a chat with: `sessions.subscribe` /
//! `sessions.unsubscribe` (every session's changes) and
//! `sessions.messages.subscribe` / `unsubscribe` (one session's messages),
//! which make the bus send this connection `sessions.changed` and
//! `session.message`; `sessions.describe` (one row), `chat.startup` (the
//! history with the session's row, the defaults and the pending inputs),
//! `chat.metadata` (the model catalog) and `sessions.catalog.list`
//! (external session catalogs: ferroclaw has none).

use ferroclaw_actors::bus::{Watch, WatchChange, MAX_WATCHED_KEYS};
use percent_encoding::{utf8_percent_encode, NON_ALPHANUMERIC};
use serde::Deserialize;
use serde_json::{json, Value};

use super::chat::{read_history, HistoryQuery, HISTORY_MAX};
use super::{agent_session_key, down};
use super::{json, params, Caller, MethodResult};
use crate::protocol::errors::ErrorShape;
use crate::protocol::messages::HISTORY_FIELD_CHARS;
use crate::protocol::session_rows::row;
use crate::state::SharedState;
use ferroclaw_actors::session::SessionEntry;

async fn watch(state: &SharedState, caller: &Caller, change: WatchChange) -> MethodResult {
    let done = state
        .gateway
        .bus
        .send(Watch {
            conn_id: caller.conn_id.clone(),
            change,
        })
        .await
        .map_err(down)?;
    if done {
        Ok(super::Payload::Json(Value::Null))
    } else {
        Err(ErrorShape::invalid(format!(
            "too many session subscriptions (at most {MAX_WATCHED_KEYS} per connection)"
        )))
    }
}

/// `sessions.subscribe`: with list params, the list too (`{subscribed, list}`).
pub async fn subscribe(state: &SharedState, caller: &Caller, p: &Value) -> MethodResult {
    // The params are sessions.list's; checked before subscribing.
    let with_list = p.as_object().is_some_and(|o| !o.is_empty());
    let list = if with_list {
        Some(super::sessions::list(state, p).await?)
    } else {
        None
    };
    watch(state, caller, WatchChange::AllSessions(true)).await?;
    match list {
        Some(super::Payload::Json(list)) => json(json!({ "subscribed": true, "list": list })),
        _ => json(json!({ "subscribed": true })),
    }
}

pub async fn unsubscribe(state: &SharedState, caller: &Caller, p: &Value) -> MethodResult {
    super::empty_params("sessions.unsubscribe", p)?;
    watch(state, caller, WatchChange::AllSessions(false)).await?;
    json(json!({ "subscribed": false }))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct MessagesParams {
    key: String,
    #[serde(default)]
    agent_id: Option<String>,
    #[serde(default)]
    include_approvals: Option<bool>,
}

pub async fn messages_subscribe(state: &SharedState, caller: &Caller, p: &Value) -> MethodResult {
    let p: MessagesParams = params("sessions.messages.subscribe", p)?;
    let key = agent_session_key(state, &p.key, p.agent_id.as_deref())?
        .as_str()
        .to_string();
    let on = WatchChange::Session {
        key: key.clone(),
        on: true,
    };
    watch(state, caller, on).await?;
    let mut out = json!({ "subscribed": true, "key": key });
    if p.include_approvals == Some(true) {
        out["approvalReplay"] = approval_replay(state, &key).await?;
    }
    json(out)
}

/// Most approvals a replay carries (the rest: `truncated`).
const REPLAY_MAX: usize = 50;

/// OpenClaw's `SessionApprovalReplay`: the exec approvals waiting for an
/// operator that this session's runs asked for, oldest first, as
/// reviewer-safe snapshots (the command, the host and the agent; never
/// the working directory or the environment).
async fn approval_replay(state: &SharedState, key: &str) -> Result<Value, ErrorShape> {
    let pending = state
        .gateway
        .approvals
        .send(ferroclaw_actors::approvals::ListPending)
        .await
        .map_err(down)?;
    let settings = state.live.settings();
    let base =
        crate::http::ui_root::normalize_base(settings.gateway.control_ui.base_path.as_deref());
    let ours: Vec<Value> = pending
        .iter()
        .filter(|a| a.request["sessionKey"].as_str() == Some(key))
        .map(|a| {
            let r = &a.request;
            let text = |k: &str| r[k].as_str().filter(|s| !s.is_empty());
            json!({
                "id": a.id, "urlPath": format!("{base}/approve/{}", utf8_percent_encode(&a.id, NON_ALPHANUMERIC)),
                "createdAtMs": a.created_at_ms, "expiresAtMs": a.expires_at_ms, "status": "pending",
                "presentation": { "kind": "exec", "commandText": text("command").unwrap_or("(command)"),
                    "host": text("host"), "agentId": text("agentId"),
                    "allowedDecisions": ["allow-once", "allow-always", "deny"] },
            })
        })
        .collect();
    Ok(json!({
        "sessionKey": key,
        "updatedAtMs": ferroclaw_actors::now_ms(),
        "truncated": ours.len() > REPLAY_MAX,
        "approvals": ours.into_iter().take(REPLAY_MAX).collect::<Vec<_>>(),
    }))
}

pub async fn messages_unsubscribe(state: &SharedState, caller: &Caller, p: &Value) -> MethodResult {
    let p: MessagesParams = params("sessions.messages.unsubscribe", p)?;
    let key = agent_session_key(state, &p.key, p.agent_id.as_deref())?
        .as_str()
        .to_string();
    let off = WatchChange::Session {
        key: key.clone(),
        on: false,
    };
    watch(state, caller, off).await?;
    json(json!({ "subscribed": false, "key": key }))
}

/// A session's row (with whether a run of it is active), or null.
async fn row_for(
    state: &SharedState,
    key: &str,
    entry: Option<&SessionEntry>,
) -> Result<Value, ErrorShape> {
    let Some(entry) = entry else {
        return Ok(Value::Null);
    };
    let running = state
        .gateway
        .runs
        .send(ferroclaw_actors::runs::BusySessions)
        .await
        .map_err(down)?
        .contains(key);
    Ok(row(key, entry, running, true))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct DescribeParams {
    key: String,
    #[serde(default)]
    agent_id: Option<String>,
    /// OpenClaw's list hints (its MCP bridge sends them): the row is the
    /// same either way.
    #[serde(default)]
    include_derived_titles: Option<bool>,
    #[serde(default)]
    include_last_message: Option<bool>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct GetParams {
    key: String,
    #[serde(default)]
    agent_id: Option<String>,
    #[serde(default)]
    limit: Option<usize>,
}

/// `sessions.get`: the stored session row and its newest `limit` messages
/// (display-normalised as `chat.history` gives them), as OpenClaw's MCP
/// bridge reads a conversation.
pub async fn get(state: &SharedState, p: &Value) -> MethodResult {
    let p: GetParams = params("sessions.get", p)?;
    let key = agent_session_key(state, &p.key, p.agent_id.as_deref())?;
    let limit = p.limit.unwrap_or(200);
    if !(1..=HISTORY_MAX).contains(&limit) {
        return Err(ErrorShape::invalid(format!(
            "invalid sessions.get params: at /limit: must be 1..{HISTORY_MAX}"
        )));
    }
    let q = HistoryQuery {
        key,
        limit,
        max_chars: HISTORY_FIELD_CHARS,
        max_bytes: crate::protocol::messages::HISTORY_TOTAL_BYTES,
    };
    let (out, entry) = read_history(state, &q).await?;
    json(json!({
        "key": q.key.as_str(),
        "session": row_for(state, q.key.as_str(), entry.as_ref()).await?,
        "messages": out["messages"],
    }))
}

pub async fn describe(state: &SharedState, p: &Value) -> MethodResult {
    let p: DescribeParams = params("sessions.describe", p)?;
    let _ = (p.include_derived_titles, p.include_last_message);
    let key = agent_session_key(state, &p.key, p.agent_id.as_deref())?;
    let entry = super::lookup(state, &key).await?;
    json(json!({ "session": row_for(state, key.as_str(), entry.as_ref()).await? }))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct StartupParams {
    #[serde(default)]
    session_key: Option<String>,
    #[serde(default)]
    agent_id: Option<String>,
    #[serde(default)]
    limit: Option<usize>,
    #[serde(default)]
    max_bytes: Option<usize>,
    #[serde(default)]
    max_chars: Option<usize>,
    #[serde(default)]
    short_id: Option<String>,
    #[serde(default)]
    slug_hint: Option<String>,
}

/// The defaults a new turn uses (OpenClaw's `getSessionDefaults`).
fn defaults(state: &SharedState) -> Value {
    let settings = state.live.settings();
    let d = &settings.agents.defaults;
    let model = ferroclaw_actors::provider::selection::ModelRef::parse(d.model.primary()).ok();
    json!({
        "modelProvider": model.as_ref().map(|m| m.provider.clone()),
        "model": model.as_ref().map(|m| m.model.clone()),
        "contextTokens": d.context_tokens,
        "thinkingDefault": d.thinking_default,
        "verboseDefault": d.verbose_default,
    })
}

/// `chat.startup`: `chat.history` plus what the UI opens a chat with. A
/// session named by a short id (ferroclaw's keys have none) is unresolved.
pub async fn startup(state: &SharedState, p: &Value) -> MethodResult {
    let p: StartupParams = params("chat.startup", p)?;
    let Some(key) = p.session_key else {
        let _ = (p.short_id, p.slug_hint);
        return json(json!({ "resolution": { "ok": false } }));
    };
    let key = agent_session_key(state, &key, p.agent_id.as_deref())?;
    let q = HistoryQuery {
        key,
        limit: p
            .limit
            .unwrap_or(super::chat::HISTORY_DEFAULT)
            .clamp(1, HISTORY_MAX),
        max_chars: p.max_chars.unwrap_or(HISTORY_FIELD_CHARS),
        max_bytes: p.max_bytes.unwrap_or(usize::MAX),
    };
    with_session_info(state, &q).await
}

/// `chat.history`, with the session's row, the defaults and the pending
/// inputs as OpenClaw's answers carry them (the UI reads a run's status
/// from the row after it reloads the history).
pub async fn history(state: &SharedState, p: &Value) -> MethodResult {
    let q = super::chat::history_query(state, p)?;
    with_session_info(state, &q).await
}

async fn with_session_info(state: &SharedState, q: &HistoryQuery) -> MethodResult {
    let (mut out, entry) = read_history(state, q).await?;
    out["sessionInfo"] = row_for(state, q.key.as_str(), entry.as_ref()).await?;
    out["defaults"] = defaults(state);
    if out.get("pendingInputs").is_none() {
        // No session stored yet: nothing waits.
        out["pendingInputs"] = json!({ "items": [], "total": 0 });
    }
    json(out)
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct MetadataParams {
    #[serde(default)]
    agent_id: Option<String>,
    #[serde(default)]
    session_key: Option<String>,
}

/// `chat.metadata`: the model catalog a chat can pick from.
pub async fn metadata(state: &SharedState, p: &Value) -> MethodResult {
    let p: MetadataParams = params("chat.metadata", p)?;
    if let Some(key) = &p.session_key {
        agent_session_key(state, key, p.agent_id.as_deref())?;
    }
    let models = match super::system::models_list(state, &Value::Null)? {
        super::Payload::Json(v) => v["models"].clone(),
        super::Payload::Raw(_) => json!([]),
    };
    json(json!({
        "models": models,
        "swarmEnabled": false,
        "accountSelection": null,
        "runtimeSelectionLocked": false,
    }))
}

/// Paging and host hints of external catalogs are accepted and unused.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CatalogParams {
    #[serde(default)]
    catalog_id: Option<String>,
    #[serde(default)]
    cursors: Option<Value>,
    #[serde(default)]
    limit: Option<usize>,
    #[serde(default)]
    agent_id: Option<String>,
    #[serde(default)]
    allow_partial_results: Option<bool>,
}

/// `sessions.catalog.list`: external session catalogs (none here).
pub fn catalog_list(p: &Value) -> MethodResult {
    let p: CatalogParams = params("sessions.catalog.list", p)?;
    let _ = (p.limit, p.agent_id, p.allow_partial_results);
    if p.cursors.is_some() && p.catalog_id.is_none() {
        return Err(ErrorShape::invalid(
            "catalogId is required when cursors are provided",
        ));
    }
    if let Some(id) = p.catalog_id {
        return Err(ErrorShape::invalid(format!(
            "unknown session catalog: {id}"
        )));
    }
    json(json!({ "catalogs": [] }))
}
