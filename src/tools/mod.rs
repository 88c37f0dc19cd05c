//! The agent's tools that drive the gateway's own methods, as OpenClaw's
//! tools call its gateway: `automations` (alias `cron`: the `cron.*`
//! methods, `automations.rs`), `message` (`message.action` through the
//! channel outbox, `message.rs`) and `gateway` (`config.*` and restarts,
//! `gateway.rs`), `ask_user` (a question that pauses the run,
//! `ask_user.rs`), `tts` and `progress_card` (the session's card). `GatewayTools` answers the executor's
//! `ExecuteTool` for them; it holds the edge's state weakly (the state
//! holds the tree, which holds this actor's address).
//!
//! Trust: a stranger's turn is never offered `automations`; `message`
//! only when the operator widened the profile, and then only back to the
//! conversation the turn came from (checked here again, whatever the
//! profile says).

mod ask_user;
mod automations;
mod gateway;
mod message;
mod progress_card;
mod tts;

use std::sync::Weak;

use actix::prelude::*;
use ferroclaw_actors::tool::{ExecuteTool, ToolOutcome};
use serde_json::Value;

use crate::state::AppState;
use crate::ws::methods::{MethodResult, Payload};

/// Why one of these tools could not do what it was asked (its message is
/// the tool result the model reads).
#[derive(Debug, thiserror::Error)]
pub(crate) enum ToolError {
    #[error("{0}")]
    Invalid(String),
    #[error("{0}")]
    Unsupported(String),
    /// What the tool had to show could not be delivered.
    #[error("{0}")]
    Undelivered(String),
}

pub struct GatewayTools {
    state: Weak<AppState>,
}

impl GatewayTools {
    pub fn new(state: Weak<AppState>) -> GatewayTools {
        GatewayTools { state }
    }
}

impl Actor for GatewayTools {
    type Context = Context<Self>;
}

fn fail(text: impl Into<String>) -> ToolOutcome {
    ToolOutcome::error(text)
}

fn refused(text: impl Into<String>) -> ToolOutcome {
    ToolOutcome::refused(text)
}

/// A method's answer as the tool's result: its JSON, or its error message.
fn answer(tool: &str, r: MethodResult) -> ToolOutcome {
    match r {
        Ok(Payload::Json(v)) => ToolOutcome::ok(v.to_string()),
        Ok(Payload::Raw(raw)) => ToolOutcome::ok(raw.get()),
        Err(e) => fail(format!("{tool}: {}", e.message)),
    }
}

/// A string argument, trimmed (None: absent or empty).
fn text<'a>(args: &'a Value, key: &str) -> Option<&'a str> {
    args.get(key)
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
}

impl Handler<ExecuteTool> for GatewayTools {
    type Result = ResponseFuture<ToolOutcome>;
    fn handle(&mut self, msg: ExecuteTool, _: &mut Context<Self>) -> Self::Result {
        let state = self.state.upgrade();
        let span = tracing::info_span!("gateway_tool", tool = %msg.call.name, session_key = %msg.session_key);
        Box::pin(tracing::Instrument::instrument(
            async move {
                let Some(state) = state else {
                    return fail("the gateway is stopping");
                };
                match msg.call.name.as_str() {
                    "automations" | "cron" => automations::run(&state, &msg).await,
                    "message" => message::run(&state, &msg).await,
                    "gateway" => gateway::run(&state, &msg).await,
                    "ask_user" => ask_user::run(&state, &msg).await,
                    "tts" => tts::run(&state, &msg).await,
                    "progress_card" => progress_card::run(&state, &msg).await,
                    other => fail(format!("unknown tool: {other}")),
                }
            },
            span,
        ))
    }
}

/// After a restart the `gateway` tool asked for: its note goes to the
/// session that asked (a system event its next turn reads), and the call
/// is remembered so that its repeat restarts nothing.
pub fn after_restart(state: &crate::state::SharedState) {
    let Some(sentinel) = crate::runtime::take_restart_sentinel(&state.state_dir) else {
        return;
    };
    if let Ok(mut done) = state.restart.done_by.lock() {
        *done = sentinel["call"].as_str().map(str::to_string);
    }
    let (Some(session), note) = (
        sentinel["sessionKey"].as_str().map(str::to_string),
        sentinel["note"].as_str().unwrap_or("restart").to_string(),
    ) else {
        return;
    };
    let state = state.clone();
    actix::spawn(async move {
        let text = format!("Gateway restarted: {note}");
        if let Err(e) = crate::ws::methods::outbound::wake_now(
            &state,
            "next-heartbeat",
            &text,
            Some(&session),
            None,
            false,
        )
        .await
        {
            tracing::warn!(error = %e.message, "the restart note was not queued");
        }
    });
}
