//! The scheduler's inbox (`cron.*` methods, the timer, run ends) and what
//! it needs from the rest of the tree: a `Runner` that carries out one run.

use actix::prelude::*;
use futures_util::future::BoxFuture;
use serde_json::Value;

use super::job::{CronJob, Target};
use super::record::RunEntry;
use crate::store::StoreError;

/// Why a `cron.*` call was refused.
#[derive(Debug, thiserror::Error)]
pub enum CronError {
    #[error("cron job not found: {0}")]
    NotFound(String),
    #[error("{0}")]
    Invalid(String),
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
        job: Value,
    },
    Removed {
        job_id: String,
    },
    /// A run of the job started.
    Started {
        job_id: String,
        run_id: crate::ids::RunId,
        run_at_ms: u64,
        job: Value,
    },
    /// A run ended: its record (a `cron.runs` row) and the job's view
    /// after it (Null when the run deleted a one-shot job).
    Finished {
        entry: Box<super::record::RunEntry>,
        job_name: String,
        job: Value,
    },
}

/// `cron.list` filters and page.
#[derive(Debug, Clone, Default, Message)]
#[rtype(result = "Value")]
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

/// `cron.get`. Reply: the job (None: no such job).
#[derive(Debug, Message)]
#[rtype(result = "Option<Value>")]
pub struct GetJob {
    pub id: String,
}

/// `cron.add` (params as the client sent them). Reply: the job.
#[derive(Debug, Message)]
#[rtype(result = "Result<Value, CronError>")]
pub struct AddJob {
    pub params: Value,
    /// Configured channels (delivery targets are checked against them).
    pub channels: Vec<String>,
    /// Configured agents besides the default.
    pub agents: Vec<String>,
}

/// `cron.update`. Reply: the job.
#[derive(Debug, Message)]
#[rtype(result = "Result<Value, CronError>")]
pub struct UpdateJob {
    pub id: String,
    pub patch: Value,
    pub channels: Vec<String>,
    pub agents: Vec<String>,
}

/// `cron.remove`. Reply: `{ok, removed}`.
#[derive(Debug, Message)]
#[rtype(result = "Result<Value, CronError>")]
pub struct RemoveJob {
    pub id: String,
}

/// `cron.run`: `force` (default), `due` or `if-enabled`. Reply:
/// `{ok, enqueued, ran, runId}` or `{ok, ran: false, reason}`.
#[derive(Debug, Message)]
#[rtype(result = "Result<Value, CronError>")]
pub struct RunJob {
    pub id: String,
    pub mode: String,
}

/// `cron.runs` filters and page.
#[derive(Debug, Clone, Default, Message)]
#[rtype(result = "Result<Value, CronError>")]
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

/// `cron.status`.
#[derive(Debug, Message)]
#[rtype(result = "Value")]
pub struct CronStatus;

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
