//! `sessions.fork` and `sessions.branches.list`. A fork is a new session
//! (`agent:<id>:fork:<ulid>`) holding a copy of the transcript before one
//! user message, which goes back to the composer; the parent is not
//! changed. A ferroclaw transcript does not branch inside itself (there is
//! no rewind), so a session's branch list is its one active path, from
//! its transcript; forks are sessions of their own (`sessions.list`).

use ferroclaw_actors::ids::key;
use ferroclaw_actors::router::fork::ForkError;
use ferroclaw_actors::router::ForkSession;
use ferroclaw_actors::runs::BusySessions;
use ferroclaw_actors::transcript;
use serde::Deserialize;
use serde_json::{json, Value};

use super::{
    agent_session_key, down, json, params, session_key, store_err, stored_transcript, MethodResult,
};
use crate::protocol::errors::ErrorShape;
use crate::state::SharedState;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ForkParams {
    session_key: String,
    #[serde(default)]
    agent_id: Option<String>,
    entry_id: String,
}

fn fork_err(e: ForkError) -> ErrorShape {
    match e {
        ForkError::Store(e) => store_err(e),
        ForkError::Transcript(e) => store_err(e),
        e => ErrorShape::invalid(e.to_string()),
    }
}

/// `sessions.fork`: `{sessionKey, editorText}` of the new session.
pub async fn fork(state: &SharedState, p: &Value) -> MethodResult {
    let p: ForkParams = params("sessions.fork", p)?;
    let from = agent_session_key(state, &p.session_key, p.agent_id.as_deref())?;
    let busy = state.gateway.runs.send(BusySessions).await.map_err(down)?;
    if busy.contains(from.as_str()) {
        return Err(ErrorShape::invalid(
            "the agent is working in this session: fork it when the run has ended",
        ));
    }
    let agent = key::agent(from.as_str());
    let id = ulid::Ulid::generate().to_string().to_lowercase();
    let new_key = session_key(state, &format!("agent:{agent}:fork:{id}"))?;
    let forked = state
        .gateway
        .router
        .send(ForkSession {
            from,
            entry_id: p.entry_id,
            key: new_key,
        })
        .await
        .map_err(down)?
        .map_err(fork_err)?;
    json(json!({ "sessionKey": forked.key.as_str(), "editorText": forked.text }))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ListParams {
    session_key: String,
    #[serde(default)]
    agent_id: Option<String>,
}

/// `sessions.branches.list`: the session's active path as its one branch
/// (none while its transcript holds no message).
pub async fn list(state: &SharedState, p: &Value) -> MethodResult {
    let p: ListParams = params("sessions.branches.list", p)?;
    let key = agent_session_key(state, &p.session_key, p.agent_id.as_deref())?;
    let entries = stored_transcript(state, &key).await?.unwrap_or_default();
    let messages: Vec<&Value> = entries
        .iter()
        .filter(|e| transcript::Entry::of(e).is_delivered_message())
        .collect();
    let Some(leaf) = messages.last() else {
        return json(json!({ "branches": [] }));
    };
    let text = transcript::message_text(leaf).unwrap_or_default();
    let headline: String = text.trim().chars().take(120).collect();
    let mut branch = json!({
        "leafEntryId": transcript::id_of(leaf).unwrap_or_default(),
        "headline": headline,
        "messageCount": messages.len(),
        "active": true,
    });
    if let Some(at) = leaf["timestamp"].as_str().filter(|t| !t.is_empty()) {
        branch["updatedAt"] = json!(at);
    }
    json(json!({ "branches": [branch] }))
}
