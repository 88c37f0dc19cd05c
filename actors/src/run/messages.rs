//! The run's inbox and what it emits.

use crate::ids::RunId;
use actix::prelude::*;

use super::reply::{Outcome, RunStatus};
use super::FailureKind;
use crate::provider::{ChatMessage, StopReason, ToolCall, Usage};
use crate::tool::ToolOutcome;

/// One step of a run, in order.
#[derive(Debug, Clone, PartialEq, Message)]
#[rtype(result = "()")]
pub enum RunEvent {
    /// From the session, not the run: message `message_id` was accepted
    /// and run `run_id` answers it (started now, queued, collected or
    /// steered). Sent before the message is acknowledged.
    Queued {
        run_id: RunId,
        message_id: String,
    },
    Started {
        run_id: RunId,
    },
    /// More text of the current assistant message (`fresh`: the first
    /// delta of a new assistant message). Whoever needs the text so far
    /// accumulates it.
    Delta {
        run_id: RunId,
        delta: String,
        fresh: bool,
    },
    Thinking {
        run_id: RunId,
        delta: String,
    },
    /// The model (and auth profile) that answers; sent when it changes,
    /// e.g. after a failover. `failed` lists the attempts that failed first.
    ModelSelected {
        run_id: RunId,
        model: String,
        profile: String,
        failed: Vec<String>,
    },
    ToolStarted {
        run_id: RunId,
        call: ToolCall,
    },
    ToolFinished {
        run_id: RunId,
        call: ToolCall,
        outcome: ToolOutcome,
        skipped: bool,
    },
    /// A running tool's progress (an MCP server's `notifications/progress`).
    ToolProgress {
        run_id: RunId,
        call: ToolCall,
        progress: f64,
        total: Option<f64>,
        message: Option<String>,
    },
    /// A message added to the conversation (assistant, tool result, injected
    /// user text). `thinking`: what the model reasoned before an assistant
    /// message (stored in the transcript; never sent back to a model).
    Message {
        run_id: RunId,
        message: ChatMessage,
        thinking: String,
    },
    /// The run's final answer, judged by its kind where it ended
    /// ([`Outcome::of_final`]): silent, text or alert.
    Final {
        run_id: RunId,
        outcome: Outcome,
        stop_reason: StopReason,
        usage: Usage,
    },
    Failed {
        run_id: RunId,
        error: String,
        kind: FailureKind,
    },
    Aborted {
        run_id: RunId,
        text: String,
    },
    /// From the session: the answer to a `/btw` side question (OpenClaw's
    /// `chat.side_result`, kind `btw`), never in the transcript.
    SideResult {
        run_id: RunId,
        question: String,
        text: String,
    },
}

impl RunEvent {
    /// How a run ended, for a closing event; None for every other event.
    pub fn end_status(&self) -> Option<RunStatus> {
        match self {
            RunEvent::Final { outcome, .. } => Some(outcome.status()),
            RunEvent::Failed { .. } => Some(RunStatus::Error),
            RunEvent::Aborted { .. } => Some(RunStatus::Aborted),
            _ => None,
        }
    }
}

/// From a run at a steering point (between tool calls, after a model
/// turn): the messages steered into it since. With `closing` the run has
/// its final answer: when nothing waits, the session stops steering into it
/// (later messages queue) and the run ends; otherwise it goes on with them.
/// So a steered message is always taken by the run it was steered into,
/// unless that run fails or is aborted. Reply: the texts, in order.
#[derive(Debug, Message)]
#[rtype(result = "Vec<String>")]
pub struct TakeSteers {
    pub run_id: RunId,
    pub closing: bool,
}

/// Stops the run: provider stream and tools are cancelled.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct AbortRun;

#[derive(Debug, Message)]
#[rtype(result = "()")]
pub(super) struct LoopEnded;
