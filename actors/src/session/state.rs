//! The session's state machine, without I/O: the queue, the active run's
//! bookkeeping and the message ids seen. A transition takes an input (a
//! message, a run's end, a steering point, a cancel, a reset) and says
//! what must happen: the store writes that make it durable and the
//! `Effect`s that follow (emit a run event, launch the run, abort it, look
//! at the queue again). `SessionActor` commits the writes, then applies
//! the effects and does nothing else with this state. A message is planned
//! (`admit`, nothing changes) and applied (`place`) only once its writes
//! are stored, so a failed write changes nothing.
//!
//! Invariants, checked by the property test in `state_tests.rs` on random
//! inputs without an actor system:
//! - at most one run is active, and a message runs in the run its
//!   acknowledgement named;
//! - messages start in the order they were acknowledged;
//! - every acknowledged run ends exactly once (final, failed, aborted or
//!   dropped), and its inbox items leave the store in the transaction that
//!   records that end;
//! - a repeated message id is answered with the run of the first;
//! - a stranger's message never steers a run, and a turn holding one runs
//!   untrusted.

use crate::ids::{RunId, SessionKey};
use std::collections::{HashMap, VecDeque};
use std::time::Duration;

use crate::provider::Image;
use crate::run::{FailureKind, RunEvent, StreamGate};
use crate::session::inbox::{self, InboxItem, RunOverrides};
use crate::session::queue::{Placement, Queued, RunView, SessionQueue, TurnPlan};
use crate::session::run_record::{self, RunRecord};
use crate::session::SendStatus;
use crate::store::StoreWrite;

/// Message ids this session has seen, with the run that answers each
/// (duplicates are answered from here). The most recent are kept.
#[derive(Debug, Default)]
pub(super) struct RecentIds {
    runs: HashMap<String, String>,
    order: VecDeque<String>,
}

impl RecentIds {
    const KEEP: usize = 1000;

    pub(super) fn insert(&mut self, message_id: &str, run_id: &str) {
        if self
            .runs
            .insert(message_id.to_string(), run_id.to_string())
            .is_none()
        {
            self.order.push_back(message_id.to_string());
        }
        while self.order.len() > Self::KEEP {
            if let Some(old) = self.order.pop_front() {
                self.runs.remove(&old);
            }
        }
    }

    pub(super) fn get(&self, message_id: &str) -> Option<&String> {
        self.runs.get(message_id)
    }
}

/// The run in progress (or a compaction holding the session busy).
#[derive(Debug)]
pub(super) struct ActiveRun {
    pub run_id: RunId,
    /// A `RunActor` runs it now (false while it waits for a lane slot,
    /// its context files, a compaction or a restart's backoff).
    pub launched: bool,
    /// Steered messages the run has not taken yet (it asks at its next
    /// steering point).
    pub steers: VecDeque<String>,
    /// The run said it has its final answer and nothing was waiting:
    /// messages from now on queue instead of steering.
    pub closing: bool,
    /// A `/compact`, flush or compaction in progress (busy, but no run to
    /// steer into).
    pub compaction: bool,
    /// Nobody waits for this run (`sessions.compact`'s): its start and
    /// end are not announced.
    pub quiet: bool,
    /// This turn compacted already (at most once per turn).
    pub compacted: bool,
    /// Inbox keys of the messages this run answers (removed when it ends).
    pub items: Vec<String>,
    /// What the run did so far (its `usage` row's activity).
    pub activity: crate::usage::Activity,
    /// The exec approval a tool call of it waits for (`/status` says so).
    pub awaiting: Option<String>,
    pub aborted: bool,
    /// Restarts so far (supervision).
    pub restarts: u32,
    pub overrides: RunOverrides,
    pub timeout: Option<Duration>,
    pub started_at: u64,
    /// Reasoning held back until the end (`/reasoning on`).
    pub reasoning: String,
    /// Which of the run's streamed text goes out (by its kind).
    pub gate: StreamGate,
}

impl ActiveRun {
    fn new(
        run_id: RunId,
        items: Vec<String>,
        overrides: RunOverrides,
        timeout: Option<Duration>,
        now: u64,
    ) -> ActiveRun {
        ActiveRun {
            run_id,
            launched: false,
            steers: VecDeque::new(),
            closing: false,
            compaction: false,
            quiet: false,
            compacted: false,
            items,
            activity: Default::default(),
            awaiting: None,
            aborted: false,
            restarts: 0,
            timeout,
            started_at: now,
            reasoning: String::new(),
            gate: StreamGate::new(overrides.kind),
            overrides,
        }
    }
}

/// What the actor does after a transition's writes are stored, in order.
#[derive(Debug, PartialEq)]
pub(super) enum Effect {
    /// Send to the run registry (and tell watching dashboards).
    Emit(RunEvent),
    /// Take a lane slot for the active run `run_id` and start its actor.
    Launch { run_id: RunId },
    /// Abort the running `RunActor` (its end comes back as an event).
    Abort,
    /// The session may be free: plan the next queued turn.
    NextTurn,
}

/// Where the ids of new inbox items and backlog runs come from (time
/// ordered in the gateway, counted in tests).
pub(super) trait Ids {
    /// A new inbox key of `session`, after every key given before.
    fn inbox_key(&mut self, session: &str) -> String;
    fn run_id(&mut self) -> String;
}

/// The gateway's ids: time-ordered inbox keys, ULID run ids.
pub(super) struct LiveIds;

impl Ids for LiveIds {
    fn inbox_key(&mut self, session: &str) -> String {
        inbox::new_key(session)
    }
    fn run_id(&mut self) -> String {
        ulid::Ulid::generate().to_string()
    }
}

/// A message to place (directives applied, text as the model gets it).
#[derive(Debug, Clone)]
pub(super) struct Incoming {
    pub message_id: String,
    pub text: String,
    /// What people see of it (the typed words), when not `text`.
    pub shown: Option<String>,
    pub images: Vec<Image>,
    pub overrides: RunOverrides,
    pub timeout_ms: Option<u64>,
}

/// A placed message, planned: `writes` make it durable; `place` applies it.
#[derive(Debug)]
pub(super) struct Admitted {
    pub placement: Placement,
    /// The run that answers it (what the acknowledgement names).
    pub run_id: RunId,
    key: String,
    item: InboxItem,
    /// steer-backlog: the copy that waits for a turn of its own.
    backlog: Option<Queued>,
    /// Runs the cap left with none of their messages: (run, why).
    ended: Vec<(RunId, String)>,
    pub writes: Vec<StoreWrite>,
}

/// What the queue says when the session may start a turn.
#[derive(Debug, PartialEq)]
pub(super) enum Next {
    Begin(Box<TurnPlan>),
    /// A collected run waits out its debounce: look again after this.
    Wait(Duration),
    Idle,
}

/// The inbox item of message `m` as `placement` places it.
fn item_of(placement: &Placement, m: Incoming, now: u64) -> InboxItem {
    let (run_id, assigned, joinable) = match placement {
        Placement::Start | Placement::Refused => (RunId::from(&m.message_id), true, false),
        Placement::Steer { run_id } | Placement::SteerAndBacklog { run_id } => {
            (run_id.clone(), true, false)
        }
        Placement::Queue {
            run_id, joinable, ..
        } => (run_id.clone(), false, *joinable),
    };
    let queued = matches!(placement, Placement::Queue { .. });
    let mut overrides = m.overrides;
    if overrides.kind.is_task() && overrides.title.is_none() {
        overrides.title = Some(title_of(m.shown.as_deref().unwrap_or(&m.text)));
    }
    InboxItem {
        message_id: m.message_id,
        run_id,
        assigned,
        text: m.text,
        shown: m.shown,
        // Only a waiting message needs its images again (its turn sends
        // them); a started one has them in its transcript entry, and
        // steering carries text only.
        images: if queued { m.images } else { Vec::new() },
        at_ms: now,
        joinable,
        overrides,
        timeout_ms: m.timeout_ms,
    }
}

/// A task's title: the first line of its message without the time
/// envelope, at most 80 characters.
fn title_of(text: &str) -> String {
    let words = crate::inbound::msg_context::strip_envelope(text).trim();
    let line = words.lines().next().unwrap_or_default();
    match line.char_indices().nth(80) {
        Some((at, _)) => format!("{}…", &line[..at]),
        None => line.to_string(),
    }
}

/// The session's queue, active run and recent message ids.
#[derive(Debug)]
pub(super) struct SessionState {
    key: SessionKey,
    pub queue: SessionQueue,
    /// The side chat's exchanges (in memory only: `companion.rs`).
    pub companion: super::companion::Companion,
    active: Option<ActiveRun>,
    seen: RecentIds,
    /// A queue check is scheduled (a collected run waits out its debounce).
    check_scheduled: bool,
}

impl SessionState {
    pub fn new(key: &SessionKey, queue: SessionQueue) -> SessionState {
        SessionState {
            key: key.clone(),
            queue,
            companion: Default::default(),
            active: None,
            seen: RecentIds::default(),
            check_scheduled: false,
        }
    }

    /// The active run, for what its settings come to (`View`); what
    /// happens to it is decided here, by the transitions.
    pub fn active(&self) -> Option<&ActiveRun> {
        self.active.as_ref()
    }

    /// The active run when it is `run_id`.
    pub(super) fn run(&self, run_id: &str) -> Option<&ActiveRun> {
        self.active.as_ref().filter(|a| a.run_id == run_id)
    }

    /// The active run when it is `run_id`, to change.
    pub(super) fn run_mut(&mut self, run_id: &str) -> Option<&mut ActiveRun> {
        self.active.as_mut().filter(|a| a.run_id == run_id)
    }

    /// Whether `run_id` is the active run.
    pub fn holds(&self, run_id: &str) -> bool {
        self.run(run_id).is_some()
    }

    /// The active run's id.
    pub fn active_id(&self) -> Option<RunId> {
        self.active.as_ref().map(|a| a.run_id.clone())
    }

    /// The lane the active run `run_id` names, if any.
    pub fn lane_of(&self, run_id: &str) -> Option<&str> {
        self.run(run_id).and_then(|a| a.overrides.lane.as_deref())
    }

    /// The active run while its `RunActor` runs.
    pub fn launched_run(&self) -> Option<&RunId> {
        self.active
            .as_ref()
            .filter(|a| a.launched)
            .map(|a| &a.run_id)
    }

    /// When the active run started (0: none is).
    pub fn started_at(&self) -> u64 {
        self.active.as_ref().map_or(0, |a| a.started_at)
    }

    /// No run, nothing queued.
    pub fn idle(&self) -> bool {
        self.active.is_none() && self.queue.is_empty()
    }

    /// The active run's id while it can take a steered message.
    pub fn steerable(&self) -> Option<&str> {
        self.active
            .as_ref()
            .filter(|a| !a.aborted && !a.closing && !a.compaction)
            .map(|a| a.run_id.as_str())
    }

    /// Whether `run_id` is queued or running here.
    pub fn is_live(&self, run_id: &str) -> bool {
        self.holds(run_id) || self.queue.run_ids().any(|r| r == run_id)
    }

    /// A message id seen before: the run that answers it and whether that
    /// run is still queued or running.
    pub fn duplicate(&self, message_id: &str) -> Option<(String, bool)> {
        let run_id = self.seen.get(message_id)?;
        Some((run_id.clone(), self.is_live(run_id)))
    }

    /// Remembers that `message_id` is answered by `run_id` (directives,
    /// the transcript read at start).
    pub fn remember(&mut self, message_id: &str, run_id: &str) {
        self.seen.insert(message_id, run_id);
    }

    /// Where message `message_id` goes (nothing changes yet). An untrusted
    /// message waits for a turn of its own instead of steering.
    pub fn placement(&self, message_id: &str, untrusted: bool) -> Placement {
        let view = RunView {
            active: self.active.is_some(),
            steerable: self.steerable().filter(|_| !untrusted),
        };
        self.queue.place(message_id, view)
    }

    /// Plans message `m` as `placement` places it: its inbox item, its run
    /// record (or the alias naming the run that answers it), a backlog
    /// copy, and the records of runs the cap pushes out. Changes nothing.
    pub fn admit(
        &self,
        placement: Placement,
        m: Incoming,
        now: u64,
        ids: &mut impl Ids,
    ) -> Admitted {
        let item = item_of(&placement, m, now);
        let run_id = item.run_id.clone();
        let queued = matches!(placement, Placement::Queue { .. });
        let key = ids.inbox_key(&self.key);
        let mut writes = vec![inbox::put(&key, &item)];
        writes.push(if run_id == item.message_id {
            let record = RunRecord::pending(&self.key, now).of_run(&item.overrides);
            run_record::write(&run_id, &record)
        } else {
            let alias = RunRecord::alias(&self.key, &run_id, now);
            run_record::write(&item.message_id, &alias)
        });
        let backlog = matches!(placement, Placement::SteerAndBacklog { .. }).then(|| {
            let id = ids.run_id();
            let copy = InboxItem {
                run_id: id.clone().into(),
                message_id: id,
                assigned: false,
                ..item.clone()
            };
            (ids.inbox_key(&self.key), copy)
        });
        if let Some((k, copy)) = &backlog {
            writes.push(inbox::put(k, copy));
            let record = RunRecord::pending(&self.key, now).of_run(&copy.overrides);
            writes.push(run_record::write(&copy.run_id, &record));
        }
        let ended = match queued {
            true => self.overflow(&run_id, now, &mut writes),
            false => Vec::new(),
        };
        Admitted {
            placement,
            run_id,
            key,
            item,
            backlog,
            ended,
            writes,
        }
    }

    /// The cap pushes the oldest out (`drop: old | summarize`) when one
    /// more message queues for `run_id`: their inbox items go, and a run
    /// left with none of its messages ends as dropped.
    fn overflow(
        &self,
        run_id: &str,
        now: u64,
        writes: &mut Vec<StoreWrite>,
    ) -> Vec<(RunId, String)> {
        let dropped = self.queue.overflow();
        let mut ended: Vec<(RunId, String)> = Vec::new();
        for (k, old) in &dropped {
            writes.push(inbox::remove(k));
            let left = self.queue.run_ids().filter(|r| *r == old.run_id).count();
            let going = dropped
                .iter()
                .filter(|(_, d)| d.run_id == old.run_id)
                .count();
            let still_queued = left > going || old.run_id == run_id;
            if still_queued || ended.iter().any(|(r, _)| *r == old.run_id) {
                continue;
            }
            let s = &self.queue.settings;
            let error =
                format!("dropped from the queue (cap {}, drop {:?})", s.cap, s.drop).to_lowercase();
            let record = RunRecord {
                status: "error".into(),
                ended_at: now,
                error: Some(error.clone()),
                stop_reason: "error".into(),
                ..RunRecord::pending(&self.key, old.at_ms).of_run(&old.overrides)
            };
            writes.push(run_record::write(&old.run_id, &record));
            ended.push((old.run_id.clone(), error));
        }
        ended
    }

    /// Applies a planned message whose writes are stored: what its
    /// acknowledgement says and what follows.
    pub fn place(&mut self, a: Admitted, now: u64) -> (SendStatus, Vec<Effect>) {
        let Admitted {
            placement,
            run_id,
            key,
            item,
            backlog,
            ended,
            writes: _,
        } = a;
        let mut effects = Vec::new();
        if placement == Placement::Refused {
            return (SendStatus::Dropped, effects);
        }
        self.seen.insert(&item.message_id, &run_id);
        effects.push(Effect::Emit(RunEvent::Queued {
            run_id: run_id.clone(),
            message_id: item.message_id.clone(),
        }));
        effects.extend(ended.into_iter().map(|(run_id, error)| {
            Effect::Emit(RunEvent::Failed {
                run_id,
                error,
                kind: FailureKind::Dropped,
            })
        }));
        let status = match placement {
            Placement::Start => {
                let timeout = item.timeout_ms.map(Duration::from_millis);
                effects.push(self.start(run_id, item.overrides, timeout, vec![key], now));
                SendStatus::Started
            }
            Placement::Steer { .. } | Placement::SteerAndBacklog { .. } => {
                effects.extend(self.steer_in(key, item, backlog));
                SendStatus::Steered
            }
            Placement::Queue { interrupt, .. } => {
                let own = run_id == item.message_id;
                self.queue.push(key, item);
                if interrupt && self.abort().is_some() {
                    effects.push(Effect::Abort);
                }
                if own && self.queue.len() == 1 && interrupt {
                    // Nothing waits before it: it runs as soon as the aborted run ended.
                    SendStatus::Started
                } else {
                    SendStatus::Queued
                }
            }
            Placement::Refused => unreachable!("returned above"),
        };
        if self.active.is_none() {
            effects.push(Effect::NextTurn);
        }
        (status, effects)
    }

    /// A steered message joins the active run (its inbox item is the
    /// run's now); a steer-backlog copy queues for a turn of its own.
    fn steer_in(
        &mut self,
        key: String,
        item: InboxItem,
        backlog: Option<Queued>,
    ) -> Option<Effect> {
        if let Some(a) = self.active.as_mut() {
            a.steers.push_back(item.text);
            a.items.push(key);
        }
        let (k, copy) = backlog?;
        let queued = RunEvent::Queued {
            run_id: copy.run_id.clone(),
            message_id: copy.message_id.clone(),
        };
        self.queue.push(k, copy);
        Some(Effect::Emit(queued))
    }

    /// Makes `run_id` the active run, answering the inbox `items`.
    pub fn start(
        &mut self,
        run_id: RunId,
        overrides: RunOverrides,
        timeout: Option<Duration>,
        items: Vec<String>,
        now: u64,
    ) -> Effect {
        let a = ActiveRun::new(run_id.clone(), items, overrides, timeout, now);
        self.active = Some(a);
        Effect::Launch { run_id }
    }

    /// The session is busy with a compaction under `run_id` (no run to
    /// steer into; messages queue); `quiet`: that run is nobody's to wait
    /// for (`sessions.compact`), so its end is not announced. False: a run
    /// is active, nothing changed.
    pub fn start_compaction(&mut self, run_id: RunId, quiet: bool, now: u64) -> bool {
        if self.active.is_some() {
            return false;
        }
        let mut a = ActiveRun::new(run_id, Vec::new(), RunOverrides::default(), None, now);
        a.compaction = true;
        a.quiet = quiet;
        self.active = Some(a);
        true
    }

    /// When the session is free: the next queued turn, or how long a
    /// collected run still waits (once; `check_due` when that time came).
    pub fn next_turn(&mut self, now: u64) -> Next {
        if self.active.is_some() {
            return Next::Idle;
        }
        match self.queue.next_turn(now) {
            Some(Ok(plan)) => Next::Begin(Box::new(plan)),
            Some(Err(wait)) if !self.check_scheduled => {
                self.check_scheduled = true;
                Next::Wait(wait)
            }
            _ => Next::Idle,
        }
    }

    /// The scheduled queue check is due.
    pub fn check_due(&mut self) {
        self.check_scheduled = false;
    }

    /// The writes that start a planned turn: its messages assigned to it
    /// (what they say is in the turn's input now).
    pub fn assign(plan: &TurnPlan) -> Vec<StoreWrite> {
        let put = |(key, item): &Queued| {
            let item = InboxItem {
                assigned: true,
                images: Vec::new(),
                ..item.clone()
            };
            inbox::put(key, &item)
        };
        plan.items.iter().map(put).collect()
    }

    /// At a steering point of `run_id`: the messages steered into it since.
    /// With `closing` and none waiting, later messages queue instead.
    pub fn take_steers(&mut self, run_id: &str, closing: bool) -> Vec<String> {
        match self.active.as_mut() {
            Some(a) if a.run_id == run_id && !a.aborted => {
                let texts: Vec<String> = a.steers.drain(..).collect();
                if texts.is_empty() && closing {
                    a.closing = true;
                }
                texts
            }
            _ => Vec::new(),
        }
    }

    /// Steers `text` into the active run (no inbox item: `sessions_send`'s
    /// steer, answered by the run). False when it cannot take one now.
    pub fn steer(&mut self, text: String) -> bool {
        if self.steerable().is_none() || !self.queue.is_empty() {
            return false;
        }
        if let Some(a) = self.active.as_mut() {
            a.steers.push_back(text);
        }
        true
    }

    /// Marks the active run aborted; its id, unless it was already.
    pub fn abort(&mut self) -> Option<RunId> {
        match self.active.as_mut() {
            Some(a) if !a.aborted => {
                a.aborted = true;
                Some(a.run_id.clone())
            }
            _ => None,
        }
    }

    /// The active run is over (ended, or its compaction done, or a reset).
    pub fn end(&mut self) -> Option<ActiveRun> {
        self.active.take()
    }

    /// A message found queued in the inbox at start.
    pub fn recover(&mut self, key: String, item: InboxItem) {
        self.seen.insert(&item.message_id, &item.run_id);
        self.queue.recover(key, item);
    }
}

#[path = "ending.rs"]
mod ending;
pub(super) use ending::{Ending, Reasoning, Resumed};

#[cfg(test)]
#[path = "state_tests.rs"]
mod tests;
