//! The scheduler's inbox (`cron.*` methods, the timer, run ends) and what
//! it needs from the rest of the tree: a `Runner` that carries out one run.

use actix::prelude::*;
use futures_util::future::BoxFuture;

use super::heartbeat::{Beat, HeartbeatConfig, HeartbeatView};
use super::job::{CronJob, JobPatch, JobView, NewJob, Target};
use super::record::RunEntry;
use crate::store::StoreError;

/// Why a `cron.*` call was refused.
#[derive(Debug, thiserror::Error)]
pub enum CronError {
    #[error("cron job not found: {0}")]
    NotFound(String),
    #[error("{0}")]
    Invalid(#[from] super::job::InvalidJob),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// One run to carry out.
#[derive(Debug, Clone)]
pub struct Order {
    pub job: CronJob,
    /// Its store key and record (the runner records `delivering` on it).
    pub key: String,
    pub entry: RunEntry,
}

/// How a run ended.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Outcome {
    /// `ok`, `error` or `skipped`.
    pub status: String,
    pub error: Option<String>,
    pub summary: Option<String>,
    pub session_key: Option<String>,
    pub delivered: Option<bool>,
    /// `delivered`, `not-delivered`, `unknown` or `not-requested`.
    pub delivery_status: Option<String>,
    pub delivery_error: Option<String>,
    pub suppression: Option<String>,
}

impl Outcome {
    pub fn failed(error: impl Into<String>) -> Outcome {
        Outcome {
            status: "error".into(),
            error: Some(error.into()),
            ..Default::default()
        }
    }
}

/// Carries out runs (the gateway's: a turn or a system event, then the
/// announce; tests and benchmarks give their own).
pub trait Runner: Send + Sync + 'static {
    fn run(&self, order: Order) -> BoxFuture<'static, Outcome>;
    /// Finishes the delivery of a run a stop caught while delivering:
    /// through the same outbox key, so nothing is sent twice.
    fn redeliver(&self, order: Order, reply: String, target: Target)
        -> BoxFuture<'static, Outcome>;
}

/// What changed in the scheduler, for clients. The edge renders it as
/// OpenClaw's `cron` event (`jobId`, `action`, `job`, the run's fields).
#[derive(Debug, Clone, Message)]
#[rtype(result = "()")]
pub enum CronEvent {
    /// A job was added (`added`) or changed: its view after the change.
    Changed {
        job_id: String,
        added: bool,
        job: Box<JobView>,
    },
    Removed {
        job_id: String,
    },
    /// A run of the job started.
    Started {
        job_id: String,
        run_id: crate::ids::RunId,
        run_at_ms: u64,
        job: Option<Box<JobView>>,
    },
    /// A run ended: its record (a `cron.runs` row) and the job after it
    /// (as it was, when the run deleted a one-shot job).
    Finished {
        entry: Box<super::record::RunEntry>,
        job_name: String,
        job: Box<JobView>,
    },
}

/// Where a page of a list starts and whether more follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Page {
    pub total: usize,
    pub offset: usize,
    pub limit: usize,
    /// Where the next page starts (None: this is the last).
    pub next_offset: Option<usize>,
}

impl Page {
    /// `items[offset..offset + limit]` (limit 50 unless given, 1..=200).
    pub fn of<T>(items: Vec<T>, offset: Option<usize>, limit: Option<usize>) -> (Vec<T>, Page) {
        let total = items.len();
        let limit = limit.unwrap_or(50).clamp(1, 200);
        let offset = offset.unwrap_or(0).min(total);
        let rows: Vec<T> = items.into_iter().skip(offset).take(limit).collect();
        let next = offset + rows.len();
        let page = Page {
            total,
            offset,
            limit,
            next_offset: (next < total).then_some(next),
        };
        (rows, page)
    }
}

/// `cron.list` filters and page.
#[derive(Debug, Clone, Default, Message)]
#[rtype(result = "JobPage")]
pub struct ListJobs {
    pub include_disabled: bool,
    /// `all`, `enabled` or `disabled` (wins over `include_disabled`).
    pub enabled: Option<String>,
    pub query: Option<String>,
    pub agent_id: Option<String>,
    pub schedule_kind: Option<String>,
    pub sort_by: Option<String>,
    pub sort_dir: Option<String>,
    pub limit: Option<usize>,
    pub offset: Option<usize>,
}

/// A page of jobs, each with the agent it runs as.
#[derive(Debug, Clone)]
pub struct JobPage {
    pub jobs: Vec<JobView>,
    pub page: Page,
    /// Changes with every change to the set of jobs.
    pub revision: String,
}

/// `cron.get`. Reply: the job (None: no such job).
#[derive(Debug, Message)]
#[rtype(result = "Option<JobView>")]
pub struct GetJob {
    pub id: String,
}

/// `cron.add`. Reply: the job.
#[derive(Debug, Message)]
#[rtype(result = "Result<Added, CronError>")]
pub struct AddJob {
    pub job: NewJob,
    /// Configured channels (delivery targets are checked against them).
    pub channels: Vec<String>,
    /// Configured agents besides the default.
    pub agents: Vec<String>,
}

/// What `cron.add` did.
#[derive(Debug, Clone)]
pub struct Added {
    pub job: JobView,
    /// For a job with a `declarationKey` (OpenClaw's declarative shape):
    /// whether it was created, else whether the declaration changed it.
    pub declared: Option<Declared>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Declared {
    pub created: bool,
    pub updated: bool,
}

/// `cron.update`. Reply: the job.
#[derive(Debug, Message)]
#[rtype(result = "Result<JobView, CronError>")]
pub struct UpdateJob {
    pub id: String,
    pub patch: JobPatch,
    pub channels: Vec<String>,
    pub agents: Vec<String>,
}

/// `cron.remove`: the job and its runs.
#[derive(Debug, Message)]
#[rtype(result = "Result<(), CronError>")]
pub struct RemoveJob {
    pub id: String,
}

/// `cron.run`: `force` (default), `due` or `if-enabled`.
#[derive(Debug, Message)]
#[rtype(result = "Result<RunStart, CronError>")]
pub struct RunJob {
    pub id: String,
    pub mode: String,
}

/// What `cron.run` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunStart {
    /// Recorded and started.
    Started { run_id: crate::ids::RunId },
    /// `not-due`, `disabled` or `already-running`.
    NotRun { reason: &'static str },
}

/// `cron.runs` filters and page.
#[derive(Debug, Clone, Default, Message)]
#[rtype(result = "Result<RunPage, CronError>")]
pub struct ListRuns {
    pub job_id: Option<String>,
    pub run_id: Option<String>,
    pub statuses: Vec<String>,
    pub delivery_statuses: Vec<String>,
    pub query: Option<String>,
    pub sort_dir: Option<String>,
    pub limit: Option<usize>,
    pub offset: Option<usize>,
}

/// A finished run and the name of its job (None: the job is gone).
#[derive(Debug, Clone)]
pub struct RunRow {
    pub entry: RunEntry,
    pub job_name: Option<String>,
}

#[derive(Debug, Clone)]
pub struct RunPage {
    pub entries: Vec<RunRow>,
    pub page: Page,
}

/// `cron.status`.
#[derive(Debug, Message)]
#[rtype(result = "SchedulerStatus")]
pub struct CronStatus;

#[derive(Debug, Clone)]
pub struct SchedulerStatus {
    /// `cron.enabled`: false runs no job by itself.
    pub enabled: bool,
    /// Where the jobs are stored.
    pub store_path: String,
    pub jobs: usize,
    pub running: usize,
    /// The next time a job is due (None: none, or not enabled).
    pub next_wake_at_ms: Option<u64>,
}

/// Start whatever is due now (the timer sends it; tests after moving a
/// manual clock).
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct Tick;

/// A run ended (from its own task).
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub(super) struct RunEnded {
    pub order: Order,
    pub outcome: Outcome,
}

/// Run a heartbeat now (`wake`, a `systemEvent` job). Reply: the turn's
/// run id, or None when nothing ran (the event says why).
#[derive(Debug, Message)]
#[rtype(result = "Option<String>")]
pub struct RunHeartbeat {
    pub reason: String,
}

/// A `heartbeat` event for clients.
#[derive(Debug, Clone, Message)]
#[rtype(result = "()")]
pub struct HeartbeatEvent {
    pub beat: Beat,
}

/// `last-heartbeat`.
#[derive(Debug, Message)]
#[rtype(result = "Option<Beat>")]
pub struct LastHeartbeat;

/// `set-heartbeats`. Reply: whether heartbeats are now on.
#[derive(Debug, Message)]
#[rtype(result = "bool")]
pub struct SetHeartbeats {
    pub enabled: bool,
}

/// A config apply: the heartbeat's new settings (the timer starts over).
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct SetHeartbeatConfig {
    pub config: HeartbeatConfig,
}

/// `status` and `health`: the heartbeat's schedule as it runs.
#[derive(Debug, Message)]
#[rtype(result = "HeartbeatView")]
pub struct HeartbeatStatus;
