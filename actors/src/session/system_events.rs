//! The queue of system events (`system-event` text) waiting for the main
//! session's next agent turn. Stored, so a restart does not lose them; the
//! agent runtime drains it when it builds a turn.

use serde::{Deserialize, Serialize};

use crate::store::{Store, StoreError, Tree};

/// At most this many queued events are kept; older ones are dropped.
pub const MAX_QUEUED: usize = 20;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SystemEvent {
    pub ts: u64,
    pub text: String,
}

/// Appends an event (not flushed: the caller decides the durability point).
pub fn push(store: &Store, text: &str) -> Result<(), StoreError> {
    let id = crate::store::time_ordered_id();
    store.put(
        Tree::SystemEvents,
        &id,
        &SystemEvent {
            ts: crate::now_ms(),
            text: text.to_string(),
        },
    )?;
    let all: Vec<(String, SystemEvent)> = store.scan(Tree::SystemEvents, "")?;
    if all.len() > MAX_QUEUED {
        for (k, _) in &all[..all.len() - MAX_QUEUED] {
            store.remove(Tree::SystemEvents, k)?;
        }
    }
    Ok(())
}

/// Queued events, oldest first.
pub fn list(store: &Store) -> Result<Vec<SystemEvent>, StoreError> {
    Ok(store
        .scan::<SystemEvent>(Tree::SystemEvents, "")?
        .into_iter()
        .map(|(_, e)| e)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queue_keeps_order_and_cap() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        for i in 0..(MAX_QUEUED + 3) {
            push(&store, &format!("e{i}")).unwrap();
        }
        let got = list(&store).unwrap();
        assert_eq!(got.len(), MAX_QUEUED);
        assert_eq!(got[0].text, "e3");
        assert_eq!(got[MAX_QUEUED - 1].text, format!("e{}", MAX_QUEUED + 2));
    }
}
