//! The run (one actor per run): one agent run, the double loop of seed 001.
//!
//! - Inner loop (`turn.rs`): stream the model, execute its tool calls one
//!   by one, and at every steering point (between tool calls, after each
//!   model turn) ask the session for the messages steered in since
//!   (`TakeSteers`). A steer skips the remaining calls with placeholder
//!   results and is injected before the next model call.
//! - Outer loop: after the final answer the run asks once more, with
//!   `closing`; what was steered in meanwhile starts another turn of the
//!   same run, otherwise the run ends.
//! - Follow-ups (queue mode `followup`) are not handed to a live run: every
//!   acknowledgement names the run that answers its message, so a follow-up
//!   waits in the session's queue as a run of its own and starts when this
//!   one ends (seed 001's `followUp()` is the session's next turn).
//!
//! `AbortRun` cancels the provider stream (its receiver is dropped) and
//! running tools (their cancel signal fires), and the run ends with
//! `Aborted`. Every step is reported to the sink as a `RunEvent`; new
//! conversation messages come as `RunEvent::Message` so the session (the
//! single writer of the transcript) can persist them. Restarted by its
//! session after a transient failure, from the last persisted step.
//!
//! Files: `messages.rs` (its inbox and `RunEvent`), `actor.rs` (the actor
//! and the boundary that turns a timeout, a panic or a dropped task into
//! `Failed`), `turn.rs` (the loop); this file holds the run's config, its
//! failure kinds and the resume point (pure).

mod actor;
mod hooks;
mod messages;
pub mod reply;
mod turn;

#[cfg(test)]
mod tests;

use crate::ids::RunId;
use crate::ids::SessionKey;
use std::time::Duration;

use actix::prelude::*;

use crate::provider::hub::ProviderHub;
use crate::provider::selection::ModelRef;
use crate::provider::{ChatMessage, MessageRole, Messages, ProviderError, StopReason, ToolCall};
use crate::tool::ExecuteTool;

pub use actor::RunActor;
pub use messages::*;
pub use reply::{Outcome, RunKind, RunStatus, StreamGate};

/// The result text of a tool call skipped because the user steered.
pub const SKIPPED_TOOL_RESULT: &str = "Skipped: the user sent a new message before this tool ran.";

#[derive(Debug, Clone, PartialEq)]
pub enum FailureKind {
    /// No model could answer; the last provider error when there was one.
    Provider(Option<ProviderError>),
    Timeout,
    TooManyTurns,
    /// The run's task went away without ending (its arbiter stopped).
    Stopped,
    /// The run's future panicked (caught at the future boundary).
    Panicked,
    /// The session could not store the run's input.
    Store,
    /// The queue's cap pushed the run's messages out before it started.
    Dropped,
}

impl FailureKind {
    /// Whether the session restarts the run from its last persisted step.
    pub fn restartable(&self) -> bool {
        match self {
            FailureKind::Provider(Some(e)) => e.transient(),
            FailureKind::Provider(None) | FailureKind::Stopped | FailureKind::Panicked => true,
            FailureKind::Timeout
            | FailureKind::TooManyTurns
            | FailureKind::Store
            | FailureKind::Dropped => false,
        }
    }
}

/// Everything a run needs.
pub struct RunConfig {
    pub run_id: RunId,
    /// The session this run belongs to.
    pub session_key: SessionKey,
    /// The agent answering it.
    pub agent_id: String,
    /// Why it runs: how its final reply is judged.
    pub kind: RunKind,
    /// The session's exec host, security and ask settings.
    pub exec: crate::approvals::ExecPolicy,
    /// What the run acts with: every tool call carries it.
    pub trust: crate::trust::Trust,
    /// The conversation the turn came from (tools answer it by default).
    pub origin: Option<crate::tool::Route>,
    /// The model, then its fallbacks, tried in order.
    pub models: Vec<ModelRef>,
    /// The session's auth profile (kept unless it cools down).
    pub sticky_profile: Option<String>,
    pub thinking_budget: Option<u32>,
    pub system: std::sync::Arc<str>,
    /// Environment for tool processes (skill env overrides).
    pub tool_env: std::sync::Arc<[(String, String)]>,
    /// Before-tool-call hooks, in order.
    /// Command hooks at the run's lifecycle points.
    pub lifecycle: crate::hooks::HookClient,
    /// The agent's workspace (a hook's working folder).
    pub workspace: std::path::PathBuf,
    pub hooks: std::sync::Arc<[std::sync::Arc<dyn crate::tool::policy::ToolHook>]>,
    /// Characters of a tool result kept for the model (head and tail).
    pub result_max_chars: usize,
    pub tools: crate::mcp::OfferedTools,
    /// Where a running tool's progress goes (the session; None: nowhere).
    pub progress: Option<actix::Recipient<crate::tool::ToolProgress>>,
    /// The conversation so far, ending with the new user message. Stored
    /// images in it are references, loaded from `media` when the run starts.
    pub messages: Messages,
    pub media: Option<Addr<crate::media::MediaStore>>,
    pub hub: Addr<ProviderHub>,
    pub executor: Recipient<ExecuteTool>,
    pub sink: Recipient<RunEvent>,
    /// The session's steering queue, asked at every steering point.
    pub steers: Recipient<TakeSteers>,
    pub timeout: Duration,
    /// Model calls allowed per turn before the run fails (runaway tool loops).
    pub max_model_calls: u32,
    /// Context pruning of what each model call is sent (None: off).
    pub prune: Option<Prune>,
}

/// How a run prunes old tool results from what it sends (in memory only).
#[derive(Debug, Clone)]
pub struct Prune {
    pub settings: std::sync::Arc<crate::compaction::PruneSettings>,
    /// The model's context window.
    pub window: u64,
}

pub(crate) struct Turn {
    text: String,
    thinking: String,
    calls: Vec<ToolCall>,
    stop: StopReason,
}

impl Turn {
    fn empty() -> Turn {
        Turn {
            text: String::new(),
            thinking: String::new(),
            calls: Vec::new(),
            stop: StopReason::Stop,
        }
    }
}

pub(crate) enum Resume {
    /// Call the model (the conversation ends with user text or tool results).
    Model,
    /// Run these unanswered tool calls of the last assistant message first.
    Tools(Turn),
    /// The last step was a finished answer: nothing left to do.
    Finished(String),
}

pub(crate) fn resume_point<M: std::borrow::Borrow<ChatMessage>>(messages: &[M]) -> Resume {
    let Some(i) = messages
        .iter()
        .rposition(|m| m.borrow().role == MessageRole::Assistant)
    else {
        return Resume::Model;
    };
    let assistant = messages[i].borrow();
    let after: Vec<&ChatMessage> = messages[i + 1..].iter().map(|m| m.borrow()).collect();
    if assistant.tool_calls.is_empty() {
        return match after.iter().any(|m| m.role == MessageRole::User) {
            true => Resume::Model,
            false => Resume::Finished(assistant.text.clone()),
        };
    }
    if after.iter().any(|m| m.role == MessageRole::User) {
        return Resume::Model;
    }
    let answered: Vec<&str> = after
        .iter()
        .filter_map(|m| m.tool_call_id.as_deref())
        .collect();
    let missing: Vec<ToolCall> = assistant
        .tool_calls
        .iter()
        .filter(|c| !answered.contains(&c.id.as_str()))
        .cloned()
        .collect();
    if missing.is_empty() {
        return Resume::Model;
    }
    Resume::Tools(Turn {
        text: assistant.text.clone(),
        thinking: String::new(),
        calls: missing,
        stop: StopReason::ToolUse,
    })
}
