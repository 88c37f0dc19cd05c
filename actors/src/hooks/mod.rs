//! Lifecycle hooks as commands: OpenClaw's typed hook points
//! (`points.rs`) run command hooks (`table.rs`: the operator's
//! `hooks.commands` and enabled plugins' Claude `hooks.json`), each a
//! process with the event as JSON on stdin (`event.rs`) and its decision on
//! stdout (`reply.rs`: OpenClaw's result objects or Claude Code's
//! protocol), cut at its budget (`command.rs`). `HookHub` (`actor.rs`) runs
//! them and keeps their counters; callers hold a `HookClient`, which asks
//! the hub only when a point has hooks.
//!
//! Trust: a hook is the operator's or an enabled plugin's program, so it
//! runs on the host; a plugin's hooks reach conversation points only with
//! `allowConversationAccess`. What a hook is given of a stranger's message
//! is wrapped as outside data, and what a hook adds for the model is
//! wrapped as outside data where it is added.

mod actor;
mod client;
pub mod command;
pub mod event;
mod messages;
pub mod points;
pub mod reply;
pub mod table;

pub use actor::HookHub;
pub use client::HookClient;
pub use event::{HookCtx, HookEvent};
pub use messages::{HooksStatus, RunHooks, SetHookTable};
pub use points::HookPoint;
pub use reply::HookReply;
pub use table::HookTable;

/// How a hook failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HookError {
    #[error("cannot start: {0}")]
    Spawn(String),
    #[error("timed out after {0:?}")]
    Timeout(std::time::Duration),
    #[error("exited with {0:?}: {1}")]
    Exit(Option<i32>, String),
    #[error("printed something that is not a JSON object: {0}")]
    Garbage(String),
}

/// One hook as operators see it (`status`, `doctor`, `plugins inspect`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookStatus {
    pub id: String,
    pub owner: String,
    pub point: &'static str,
    pub command: String,
    pub timeout_ms: u64,
    pub fail_closed: bool,
    pub runs: u64,
    pub failures: u64,
    pub last_error: Option<String>,
    pub last_ms: Option<u64>,
    /// Declared and kept from running, and why.
    pub blocked: Option<String>,
}
