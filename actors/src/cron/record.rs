//! Cron jobs and their runs in the store. A run is recorded, with the
//! job's `lastSlotMs` moved to its slot, in one transaction flushed before
//! the run starts: a slot is claimed once, so a crash can lose a run's
//! outcome (it is found `running` at the next start and recorded as
//! interrupted) but never run a slot twice. A run whose reply was being
//! delivered is found `delivering`, with the reply, and its delivery is
//! finished through the channel outbox (which never sends a chunk twice).

use crate::ids::RunId;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::job::{CronJob, Target};
use crate::store::{composite_key, time_ordered_id, Store, StoreError, StoreWrite, Tree};

/// Runs kept per job (the oldest go first).
pub const RUNS_KEPT: usize = 200;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    Running,
    Delivering,
    Finished,
}

/// One run (OpenClaw's run-log entry, plus where it got to).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunEntry {
    pub job_id: String,
    pub run_id: RunId,
    pub phase: Phase,
    /// The slot this run is for (a manual run: when it was asked for).
    pub scheduled_at_ms: u64,
    pub run_at_ms: u64,
    #[serde(default)]
    pub manual: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_key: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivered: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivery_status: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivery_error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivery_suppression_reason: Option<String>,
    /// While `delivering`: the reply and where it goes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<Target>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_at_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_run_at_ms: Option<u64>,
    #[serde(default)]
    pub interrupted: bool,
}

impl RunEntry {
    pub fn start(job_id: &str, run_id: &str, slot: u64, now: u64, manual: bool) -> RunEntry {
        RunEntry {
            job_id: job_id.to_string(),
            run_id: run_id.into(),
            phase: Phase::Running,
            scheduled_at_ms: slot,
            run_at_ms: now,
            manual,
            status: None,
            error: None,
            summary: None,
            session_key: None,
            delivered: None,
            delivery_status: None,
            delivery_error: None,
            delivery_suppression_reason: None,
            reply: None,
            target: None,
            ended_at_ms: None,
            next_run_at_ms: None,
            interrupted: false,
        }
    }

    /// When the run ended (when it started, if it has not).
    pub fn ts(&self) -> u64 {
        self.ended_at_ms.unwrap_or(self.run_at_ms)
    }

    /// The delivery status clients see (`not-requested` when none).
    pub fn delivery_shown(&self) -> &str {
        self.delivery_status.as_deref().unwrap_or("not-requested")
    }

    /// OpenClaw's `completionStatus`: `succeeded`, `failed` or `unknown`
    /// (ok, but whether the reply was delivered is not known).
    pub fn completion(&self) -> Option<&'static str> {
        let status = self.status.as_deref()?;
        Some(match (status, self.delivery_status.as_deref()) {
            ("ok", Some("unknown")) => "unknown",
            ("ok" | "skipped", _) => "succeeded",
            _ => "failed",
        })
    }
}

fn encode<T: Serialize>(v: &T) -> Result<Value, StoreError> {
    Ok(serde_json::to_value(v)?)
}

/// A new run's key.
pub fn new_key(job_id: &str) -> String {
    composite_key(job_id, &time_ordered_id())
}

/// The writes of a job and a run of it (to commit together).
pub fn writes(job: &CronJob, key: &str, run: &RunEntry) -> Result<[StoreWrite; 2], StoreError> {
    Ok([
        (Tree::CronJobs, job.id.clone(), Some(encode(job)?)),
        (Tree::CronRuns, key.to_string(), Some(encode(run)?)),
    ])
}

/// The job and a run of it, written together (one transaction).
pub fn write(store: &Store, job: &CronJob, key: &str, run: &RunEntry) -> Result<(), StoreError> {
    store.commit(&writes(job, key, run)?)
}

pub fn save_job(store: &Store, job: &CronJob) -> Result<(), StoreError> {
    store.put(Tree::CronJobs, &job.id, job)
}

pub fn save_run(store: &Store, key: &str, run: &RunEntry) -> Result<(), StoreError> {
    store.put(Tree::CronRuns, key, run)
}

/// Removes a job and its runs, together.
pub fn remove_job(store: &Store, id: &str) -> Result<(), StoreError> {
    let runs: Vec<(String, Value)> = store.scan(Tree::CronRuns, &composite_key(id, ""))?;
    let mut writes: Vec<StoreWrite> = vec![(Tree::CronJobs, id.to_string(), None)];
    writes.extend(runs.into_iter().map(|(k, _)| (Tree::CronRuns, k, None)));
    store.commit(&writes)
}

pub fn load_jobs(store: &Store) -> Result<Vec<CronJob>, StoreError> {
    Ok(store
        .scan::<CronJob>(Tree::CronJobs, "")?
        .into_iter()
        .map(|(_, j)| j)
        .collect())
}

/// The runs of these jobs not finished (a stop caught them), oldest
/// first. Only jobs with `runningAtMs` set can have one: it is written
/// with every run record and cleared with its end.
pub fn unfinished<'a>(
    store: &Store,
    jobs: impl Iterator<Item = &'a CronJob>,
) -> Result<Vec<(String, RunEntry)>, StoreError> {
    let mut out = Vec::new();
    for job in jobs.filter(|j| j.state.running_at_ms.is_some()) {
        out.extend(
            runs_of(store, Some(&job.id))?
                .into_iter()
                .filter(|(_, r)| r.phase != Phase::Finished),
        );
    }
    Ok(out)
}

/// A job's runs, oldest first (None: every job's).
pub fn runs_of(store: &Store, job_id: Option<&str>) -> Result<Vec<(String, RunEntry)>, StoreError> {
    let prefix = job_id.map(|j| composite_key(j, "")).unwrap_or_default();
    store.scan(Tree::CronRuns, &prefix)
}

/// Drops a job's oldest finished runs beyond `RUNS_KEPT`.
pub fn prune(store: &Store, job_id: &str) -> Result<usize, StoreError> {
    let runs = runs_of(store, Some(job_id))?;
    if runs.len() <= RUNS_KEPT {
        return Ok(0);
    }
    let extra = runs.len() - RUNS_KEPT;
    let writes: Vec<StoreWrite> = runs
        .into_iter()
        .filter(|(_, r)| r.phase == Phase::Finished)
        .take(extra)
        .map(|(k, _)| (Tree::CronRuns, k, None))
        .collect();
    let n = writes.len();
    store.commit(&writes)?;
    Ok(n)
}
