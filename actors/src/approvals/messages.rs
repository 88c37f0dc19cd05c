//! The approvals actor's inbox: exec checks, pending approvals and their answers, allowlists.

use crate::ids::SessionKey;
use std::time::Duration;

use actix::prelude::*;
use serde_json::Value;

use super::*;

/// Why approvals refused or could not do what they were asked.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ApprovalError {
    #[error("approval {0} already exists")]
    Exists(String),
    #[error("unknown approval id {0:?}")]
    Unknown(String),
    #[error("unknown or already resolved approval id {0:?}")]
    NotPending(String),
    #[error("exec approvals changed since they were read; get them again (baseHash mismatch)")]
    Stale,
    /// The approvals file (given, or found at start) is not valid.
    #[error("{0}")]
    Invalid(String),
    /// The approvals file could not be read or written.
    #[error("{0}")]
    Io(String),
    #[error("the approvals actor stopped")]
    Stopped,
}

/// Why a command may not run (said to the model as the tool's result).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct Refused(pub String);

/// Decides one command. Reply: Ok to run it, or why it may not.
#[derive(Debug, Message)]
#[rtype(result = "Result<(), Refused>")]
pub struct ExecGate {
    pub agent_id: String,
    pub session_key: SessionKey,
    pub command: String,
    /// The executables the command runs, resolved on PATH by the sender
    /// on the blocking pool ([`executables`]); None when they cannot be
    /// told (command substitution).
    pub bins: Option<Vec<String>>,
    pub cwd: String,
    pub policy: ExecPolicy,
    /// Asked by a turn holding a stranger's message: an operator's
    /// `allow-always` lets this command run once and is never written to
    /// the allowlist (it would widen what trusted turns may run).
    pub untrusted: bool,
    /// Told the approval's id and the command when an operator must
    /// answer (the run's session then says it waits for that approval).
    pub waiting: Option<OnWaiting>,
}

/// Called with (approval id, command).
pub type TellWaiting = Box<dyn FnOnce(&str, &str) + Send>;

/// What an exec gate calls when it asks an operator.
pub struct OnWaiting(pub TellWaiting);

impl std::fmt::Debug for OnWaiting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OnWaiting")
    }
}

/// `exec.approval.request`: asks and waits. Reply: (id, decision, created,
/// expires); decision None when nobody answered in time.
#[derive(Debug, Message)]
#[rtype(result = "Result<(String, Option<Decision>, u64, u64), ApprovalError>")]
pub struct RequestApproval {
    pub id: Option<String>,
    pub request: Value,
    pub timeout: Option<Duration>,
}

/// What the approvals actor tells the edge, which sends it as
/// `exec.approval.requested` or `exec.approval.resolved`.
#[derive(Debug, Clone, Message)]
#[rtype(result = "()")]
pub enum ApprovalEvent {
    /// A command waits for an operator's decision until `expires_at_ms`.
    Requested {
        id: String,
        request: Value,
        created_at_ms: u64,
        expires_at_ms: u64,
    },
    /// Decided (`decision` None: nobody answered in time).
    Resolved {
        id: String,
        decision: Option<Decision>,
        resolved_by: Option<String>,
        ts: u64,
    },
}

/// `exec.approval.resolve`. Err: unknown or already resolved id.
#[derive(Debug, Message)]
#[rtype(result = "Result<(), ApprovalError>")]
pub struct ResolveApproval {
    pub id: String,
    pub decision: Decision,
    pub by: Option<String>,
}

/// `exec.approval.waitDecision`. Reply: the decision (None: expired).
#[derive(Debug, Message)]
#[rtype(result = "Result<Option<Decision>, ApprovalError>")]
pub struct WaitDecision {
    pub id: String,
}

/// `exec.approvals.get`: the file, and the defaults in force when `policy`
/// (the config's exec settings) meets the file's. Reply: the view.
/// Requests still waiting for a decision (`exec.approval.list`), oldest first.
#[derive(Debug, Message)]
#[rtype(result = "Vec<PendingApproval>")]
pub struct ListPending;

/// One request waiting for an operator.
#[derive(Debug, Clone, PartialEq)]
pub struct PendingApproval {
    pub id: String,
    pub request: Value,
    pub created_at_ms: u64,
    pub expires_at_ms: u64,
}

#[derive(Debug, Message)]
#[rtype(result = "ApprovalsView")]
pub struct GetApprovals {
    pub policy: ExecPolicy,
}

/// The approvals file and what is in force.
#[derive(Debug, Clone)]
pub struct ApprovalsView {
    pub path: String,
    pub exists: bool,
    pub hash: String,
    pub file: Value,
    /// The stricter of the config's and the file's defaults.
    pub security: Security,
    pub ask: Ask,
    pub ask_fallback: Security,
}

/// `exec.approvals.set` (optimistic: `base_hash` must match). Reply: the new hash.
#[derive(Debug, Message)]
#[rtype(result = "Result<String, ApprovalError>")]
pub struct SetApprovals {
    pub file: Value,
    pub base_hash: Option<String>,
}

/// `exec.approval.grants.list`: standing grants, newest first.
#[derive(Debug, Message)]
#[rtype(result = "Vec<super::grants::Grant>")]
pub struct ListGrants {
    pub limit: usize,
}

/// `exec.approval.grants.revoke`: the job's next run of the command asks again.
#[derive(Debug, Message)]
#[rtype(result = "super::grants::Revoked")]
pub struct RevokeGrant {
    pub grant_id: String,
    pub by: String,
}

/// Decides one MCP tool call that needs an operator. Reply: Ok to call.
#[derive(Debug, Message)]
#[rtype(result = "Result<(), Refused>")]
pub struct McpGate {
    pub agent_id: String,
    pub session_key: SessionKey,
    pub server: String,
    pub tool: String,
    /// The call's arguments as the operator sees them (capped).
    pub arguments: String,
    /// `auto`: a grant answers, and allow-always mints one; `prompt`:
    /// every call asks.
    pub grantable: bool,
    pub untrusted: bool,
}
