//! The tool executor's inbox (the session tools actor answers the same
//! message for its tools).

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
    pub session_key: String,
    /// The agent answering that session.
    pub agent_id: String,
    /// Where and how `exec` may run (the session's settings).
    pub exec: crate::approvals::ExecPolicy,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutcome {
    pub text: String,
    pub is_error: bool,
}
