//! The audit ledger: a bounded, metadata-only record of what the gateway
//! did, queried newest first (`audit.activity.list`, `audit.list`,
//! `openclaw audit`). Records: agent runs and tool actions (started,
//! finished: how), channel messages in and out (opt-in,
//! `logging.audit.messages`), and ferroclaw's `control` family (approval
//! decisions, config changes, device and channel pairings, token rotations,
//! secret reloads, revoked grants), which OpenClaw's v1 schema has no kind
//! for and which is listed only when asked for by `kind: "control"`.
//!
//! Never content: no prompts, message text, tool arguments or results,
//! command output or error text. Platform ids (accounts, chats, messages,
//! senders) are stored only as keyed references (`refs.rs`: HMAC-SHA256
//! under a random key made at the first start and kept in the ledger), so
//! the ledger tells "the same sender again" without naming anyone.
//!
//! One SQLite file, `<state dir>/audit.sqlite`, owned by one thread
//! (`AuditDb`, a sync actor); `AuditLedger` in front batches records (one
//! transaction per 100 ms at most) so a turn costs no extra wake-ups.
//! Best effort, as OpenClaw's: records are written in WAL mode without an
//! fsync (a process crash keeps what was committed; a crash within the
//! batch window loses that batch). Kept 30 days and at most 100,000 rows:
//! older rows are deleted at start, hourly and when a write goes over.

mod actor;
mod db;
mod messages;
mod refs;
mod types;

pub use actor::AuditLedger;
pub use db::{AuditDb, DbError, Limits};
pub use messages::{ListAudit, Record, SetAuditSettings};
pub use refs::call_id;
pub use types::*;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use actix::prelude::*;

/// Where recorders send: a handle to the ledger, or nothing (tests and
/// tools that start parts of the tree without one).
#[derive(Clone, Default)]
pub struct AuditLog {
    to: Option<Recipient<Record>>,
    /// Whether the ledger keeps message records now (set by the ledger
    /// from `logging.audit`): channels build none otherwise.
    messages: Arc<AtomicBool>,
}

impl AuditLog {
    pub fn new(to: Recipient<Record>, messages: Arc<AtomicBool>) -> AuditLog {
        AuditLog {
            to: Some(to),
            messages,
        }
    }

    /// A log that records nothing.
    pub fn off() -> AuditLog {
        AuditLog::default()
    }

    /// Whether message records are wanted (a channel skips building them
    /// otherwise: no work on its hot path while message auditing is off).
    pub fn wants_messages(&self) -> bool {
        self.to.is_some() && self.messages.load(Ordering::Relaxed)
    }

    pub fn record(&self, activity: Activity) {
        if let Some(to) = &self.to {
            to.do_send(Record {
                at_ms: crate::now_ms(),
                activity,
            });
        }
    }
}

impl std::fmt::Debug for AuditLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.to.is_some() {
            "AuditLog(on)"
        } else {
            "AuditLog(off)"
        })
    }
}

#[cfg(test)]
mod tests;
