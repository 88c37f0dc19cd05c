//! What a session tells the dashboards that watch it (OpenClaw's
//! `session.message` and `sessions.changed` events): a message stored in
//! its transcript, a run started or settled, its entry patched or reset.
//! Each carries the session's entry after the change; the edge shapes the
//! wire payloads and sends them only to connections watching the session.
//! Run events (`SessionEvent`) and news travel one road, in the order the
//! session sent them: session -> run registry -> edge (one mailbox each).

use crate::ids::RunId;

use serde_json::Value;

/// How a settled run ended, in OpenClaw's session status words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Settled {
    Done,
    Failed,
    Killed,
}

impl Settled {
    pub fn as_str(self) -> &'static str {
        match self {
            Settled::Done => "done",
            Settled::Failed => "failed",
            Settled::Killed => "killed",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum SessionChange {
    /// A message entry stored: the transcript entry (its `id`, `message`,
    /// and for a user message the `runId` that answers it and the
    /// `messageId` it was sent with).
    Message { entry: Value },
    /// A run started.
    RunStarted { run_id: RunId, started_at: u64 },
    /// A run settled.
    RunSettled {
        run_id: RunId,
        status: Settled,
        started_at: u64,
        ended_at: u64,
        error: Option<String>,
    },
    /// The entry was patched (`patch`) or the conversation reset (`reset`).
    Lifecycle { reason: &'static str },
}

/// What a run's event changes for watching dashboards (`started_at`: the
/// active run's start).
pub(super) fn change_of(event: &crate::run::RunEvent, started_at: u64) -> Option<SessionChange> {
    use crate::run::RunEvent;
    let settled = |run_id: &RunId, status, error: Option<&String>| SessionChange::RunSettled {
        run_id: run_id.clone(),
        status,
        started_at,
        ended_at: crate::now_ms(),
        error: error.cloned(),
    };
    match event {
        RunEvent::Started { run_id } => Some(SessionChange::RunStarted {
            run_id: run_id.clone(),
            started_at,
        }),
        RunEvent::Final { run_id, .. } => Some(settled(run_id, Settled::Done, None)),
        RunEvent::Failed { run_id, error, .. } => {
            Some(settled(run_id, Settled::Failed, Some(error)))
        }
        RunEvent::Aborted { run_id, .. } => Some(settled(run_id, Settled::Killed, None)),
        _ => None,
    }
}
