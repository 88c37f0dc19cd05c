//! The active run's events and end as transitions of `SessionState`
//! (pure, beside the state they change): what of a streamed delta or of
//! its reasoning goes out (`pass`), and how an end goes on (`ended`): a
//! context overflow compacts and runs the turn once more, a failure a
//! retry may cure restarts the run from its last step after a doubling
//! backoff, and anything else finishes the run, its error saying how many
//! tries it took and what to do about an overflow compaction could not fix;
//! and what an end writes (the run's record, its inbox items, `lastRun`),
//! queued runs' ends included (cancelled, or cut by a reset or a delete).

use std::time::Duration;

use super::SessionState;
use crate::ids::RunId;
use crate::provider::ProviderError;
use crate::run::{FailureKind, RunEvent};
use crate::session::inbox::{self, RunOverrides};
use crate::session::run_record::{self, RunRecord};
use crate::session::RestartPolicy;
use crate::session::{LastRun, Settled};
use crate::store::StoreWrite;

/// How the reasoning of a run is shown (`/reasoning`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::session) enum Reasoning {
    /// Not at all.
    Off,
    /// Held back and sent whole before the reply's end.
    Held,
    /// As it streams.
    Stream,
}

impl Reasoning {
    pub fn of(level: &str) -> Reasoning {
        match level {
            "off" => Reasoning::Off,
            "on" => Reasoning::Held,
            _ => Reasoning::Stream,
        }
    }
}

/// What follows the end of the active run.
#[derive(Debug, PartialEq)]
pub(in crate::session) enum Ending {
    /// Not the active run's (a reset cut it off): announced, nothing else.
    NotOurs(RunEvent),
    /// The context overflowed on a turn not compacted yet: compact and
    /// launch it again (`no_room` when nothing can be compacted).
    Compact(RunEvent),
    /// A failure a retry may cure, with tries left: launch again after `wait`.
    Restart { n: u32, wait: Duration },
    /// The run's end, as announced.
    Finish(RunEvent),
}

/// What to do with a run once what it waited for is over.
#[derive(Debug, PartialEq, Eq)]
pub(in crate::session) enum Resumed {
    /// Launch it.
    Go,
    /// Aborted meanwhile: it ends without a run.
    Aborted,
    /// A reset cut it off and announced its end: nothing to do.
    Gone,
}

impl SessionState {
    /// What of `event` goes out while its run streams: a delta passes the
    /// active run's `StreamGate`, reasoning as `reasoning` says (held back
    /// on the active run); the events of a run no longer active pass as
    /// they are, except its deltas and reasoning.
    pub fn pass(&mut self, event: RunEvent, reasoning: Reasoning) -> Option<RunEvent> {
        let ours = self.owns(&event);
        match event {
            RunEvent::Delta {
                run_id,
                delta,
                fresh,
            } => {
                let a = self.active.as_mut().filter(|_| ours)?;
                let (delta, fresh) = a.gate.pass(delta, fresh)?;
                Some(RunEvent::Delta {
                    run_id,
                    delta,
                    fresh,
                })
            }
            RunEvent::Thinking { delta, .. } if reasoning == Reasoning::Held => {
                if let Some(a) = self.active.as_mut().filter(|_| ours) {
                    a.reasoning.push_str(&delta);
                }
                None
            }
            RunEvent::Thinking { .. } if reasoning == Reasoning::Off => None,
            other => Some(other),
        }
    }

    /// `event` belongs to the active run.
    pub fn owns(&self, event: &RunEvent) -> bool {
        super::super::run_id_of(event).is_some_and(|r| self.run(r).is_some())
    }

    /// The active run ended with `event` (an end status): what follows.
    pub fn ended(&mut self, event: RunEvent, policy: RestartPolicy) -> Ending {
        if !self.owns(&event) {
            return Ending::NotOurs(event);
        }
        let Some(a) = self.active.as_mut() else {
            return Ending::NotOurs(event);
        };
        if overflowed(&event) && !a.compacted && !a.aborted {
            a.launched = false;
            return Ending::Compact(event);
        }
        if let RunEvent::Failed { kind, .. } = &event {
            if kind.restartable() && !a.aborted && a.restarts < policy.max {
                a.restarts += 1;
                a.launched = false;
                let n = a.restarts;
                let wait = policy.backoff * 2u32.saturating_pow(n - 1);
                return Ending::Restart { n, wait };
            }
        }
        Ending::Finish(with_tries(event, a.restarts))
    }

    /// The overflow's compaction could not start: this turn counts as
    /// compacted (its end finishes it).
    pub fn no_room(&mut self) {
        if let Some(a) = self.active.as_mut() {
            a.compacted = true;
        }
    }

    /// This turn may still compact (at most once a turn).
    pub fn may_compact(&self) -> bool {
        self.active.as_ref().is_some_and(|a| !a.compacted)
    }

    /// A compaction starts on the active run: the session is busy (no run
    /// to steer into; messages queue) and this turn compacts no more. Its
    /// run id (None: nothing is active).
    pub fn compacting(&mut self) -> Option<RunId> {
        let a = self.active.as_mut()?;
        a.compaction = true;
        a.compacted = true;
        Some(a.run_id.clone())
    }

    /// What `run_id` waited for is over (its lane slot, a restart's
    /// backoff, the compaction that makes it room): launch it, end it
    /// (aborted meanwhile), or leave it (a reset cut it off and said so).
    pub fn resume(&mut self, run_id: &str) -> Resumed {
        match self.active.as_mut().filter(|a| a.run_id == run_id) {
            Some(a) if !a.aborted => {
                a.compaction = false;
                Resumed::Go
            }
            Some(_) => Resumed::Aborted,
            None => Resumed::Gone,
        }
    }

    /// The compaction of `run_id` that answers for itself (`/compact`,
    /// `sessions.compact`) is done: true when it was still the active run,
    /// now ended (false: a reset cut it off).
    pub fn compaction_over(&mut self, run_id: &str) -> bool {
        if !self.holds(run_id) {
            return false;
        }
        self.active = None;
        true
    }

    /// The active run's actor is started (the run may close from now on).
    pub fn launched(&mut self) -> bool {
        let Some(a) = self.active.as_mut() else {
            return false;
        };
        a.closing = false;
        a.launched = true;
        true
    }

    /// The reasoning the active run held back (sent before its end).
    pub fn take_reasoning(&mut self) -> String {
        self.active
            .as_mut()
            .map(|a| std::mem::take(&mut a.reasoning))
            .unwrap_or_default()
    }
}

/// What a run's end writes: its record, its messages out of the inbox,
/// the entry's `lastRun`; and queued runs ended before they ran.
impl SessionState {
    /// A queued run removed before it started: the writes that end it as
    /// aborted and the event that says so (None: not queued here).
    pub fn cancel_queued(&mut self, run_id: &str, now: u64) -> Option<(Vec<StoreWrite>, RunEvent)> {
        let gone = self.queue.remove_run(run_id);
        let (_, first) = gone.first()?;
        let mut writes: Vec<StoreWrite> = gone.iter().map(|(k, _)| inbox::remove(k)).collect();
        let record = RunRecord {
            status: "aborted".into(),
            ended_at: now,
            stop_reason: "aborted".into(),
            ..RunRecord::pending(&self.key, first.at_ms).of_run(&first.overrides)
        };
        writes.push(run_record::write(run_id, &record));
        let event = RunEvent::Aborted {
            run_id: run_id.into(),
            text: String::new(),
        };
        Some((writes, event))
    }

    /// Ends queued runs that will never start (reset, delete): recorded as
    /// aborted with `why`, their messages out of the inbox; the active run
    /// (aborted by the caller) is recorded too, and announced when no
    /// `RunActor` of it will announce its own end: when `announce_active`
    /// (a stopped session hears no late end), or when it is not launched
    /// (waiting for a slot, a restart's backoff or a compaction: what it
    /// waited for finds it gone and says nothing). A quiet run is never
    /// announced. Returns the writes and the events to send once they are
    /// durable.
    pub fn end_queued(
        &mut self,
        why: &str,
        announce_active: bool,
        now: u64,
    ) -> (Vec<StoreWrite>, Vec<RunEvent>) {
        let aborted = |started_at, o: &RunOverrides| RunRecord {
            status: "aborted".into(),
            ended_at: now,
            error: Some(why.to_string()),
            stop_reason: "aborted".into(),
            ..RunRecord::pending(&self.key, started_at).of_run(o)
        };
        let mut writes = Vec::new();
        let mut events = Vec::new();
        let mut ended: Vec<RunId> = Vec::new();
        for (key, item) in self.queue.take_all() {
            writes.push(inbox::remove(&key));
            if !ended.contains(&item.run_id) {
                writes.push(run_record::write(
                    &item.run_id,
                    &aborted(now, &item.overrides),
                ));
                events.push(RunEvent::Aborted {
                    run_id: item.run_id.clone(),
                    text: String::new(),
                });
                ended.push(item.run_id.clone());
            }
        }
        if let Some(a) = self.active.as_ref() {
            writes.extend(a.items.iter().map(|k| inbox::remove(k)));
            writes.push(run_record::write(
                &a.run_id,
                &aborted(a.started_at, &a.overrides),
            ));
            if !a.quiet && (announce_active || !a.launched) {
                events.push(RunEvent::Aborted {
                    run_id: a.run_id.clone(),
                    text: String::new(),
                });
            }
        }
        (writes, events)
    }

    /// The record of how a run ended (`agent.wait`, also after a restart).
    pub fn end_record(&self, event: &RunEvent, now: u64) -> Option<(RunId, RunRecord)> {
        let status = event.end_status()?;
        let (run_id, error, stop) = match event {
            RunEvent::Final {
                run_id,
                stop_reason,
                ..
            } => (run_id, None, stop_reason.as_str()),
            RunEvent::Failed { run_id, error, .. } => (run_id, Some(error), "error"),
            RunEvent::Aborted { run_id, .. } => (run_id, None, "aborted"),
            _ => return None,
        };
        let active = self.run(run_id);
        let started_at = active.map_or(now, |a| a.started_at);
        let record = RunRecord {
            status: status.as_str().to_string(),
            ended_at: now,
            error: error.cloned(),
            stop_reason: stop.to_string(),
            ..RunRecord::pending(&self.key, started_at)
        };
        let record = match active {
            Some(a) => record.of_run(&a.overrides),
            None => record,
        };
        Some((run_id.clone(), record))
    }

    /// The writes that record `event` as the end of its run: the record,
    /// and when it is the active run, its messages out of the inbox.
    pub fn end_writes(&self, event: &RunEvent, now: u64) -> Vec<StoreWrite> {
        let mut writes = Vec::new();
        let Some((run_id, record)) = self.end_record(event, now) else {
            return writes;
        };
        writes.push(run_record::write(&run_id, &record));
        if let Some(a) = self.run(&run_id) {
            writes.extend(a.items.iter().map(|k| inbox::remove(k)));
        }
        writes
    }

    /// The entry's `lastRun` for `event`, when it ends the active run.
    pub fn last_run(&self, event: &RunEvent, now: u64) -> Option<LastRun> {
        let a = self.active.as_ref()?;
        let (status, error) = match event {
            RunEvent::Final { run_id, .. } if *run_id == a.run_id => (Settled::Done, None),
            RunEvent::Failed { run_id, error, .. } if *run_id == a.run_id => {
                (Settled::Failed, Some(error.clone()))
            }
            RunEvent::Aborted { run_id, .. } if *run_id == a.run_id => (Settled::Killed, None),
            _ => return None,
        };
        Some(LastRun {
            run_id: a.run_id.clone(),
            status: status.as_str().to_string(),
            started_at: a.started_at,
            ended_at: now,
            error,
        })
    }
}

fn overflowed(event: &RunEvent) -> bool {
    matches!(
        event,
        RunEvent::Failed {
            kind: FailureKind::Provider(Some(ProviderError::ContextOverflow(_))),
            ..
        }
    )
}

/// A failed run's error, saying how many tries it took after `restarts`,
/// and what to do about an overflow that compaction could not fix.
fn with_tries(event: RunEvent, restarts: u32) -> RunEvent {
    let overflow = overflowed(&event);
    let RunEvent::Failed {
        run_id,
        error,
        kind,
    } = event
    else {
        return event;
    };
    let error = match restarts {
        0 => error,
        n => format!("{error} (gave up after {} tries)", n + 1),
    };
    let error = match overflow {
        true => format!("The conversation does not fit the model's context window, even after compaction ({error}). Send a shorter message, or /new to start over; the session keeps working."),
        false => error,
    };
    RunEvent::Failed {
        run_id,
        error,
        kind,
    }
}
