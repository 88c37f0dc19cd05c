//! Run records: how each run ended, in the `runs` tree, so `agent.wait`
//! answers for runs that ended before a gateway restart. The session that
//! ran it writes the record before the run's end is announced (the same
//! flush makes both durable); records older than a day are pruned when the
//! gateway starts.

use serde::{Deserialize, Serialize};

use crate::store::{Store, StoreError, Tree};

/// Records are kept this long.
pub const KEEP_MS: u64 = 24 * 60 * 60 * 1000;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunRecord {
    pub session_key: String,
    /// `ok`, `error` or `aborted`.
    pub status: String,
    pub started_at: u64,
    pub ended_at: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// `stop`, `toolUse`, `length`, `error` or `aborted`.
    pub stop_reason: String,
}

/// Writes a record (the caller flushes at its durability point).
pub fn save(store: &Store, run_id: &str, record: &RunRecord) -> Result<(), StoreError> {
    store.put(Tree::Runs, run_id, record)
}

pub fn load(store: &Store, run_id: &str) -> Result<Option<RunRecord>, StoreError> {
    store.get(Tree::Runs, run_id)
}

/// Removes records that ended more than [`KEEP_MS`] before `now`. Reply:
/// how many were removed.
pub fn prune(store: &Store, now: u64) -> Result<usize, StoreError> {
    let old: Vec<String> = store
        .scan::<RunRecord>(Tree::Runs, "")?
        .into_iter()
        .filter(|(_, r)| now.saturating_sub(r.ended_at) > KEEP_MS)
        .map(|(k, _)| k)
        .collect();
    for k in &old {
        store.remove(Tree::Runs, k)?;
    }
    Ok(old.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(ended_at: u64) -> RunRecord {
        RunRecord {
            session_key: "agent:main:main".into(),
            status: "ok".into(),
            started_at: ended_at.saturating_sub(10),
            ended_at,
            error: None,
            stop_reason: "stop".into(),
        }
    }

    #[test]
    fn records_survive_a_reopen_and_old_ones_are_pruned() {
        let dir = tempfile::tempdir().unwrap();
        let now = 10 * KEEP_MS;
        {
            let store = Store::open(dir.path()).unwrap();
            save(&store, "fresh", &record(now - 1000)).unwrap();
            save(&store, "stale", &record(now - KEEP_MS - 1)).unwrap();
        }
        let store = Store::open(dir.path()).unwrap();
        assert_eq!(load(&store, "fresh").unwrap(), Some(record(now - 1000)));
        assert_eq!(prune(&store, now).unwrap(), 1);
        assert_eq!(load(&store, "stale").unwrap(), None);
        assert!(load(&store, "fresh").unwrap().is_some());
    }
}
