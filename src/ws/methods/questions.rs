//! `question.request` / `waitAnswer` / `resolve` / `get` / `list`
//! (operator.questions; a writer too): the questions actor's wire side,
//! with OpenClaw's params, results and `details.reason` on errors. A
//! question asked here has no run and no chat: it is answered by an
//! operator client (Control UI, TUI, CLI), never by a chat message.

use std::collections::BTreeMap;
use std::time::Duration;

use ferroclaw_actors::questions::{
    Ask, GetQuestion, ListQuestions, NewQuestion, Question, QuestionError, Resolution, Resolve,
    WaitAnswer,
};
use serde::Deserialize;
use serde_json::{json, Value};

use super::{json, params, Caller, MethodResult};
use crate::protocol::errors::ErrorShape;
use crate::state::SharedState;

/// OpenClaw's default wait for a question asked without `timeoutMs`.
const DEFAULT_TIMEOUT_MS: u64 = 900_000;

fn down<E>(_: E) -> ErrorShape {
    ErrorShape::unavailable("the questions service is unavailable")
}

/// A question error with OpenClaw's `details.reason`.
pub(crate) fn failed(e: QuestionError) -> ErrorShape {
    let shape = ErrorShape::from_error(&e);
    match e.reason() {
        Some(r) => shape.with_details(json!({ "reason": r })),
        None => shape,
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RequestParams {
    #[serde(default)]
    id: Option<String>,
    questions: Vec<Question>,
    #[serde(default)]
    agent_id: Option<String>,
    #[serde(default)]
    session_key: Option<String>,
    #[serde(default)]
    run_id: Option<String>,
    #[serde(default)]
    timeout_ms: Option<u64>,
}

/// Opens a question; answers `{id, expiresAtMs}` at once.
pub async fn request(state: &SharedState, p: &Value) -> MethodResult {
    let p: RequestParams = params("question.request", p)?;
    let timeout = p.timeout_ms.unwrap_or(DEFAULT_TIMEOUT_MS).max(1);
    let record = state
        .gateway
        .questions
        .send(Ask {
            question: NewQuestion {
                id: p.id.filter(|i| !i.trim().is_empty()),
                questions: p.questions,
                agent_id: p.agent_id,
                session_key: p.session_key,
                run_id: p.run_id,
                timeout: Duration::from_millis(timeout),
                chat: None,
                untrusted: false,
            },
        })
        .await
        .map_err(down)?
        .map_err(failed)?;
    json(json!({ "id": record.id, "expiresAtMs": record.expires_at_ms }))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct WaitParams {
    id: String,
    #[serde(default)]
    timeout_ms: Option<u64>,
    #[serde(default)]
    include_resolution_id: Option<bool>,
}

pub async fn wait_answer(state: &SharedState, p: &Value) -> MethodResult {
    let p: WaitParams = params("question.waitAnswer", p)?;
    let _ = p.include_resolution_id;
    let outcome = state
        .gateway
        .questions
        .send(WaitAnswer {
            id: p.id,
            timeout: p.timeout_ms.map(Duration::from_millis),
        })
        .await
        .map_err(down)?
        .map_err(failed)?;
    json(outcome.to_json())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AnswersParam {
    answers: BTreeMap<String, Vec<String>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ResolveParams {
    id: String,
    #[serde(default)]
    answers: Option<AnswersParam>,
    #[serde(default)]
    cancel: Option<bool>,
    #[serde(default)]
    resolved_by: Option<String>,
    #[serde(default)]
    resolution_id: Option<String>,
    #[serde(default)]
    secret_store_allowed_hosts: Option<Vec<String>>,
}

/// Answers (`answers`) or cancels (`cancel: true`) a pending question.
pub async fn resolve(state: &SharedState, caller: &Caller, p: &Value) -> MethodResult {
    let p: ResolveParams = params("question.resolve", p)?;
    let _ = p.resolution_id;
    if p.secret_store_allowed_hosts.is_some() {
        return Err(ErrorShape::invalid(
            "Secret store allowed hosts require a store-bound question.",
        ));
    }
    let resolution = match (p.answers, p.cancel) {
        (Some(a), None) => Resolution::Answer(a.answers),
        (None, Some(true)) => Resolution::Cancel,
        _ => {
            return Err(ErrorShape::invalid(
                "invalid question.resolve params: give answers, or cancel: true",
            ))
        }
    };
    let by = p.resolved_by.or_else(|| {
        Some(
            caller
                .device_id
                .clone()
                .unwrap_or_else(|| caller.client_id.clone()),
        )
    });
    let outcome = state
        .gateway
        .questions
        .send(Resolve {
            id: p.id,
            resolution,
            by,
        })
        .await
        .map_err(down)?
        .map_err(failed)?;
    json(outcome.to_json())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct IdParams {
    id: String,
}

pub async fn get(state: &SharedState, p: &Value) -> MethodResult {
    let p: IdParams = params("question.get", p)?;
    match state
        .gateway
        .questions
        .send(GetQuestion { id: p.id.clone() })
        .await
        .map_err(down)?
    {
        Some(r) => json(json!({ "question": r.to_json() })),
        None => Err(failed(QuestionError::NotFound(p.id))),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ListParams {}

pub async fn list(state: &SharedState, p: &Value) -> MethodResult {
    let p = if p.is_null() { json!({}) } else { p.clone() };
    let _: ListParams = params("question.list", &p)?;
    let pending = state
        .gateway
        .questions
        .send(ListQuestions)
        .await
        .map_err(down)?;
    let questions: Vec<Value> = pending.iter().map(|r| r.to_json()).collect();
    json(json!({ "questions": questions }))
}
