//! The `runs` tree's format (not an actor): one record per run id a client
//! was given. The session that owns a run writes its record when it
//! accepts the message (`pending`) and again when the run ends (`ok`,
//! `error`, `aborted`), in the same store commit as its transcript; a
//! message that joined another run (collected, steered) gets an alias
//! record naming that run. Ended records and aliases older than a day are
//! pruned when the gateway starts; pending ones stay until their session
//! settles them. The registry reads them for runs this process did not see.

use crate::ids::SessionKey;
use crate::run::RunKind;
use crate::session::inbox::RunOverrides;
use serde::{Deserialize, Serialize};

use crate::store::{Store, StoreError, StoreWrite, Tree};

/// Records are kept this long.
pub const KEEP_MS: u64 = 24 * 60 * 60 * 1000;

/// The status of a run accepted and not yet ended.
pub const PENDING: &str = "pending";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunRecord {
    pub session_key: SessionKey,
    /// `pending`, `ok`, `error` or `aborted`.
    pub status: String,
    pub started_at: u64,
    pub ended_at: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// `stop`, `toolUse`, `length`, `error` or `aborted` (empty while pending).
    pub stop_reason: String,
    /// This id is a message that another run answered (that run's id).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answered_by: Option<String>,
    /// Why the run ran: a cron job's and a sub-agent's runs are background
    /// tasks (`tasks.list`).
    #[serde(default, skip_serializing_if = "RunKind::is_default")]
    pub kind: RunKind,
    /// A task's title: the first words of the message it runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
}

impl RunRecord {
    /// A run accepted now and not yet ended.
    pub fn pending(session_key: &str, now: u64) -> RunRecord {
        RunRecord {
            session_key: SessionKey::stored(session_key),
            status: PENDING.to_string(),
            started_at: now,
            ended_at: 0,
            error: None,
            stop_reason: String::new(),
            answered_by: None,
            kind: RunKind::Chat,
            title: None,
        }
    }

    /// The same record, with what the run's settings say it is.
    pub fn of_run(mut self, o: &RunOverrides) -> RunRecord {
        self.kind = o.kind;
        self.title = o.title.clone();
        self
    }

    /// A message whose answer is the run `run_id`.
    pub fn alias(session_key: &str, run_id: &str, now: u64) -> RunRecord {
        RunRecord {
            answered_by: Some(run_id.to_string()),
            ..RunRecord::pending(session_key, now)
        }
    }

    pub fn is_pending(&self) -> bool {
        self.status == PENDING && self.answered_by.is_none()
    }
}

/// Writes a record (the caller flushes at its durability point).
pub fn save(store: &Store, run_id: &str, record: &RunRecord) -> Result<(), StoreError> {
    store.put(Tree::Runs, run_id, record)
}

/// The same write, for a `Store::commit` with other trees.
pub fn write(run_id: &str, record: &RunRecord) -> StoreWrite {
    (
        Tree::Runs,
        run_id.to_string(),
        serde_json::to_value(record).ok(),
    )
}

pub fn load(store: &Store, run_id: &str) -> Result<Option<RunRecord>, StoreError> {
    store.get(Tree::Runs, run_id)
}

/// The run an id stands for, following a message's alias to the run that
/// answered it: `(run id, record)`.
pub fn resolve(store: &Store, id: &str) -> Result<Option<(String, RunRecord)>, StoreError> {
    let Some(r) = load(store, id)? else {
        return Ok(None);
    };
    match r.answered_by.clone() {
        None => Ok(Some((id.to_string(), r))),
        Some(run) => Ok(load(store, &run)?.map(|target| (run, target))),
    }
}

/// Removes ended records and aliases older than [`KEEP_MS`] before `now`
/// (pending runs stay). Reply: how many were removed.
pub fn prune(store: &Store, now: u64) -> Result<usize, StoreError> {
    let old: Vec<String> = store
        .scan::<RunRecord>(Tree::Runs, "")?
        .into_iter()
        .filter(|(_, r)| {
            let at = if r.answered_by.is_some() {
                r.started_at
            } else if r.is_pending() {
                return false;
            } else {
                r.ended_at
            };
            now.saturating_sub(at) > KEEP_MS
        })
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
            session_key: crate::ids::SessionKey::stored("agent:main:main"),
            status: "ok".into(),
            started_at: ended_at.saturating_sub(10),
            ended_at,
            error: None,
            stop_reason: "stop".into(),
            ..RunRecord::pending("agent:main:main", 0)
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

    #[test]
    fn aliases_resolve_to_the_run_and_pending_runs_are_never_pruned() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let now = 10 * KEEP_MS;
        save(&store, "old-pending", &RunRecord::pending("k", 1)).unwrap();
        save(&store, "run", &record(now - 5)).unwrap();
        save(&store, "msg", &RunRecord::alias("k", "run", now - 10)).unwrap();
        save(&store, "old-msg", &RunRecord::alias("k", "run", 1)).unwrap();
        let (id, r) = resolve(&store, "msg").unwrap().unwrap();
        assert_eq!((id.as_str(), r.status.as_str()), ("run", "ok"));
        assert!(resolve(&store, "nothing").unwrap().is_none());
        assert_eq!(prune(&store, now).unwrap(), 1, "only the old alias");
        assert!(load(&store, "old-pending").unwrap().unwrap().is_pending());
        assert!(load(&store, "old-msg").unwrap().is_none());
    }
}
