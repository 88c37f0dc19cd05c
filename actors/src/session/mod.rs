//! SessionActor: one conversation (session key), the single writer of its
//! transcript, its session entry (overrides, sticky auth profile, token
//! counts) and its inbox (`inbox.rs`). A message is written to the store
//! (transcript entry, inbox item, run record) and flushed before it is
//! acknowledged, and the acknowledgement names the run that answers it.
//! Messages that arrive while the session is busy (a run is active or
//! messages wait) follow the queue mode (`queue.rs`): steered into the run,
//! queued (coalesced for collect), or interrupting it; they run in the order
//! they were acknowledged. Queued ones are stored as `delivery: pending`
//! transcript entries (kept out of the model context) until their turn.
//! A steered message waits here until the run takes it at a steering point
//! (`TakeSteers`). When a run ends, its record and the removal of its inbox
//! items land in one store transaction; at start, items left assigned to a
//! run mark that run interrupted and queued ones run again, in order.
//! A run takes a slot of its lane, runs as a `RunActor` whose events come
//! back here: conversation messages are persisted, deltas pass the run's
//! `StreamGate` (what streams is decided once, by the run's `RunKind`), and
//! events and news go to the run registry on one road. System events
//! queued for this session are drained into its next trusted turn
//! (`system_events.rs`). Supervision: a run that fails in a way
//! a retry can fix (transient provider error after failover, its task gone,
//! a panic) is restarted from the last persisted step, at most
//! `RestartPolicy::max` times with doubling backoff; completed tool calls
//! are in the transcript and never run again. The session always takes the
//! next message, whatever way the run ended.
//!
//! Files. Pure, tested without actors: `state.rs` (queue, active run,
//! seen ids; its transitions return the writes and `Effect`s this actor
//! applies) and `ending.rs` (a run's stream and end as transitions:
//! compact, restart, finish), `view.rs` (what the entry, the defaults and
//! the active run's overrides come to), `commands.rs` (each directive a
//! `Decision`) and `directives.rs` (parsing them), `history.rs` (the
//! context and its token accounting), `crate::compaction::plan` (what a
//! compaction replaces). The actor applies them: `actor.rs` (the struct,
//! its writes, its handlers), `delivery.rs` (the delivery contract),
//! `runs.rs` (the run actor and its events), `supervision.rs` (a run's
//! end), `recovery.rs` (after a stop), `autocompact.rs` (runs a
//! compaction and applies its result), `btw.rs`; and `slot.rs` (lane,
//! run slot, idleness), `entry.rs` (the stored entry, the model plan),
//! `queue.rs`, `inbox.rs`, `system_events.rs`, `run_record.rs` (the `runs`
//! tree's format), `news.rs` (what it emits), `messages.rs` (its inbox of
//! actix messages), `tests.rs`; this file holds what they share: the deps
//! and the patch checks.

use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;

use crate::context::{channel_of_key, AgentContext};
use crate::inbound::msg_context::{ChatType, MsgContext};
use crate::lane::LaneActor;
use crate::provider::hub::ProviderHub;
use crate::provider::selection::ModelRef;
use crate::provider::{ChatMessage, Messages};
use crate::run::{FailureKind, RunEvent};
pub use crate::session::inbox::RunOverrides;
use crate::session::queue::{parse_queue_directive, QueueSettings, SessionQueue};
use crate::store::{Store, StoreError, StoreWrite, Tree};
use crate::tool::ExecuteTool;
use crate::transcript::{self, TranscriptError};
use directives::Parsed;

/// Replies with `result` once the store is flushed (the durability point
/// of patch, reset and inject).
fn when_flushed<T: 'static>(
    store: Store,
    result: Result<T, SessionError>,
) -> ResponseFuture<Result<T, SessionError>> {
    Box::pin(async move {
        let value = result?;
        store.flush().await?;
        Ok(value)
    })
}

/// How failed runs are restarted.
#[derive(Debug, Clone, Copy)]
pub struct RestartPolicy {
    /// Restarts after the first try.
    pub max: u32,
    /// Wait before the first restart; doubles each time.
    pub backoff: Duration,
}

/// What a session needs from the tree. Built once and shared by every
/// session (`Arc`): a live session costs its own state, not a copy of this.
#[derive(Clone)]
pub struct SessionDeps {
    pub store: Store,
    pub hub: Addr<ProviderHub>,
    pub executor: Recipient<ExecuteTool>,
    /// The lane of sessions whose key names no other (the router picks per key).
    pub lane: Addr<LaneActor>,
    pub events: Recipient<SessionEvent>,
    /// What watching dashboards see (`session.message`, `sessions.changed`).
    pub news: Recipient<SessionNews>,
    pub models: std::sync::Arc<ModelPlan>,
    pub thinking_default: String,
    pub verbose_default: String,
    /// Prompt and skills: workspace files, skill config, envelope.
    pub context: Arc<AgentContext>,
    /// Built-in and MCP tools.
    pub tools: crate::mcp::ToolBench,
    /// Where a sub-agent's session reports its run's end (set once the
    /// session tools actor exists).
    pub subagent_done: Arc<std::sync::OnceLock<Recipient<SubagentDone>>>,
    /// Allowlists, hooks and the result cap applied to every run's tools.
    pub tool_policy: Arc<crate::tool::policy::ToolPolicy>,
    /// Each model's context window.
    pub windows: Arc<crate::compaction::tokens::Windows>,
    /// `agents.defaults.compaction`.
    pub compaction: crate::compaction::CompactionSettings,
    /// `agents.defaults.contextPruning`.
    pub pruning: Arc<crate::compaction::PruneSettings>,
    /// The memory flush may write the workspace (not a read-only sandbox).
    pub memory_writable: bool,
    /// Prices per model (the `/usage` footer's cost).
    pub prices: Arc<crate::usage::Prices>,
    pub timeout: Duration,
    pub max_model_calls: u32,
    pub queue: QueueSettings,
    pub restart: RestartPolicy,
    /// An idle session (no run, nothing queued) stops after this long.
    pub idle_stop: Duration,
    pub workspace: String,
    pub metrics: Arc<crate::metrics::Metrics>,
    /// Where a run loads the stored images it sends (None: no store).
    pub media: Option<Addr<crate::media::MediaStore>>,
    /// `/tts` (None: no speech).
    pub speech: Option<Addr<crate::tts::Speaker>>,
}

/// Written after a user message whose run a gateway stop cut off.
pub const INTERRUPTED_NOTE: &str =
    "The gateway stopped before this message was answered. Send it again to retry.";

fn preview(text: &str) -> String {
    let one: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    one.chars().take(120).collect()
}

fn check_level(field: &str, v: &str, allowed: &[&str]) -> Result<(), SessionError> {
    if allowed.contains(&v) {
        Ok(())
    } else {
        Err(SessionError::Invalid(format!(
            "invalid {field} {v:?} (one of {})",
            allowed.join(", ")
        )))
    }
}

/// Checks every field of a patch before any is applied.
fn validate_patch(p: &SessionPatch) -> Result<(), SessionError> {
    type Level<'a> = (&'a str, &'a Option<Option<String>>, &'a [&'a str]);
    let levels: [Level; 8] = [
        ("thinkingLevel", &p.thinking_level, THINKING_LEVELS),
        ("verboseLevel", &p.verbose_level, VERBOSE_LEVELS),
        ("sendPolicy", &p.send_policy, &["allow", "deny"]),
        (
            "reasoningLevel",
            &p.reasoning_level,
            directives::REASONING_LEVELS,
        ),
        ("responseUsage", &p.response_usage, directives::USAGE_LEVELS),
        ("execHost", &p.exec_host, &["gateway", "sandbox", "node"]),
        (
            "execSecurity",
            &p.exec_security,
            &["deny", "allowlist", "full"],
        ),
        ("execAsk", &p.exec_ask, &["off", "on-miss", "always"]),
    ];
    for (field, value, allowed) in levels {
        if let Some(Some(l)) = value {
            check_level(field, l, allowed)?;
        }
    }
    if let Some(Some(l)) = &p.label {
        if l.chars().count() > 100 {
            let e = "invalid label: longer than 100 characters";
            return Err(SessionError::Invalid(e.to_string()));
        }
    }
    if let Some(Some(m)) = &p.model {
        ModelRef::parse(m).map_err(|e| SessionError::Invalid(format!("invalid model: {e}")))?;
    }
    Ok(())
}

pub use crate::session::directives::{THINKING_LEVELS, VERBOSE_LEVELS};

mod actor;
mod autocompact;
mod btw;
pub mod card;
mod commands;
mod companion;
mod delivery;
pub mod directives;
mod entry;
mod history;
pub mod inbox;
mod messages;
mod news;
pub mod queue;
mod recovery;
pub mod run_record;
mod runs;
mod slot;
mod state;
mod supervision;
pub mod system_events;
mod tally;
mod view;
pub use actor::SessionActor;
pub use entry::{LastRun, ModelPlan, Origin, SessionEntry};
use history::History;
pub use messages::*;
pub use news::{SessionChange, Settled};
pub use run_record::RunRecord;
use runs::run_id_of;
use state::SessionState;

#[cfg(test)]
mod tests;
