//! chat.send, chat.history, chat.abort: the edge of the agent runtime.

use ferroclaw_actors::inbound::{sanitize_text, SessionKey};
use ferroclaw_actors::router::{GetSession, LookupSession};
use ferroclaw_actors::session::{AbortSession, GetTranscript, SendChat, SessionActor};
use std::time::Duration;

use crate::protocol::frames;
use crate::ws::chat_bridge::{RunResult, WaitRun};
use crate::ws::methods::EarlyFrame;
use serde::Deserialize;
use serde_json::{json, Value};

use super::{json, params, MethodResult};
use crate::protocol::errors::ErrorShape;
use crate::state::SharedState;

/// Largest accepted chat message (characters after sanitising).
pub const MAX_MESSAGE_CHARS: usize = 200_000;
pub const HISTORY_DEFAULT: usize = 200;
pub const HISTORY_MAX: usize = 1000;

fn session_key(state: &SharedState, raw: &str) -> Result<SessionKey, ErrorShape> {
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

/// The session actor for a client's key (created on first use).
async fn session_for(
    state: &SharedState,
    key: SessionKey,
) -> Result<actix::Addr<SessionActor>, ErrorShape> {
    let (session, _) = state
        .gateway
        .router
        .send(GetSession { key })
        .await
        .map_err(down)?
        .map_err(store_err)?;
    Ok(session)
}

/// Sanitised message text, or the error for an empty or oversized one.
fn message_text(method: &str, raw: &str, has_attachments: bool) -> Result<String, ErrorShape> {
    let text = sanitize_text(raw);
    if text.trim().is_empty() && !has_attachments {
        return Err(ErrorShape::invalid(format!(
            "invalid {method} params: message is empty"
        )));
    }
    if text.chars().count() > MAX_MESSAGE_CHARS {
        return Err(ErrorShape::invalid(format!(
            "message too long (max {MAX_MESSAGE_CHARS} characters)"
        )));
    }
    Ok(text)
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
    let has_attachments = p.attachments.as_ref().is_some_and(|a| !a.is_empty());
    let text = message_text("chat.send", &p.message, has_attachments)?;
    let session = session_for(state, session_key(state, &p.session_key)?).await?;
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
    let key = session_key(state, &p.session_key)?;
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
    let session = session_for(state, key.clone()).await?;
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
    let session = session_for(state, session_key(state, &p.session_key)?).await?;
    let run_ids = session.send(AbortSession).await.map_err(down)?;
    json(json!({ "ok": true, "aborted": !run_ids.is_empty(), "runIds": run_ids }))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct AgentParams {
    message: String,
    idempotency_key: String,
    #[serde(default)]
    session_key: Option<String>,
    #[serde(default)]
    agent_id: Option<String>,
    /// Seconds (OpenClaw's CLI sends 600).
    #[serde(default)]
    timeout: Option<u64>,
}

fn final_payload(r: &RunResult) -> Value {
    json!({
        "runId": r.run_id,
        "status": "ok",
        "summary": if r.status == "aborted" { "aborted" } else { "completed" },
        "result": {
            "payloads": [{ "text": r.text }],
            "meta": { "durationMs": r.ended_at.saturating_sub(r.started_at), "usage": r.usage, "stopReason": r.stop_reason },
        },
    })
}

/// `agent`: two answers on the same request id: `accepted` at once, then the result.
pub async fn agent(
    state: &SharedState,
    p: &Value,
    req_id: &str,
    early: &actix::Recipient<EarlyFrame>,
) -> MethodResult {
    let p: AgentParams = params("agent", p)?;
    let text = message_text("agent", &p.message, false)?;
    if p.idempotency_key.trim().is_empty() {
        return Err(ErrorShape::invalid(
            "invalid agent params: at /idempotencyKey: must NOT have fewer than 1 characters",
        ));
    }
    let agent = p
        .agent_id
        .unwrap_or_else(|| state.live.settings().default_agent_id().to_string());
    let key = session_key(
        state,
        &p.session_key
            .unwrap_or_else(|| format!("agent:{agent}:main")),
    )?;
    let run_id = p.idempotency_key;
    let running = state
        .active_runs
        .lock()
        .map(|s| s.contains(&run_id))
        .unwrap_or(false);
    if !running {
        let session = session_for(state, key).await?;
        session
            .send(SendChat {
                text,
                run_id: run_id.clone(),
            })
            .await
            .map_err(down)?
            .map_err(store_err)?;
    }
    let accepted =
        json!({ "runId": run_id, "status": "accepted", "acceptedAt": ferroclaw_actors::now_ms() });
    early.do_send(EarlyFrame(frames::res_ok(req_id, &accepted)));
    let limit = Duration::from_secs(
        p.timeout
            .unwrap_or(state.live.settings().agents.defaults.timeout_seconds)
            .max(1)
            + 5,
    );
    let waited = actix::clock::timeout(
        limit,
        state.chat_bridge.send(WaitRun {
            run_id: run_id.clone(),
        }),
    )
    .await;
    match waited {
        Ok(Ok(Some(r))) if r.status != "error" => json(final_payload(&r)),
        Ok(Ok(Some(r))) => Err(ErrorShape::unavailable(
            r.error.clone().unwrap_or_else(|| "run failed".into()),
        )
        .with_details(json!({ "runId": r.run_id, "status": "error" }))),
        Ok(_) => Err(down(())),
        Err(_) => Err(ErrorShape::new(
            crate::protocol::errors::ErrorCode::AgentTimeout,
            "agent timed out waiting for the run",
        )
        .with_details(json!({ "runId": run_id }))),
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WaitParams {
    run_id: String,
    #[serde(default)]
    timeout_ms: Option<u64>,
}

/// `agent.wait`: the run's status once it ended, or `timeout`.
pub async fn agent_wait(state: &SharedState, p: &Value) -> MethodResult {
    let p: WaitParams = params("agent.wait", p)?;
    let limit = Duration::from_millis(p.timeout_ms.unwrap_or(30_000));
    let waited = actix::clock::timeout(
        limit,
        state.chat_bridge.send(WaitRun {
            run_id: p.run_id.clone(),
        }),
    )
    .await;
    match waited {
        Ok(Ok(Some(r))) => {
            let mut out = json!({
                "runId": r.run_id, "status": if r.status == "error" { "error" } else { "ok" },
                "startedAt": r.started_at, "endedAt": r.ended_at, "stopReason": r.stop_reason,
            });
            if let Some(e) = r.error {
                out["error"] = json!(e);
            }
            json(out)
        }
        Ok(_) => Err(down(())),
        Err(_) => json(json!({ "runId": p.run_id, "status": "timeout" })),
    }
}
