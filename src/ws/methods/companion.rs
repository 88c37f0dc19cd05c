//! OpenClaw's side chat: `sessions.companion.ask` (a question about a
//! session answered from its recent context as `/btw` answers it, never
//! stored in the transcript), `sessions.companion.state` (the session's
//! last 24 exchanges, in memory) and `sessions.companion.reset`.

use ferroclaw_actors::session::{CompanionAsk, CompanionReset, CompanionState};
use serde::Deserialize;
use serde_json::{json, Value};

use super::{agent_session_key, down, json, params, session_for, MethodResult};
use crate::protocol::errors::ErrorShape;
use crate::state::SharedState;

/// Longest question (OpenClaw's).
const MAX_QUESTION_CHARS: usize = 400;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Target {
    session_key: String,
    #[serde(default)]
    agent_id: Option<String>,
    #[serde(default)]
    question: Option<String>,
}

async fn session(
    state: &SharedState,
    method: &str,
    p: &Value,
) -> Result<(actix::Addr<ferroclaw_actors::session::SessionActor>, Target), ErrorShape> {
    let t: Target = params(method, p)?;
    if t.question.is_some() != (method == "sessions.companion.ask") {
        return Err(ErrorShape::invalid(format!(
            "invalid {method} params: question is for sessions.companion.ask only"
        )));
    }
    let key = agent_session_key(state, &t.session_key, t.agent_id.as_deref())?;
    Ok((session_for(state, key).await?, t))
}

/// `sessions.companion.ask`: `{answer, ts}`.
pub async fn ask(state: &SharedState, p: &Value) -> MethodResult {
    let (s, t) = session(state, "sessions.companion.ask", p).await?;
    let question = t.question.unwrap_or_default().trim().to_string();
    if question.is_empty() || question.chars().count() > MAX_QUESTION_CHARS {
        return Err(ErrorShape::invalid(
            "invalid sessions.companion.ask params: question must be 1 to 400 characters",
        ));
    }
    let e = s
        .send(CompanionAsk { question })
        .await
        .map_err(down)?
        .map_err(|e| ErrorShape::unavailable(e.to_string()))?;
    json(json!({ "answer": e.answer, "ts": e.ts }))
}

/// `sessions.companion.state`: `{exchanges}`, oldest first.
pub async fn state(state: &SharedState, p: &Value) -> MethodResult {
    let (s, _) = session(state, "sessions.companion.state", p).await?;
    let exchanges = s.send(CompanionState).await.map_err(down)?;
    json(json!({ "exchanges": exchanges }))
}

/// `sessions.companion.reset`: `{ok: true}` once the thread is empty.
pub async fn reset(state: &SharedState, p: &Value) -> MethodResult {
    let (s, _) = session(state, "sessions.companion.reset", p).await?;
    s.send(CompanionReset).await.map_err(down)?;
    json(json!({ "ok": true }))
}
