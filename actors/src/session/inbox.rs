//! The session inbox: every message a session acknowledged and has not
//! finished with, in the `inbox` tree under `<session key>\0<time-ordered
//! id>` (so acknowledgement order is key order). Not an actor: the
//! session that owns the key is its only writer.
//!
//! An item is `queued` (waiting for a turn) or `assigned` to a run (the
//! run started with it, or it was steered into the run). It is written
//! before the message is acknowledged and removed in the same store
//! transaction that records how its run ended. After a crash, assigned
//! items name the runs that were cut off (marked interrupted) and queued
//! items are the messages still to run, in order, exactly once.

use crate::ids::RunId;
use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::provider::Image;
use crate::store::{composite_key, time_ordered_id, Store, StoreError, StoreWrite, Tree};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InboxItem {
    /// The client's id for the message (its idempotency key).
    pub message_id: String,
    /// The run that answers it (what its acknowledgement said).
    pub run_id: RunId,
    /// Started with its run or steered into it (else still queued).
    #[serde(default)]
    pub assigned: bool,
    /// What the model gets (time envelope, inline directives removed).
    pub text: String,
    /// What people see of it (the typed words), when not `text`: a queued
    /// message's turn shows this, the model still gets `text`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shown: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<Image>,
    pub at_ms: u64,
    /// Later collected messages may join its run.
    #[serde(default)]
    pub joinable: bool,
    /// Settings this message sets for its run (first message of a run).
    #[serde(default)]
    pub overrides: RunOverrides,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
}

/// A new key for `session_key`, after every key given before.
pub fn new_key(session_key: &str) -> String {
    composite_key(session_key, &time_ordered_id())
}

pub fn put(key: &str, item: &InboxItem) -> StoreWrite {
    (
        Tree::Inbox,
        key.to_string(),
        serde_json::to_value(item).ok(),
    )
}

pub fn remove(key: &str) -> StoreWrite {
    (Tree::Inbox, key.to_string(), None)
}

/// A session's items in acknowledgement order.
pub fn load(store: &Store, session_key: &str) -> Result<Vec<(String, InboxItem)>, StoreError> {
    store.scan(Tree::Inbox, &composite_key(session_key, ""))
}

/// The session keys that have items (sessions to wake at start).
pub fn sessions(store: &Store) -> Result<BTreeSet<String>, StoreError> {
    Ok(store
        .scan::<serde_json::Value>(Tree::Inbox, "")?
        .into_iter()
        .filter_map(|(k, _)| k.split_once('\0').map(|(s, _)| s.to_string()))
        .collect())
}

/// Settings one message sets for its run only (`chat.send thinking`,
/// inline `/think`, `/verbose`, `/reasoning`, `/model`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunOverrides {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verbose: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// A message of this run came from a sender who is not an operator (a
    /// channel sender not allowlisted, a webhook): its exec never runs on
    /// the host (`SessionActor::exec_policy`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub untrusted: bool,
    /// The channel the message came by (the runtime line's capabilities).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel: Option<String>,
    /// The chat the message came from (a stranger's too: the entry keeps
    /// only an operator's route). The run's tools answer it by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub route: Option<crate::session::Origin>,
    /// Every channel the run's messages came by, and those of the turn
    /// that sent them (sub-agents, `sessions_send`): each one's tool layer
    /// applies. Empty (records from before): the session key's channel.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub channels: Vec<String>,
    /// The lane the run takes instead of the session's (`cron`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lane: Option<String>,
    /// The only tools the run is offered (a cron job's `toolsAllow`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools_allow: Option<Vec<String>>,
    /// Why the run runs (chat, heartbeat, cron...): how its reply is judged.
    #[serde(default, skip_serializing_if = "crate::run::RunKind::is_default")]
    pub kind: crate::run::RunKind,
    /// A background task's title (a cron job's or a sub-agent's run): the
    /// first words of its message, as `tasks.list` shows them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
}

impl RunOverrides {
    /// What the run acts with: untrusted or not, and the channels whose
    /// tool layers apply (`key`'s channel for records without them).
    pub fn trust(&self, key: &str) -> crate::trust::Trust {
        let channels = if self.channels.is_empty() {
            vec![crate::context::channel_of_key(key).to_string()]
        } else {
            self.channels.clone()
        };
        crate::trust::Trust {
            untrusted: self.untrusted,
            channels,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(id: &str) -> InboxItem {
        InboxItem {
            message_id: id.into(),
            run_id: id.into(),
            assigned: false,
            text: format!("text {id}"),
            shown: None,
            images: Vec::new(),
            at_ms: 1,
            joinable: true,
            overrides: RunOverrides::default(),
            timeout_ms: None,
        }
    }

    #[test]
    fn items_come_back_in_acknowledgement_order_per_session() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let mut writes = Vec::new();
        for id in ["a", "b", "c"] {
            writes.push(put(&new_key("agent:main:x"), &item(id)));
            writes.push(put(&new_key("agent:main:y"), &item(id)));
        }
        store.commit(&writes).unwrap();
        let x: Vec<String> = load(&store, "agent:main:x")
            .unwrap()
            .into_iter()
            .map(|(_, i)| i.message_id)
            .collect();
        assert_eq!(x, ["a", "b", "c"]);
        assert_eq!(
            sessions(&store).unwrap().into_iter().collect::<Vec<_>>(),
            ["agent:main:x", "agent:main:y"]
        );
        let (first, _) = load(&store, "agent:main:x").unwrap().remove(0);
        store.commit(&[remove(&first)]).unwrap();
        assert_eq!(load(&store, "agent:main:x").unwrap().len(), 2);
    }
}
