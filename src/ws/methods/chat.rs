//! chat.send, chat.history, chat.abort: the edge of the agent runtime.

use ferroclaw_actors::inbound::{sanitize_text, SessionKey};
use ferroclaw_actors::router::{GetSession, LookupSession};
use ferroclaw_actors::session::{AbortSession, GetTranscript, SendChat};
use serde::Deserialize;
use serde_json::{json, Value};

use super::{json, params, MethodResult};
use crate::protocol::errors::ErrorShape;
use crate::state::SharedState;

/// Largest accepted chat message (characters after sanitising).
pub const MAX_MESSAGE_CHARS: usize = 200_000;
pub const HISTORY_DEFAULT: usize = 200;
pub const HISTORY_MAX: usize = 1000;

fn key(state: &SharedState, raw: &str) -> Result<SessionKey, ErrorShape> {
    let settings = state.live.settings();
    SessionKey::canonical(raw, settings.default_agent_id(), "main")
        .map_err(|e| ErrorShape::invalid(format!("invalid sessionKey: {e}")))
}

fn down<E>(_: E) -> ErrorShape {
    ErrorShape::unavailable("agent runtime unavailable").retry_after(1000)
}

fn store_err(e: impl std::fmt::Display) -> ErrorShape {
    tracing::error!(error = %e, "session store error");
    ErrorShape::unavailable(format!("store unavailable: {e}")).retry_after(1000)
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SendParams {
    session_key: String,
    message: String,
    idempotency_key: String,
    #[serde(default)]
    attachments: Option<Vec<Value>>,
}

pub async fn send(state: &SharedState, p: &Value) -> MethodResult {
    let p: SendParams = params("chat.send", p)?;
    if p.idempotency_key.trim().is_empty() {
        return Err(ErrorShape::invalid(
            "invalid chat.send params: at /idempotencyKey: must NOT have fewer than 1 characters",
        ));
    }
    let text = sanitize_text(&p.message);
    if text.trim().is_empty() && p.attachments.as_ref().is_none_or(|a| a.is_empty()) {
        return Err(ErrorShape::invalid(
            "invalid chat.send params: message is empty",
        ));
    }
    if text.chars().count() > MAX_MESSAGE_CHARS {
        return Err(ErrorShape::invalid(format!(
            "message too long (max {MAX_MESSAGE_CHARS} characters)"
        )));
    }
    let key = key(state, &p.session_key)?;
    let gw = &state.gateway;
    let (session, _) = gw
        .router
        .send(GetSession { key })
        .await
        .map_err(down)?
        .map_err(store_err)?;
    let ack = session
        .send(SendChat {
            text,
            run_id: p.idempotency_key.clone(),
        })
        .await
        .map_err(down)?
        .map_err(store_err)?;
    json(json!({ "runId": ack.run_id, "status": "started" }))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct HistoryParams {
    session_key: String,
    #[serde(default)]
    limit: Option<usize>,
}

pub async fn history(state: &SharedState, p: &Value) -> MethodResult {
    let p: HistoryParams = params("chat.history", p)?;
    let limit = p.limit.unwrap_or(HISTORY_DEFAULT);
    if !(1..=HISTORY_MAX).contains(&limit) {
        return Err(ErrorShape::invalid(format!(
            "invalid chat.history params: at /limit: must be 1..{HISTORY_MAX}"
        )));
    }
    let key = key(state, &p.session_key)?;
    let gw = &state.gateway;
    let Some(entry) = gw
        .router
        .send(LookupSession { key: key.clone() })
        .await
        .map_err(down)?
        .map_err(store_err)?
    else {
        return json(json!({ "sessionKey": key.as_str(), "messages": [], "thinkingLevel": "off" }));
    };
    let (session, _) = gw
        .router
        .send(GetSession { key: key.clone() })
        .await
        .map_err(down)?
        .map_err(store_err)?;
    let entries = session
        .send(GetTranscript)
        .await
        .map_err(down)?
        .map_err(store_err)?;
    let messages: Vec<Value> = entries
        .into_iter()
        .filter(|e| e.get("type").and_then(Value::as_str) == Some("message"))
        .filter(|e| e.get("delivery").and_then(Value::as_str) != Some("pending"))
        .filter_map(|e| e.get("message").cloned())
        .collect();
    let skip = messages.len().saturating_sub(limit);
    json(json!({
        "sessionKey": key.as_str(),
        "sessionId": entry.session_id,
        "messages": &messages[skip..],
        "thinkingLevel": "off",
    }))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct AbortParams {
    session_key: String,
    #[serde(default, rename = "runId")]
    _run_id: Option<String>,
}

pub async fn abort(state: &SharedState, p: &Value) -> MethodResult {
    let p: AbortParams = params("chat.abort", p)?;
    let key = key(state, &p.session_key)?;
    let gw = &state.gateway;
    let (session, _) = gw
        .router
        .send(GetSession { key })
        .await
        .map_err(down)?
        .map_err(store_err)?;
    let run_ids = session.send(AbortSession).await.map_err(down)?;
    json(json!({ "ok": true, "aborted": !run_ids.is_empty(), "runIds": run_ids }))
}
