//! `SessionState` driven by random inputs, without an actor system: a
//! simulated store takes the writes, a simulated run ends when told (a
//! context overflow compacts and runs the turn again, a transient failure
//! restarts it), a run waits for its lane slot and a restart's backoff
//! (aborted or reset meanwhile), compactions hold the session busy (and
//! are cut by resets: `/compact`'s and `sessions.compact`'s too), and the process
//! crashes and recovers from the store alone; the invariants of
//! `state.rs` are checked after every step and once the session has
//! drained; with strangers among the senders, none of whose messages ever
//! steers a run or runs in a trusted turn. proptest prints the failing
//! case (and its seed under `proptest-regressions/`) so a failure replays.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use proptest::prelude::*;
use serde_json::Value;

use super::*;
use crate::ids::SessionKey;
use crate::provider::ProviderError;
use crate::provider::StopReason;
use crate::run::Outcome;
use crate::session::queue::{DropPolicy, QueueMode, QueueSettings};
use crate::session::recovery::Found;
use crate::session::RestartPolicy;
use crate::store::composite_key;

/// Counted ids: inbox keys in the order asked, like the gateway's.
struct Counter(u64);

impl Ids for Counter {
    fn inbox_key(&mut self, session: &str) -> String {
        self.0 += 1;
        composite_key(session, &format!("{:016x}", self.0))
    }
    fn run_id(&mut self) -> String {
        self.0 += 1;
        format!("copy{}", self.0)
    }
}

#[derive(Debug, Clone, Copy)]
enum End {
    Ok,
    /// A failure a retry may cure (the session restarts the run once).
    Transient,
    Fatal,
    /// The context overflowed; `room`: a compaction can make some.
    Overflow {
        room: bool,
    },
}

/// What follows a compaction (as `autocompact::Then`, without its channel).
#[derive(Debug, Clone, Copy)]
enum Then {
    /// The overflowed run goes on.
    Run,
    /// `/compact`'s run answers.
    Reply,
    /// `sessions.compact` is answered; its run is quiet.
    Report,
}

#[derive(Debug, Clone)]
enum Op {
    /// A new message, or (`repeat`) one already sent again.
    Send {
        repeat: Option<usize>,
        untrusted: bool,
    },
    /// The run reaches a steering point.
    SteeringPoint {
        closing: bool,
    },
    End(End),
    Abort,
    Cancel(usize),
    Tick(u64),
    Reset,
    /// `/compact` (`quiet`: `sessions.compact`): a compaction starts when
    /// the session is idle.
    Compact {
        quiet: bool,
    },
    /// The oldest wait is over (a lane slot granted, a backoff elapsed).
    Resume,
    /// The compaction in progress is done (and durable).
    CompactionDone,
    /// The process is killed and started again: only the store is left.
    Crash,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (proptest::option::weighted(0.2, 0usize..64), proptest::bool::weighted(0.2))
            .prop_map(|(repeat, untrusted)| Op::Send { repeat, untrusted }),
        2 => any::<bool>().prop_map(|closing| Op::SteeringPoint { closing }),
        3 => prop_oneof![
            Just(End::Ok),
            Just(End::Transient),
            Just(End::Fatal),
            any::<bool>().prop_map(|room| End::Overflow { room }),
        ]
        .prop_map(Op::End),
        1 => Just(Op::Abort),
        1 => (0usize..8).prop_map(Op::Cancel),
        2 => (0u64..80).prop_map(Op::Tick),
        1 => Just(Op::Reset),
        1 => any::<bool>().prop_map(|quiet| Op::Compact { quiet }),
        3 => Just(Op::Resume),
        2 => Just(Op::CompactionDone),
        1 => Just(Op::Crash),
    ]
}

fn settings() -> impl Strategy<Value = QueueSettings> {
    let mode = prop_oneof![
        Just(QueueMode::Steer),
        Just(QueueMode::Followup),
        Just(QueueMode::Collect),
        Just(QueueMode::SteerBacklog),
        Just(QueueMode::Interrupt),
    ];
    let drop = prop_oneof![
        Just(DropPolicy::Old),
        Just(DropPolicy::New),
        Just(DropPolicy::Summarize)
    ];
    (mode, drop, 1usize..5, 0u64..50).prop_map(|(mode, drop, cap, debounce)| QueueSettings {
        mode,
        debounce: Duration::from_millis(debounce),
        cap,
        drop,
    })
}

const RESTARTS: RestartPolicy = RestartPolicy {
    max: 1,
    backoff: Duration::ZERO,
};

/// The session as its actor would run it, with a map for a store.
struct Sim {
    state: SessionState,
    now: u64,
    ids: Counter,
    store: BTreeMap<(String, String), Value>,
    /// Every acknowledged message (backlog copies included): its run.
    acked: Vec<(String, String)>,
    ack_index: HashMap<String, usize>,
    /// Terminal events per run.
    ends: HashMap<String, u32>,
    /// Messages in the order they joined a running turn.
    started: Vec<String>,
    /// The run whose actor runs now.
    running: Option<String>,
    /// Runs waiting for a lane slot or a restart's backoff, oldest first
    /// (one a reset cut off still waits: its wait ends all the same).
    waiting: Vec<String>,
    /// When the scheduled queue check fires.
    check_at: Option<u64>,
    sent: u64,
    /// Compactions in progress, oldest first: their run, and what follows
    /// (one a reset cut off is still done some time).
    compacting: Vec<(String, Then)>,
    compactions: u64,
    /// Runs nobody waits for (`sessions.compact`'s): never announced.
    quiet: Vec<String>,
}

impl Sim {
    fn new(settings: QueueSettings) -> Sim {
        Sim {
            state: SessionState::new(
                &SessionKey::stored("agent:main:main"),
                SessionQueue::new(settings),
            ),
            now: 1_000,
            ids: Counter(0),
            store: BTreeMap::new(),
            acked: Vec::new(),
            ack_index: HashMap::new(),
            ends: HashMap::new(),
            started: Vec::new(),
            running: None,
            waiting: Vec::new(),
            check_at: None,
            sent: 0,
            compacting: Vec::new(),
            compactions: 0,
            quiet: Vec::new(),
        }
    }

    fn write(&mut self, writes: Vec<StoreWrite>) {
        for (tree, key, value) in writes {
            let k = (format!("{tree:?}"), key);
            match value {
                Some(v) => self.store.insert(k, v),
                None => self.store.remove(&k),
            };
        }
    }

    fn emit(&mut self, event: RunEvent) {
        match &event {
            RunEvent::Queued { run_id, message_id } if !self.ack_index.contains_key(message_id) => {
                self.ack_index.insert(message_id.clone(), self.acked.len());
                self.acked.push((message_id.clone(), run_id.to_string()));
            }
            RunEvent::Final { run_id, .. }
            | RunEvent::Failed { run_id, .. }
            | RunEvent::Aborted { run_id, .. } => {
                assert!(
                    !self.quiet.iter().any(|q| q == run_id.as_str()),
                    "quiet run {run_id} announced"
                );
                let n = self.ends.entry(run_id.to_string()).or_default();
                *n += 1;
                assert_eq!(*n, 1, "run {run_id} ended twice");
            }
            _ => {}
        }
    }

    fn apply(&mut self, effects: Vec<Effect>) {
        for effect in effects {
            match effect {
                Effect::Emit(e) => self.emit(e),
                Effect::Launch { run_id } => {
                    assert_eq!(self.running, None, "a second run launched");
                    assert!(self.state.holds(&run_id), "launched but not active");
                    self.waiting.push(run_id.to_string());
                }
                Effect::Abort => assert!(self.state.active().is_some_and(|a| a.aborted)),
                Effect::NextTurn => self.next_turn(),
            }
        }
    }

    fn next_turn(&mut self) {
        match self.state.next_turn(self.now) {
            Next::Begin(plan) => {
                let plan = *plan;
                let stranger = plan.items.iter().any(|(_, i)| i.overrides.untrusted);
                assert!(
                    !stranger || plan.overrides.untrusted,
                    "a turn holding a stranger's message runs as trusted"
                );
                self.write(SessionState::assign(&plan));
                self.started
                    .extend(plan.items.iter().map(|(_, i)| i.message_id.clone()));
                let keys = plan.items.into_iter().map(|(k, _)| k).collect();
                let launch = self
                    .state
                    .start(plan.run_id, plan.overrides, None, keys, self.now);
                self.apply(vec![launch]);
            }
            Next::Wait(d) => {
                assert_eq!(self.check_at, None, "a second queue check scheduled");
                self.check_at = Some(self.now + d.as_millis() as u64);
            }
            Next::Idle => {}
        }
    }

    fn send(&mut self, repeat: Option<usize>, untrusted: bool) {
        // Backlog copies are the gateway's, never a client's: not repeated.
        let theirs: Vec<&(String, String)> = self
            .acked
            .iter()
            .filter(|(m, _)| m.starts_with('m'))
            .collect();
        if let Some((id, run)) = repeat.and_then(|i| theirs.get(i % theirs.len().max(1))) {
            let (again, _) = self.state.duplicate(id).expect("a sent id is remembered");
            assert_eq!(&again, run, "a repeated id names the run of the first");
            return;
        }
        self.sent += 1;
        let message_id = format!("m{}", self.sent);
        let placement = self.state.placement(&message_id, untrusted);
        if placement == Placement::Refused {
            return;
        }
        let steers = matches!(
            placement,
            Placement::Steer { .. } | Placement::SteerAndBacklog { .. }
        );
        assert!(!(untrusted && steers), "a stranger's message steered a run");
        let joins_now = matches!(
            placement,
            Placement::Start | Placement::Steer { .. } | Placement::SteerAndBacklog { .. }
        );
        let m = Incoming {
            message_id: message_id.clone(),
            text: format!("text of {message_id}"),
            shown: None,
            images: Vec::new(),
            overrides: RunOverrides {
                untrusted,
                ..Default::default()
            },
            timeout_ms: None,
        };
        let mut admitted = self.state.admit(placement, m, self.now, &mut self.ids);
        self.write(std::mem::take(&mut admitted.writes));
        let (_, effects) = self.state.place(admitted, self.now);
        if joins_now {
            self.started.push(message_id);
        }
        self.apply(effects);
    }

    fn end(&mut self, how: End) {
        let Some(run_id) = self.running.clone() else {
            return;
        };
        let aborted = self.state.run(&run_id).is_some_and(|a| a.aborted);
        let event = match (aborted, how) {
            (true, _) => RunEvent::Aborted {
                run_id: run_id.clone().into(),
                text: String::new(),
            },
            (false, End::Ok) => RunEvent::Final {
                run_id: run_id.clone().into(),
                outcome: Outcome::Text("done".into()),
                stop_reason: StopReason::Stop,
                usage: Default::default(),
            },
            (false, End::Transient) => RunEvent::Failed {
                run_id: run_id.clone().into(),
                error: "overloaded".into(),
                kind: FailureKind::Provider(None),
            },
            (false, End::Fatal) => RunEvent::Failed {
                run_id: run_id.clone().into(),
                error: "timed out".into(),
                kind: FailureKind::Timeout,
            },
            (false, End::Overflow { .. }) => RunEvent::Failed {
                run_id: run_id.clone().into(),
                error: "prompt is too long".into(),
                kind: FailureKind::Provider(Some(ProviderError::ContextOverflow(
                    "prompt is too long".into(),
                ))),
            },
        };
        self.ended(event, how);
    }

    /// The running run ended with `event`: what the state says follows.
    fn ended(&mut self, event: RunEvent, how: End) {
        match self.state.ended(event, RESTARTS) {
            Ending::NotOurs(event) => self.emit(event),
            // Launched again from its last step once its backoff is over.
            Ending::Restart { .. } => {
                let run = self.running.take().expect("a running run restarts");
                self.waiting.push(run);
            }
            Ending::Compact(event) => {
                self.running = None;
                match how {
                    End::Overflow { room: true } => {
                        let run = self.state.compacting().expect("an active run compacts");
                        self.compacting.push((run.to_string(), Then::Run));
                    }
                    _ => {
                        self.state.no_room();
                        self.ended(event, how);
                    }
                }
            }
            Ending::Finish(event) => {
                if let RunEvent::Failed { error, .. } = &event {
                    if matches!(how, End::Overflow { .. }) {
                        assert!(error.contains("even after compaction"), "{error}");
                    }
                }
                self.finish(event);
            }
        }
    }

    /// The active run's end is recorded and announced; the next turn starts.
    fn finish(&mut self, event: RunEvent) {
        let writes = self.state.end_writes(&event, self.now);
        self.write(writes);
        self.emit(event);
        self.state.end();
        self.running = None;
        self.next_turn();
    }

    /// What a run waited for is over, as the actor does it: launched, or
    /// ended without a run (aborted meanwhile), or left alone (a reset cut
    /// it off and announced it).
    fn resume(&mut self, run: String) {
        match self.state.resume(&run) {
            Resumed::Go => {
                assert!(self.state.launched());
                assert_eq!(self.running, None, "a second run launched");
                self.running = Some(run);
            }
            Resumed::Aborted => self.finish(RunEvent::Aborted {
                run_id: run.into(),
                text: String::new(),
            }),
            Resumed::Gone => {}
        }
    }

    /// The oldest compaction is done: a `/compact` answers and frees the
    /// session, `sessions.compact` frees it, an overflow's run goes on as
    /// after any wait; a reset meanwhile made it nobody's.
    fn compaction_done(&mut self) {
        if self.compacting.is_empty() {
            return;
        }
        let (run, then) = self.compacting.remove(0);
        match then {
            Then::Run => return self.resume(run),
            Then::Reply if self.state.holds(&run) => self.emit(RunEvent::Final {
                run_id: run.clone().into(),
                outcome: Outcome::Text("compacted".into()),
                stop_reason: StopReason::Stop,
                usage: Default::default(),
            }),
            Then::Reply | Then::Report => {}
        }
        if self.state.compaction_over(&run) {
            self.next_turn();
        }
    }

    /// Killed: only the store is left. Started again, the session knows
    /// the ids its transcript names (every acknowledged message's), ends
    /// the runs the crash cut off and runs what was queued, in order.
    fn crash(&mut self) {
        let settings = self.state.queue.settings;
        let key = SessionKey::stored("agent:main:main");
        self.state = SessionState::new(&key, SessionQueue::new(settings));
        (self.running, self.check_at) = (None, None);
        self.waiting.clear();
        self.compacting.clear();
        for (message_id, run_id) in &self.acked {
            self.state.remember(message_id, run_id);
        }
        let items: Vec<(String, InboxItem)> = self
            .store
            .iter()
            .filter(|((tree, _), _)| tree == "Inbox")
            .map(|((_, k), v)| (k.clone(), serde_json::from_value(v.clone()).unwrap()))
            .collect();
        let mut found = Found::default();
        for run_id in found.sort_inbox(items) {
            let record = &self.store[&("Runs".to_string(), run_id.to_string())];
            if record["status"] == "pending" {
                found.interrupt(&key, run_id, self.now);
            }
        }
        self.write(std::mem::take(&mut found.writes));
        for event in std::mem::take(&mut found.events) {
            self.emit(event);
        }
        for (k, item) in found.queued {
            self.state.recover(k, item);
        }
        self.next_turn();
    }

    fn step(&mut self, op: Op) {
        match op {
            Op::Send { repeat, untrusted } => self.send(repeat, untrusted),
            Op::SteeringPoint { closing } => {
                if let Some(run) = self.running.clone() {
                    self.state.take_steers(&run, closing);
                }
            }
            Op::End(how) => self.end(how),
            Op::Compact { quiet } => {
                let run = format!("compact{}", self.compactions + 1);
                if self
                    .state
                    .start_compaction(run.clone().into(), quiet, self.now)
                {
                    self.compactions += 1;
                    assert!(self.state.compacting().is_some());
                    let then = if quiet { Then::Report } else { Then::Reply };
                    if quiet {
                        self.quiet.push(run.clone());
                    }
                    self.compacting.push((run, then));
                }
            }
            Op::Resume => {
                if !self.waiting.is_empty() {
                    let run = self.waiting.remove(0);
                    self.resume(run);
                }
            }
            Op::CompactionDone => self.compaction_done(),
            Op::Crash => self.crash(),
            Op::Abort => {
                self.state.abort();
            }
            Op::Cancel(i) => {
                let runs: Vec<String> = self.state.queue.run_ids().map(String::from).collect();
                if let Some(run) = runs.get(i % runs.len().max(1)).cloned() {
                    let (writes, event) = self.state.cancel_queued(&run, self.now).unwrap();
                    self.write(writes);
                    self.emit(event);
                }
            }
            Op::Tick(ms) => {
                self.now += ms;
                if self.check_at.is_some_and(|at| at <= self.now) {
                    self.check_at = None;
                    self.state.check_due();
                    self.next_turn();
                }
            }
            Op::Reset => {
                self.state.abort();
                let why = "reset";
                let (writes, events) = self.state.end_queued(why, false, self.now);
                self.write(writes);
                events.into_iter().for_each(|e| self.emit(e));
                // One not launched was announced above; a launched one's
                // own end arrives later and is passed on as is.
                if let Some(cut) = self.state.end().filter(|a| a.launched) {
                    self.running = None;
                    self.emit(RunEvent::Aborted {
                        run_id: cut.run_id,
                        text: String::new(),
                    });
                }
            }
        }
        assert!(
            self.running.is_none() || self.state.holds(self.running.as_deref().unwrap()),
            "the running run is the active one"
        );
        let live = |r: &&String| self.state.holds(r);
        let waits = self.waiting.iter().filter(live).count();
        let compactions = self.compacting.iter().map(|(r, _)| r).filter(live).count();
        assert!(
            waits + compactions + usize::from(self.running.is_some()) <= 1,
            "the active run waits, compacts or runs, once"
        );
    }

    /// Lets every run end and every debounce pass; the session must get
    /// idle (it always takes the next message).
    fn drain(&mut self) {
        for _ in 0..10_000 {
            if self.running.is_some() {
                self.end(End::Ok);
            } else if !self.waiting.is_empty() {
                self.step(Op::Resume);
            } else if !self.compacting.is_empty() {
                self.compaction_done();
            } else if let Some(at) = self.check_at {
                self.now = self.now.max(at);
                self.step(Op::Tick(0));
            } else {
                break;
            }
        }
        assert!(self.state.idle(), "stuck: {:?}", self.state);
    }

    fn check(&self) {
        for (message_id, run_id) in &self.acked {
            assert_eq!(
                self.ends.get(run_id),
                Some(&1),
                "message {message_id}: its run {run_id} did not end once"
            );
            let record = &self.store[&("Runs".to_string(), run_id.clone())];
            assert_ne!(record["status"], "pending", "run {run_id} left pending");
            if message_id != run_id {
                let alias = &self.store[&("Runs".to_string(), message_id.clone())];
                assert_eq!(alias["answeredBy"], run_id.as_str());
            }
        }
        let inbox: Vec<_> = self.store.keys().filter(|(t, _)| t == "Inbox").collect();
        assert!(inbox.is_empty(), "inbox items left: {inbox:?}");
        let order: Vec<usize> = self.started.iter().map(|m| self.ack_index[m]).collect();
        assert!(
            order.windows(2).all(|w| w[0] < w[1]),
            "messages started out of order: {:?}",
            self.started
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn every_acknowledged_message_runs_once_in_order_and_leaves_nothing_behind(
        settings in settings(),
        ops in proptest::collection::vec(op(), 1..80),
    ) {
        let mut sim = Sim::new(settings);
        for op in ops {
            sim.step(op);
        }
        sim.drain();
        sim.check();
    }
}

#[test]
fn a_failed_write_changes_nothing_until_the_message_is_placed() {
    let mut state = SessionState::new(
        &SessionKey::stored("agent:main:main"),
        SessionQueue::default(),
    );
    let m = Incoming {
        message_id: "m1".into(),
        text: "hi".into(),
        shown: None,
        images: Vec::new(),
        overrides: RunOverrides::default(),
        timeout_ms: None,
    };
    let placement = state.placement("m1", false);
    assert_eq!(placement, Placement::Start);
    let admitted = state.admit(placement, m, 5, &mut Counter(0));
    // Planned: an inbox item and a pending run record, nothing applied.
    assert_eq!(admitted.writes.len(), 2);
    assert!(state.idle() && state.duplicate("m1").is_none());
    let (status, effects) = state.place(admitted, 5);
    assert_eq!(status, SendStatus::Started);
    assert_eq!(
        effects.last(),
        Some(&Effect::Launch {
            run_id: "m1".into()
        })
    );
    assert_eq!(state.duplicate("m1"), Some(("m1".to_string(), true)));
}

#[test]
fn a_late_end_of_a_run_cut_off_by_a_reset_touches_nothing_of_the_next() {
    let mut sim = Sim::new(QueueSettings::default());
    sim.send(None, false);
    sim.step(Op::Resume);
    sim.step(Op::Reset);
    sim.send(None, false);
    sim.step(Op::Resume);
    let next = sim.running.clone().unwrap();
    let late = RunEvent::Aborted {
        run_id: "m1".into(),
        text: String::new(),
    };
    // Only the record of m1; the new run's inbox item stays.
    let writes = sim.state.end_writes(&late, sim.now);
    assert_eq!(writes.len(), 1);
    assert_eq!(writes[0].1, "m1");
    assert!(sim.state.holds(&next));
}
