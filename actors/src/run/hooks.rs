//! The run's hook points: before its first model call
//! (`before_model_resolve`, `before_agent_reply`, `before_prompt_build`),
//! around each model call (`model_call_started`/`ended`) and tool call
//! (`before_tool_call`, `after_tool_call`), and at its end (`agent_end`).
//! A point without hooks costs an atomic load: nothing is built for it.
//! What a hook adds for the model goes in as outside data (`trust::wrap`),
//! never as the operator's words; nothing a hook says is stored in the
//! transcript.

use std::time::Instant;

use super::RunConfig;
use crate::hooks::{HookCtx, HookEvent, HookPoint, HookReply};
use crate::provider::selection::ModelRef;
use crate::provider::{ChatMessage, MessageRole, ToolCall};
use crate::tool::ToolOutcome;

fn ctx(cfg: &RunConfig) -> HookCtx {
    HookCtx {
        agent_id: cfg.agent_id.clone(),
        session_key: cfg.session_key.to_string(),
        run_id: Some(cfg.run_id.to_string()),
        untrusted: cfg.trust.untrusted,
        workspace: cfg.workspace.clone(),
    }
}

/// The turn's request: the last user message.
fn prompt_of(messages: &[std::sync::Arc<ChatMessage>]) -> String {
    messages
        .iter()
        .rev()
        .find(|m| m.role == MessageRole::User)
        .map(|m| crate::trust::unwrap(&m.text).into_owned())
        .unwrap_or_default()
}

fn model_name(cfg: &RunConfig) -> String {
    cfg.models
        .first()
        .map(|m| m.to_string())
        .unwrap_or_default()
}

/// The points `before_turn` asks.
const TURN_POINTS: [HookPoint; 3] = [
    HookPoint::BeforeModelResolve,
    HookPoint::BeforeAgentReply,
    HookPoint::BeforePromptBuild,
];

/// `point`'s answer on the turn's prompt (no hook: nothing is built).
async fn on_prompt(cfg: &RunConfig, point: HookPoint, prompt: &str) -> HookReply {
    if !cfg.lifecycle.has(point) {
        return HookReply::default();
    }
    let event = HookEvent::Prompt {
        prompt: prompt.to_string(),
        model: model_name(cfg),
    };
    cfg.lifecycle.decide(point, event, ctx(cfg)).await
}

/// The model a `before_model_resolve` answer names: `modelOverride`
/// (`provider/model`, or a model of `providerOverride`, else of the
/// current provider), or only `providerOverride` with the current model.
fn chosen(cfg: &RunConfig, reply: HookReply) -> Option<ModelRef> {
    let current = cfg.models.first()?;
    let text = match (reply.provider, reply.model) {
        (_, Some(m)) if m.contains('/') => m,
        (p, Some(m)) => format!("{}/{m}", p.unwrap_or_else(|| current.provider.clone())),
        (Some(p), None) => format!("{p}/{}", current.model),
        (None, None) => return None,
    };
    ModelRef::parse(&text).ok()
}

/// Before the run's first model call: a model override, a reply without a
/// model call (Some), and context added to the system prompt.
pub(super) async fn before_turn(
    cfg: &mut RunConfig,
    messages: &[std::sync::Arc<ChatMessage>],
) -> Option<String> {
    if !TURN_POINTS.iter().any(|p| cfg.lifecycle.has(*p)) {
        return None;
    }
    let text = prompt_of(messages);
    let resolved = on_prompt(cfg, HookPoint::BeforeModelResolve, &text).await;
    if let Some(m) = chosen(cfg, resolved) {
        tracing::info!(model = %m, "a hook chose the model");
        cfg.models.insert(0, m);
    }
    let claimed = on_prompt(cfg, HookPoint::BeforeAgentReply, &text).await;
    if claimed.reply.is_some() {
        return claimed.reply;
    }
    let built = on_prompt(cfg, HookPoint::BeforePromptBuild, &text).await;
    if built.reply.is_some() {
        return built.reply;
    }
    if !built.context.is_empty() {
        let mut system = cfg.system.to_string();
        for c in &built.context {
            system.push_str("\n\n");
            system.push_str(&crate::trust::wrap("a hook (before_prompt_build)", c));
        }
        cfg.system = system.into();
    }
    None
}

/// `before_tool_call`: Some(why) when a hook blocks; a rewrite of the
/// params goes into `call`.
pub(super) async fn before_tool(cfg: &RunConfig, call: &mut ToolCall) -> Option<String> {
    if !cfg.lifecycle.has(HookPoint::BeforeToolCall) {
        return None;
    }
    let event = HookEvent::ToolCall {
        tool: call.name.clone(),
        call_id: call.id.clone(),
        params: call.arguments.clone(),
    };
    let reply = cfg
        .lifecycle
        .decide(HookPoint::BeforeToolCall, event, ctx(cfg))
        .await;
    if let Some(why) = reply.block {
        return Some(format!("Tool call blocked by a hook: {why}"));
    }
    if let Some(params) = reply.params {
        call.arguments = params;
    }
    None
}

/// `after_tool_call`: what a hook says back goes to the model with the result.
pub(super) async fn after_tool(
    cfg: &RunConfig,
    call: &ToolCall,
    outcome: &mut ToolOutcome,
    started: Instant,
) {
    if !cfg.lifecycle.has(HookPoint::AfterToolCall) {
        return;
    }
    let event = HookEvent::ToolResult {
        tool: call.name.clone(),
        call_id: call.id.clone(),
        params: call.arguments.clone(),
        result: outcome.text.clone(),
        is_error: outcome.is_error,
        duration_ms: started.elapsed().as_millis() as u64,
    };
    let reply = cfg
        .lifecycle
        .decide(HookPoint::AfterToolCall, event, ctx(cfg))
        .await;
    for c in reply.context {
        outcome.text.push_str("\n\n");
        outcome
            .text
            .push_str(&crate::trust::wrap("a hook (after_tool_call)", &c));
    }
}

/// `model_call_started` (no outcome yet) or `model_call_ended`.
pub(super) fn model_call(cfg: &RunConfig, outcome: Option<&str>, started: Instant) {
    let point = match outcome {
        None => HookPoint::ModelCallStarted,
        Some(_) => HookPoint::ModelCallEnded,
    };
    if !cfg.lifecycle.has(point) {
        return;
    }
    let event = HookEvent::ModelCall {
        model: model_name(cfg),
        outcome: outcome.map(str::to_string),
        duration_ms: outcome.map(|_| started.elapsed().as_millis() as u64),
    };
    cfg.lifecycle.notify(point, event, ctx(cfg));
}

/// `agent_end`, told how the run ended.
pub(super) fn agent_end(cfg: &RunConfig, success: bool, text: &str, started: Instant) {
    if !cfg.lifecycle.has(HookPoint::AgentEnd) {
        return;
    }
    let event = HookEvent::RunEnd {
        success,
        text: text.to_string(),
        duration_ms: started.elapsed().as_millis() as u64,
    };
    cfg.lifecycle.notify(HookPoint::AgentEnd, event, ctx(cfg));
}
