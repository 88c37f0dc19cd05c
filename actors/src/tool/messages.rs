//! The tool executor's inbox (the session tools actor answers the same
//! message for its tools).

use crate::ids::SessionKey;
use actix::prelude::*;
use tokio::sync::watch;

use crate::provider::ToolCall;

/// Runs one tool call. The executor watches `cancel` and stops (killing any
/// child process) when it turns true. Reply: the result for the model.
#[derive(Debug, Message)]
#[rtype(result = "ToolOutcome")]
pub struct ExecuteTool {
    pub call: ToolCall,
    pub cancel: watch::Receiver<bool>,
    /// Extra environment for child processes (skills' env overrides; never
    /// in the prompt).
    pub env: std::sync::Arc<[(String, String)]>,
    /// The session whose run calls the tool (session tools act for it).
    pub session_key: SessionKey,
    /// The agent answering that session.
    pub agent_id: String,
    /// Where and how `exec` may run (the session's settings).
    pub exec: crate::approvals::ExecPolicy,
    /// What the calling turn acts with. Untrusted: file tools stay in the
    /// workspace away from the protected files, `process` sees only what
    /// this session's untrusted turns started, commands run in a scratch
    /// sandbox, memory is searched without the operator's notes, and
    /// whatever it causes (messages, sub-agents, approvals) is untrusted.
    pub trust: crate::trust::Trust,
    /// Where the tool's progress goes (a run's events; None: nowhere).
    pub progress: Option<ProgressSink>,
    /// The run that calls it (None: a call from outside a run, `/tools/invoke`).
    /// A tool's side effects are keyed by it and the call id, so a run
    /// restarted from its last step repeats none.
    pub run_id: Option<crate::ids::RunId>,
    /// The conversation the calling turn came from (the session's last
    /// channel route; None: a WebSocket or HTTP turn). `message` answers it
    /// by default, `automations` announces there.
    pub origin: Option<Route>,
    /// The model the run answers with (`provider/model`): `view_image`
    /// gives it the image when it sees images, else a description.
    pub model: Option<String>,
}

/// A chat on a channel: where the calling turn came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    pub channel: String,
    pub account_id: String,
    /// The chat replies go to.
    pub to: String,
    pub thread_id: Option<String>,
}

/// A running tool's progress (an MCP server's `notifications/progress`),
/// for the run that called it.
#[derive(Debug, Clone, Message)]
#[rtype(result = "()")]
pub struct ToolProgress {
    pub run_id: crate::ids::RunId,
    pub call: ToolCall,
    pub progress: f64,
    pub total: Option<f64>,
    pub message: Option<String>,
    /// The exec approval the call waits for (None: other progress).
    pub approval: Option<String>,
}

/// Where one tool call's progress goes: the run's session.
#[derive(Clone)]
pub struct ProgressSink {
    pub run_id: crate::ids::RunId,
    pub sink: Recipient<ToolProgress>,
}

impl std::fmt::Debug for ProgressSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ProgressSink({})", self.run_id)
    }
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct ToolOutcome {
    pub text: String,
    pub is_error: bool,
    /// Refused before it ran: by a policy, the operator (an approval
    /// denied) or the trust boundary (recorded as `blocked` in the audit).
    pub blocked: bool,
    /// Images for the model to look at (`view_image`): by their media id,
    /// loaded by the run that sends them, like a message's.
    pub images: Vec<crate::provider::Image>,
    /// The run ends after this call with this final text (`sessions_yield`'s
    /// acknowledgment, `heartbeat_respond`'s alert or acknowledgement):
    /// no further model call.
    pub ends_turn: Option<String>,
}

impl ToolOutcome {
    fn text(text: impl Into<String>, is_error: bool, blocked: bool) -> ToolOutcome {
        ToolOutcome {
            text: text.into(),
            is_error,
            blocked,
            images: Vec::new(),
            ends_turn: None,
        }
    }

    /// A result.
    pub fn ok(text: impl Into<String>) -> ToolOutcome {
        ToolOutcome::text(text, false, false)
    }

    /// An error the model reads.
    pub fn error(text: impl Into<String>) -> ToolOutcome {
        ToolOutcome::text(text, true, false)
    }

    /// An error for a call refused before it ran (see `blocked`).
    pub fn refused(text: impl Into<String>) -> ToolOutcome {
        ToolOutcome::text(text, true, true)
    }
}
