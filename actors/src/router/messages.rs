//! The router's inbox: get, look up, list, delete sessions; idleness reports.

use actix::prelude::*;

use super::*;
use crate::inbound::SessionKey;
use crate::session::{SendAck, SendChat, SessionActor, SessionEntry};
use crate::store::StoreError;
use crate::transcript::TranscriptError;

/// The session for a key (created when new). Reply: its address and entry,
/// at once: a row made here is not flushed by itself but by the first
/// change stored in the session (each flushes before it answers), so a
/// `chat.send` to a new key costs one flush, not two. A crash before that
/// loses only an empty session row.
#[derive(Debug, Message)]
#[rtype(result = "Result<(Addr<SessionActor>, SessionEntry), StoreError>")]
pub struct GetSession {
    pub key: SessionKey,
}

/// Hands `message` to the session of `key` (created when new) and answers
/// with the session's reply: one hop for the caller where `GetSession` and
/// then the message are two. The message is in the session's mailbox
/// before the router serves anything else, and the router stops an idle
/// session only through `StopIfIdle`, which a message before it makes not
/// idle; `Gone` is left for a session that failed.
#[derive(Debug, Message)]
#[rtype(result = "Result<SendAck, DeliverError>")]
pub struct SendToSession {
    pub key: SessionKey,
    pub message: SendChat,
}

/// A system event for the session of `key` (created when new), queued in
/// one hop like `SendToSession`: answered once durable.
#[derive(Debug, Message)]
#[rtype(result = "Result<(), DeliverError>")]
pub struct EventToSession {
    pub key: SessionKey,
    pub event: crate::session::system_events::QueueSystemEvent,
}

/// Why `SendToSession` got no answer from the session.
#[derive(Debug, thiserror::Error)]
pub enum DeliverError {
    /// The session could not be loaded or made.
    #[error("session: {0}")]
    Store(StoreError),
    /// The session refused or could not store the message.
    #[error("the session did not take the message: {0}")]
    Transcript(TranscriptError),
    /// The session stopped before it answered (send it again).
    #[error("the session stopped before it answered")]
    Gone,
    /// The router is gone: the gateway is stopping.
    #[error("the gateway is stopping")]
    Down,
}

/// Creates the session `key` with `entry` (a sub-agent's: who spawned
/// it, its depth, label, model, skills) and starts it; a key that exists
/// keeps its entry. Reply once the row is durable: its address and entry.
#[derive(Debug, Message)]
#[rtype(result = "Result<(Addr<SessionActor>, SessionEntry), StoreError>")]
pub struct CreateSession {
    pub key: SessionKey,
    pub entry: SessionEntry,
}

/// The stored entry of a key, without creating anything.
#[derive(Debug, Message)]
#[rtype(result = "Result<Option<SessionEntry>, StoreError>")]
pub struct LookupSession {
    pub key: SessionKey,
}

/// Every stored session, most recently updated first.
#[derive(Debug, Message)]
#[rtype(result = "Result<Vec<SessionRow>, StoreError>")]
pub struct ListSessions;

/// Removes a session: its run is aborted, its entry deleted, and its
/// transcript too unless `keep_transcript`. Reply: whether it existed.
#[derive(Debug, Message)]
#[rtype(result = "Result<bool, StoreError>")]
pub struct DeleteSession {
    pub key: SessionKey,
    pub keep_transcript: bool,
}

/// One pass of session maintenance (`maintenance.rs`): at start, hourly,
/// and on demand (tests). Reply: the keys removed (or, in `warn` mode,
/// that would be).
#[derive(Debug, Message)]
#[rtype(result = "Result<Vec<String>, StoreError>")]
pub struct Maintain {
    pub now: u64,
}

/// Live session actors (metrics and tests).
#[derive(Debug, Message)]
#[rtype(result = "usize")]
pub struct CountLive;

/// One page of a stored session's transcript for export
/// (`sessions.export`): entries after `cursor`, about `max_bytes` of them,
/// and the cursor to continue from; None for an unknown key. Read on the
/// blocking pool, without waking the session (a woken session would
/// settle an unanswered last message).
#[derive(Debug, Message)]
#[rtype(result = "Result<Option<ExportPage>, crate::transcript::TranscriptError>")]
pub struct ExportTranscript {
    pub key: SessionKey,
    pub cursor: Option<String>,
    pub max_bytes: usize,
}

/// A page of an export: the session's entry, its entries and the cursor.
#[derive(Debug)]
pub struct ExportPage {
    pub entry: SessionEntry,
    pub entries: Vec<serde_json::Value>,
    pub next: Option<String>,
}

/// The texts of the system events queued for `key`, without waking the
/// session: a live session answers from its queue, else the store's.
#[derive(Debug, Message)]
#[rtype(result = "Vec<String>")]
pub struct QueuedSystemEvents {
    pub key: SessionKey,
}

/// Copies session `from` up to (not including) its user message
/// `entry_id` into the new session `key` (`sessions.fork`). Reply once it
/// is durable.
#[derive(Debug, Message)]
#[rtype(result = "Result<fork::Forked, fork::ForkError>")]
pub struct ForkSession {
    pub from: SessionKey,
    pub entry_id: String,
    pub key: SessionKey,
}
