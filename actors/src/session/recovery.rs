//! The session's recovery after a stop (a crash, SIGKILL, a restart): runs
//! that were cut off (inbox items assigned to a run that never ended) are
//! marked interrupted, in the transcript and in their run records, so
//! `agent.wait` answers them; queued messages run again, in order, exactly
//! once. Earlier versions' transcripts (no `messageId`) are recovered from
//! the transcript itself.

use crate::ids::{RunId, SessionKey};
use actix::prelude::*;
use serde_json::{json, Value};

use super::*;
use crate::session::inbox::{self, InboxItem};
use crate::session::run_record::RunRecord;
use crate::transcript::{Entry, Role};

/// Earlier versions: the `pending` messages after the last delivered one
/// (text and images).
pub(super) fn undelivered(entries: &[Value]) -> Vec<crate::provider::ChatMessage> {
    let messages: Vec<(&Value, Entry)> = entries
        .iter()
        .map(|e| (e, Entry::of(e)))
        .filter(|(_, t)| matches!(t, Entry::Message { .. }))
        .collect();
    let start = messages
        .iter()
        .rposition(|(_, t)| t.is_delivered_message())
        .map(|i| i + 1)
        .unwrap_or(0);
    messages[start..]
        .iter()
        .filter(|(_, t)| {
            matches!(
                t,
                Entry::Message {
                    pending: true,
                    tracked: false,
                    ..
                }
            )
        })
        .filter_map(|(e, _)| transcript::to_chat(e))
        .collect()
}

/// Earlier versions: the last delivered message when it is the user's
/// (its run never ended).
pub(super) fn interrupted(entries: &[Value]) -> Option<&Value> {
    entries
        .iter()
        .rev()
        .find(|e| Entry::of(e).is_delivered_message())
        .filter(|e| {
            matches!(
                Entry::of(e),
                Entry::Message {
                    role: Role::User,
                    tracked: false,
                    ..
                }
            )
        })
}

/// The assistant note written where a gateway stop cut a run off.
pub(super) fn interrupted_note() -> Value {
    let mut entry = transcript::message_entry(
        None,
        json!({
            "role": "assistant",
            "content": [{ "type": "text", "text": INTERRUPTED_NOTE }],
            "stopReason": "error",
        }),
    );
    entry["interrupted"] = Value::Bool(true);
    entry
}

/// What recovery writes and reports, gathered before it commits (pure:
/// the property test recovers its simulated store with it too).
#[derive(Default)]
pub(super) struct Found {
    pub writes: Vec<StoreWrite>,
    pub notes: Vec<Value>,
    pub events: Vec<RunEvent>,
    /// Messages that run again, in order.
    pub queued: Vec<(String, InboxItem)>,
}

impl Found {
    /// The inbox: items assigned to a run are that run's (it was cut off:
    /// they leave the inbox); the others wait. Returns the cut runs.
    pub fn sort_inbox(&mut self, items: Vec<(String, InboxItem)>) -> Vec<RunId> {
        let mut cut: Vec<RunId> = Vec::new();
        for (key, item) in items {
            if !item.assigned {
                self.queued.push((key, item));
                continue;
            }
            self.writes.push(inbox::remove(&key));
            if !cut.contains(&item.run_id) {
                cut.push(item.run_id.clone());
            }
        }
        cut
    }

    /// A cut run that never recorded its end: recorded as interrupted, and
    /// said in the transcript instead of left silently unanswered.
    pub fn interrupt(&mut self, key: &SessionKey, run_id: RunId, now: u64) {
        let record = RunRecord {
            status: "error".into(),
            ended_at: now,
            error: Some(INTERRUPTED_NOTE.to_string()),
            stop_reason: "error".into(),
            ..RunRecord::pending(key, now)
        };
        self.writes
            .push(crate::session::run_record::write(&run_id, &record));
        self.notes.push(interrupted_note());
        self.events.push(RunEvent::Failed {
            run_id,
            error: INTERRUPTED_NOTE.to_string(),
            kind: FailureKind::Stopped,
        });
    }

    /// An earlier version's queued message becomes an inbox item.
    fn adopt(&mut self, key: &SessionKey, m: crate::provider::ChatMessage) {
        let id = ulid::Ulid::generate().to_string();
        let item = InboxItem {
            message_id: id.clone(),
            run_id: id.into(),
            assigned: false,
            text: m.text,
            shown: None,
            images: m.images,
            at_ms: 0,
            joinable: false,
            overrides: RunOverrides::default(),
            timeout_ms: None,
        };
        let k = inbox::new_key(key);
        self.writes.push(inbox::put(&k, &item));
        self.queued.push((k, item));
    }
}

impl SessionActor {
    /// After a stop: runs that were cut off (messages assigned to a run
    /// that never ended) are marked interrupted, in the transcript and for
    /// `agent.wait`; queued messages run again, in order, exactly once.
    /// Transcripts of earlier versions are recovered from the transcript.
    pub(super) fn recover(&mut self, entries: &[Value], ctx: &mut Context<Self>) {
        let items = match inbox::load(&self.deps.store, &self.key) {
            Ok(items) => items,
            Err(e) => {
                tracing::error!(session_key = %self.key, error = %e, "cannot read the inbox");
                Vec::new()
            }
        };
        let mut found = Found::default();
        let mut cut = found.sort_inbox(items);
        if let Some(last) = interrupted(entries) {
            // An earlier version's cut run: its user message is the last one.
            let run_id = last
                .get("runId")
                .and_then(Value::as_str)
                .map(str::to_string)
                .unwrap_or_else(|| ulid::Ulid::generate().to_string());
            cut.push(run_id.into());
        }
        let store = &self.deps.store;
        for run_id in cut {
            let ended = crate::session::run_record::load(store, &run_id)
                .ok()
                .flatten()
                .is_some_and(|r| !r.is_pending());
            if !ended {
                found.interrupt(&self.key, run_id, crate::now_ms());
            }
        }
        for m in undelivered(entries) {
            found.adopt(&self.key, m);
        }
        if let Err(e) = self.commit(found.notes, found.writes) {
            tracing::error!(session_key = %self.key, error = %e, "cannot mark interrupted runs");
        }
        for e in found.events {
            self.forward(e);
        }
        for (key, item) in found.queued {
            self.forward(RunEvent::Queued {
                run_id: item.run_id.clone(),
                message_id: item.message_id.clone(),
            });
            self.state.recover(key, item);
        }
        if !self.state.queue.is_empty() {
            ctx.notify(CheckQueue);
        }
    }
}
