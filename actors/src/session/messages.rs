//! The session's inbox of actix messages: what clients, the router and
//! other actors send it, and what it tells others (`SessionIdle`; its
//! run events go to the run registry as `runs::SessionEvent`). Each says
//! what its reply means.

use crate::ids::RunId;
use std::time::Duration;

use actix::prelude::*;
use serde_json::Value;

use super::news::SessionChange;
use super::{SessionActor, SessionEntry};
use crate::ids::SessionKey;
use crate::provider::Image;
use crate::run::RunEvent;
use crate::transcript::TranscriptError;
use std::sync::Arc;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SendStatus {
    /// A run started with this message.
    Started,
    /// Injected into the active run.
    Steered,
    /// Waiting for the active run to end.
    Queued,
    /// Refused by the queue cap (`drop: new`).
    Dropped,
    /// A directive (`/think`, `/status`, `/queue ...`) was handled by the
    /// gateway; its answer is the run's final and nothing reached the model.
    Directive,
    /// The message id was seen before: nothing new is stored; `live` says
    /// whether its run is still queued or running.
    Duplicate { live: bool },
}

/// What a message became. `run_id`: the run that answers it (its own id
/// when it started a run or waits for a turn of its own; the collected
/// run it joined; the run it was steered into).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SendAck {
    pub run_id: RunId,
    pub status: SendStatus,
    /// The session's own `sendPolicy` (`allow`, `deny`) as it took the
    /// message: a channel's reply honours it.
    pub send_policy: Option<String>,
}

impl SendAck {
    /// `run_id`'s acknowledgement by the session whose entry is `entry`.
    pub fn of(entry: &crate::session::SessionEntry, run_id: RunId, status: SendStatus) -> SendAck {
        SendAck {
            run_id,
            status,
            send_policy: entry.send_policy.clone(),
        }
    }
}

/// A user message. Reply (after the message is durable): what happened to it.
#[derive(Debug, Message)]
#[rtype(result = "Result<SendAck, TranscriptError>")]
pub struct SendChat {
    pub text: String,
    /// The message's id (the client's idempotency key): the run id when it
    /// starts a run; a second message with the same id is a duplicate.
    pub run_id: RunId,
    pub images: Vec<Image>,
    /// Thinking level for this message (`chat.send thinking`).
    pub thinking: Option<String>,
    /// Run timeout for this message (`chat.send timeoutMs`), capped by the agent's.
    pub timeout: Option<Duration>,
    /// Whether the sender may use directives (deny-by-default; an operator
    /// with write scope may). Otherwise `/...` is plain text.
    pub command_authorized: bool,
    /// Where a channel message came from (recorded on the entry as the
    /// session's last route); None for WebSocket and HTTP clients.
    pub origin: Option<crate::session::Origin>,
    /// From a stranger (a channel sender not allowlisted, a webhook) or
    /// sent by an untrusted turn: the model gets it inside an untrusted
    /// content block, it is never steered into a running run, it never
    /// moves the session's last route, and its run gets the untrusted
    /// tool profile (`trust`).
    pub untrusted: bool,
    /// The channels of the turn that sent this message (sub-agents,
    /// `sessions_send`): their tool layers apply to its run as well as
    /// its own channel's.
    pub channels: Vec<String>,
    /// The model for this message's run (a channel's `modelOverride`).
    pub model: Option<String>,
    /// The lane its run takes instead of the session's (`cron` for a cron
    /// job's turn in a named session).
    pub lane: Option<String>,
    /// The only tools its run is offered (a cron job's `toolsAllow`;
    /// groups and `*` as in `tools.allow`); None: the usual policy.
    pub tools_allow: Option<Vec<String>>,
    /// Why its run runs (a heartbeat, a cron job...): how the reply is judged.
    pub kind: crate::run::RunKind,
    /// Its attachments as the media store keeps them (written on its
    /// transcript entry as `MediaPaths`, `MediaUrls`, `MediaTypes`).
    pub media: Vec<crate::inbound::msg_context::Attached>,
    /// What directives are parsed from instead of `text` (a voice note's
    /// transcript: OpenClaw's `CommandBody`).
    pub commands: Option<String>,
    /// What people see of it (`chat.history`, the Control UI) when that is
    /// not `text`: the sender's own words without its attachments'
    /// `[Document]` blocks and notes, which only the model gets (OpenClaw's
    /// `Body` beside `BodyForAgent`).
    pub shown: Option<String>,
    /// The reset policy of the conversation it comes from (a channel's
    /// `session.reset`): when the session is stale by it, a new transcript
    /// starts before this message (judged by the session, on its entry).
    pub fresh: Option<crate::routing::reset::ResetPolicy>,
}

impl SendChat {
    pub fn text(text: &str, run_id: &str) -> SendChat {
        SendChat {
            text: text.to_string(),
            run_id: run_id.into(),
            images: Vec::new(),
            thinking: None,
            timeout: None,
            // Deny-by-default: the caller says when a sender may use directives.
            command_authorized: false,
            origin: None,
            untrusted: false,
            channels: Vec::new(),
            model: None,
            lane: None,
            tools_allow: None,
            kind: crate::run::RunKind::Chat,
            media: Vec::new(),
            commands: None,
            shown: None,
            fresh: None,
        }
    }
}

/// Aborts the active run. Reply: the ids of the runs aborted.
#[derive(Debug, Message)]
#[rtype(result = "Vec<RunId>")]
pub struct AbortSession;

/// Cancels a run that waits in the queue (`chat.abort` with its id): its
/// messages never run; it ends as aborted. Reply: whether it was queued.
#[derive(Debug, Message)]
#[rtype(result = "bool")]
pub struct CancelQueuedRun {
    pub run_id: RunId,
}

/// The stored transcript entries, oldest first.
#[derive(Debug, Message)]
#[rtype(result = "Result<Vec<Value>, TranscriptError>")]
pub struct GetTranscript;

/// A side-chat question about the session (OpenClaw's companion): answered
/// from the recent context, never stored in the transcript.
#[derive(Debug, Message)]
#[rtype(result = "Result<CompanionExchange, CompanionError>")]
pub struct CompanionAsk {
    pub question: String,
}

/// Reply: the session's side-chat exchanges, oldest first.
#[derive(Debug, Message)]
#[rtype(result = "Vec<CompanionExchange>")]
pub struct CompanionState;

/// Clears the session's side-chat thread.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct CompanionReset;

/// One side-chat question and its answer.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct CompanionExchange {
    pub question: String,
    pub answer: String,
    pub ts: u64,
}

/// Why a side-chat question got no answer.
#[derive(Debug, thiserror::Error)]
pub enum CompanionError {
    #[error("no model to ask: {0}")]
    NoModel(#[from] crate::provider::selection::ModelRefError),
}

/// Reply: the tools this session's next turn from its operator is offered
/// (its agent's profile and allow/deny, its channel's layer), as the run
/// would get them.
#[derive(Debug, Message)]
#[rtype(result = "std::sync::Arc<[crate::provider::ToolSpec]>")]
pub struct GetEffectiveTools;

/// The messages accepted and waiting for a turn (queued behind a busy
/// run; not yet given to the model), oldest first.
#[derive(Debug, Message)]
#[rtype(result = "Vec<PendingInput>")]
pub struct GetPendingInputs;

/// A message waiting for its turn.
#[derive(Debug, Clone, PartialEq)]
pub struct PendingInput {
    pub message_id: String,
    /// The run that will answer it.
    pub run_id: RunId,
    pub accepted_at: u64,
}

/// A stored reply's text: the reply of run `run_id` (its entry carries
/// the run's reply key), or with None the last assistant message. Asked
/// of the session, the only reader of its transcript for others.
#[derive(Debug, Message)]
#[rtype(result = "Result<Option<String>, TranscriptError>")]
pub struct GetReply {
    pub run_id: Option<RunId>,
}

/// The session's entry and whether a run is active.
#[derive(Debug, Message)]
#[rtype(result = "(SessionEntry, bool)")]
pub struct GetEntry;

/// `sessions.patch`: each field None = leave, Some(None) = clear.
#[derive(Debug, Default, Clone)]
pub struct SessionPatch {
    pub label: Option<Option<String>>,
    pub thinking_level: Option<Option<String>>,
    pub verbose_level: Option<Option<String>>,
    pub model: Option<Option<String>>,
    pub send_policy: Option<Option<String>>,
    pub reasoning_level: Option<Option<String>>,
    pub response_usage: Option<Option<String>>,
    pub exec_host: Option<Option<String>>,
    /// `execNode`: the node exec runs on with host `node`.
    pub exec_node: Option<Option<String>>,
    pub exec_security: Option<Option<String>>,
    pub exec_ask: Option<Option<String>>,
}

/// Why a session refused, or could not do, what it was asked.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// The request is wrong (a bad level, a bad model reference, a label
    /// too long): nothing changed.
    #[error("{0}")]
    Invalid(String),
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
    #[error(transparent)]
    Transcript(#[from] TranscriptError),
}

/// Replaces the session's progress card (`progressCard.put`, the
/// `progress_card` tool). Reply: the card now (None: cleared), stored and
/// flushed.
#[derive(Debug, Message)]
#[rtype(result = "Result<Option<super::card::ProgressCard>, CardPutError>")]
pub struct PutProgressCard {
    pub put: super::card::CardPut,
}

/// Why a progress card put changed nothing.
#[derive(Debug, thiserror::Error)]
pub enum CardPutError {
    #[error(transparent)]
    Invalid(#[from] super::card::CardError),
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
}

/// Applies a patch. Reply: the new entry (stored and flushed).
#[derive(Debug, Message)]
#[rtype(result = "Result<SessionEntry, SessionError>")]
pub struct PatchSession {
    pub patch: SessionPatch,
}

/// `sessions.reset`: aborts any run, starts a new transcript (a new
/// sessionId; the old one stays in the store), clears the sticky profile
/// and counters. Reply: the new entry.
#[derive(Debug, Message)]
#[rtype(result = "Result<SessionEntry, SessionError>")]
pub struct ResetSession;

/// `chat.inject`: appends an assistant note. Reply: the entry id.
#[derive(Debug, Message)]
#[rtype(result = "Result<String, SessionError>")]
pub struct InjectNote {
    pub text: String,
    pub label: Option<String>,
}

/// The `/status` text (the `session_status` tool).
#[derive(Debug, Message)]
#[rtype(result = "String")]
pub struct GetStatus;

/// Steers the active run. Reply: whether a run was there to take it.
#[derive(Debug, Message)]
#[rtype(result = "bool")]
pub struct SteerSession {
    pub text: String,
}

/// From the router: stop now if still idle. Reply: whether it stopped.
#[derive(Debug, Message)]
#[rtype(result = "bool")]
pub struct StopIfIdle;

/// From the router before a delete: abort any run and stop.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct CloseSession;

/// To the router: this session has been idle for a while.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct SessionIdle {
    pub key: String,
    pub session: Addr<SessionActor>,
}

#[derive(Debug, Message)]
#[rtype(result = "()")]
pub(super) struct CheckQueue;

/// Emitted by a sub-agent's session when its run ended (to the session
/// tools, which announce the result to the parent session).
#[derive(Debug, Clone, Message)]
#[rtype(result = "()")]
pub struct SubagentDone {
    pub child_key: String,
    pub parent_key: String,
    pub label: Option<String>,
    pub run_id: RunId,
    /// `ok`, `error` or `aborted`.
    pub status: String,
    pub text: String,
    /// What the sub-agent's run acted with: a result of an untrusted run is
    /// an untrusted message to its parent.
    pub trust: crate::trust::Trust,
}

/// Compacts the session now (`sessions.compact`): the last two user turns
/// (or `max_lines` messages) kept, the rest summarised; the transcript
/// keeps every message. Reply: what was done.
#[derive(Debug, Message)]
#[rtype(result = "CompactReport")]
pub struct CompactSession {
    pub instructions: Option<String>,
    /// Keep at most this many messages (None: the last two user turns).
    pub max_lines: Option<usize>,
}

/// What a compaction did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CompactReport {
    pub compacted: bool,
    /// Messages summarised, and kept as they were.
    pub dropped: usize,
    pub kept: usize,
    pub summary_chars: usize,
    pub tokens_before: u64,
    /// Why the deterministic summary was used (None: the model's).
    pub fallback: Option<String>,
    /// Why nothing was compacted.
    pub reason: Option<String>,
}

impl CompactReport {
    /// The answer to `/compact`.
    pub fn text(&self) -> String {
        if !self.compacted {
            return format!(
                "Could not compact: {}. The context is unchanged.",
                self.reason.as_deref().unwrap_or("unknown")
            );
        }
        let how = match &self.fallback {
            Some(why) => format!(", written without a model because {why}"),
            None => String::new(),
        };
        format!(
            "Compacted {} earlier messages into a summary ({} characters{how}); kept the last {}.",
            self.dropped, self.summary_chars, self.kept
        )
    }
}

/// A run event, tagged with its session and the session's verbose level
/// (which gates tool events on the wire). From the session that owns the
/// run, in the order the run produced them.
#[derive(Debug, Clone, Message)]
#[rtype(result = "()")]
pub struct SessionEvent {
    pub session_key: SessionKey,
    pub verbose: String,
    pub event: RunEvent,
}

#[derive(Debug, Clone, Message)]
#[rtype(result = "()")]
pub struct SessionNews {
    pub session_key: SessionKey,
    /// The session's entry after the change.
    pub entry: Arc<SessionEntry>,
    /// A run of the session is active (started and not settled).
    pub running: bool,
    pub change: SessionChange,
}

/// Queues `text` for the session's next turn; durable when answered.
#[derive(Debug, Message)]
#[rtype(result = "Result<(), crate::transcript::TranscriptError>")]
pub struct QueueSystemEvent {
    pub text: String,
    /// A stranger's text (a webhook's wake): wrapped, and the turn that
    /// drains it is untrusted.
    pub untrusted: bool,
}

/// The texts of the system events waiting for the session's next turn.
#[derive(Debug, Message)]
#[rtype(result = "Vec<String>")]
pub struct PendingSystemEvents;
