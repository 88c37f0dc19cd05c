//! What OpenClaw's Control UI opens a chat with: `sessions.subscribe` /
//! `sessions.unsubscribe` (every session's changes) and
//! `sessions.messages.subscribe` / `unsubscribe` (one session's messages),
//! which make the bus send this connection `sessions.changed` and
//! `session.message`; `sessions.describe` (one row), `chat.startup` (the
//! history with the session's row, the defaults and the pending inputs),
//! `chat.metadata` (the model catalog) and `sessions.catalog.list`
//! (external session catalogs: ferroclaw has none).

use ferroclaw_actors::bus::{Watch, WatchChange, MAX_WATCHED_KEYS};
use ferroclaw_actors::router::LookupSession;
use serde::Deserialize;
use serde_json::{json, Value};

use super::chat::{down, session_key, store_err};
use super::{json, params, Caller, MethodResult};
use crate::protocol::errors::ErrorShape;
use crate::protocol::session_rows::row;
use crate::state::SharedState;

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

/// The canonical key of `key`, with an `agentId` that must agree with it.
fn canonical(state: &SharedState, key: &str, agent_id: Option<&str>) -> Result<String, ErrorShape> {
    let k = session_key(state, key)?;
    let agent = crate::protocol::session_rows::agent_of(k.as_str());
    if let Some(a) = agent_id.filter(|a| !a.eq_ignore_ascii_case(agent)) {
        return Err(ErrorShape::invalid(format!(
            "agentId \"{a}\" does not match session key agent \"{agent}\""
        )));
    }
    Ok(k.as_str().to_string())
}

pub async fn messages_subscribe(state: &SharedState, caller: &Caller, p: &Value) -> MethodResult {
    let p: MessagesParams = params("sessions.messages.subscribe", p)?;
    let key = canonical(state, &p.key, p.agent_id.as_deref())?;
    let on = WatchChange::Session {
        key: key.clone(),
        on: true,
    };
    watch(state, caller, on).await?;
    let mut out = json!({ "subscribed": true, "key": key });
    if p.include_approvals == Some(true) {
        // Pending approvals reach the UI as `exec.approval.*` events and
        // `exec.approval.list`; none are tied to a session here.
        out["approvalReplay"] = json!({
            "sessionKey": key,
            "updatedAtMs": ferroclaw_actors::now_ms(),
            "approvals": [],
            "truncated": false,
        });
    }
    json(out)
}

pub async fn messages_unsubscribe(state: &SharedState, caller: &Caller, p: &Value) -> MethodResult {
    let p: MessagesParams = params("sessions.messages.unsubscribe", p)?;
    let key = canonical(state, &p.key, p.agent_id.as_deref())?;
    let off = WatchChange::Session {
        key: key.clone(),
        on: false,
    };
    watch(state, caller, off).await?;
    json(json!({ "subscribed": false, "key": key }))
}

/// The session's row, or None when it has no entry yet.
async fn session_row(state: &SharedState, key: &str) -> Result<Option<Value>, ErrorShape> {
    let k = session_key(state, key)?;
    let entry = state
        .gateway
        .router
        .send(LookupSession { key: k.clone() })
        .await
        .map_err(down)?
        .map_err(store_err)?;
    let Some(entry) = entry else {
        return Ok(None);
    };
    let running = state
        .gateway
        .runs
        .send(ferroclaw_actors::runs::BusySessions)
        .await
        .map_err(down)?
        .contains(k.as_str());
    Ok(Some(row(k.as_str(), &entry, running, true)))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct DescribeParams {
    key: String,
    #[serde(default)]
    agent_id: Option<String>,
}

pub async fn describe(state: &SharedState, p: &Value) -> MethodResult {
    let p: DescribeParams = params("sessions.describe", p)?;
    let key = canonical(state, &p.key, p.agent_id.as_deref())?;
    json(json!({ "session": session_row(state, &key).await? }))
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
    let key = canonical(state, &key, p.agent_id.as_deref())?;
    let mut history = json!({ "sessionKey": key });
    if let Some(limit) = p.limit {
        history["limit"] = json!(limit.clamp(1, super::chat::HISTORY_MAX));
    }
    if let Some(max_chars) = p.max_chars {
        history["maxChars"] = json!(max_chars);
    }
    let mut out = match super::chat::history(state, &history).await? {
        super::Payload::Json(v) => v,
        super::Payload::Raw(r) => serde_json::from_str(r.get()).map_err(down)?,
    };
    if let Some(max) = p.max_bytes {
        trim_to_bytes(&mut out, max);
    }
    with_session_info(state, &key, out).await
}

/// `chat.history`, with the session's row, the defaults and the pending
/// inputs as OpenClaw's answers carry them (the UI reads a run's status
/// from the row after it reloads the history).
pub async fn history(state: &SharedState, p: &Value) -> MethodResult {
    let out = match super::chat::history(state, p).await? {
        super::Payload::Json(v) => v,
        super::Payload::Raw(r) => serde_json::from_str(r.get()).map_err(down)?,
    };
    let key = out["sessionKey"].as_str().unwrap_or_default().to_string();
    with_session_info(state, &key, out).await
}

async fn with_session_info(state: &SharedState, key: &str, mut out: Value) -> MethodResult {
    out["sessionInfo"] = session_row(state, key).await?.unwrap_or(Value::Null);
    out["defaults"] = defaults(state);
    // Queued messages are in the transcript (delivery: pending); none wait elsewhere.
    out["pendingInputs"] = json!({ "items": [], "total": 0 });
    json(out)
}

/// Drops the oldest messages until the messages fit in `max` bytes.
fn trim_to_bytes(out: &mut Value, max: usize) {
    let Some(messages) = out.get_mut("messages").and_then(Value::as_array_mut) else {
        return;
    };
    let sizes: Vec<usize> = messages
        .iter()
        .map(|m| serde_json::to_string(m).map_or(0, |s| s.len() + 1))
        .collect();
    let mut total: usize = sizes.iter().sum();
    let mut first = 0;
    while total > max && first < messages.len() {
        total -= sizes[first];
        first += 1;
    }
    messages.drain(..first);
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
        canonical(state, key, p.agent_id.as_deref())?;
    }
    let models = match super::system::models_list(state)? {
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
