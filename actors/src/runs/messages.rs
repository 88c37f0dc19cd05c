//! The registry's inbox: every session's run events and news (`session::
//! SessionEvent`, `session::SessionNews`: one ordered stream, passed on to
//! the edge after the registry has taken what it needs), and the
//! questions of those waiting for runs: the WebSocket methods, the
//! OpenAI-compatible API, `sessions_send` and (next) channel adapters.

use crate::ids::RunId;
use crate::ids::SessionKey;
use std::collections::HashSet;
use std::time::Duration;

use actix::prelude::*;
use tokio::sync::{mpsc, oneshot};

use super::RunRegistry;
use crate::ids::ConnId;
use crate::provider::Usage;
use crate::run::{Outcome, RunStatus};

/// A run accepted and not ended.
#[derive(Debug, Clone, PartialEq)]
pub struct LiveRun {
    pub session_key: SessionKey,
    /// Its run started (else it waits in its session's queue).
    pub started: bool,
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq)]
pub struct RunResult {
    pub run_id: RunId,
    /// The reply as the run judged it (`Recorded`: answered from the
    /// record, the text is in the transcript).
    pub outcome: Outcome,
    pub started_at: u64,
    pub ended_at: u64,
    /// Token counts of a run that ended `ok` in this process.
    pub usage: Option<Usage>,
    /// `stop`, `toolUse`, `length`, `error` or `aborted`.
    pub stop_reason: &'static str,
}

impl RunResult {
    pub fn status(&self) -> RunStatus {
        self.outcome.status()
    }
}

/// What a run watcher (the OpenAI-compatible HTTP API, a channel's
/// deliverer) gets.
#[derive(Debug, Clone)]
pub enum RunUpdate {
    /// More reply text, as the session's gate lets it through (text that
    /// may still become the silent token is held back; a heartbeat's
    /// never shows). `fresh`: it starts a new assistant message, so the
    /// text so far starts over.
    Delta {
        text: String,
        fresh: bool,
    },
    End(RunResult),
}

/// Streams a run's text and end to `tx` (register before the run starts;
/// a run that already ended sends its end at once).
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct WatchRun {
    pub run_id: RunId,
    pub tx: mpsc::UnboundedSender<RunUpdate>,
}

/// The live run with this id. Reply: where it is, or None when it is not
/// queued or running.
#[derive(Debug, Message)]
#[rtype(result = "Option<LiveRun>")]
pub struct LiveRunOf {
    pub run_id: RunId,
}

/// The runs of background work in the `runs` tree (a cron job's, a
/// sub-agent's: `RunKind::is_task`), with where each live one is.
#[derive(Debug, Message)]
#[rtype(result = "Result<Vec<TaskRun>, crate::store::StoreError>")]
pub struct ListTaskRuns;

/// One run `ListTaskRuns` found.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskRun {
    pub run_id: RunId,
    pub record: super::RunRecord,
    /// Queued or running in this process (None: ended, or waiting for its
    /// session to wake after a restart).
    pub live: Option<LiveRun>,
    /// Its last tool call not finished yet (a running run's).
    pub open_tool: Option<String>,
}

/// Reply: the session keys that have a queued or running run.
#[derive(Debug, Message)]
#[rtype(result = "HashSet<String>")]
pub struct BusySessions;

/// Reply: the sessions' own queues (each session runs one turn at a
/// time: its lane), summed over the sessions with a queued or running run.
#[derive(Debug, Message)]
#[rtype(result = "SessionLanes")]
pub struct GetSessionLanes;

/// What the sessions' lanes hold now.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SessionLanes {
    /// Sessions with a queued or running run.
    pub lanes: usize,
    pub running: usize,
    pub queued: usize,
    /// Sessions with a queued run.
    pub queued_lanes: usize,
}

/// Waits for the end of run `run_id` (or of the run that answers the
/// message with that id). Reply at once: the result, a ticket to wait on,
/// or why there is nothing to wait for.
#[derive(Debug, Message)]
#[rtype(result = "WaitTicket")]
pub struct WaitRun {
    pub run_id: RunId,
    /// The connection waiting (bounded per connection); None for HTTP and
    /// for the actor tree's own callers.
    pub conn: Option<ConnId>,
}

/// The answer to `WaitRun`.
#[derive(Debug)]
pub enum WaitTicket {
    Done(RunResult),
    /// The run is queued or running: wait on it.
    Waiting(Waiting),
    /// Neither live nor recorded: nothing is kept for it.
    Unknown,
    /// Too many waiters (per connection or in all); retry later.
    Busy,
}

/// A waiter gave up (timeout, or its connection closed).
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct CancelWait {
    pub(super) run_id: RunId,
    pub(super) waiter: u64,
}

/// A registered waiter. Dropping it (timeout, connection gone) removes the
/// waiter from the registry at once.
#[derive(Debug)]
pub struct Waiting {
    /// The run waited for (an alias resolved).
    pub run_id: RunId,
    pub(super) rx: Option<oneshot::Receiver<RunResult>>,
    pub(super) cancel: Option<(Recipient<CancelWait>, u64)>,
}

impl Waiting {
    /// The run's result, or None when `limit` passed first.
    pub async fn wait(mut self, limit: Duration) -> Option<RunResult> {
        let rx = self.rx.take()?;
        match actix::clock::timeout(limit, rx).await {
            Ok(Ok(r)) => {
                self.cancel = None;
                Some(r)
            }
            _ => None,
        }
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        if let Some((registry, id)) = self.cancel.take() {
            registry.do_send(CancelWait {
                run_id: self.run_id.clone(),
                waiter: id,
            });
        }
    }
}

/// How a wait ended.
#[derive(Debug)]
pub enum Waited {
    Ended(RunResult),
    /// `limit` passed first (`run_id`: the run waited for, or the id asked).
    TimedOut {
        run_id: RunId,
    },
    /// Too many waiters; retry later.
    Busy,
    /// The registry is gone (the gateway is stopping).
    Down,
}

/// Waits at most `limit` for the end of the run `id` stands for. An id
/// nobody knows keeps nothing in the registry: the caller just sleeps out
/// its `limit`.
pub async fn wait_run(
    registry: &Addr<RunRegistry>,
    id: &str,
    conn: Option<ConnId>,
    limit: Duration,
) -> Waited {
    let ticket = registry
        .send(WaitRun {
            run_id: id.into(),
            conn,
        })
        .await;
    match ticket {
        Ok(WaitTicket::Done(r)) => Waited::Ended(r),
        Ok(WaitTicket::Waiting(w)) => {
            let run_id = w.run_id.clone();
            match w.wait(limit).await {
                Some(r) => Waited::Ended(r),
                None => Waited::TimedOut { run_id },
            }
        }
        Ok(WaitTicket::Unknown) => {
            actix::clock::sleep(limit).await;
            Waited::TimedOut { run_id: id.into() }
        }
        Ok(WaitTicket::Busy) => Waited::Busy,
        Err(_) => Waited::Down,
    }
}
