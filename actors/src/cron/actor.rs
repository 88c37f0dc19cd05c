//! The scheduler: every job in memory with its parsed schedule and next
//! run, one timer for the earliest, and the runs in flight.
//!
//! - At start: runs a stop caught `running` are recorded as interrupted
//!   (and run again only with `cron.retryInterrupted`); runs caught
//!   `delivering` finish their delivery; each enabled job whose slots fell
//!   in the stop runs once for the latest of them (`runMissedJobs`,
//!   default true), never more.
//! - A slot is claimed (the job's `lastSlotMs` and the run record, one
//!   transaction, flushed) before its run starts.
//! - Reading (`cron.list`, `cron.get`, `cron.status`, `cron.runs`) changes
//!   nothing: next runs are computed when a job changes or runs.

use std::collections::{BTreeSet, HashMap};
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use futures_util::FutureExt;

use super::clock::Clock;
use super::job::{CronJob, JobView};
use super::messages::*;
use super::record::{self, Phase, RunEntry};
use super::schedule::Schedule;
use crate::store::Store;

/// The longest the timer sleeps before looking again (a system clock that
/// jumps is noticed within it).
const MAX_SLEEP: Duration = Duration::from_secs(30);

/// What the scheduler is told at start.
#[derive(Debug, Clone)]
pub struct CronConfig {
    /// `cron.enabled`: false keeps jobs manageable but runs none by itself.
    pub enabled: bool,
    /// `cron.runMissedJobs`: a job whose slots fell in a stop runs once.
    pub run_missed: bool,
    /// `cron.retryInterrupted`: a run a stop cut short runs again once.
    pub retry_interrupted: bool,
    pub default_agent: String,
}

pub(super) struct Slot {
    pub job: CronJob,
    pub schedule: Schedule,
    pub next: Option<u64>,
}

pub struct CronActor {
    /// The actor's span, entered by its handlers.
    pub(super) span: tracing::Span,
    pub(super) store: Store,
    pub(super) clock: Arc<dyn Clock>,
    runner: Arc<dyn Runner>,
    events: Option<Recipient<CronEvent>>,
    pub(super) config: CronConfig,
    pub(super) jobs: HashMap<String, Slot>,
    due: BTreeSet<(u64, String)>,
    /// job id -> the store key of its run in flight.
    pub(super) running: HashMap<String, String>,
    timer: Option<SpawnHandle>,
    /// Changes with every job definition change (`snapshotRevision`).
    pub(super) revision: String,
    generation: u64,
}

impl CronActor {
    pub fn new(
        store: Store,
        clock: Arc<dyn Clock>,
        runner: Arc<dyn Runner>,
        config: CronConfig,
    ) -> CronActor {
        CronActor {
            span: tracing::info_span!("cron"),
            store,
            clock,
            runner,
            events: None,
            config,
            jobs: HashMap::new(),
            due: BTreeSet::new(),
            running: HashMap::new(),
            timer: None,
            revision: String::new(),
            generation: 0,
        }
    }

    pub fn with_events(mut self, events: Recipient<CronEvent>) -> CronActor {
        self.events = Some(events);
        self
    }

    pub(super) fn bump_revision(&mut self) {
        self.generation += 1;
        self.revision = format!("{}-{}", ulid::Ulid::generate(), self.generation);
    }

    pub(super) fn emit(&self, event: CronEvent) {
        if let Some(e) = &self.events {
            e.do_send(event);
        }
    }

    /// Puts a job in memory with its next run (after `now`, or after the
    /// slot it just claimed, whichever is later).
    pub(super) fn place(&mut self, job: CronJob, schedule: Schedule, after: u64) {
        if let Some(old) = self.jobs.remove(&job.id) {
            if let Some(n) = old.next {
                self.due.remove(&(n, job.id.clone()));
            }
        }
        let next = match job.enabled {
            true => schedule.next_after(after, &job.id, job.created_at_ms),
            false => None,
        };
        if let Some(n) = next {
            self.due.insert((n, job.id.clone()));
        }
        self.jobs.insert(
            job.id.clone(),
            Slot {
                job,
                schedule,
                next,
            },
        );
    }

    pub(super) fn unplace(&mut self, id: &str) -> Option<Slot> {
        let old = self.jobs.remove(id)?;
        if let Some(n) = old.next {
            self.due.remove(&(n, id.to_string()));
        }
        Some(old)
    }

    pub(super) fn next_wake(&self) -> Option<u64> {
        self.due.first().map(|(at, _)| *at)
    }

    pub(super) fn arm(&mut self, ctx: &mut Context<Self>) {
        if let Some(h) = self.timer.take() {
            ctx.cancel_future(h);
        }
        if !self.config.enabled {
            return;
        }
        let Some(at) = self.next_wake() else {
            return;
        };
        let wait = Duration::from_millis(at.saturating_sub(self.clock.now_ms())).min(MAX_SLEEP);
        self.timer = Some(ctx.run_later(wait, |act, ctx| {
            act.timer = None;
            act.fire_due(ctx);
        }));
    }

    /// Starts every slot due by now (claimed one by one, flushed once for
    /// all), then sleeps until the next.
    pub(super) fn fire_due(&mut self, ctx: &mut Context<Self>) {
        let mut slots = Vec::new();
        if self.config.enabled {
            let now = self.clock.now_ms();
            while let Some((at, id)) = self.due.first().cloned() {
                if at > now {
                    break;
                }
                self.due.remove(&(at, id.clone()));
                let Some(s) = self.jobs.get_mut(&id) else {
                    continue;
                };
                s.next = None;
                // Late (a suspended machine, a jumped clock): the latest
                // slot due, once, as after a stop.
                let latest = s
                    .schedule
                    .latest_at_or_before(now, &id, s.job.created_at_ms)
                    .map_or(at, |l| l.max(at));
                slots.push((id, latest));
            }
        }
        let orders = self.claim(slots);
        self.launch(orders, ctx);
        self.arm(ctx);
    }

    /// Claims slots (`(job id, slot)`): every job's `lastSlotMs` and run
    /// record in one transaction (not yet flushed). The orders to run; a
    /// job still running from before skips its slot (recorded skipped).
    pub(super) fn claim(&mut self, slots: Vec<(String, u64)>) -> Vec<Order> {
        let now = self.clock.now_ms();
        let mut writes = Vec::with_capacity(slots.len() * 2);
        let mut orders = Vec::with_capacity(slots.len());
        for (id, slot) in slots {
            let Some(s) = self.jobs.get(&id) else {
                continue;
            };
            let mut job = s.job.clone();
            let schedule = s.schedule.clone();
            job.state.last_slot_ms = Some(slot);
            let run_id = format!("cron:{id}:{slot}");
            let mut entry = RunEntry::start(&id, &run_id, slot, now, false);
            let key = record::new_key(&id);
            let busy = self.running.contains_key(&id);
            if busy {
                entry.phase = Phase::Finished;
                entry.status = Some("skipped".into());
                entry.error = Some("the previous run is still running".into());
                entry.ended_at_ms = Some(now);
            } else {
                job.state.running_at_ms = Some(now);
            }
            match record::writes(&job, &key, &entry) {
                Ok(w) => writes.extend(w),
                Err(e) => tracing::error!(job = %id, error = %e, "cannot encode a cron run"),
            }
            self.place(job.clone(), schedule, slot.max(now));
            if !busy {
                orders.push(Order { job, key, entry });
            }
        }
        if let Err(e) = self.store.commit(&writes) {
            tracing::error!(error = %e, runs = orders.len(), "cannot record cron runs; their slots are not run");
            return Vec::new();
        }
        orders
    }

    /// Runs orders whose records are written: one flush for them all,
    /// then each on the runner, each ending with `RunEnded` back here.
    pub(super) fn launch(&mut self, orders: Vec<Order>, ctx: &mut Context<Self>) {
        if orders.is_empty() {
            return;
        }
        for order in &orders {
            self.running.insert(order.job.id.clone(), order.key.clone());
            self.emit(CronEvent::Started {
                job_id: order.job.id.clone(),
                run_id: order.entry.run_id.clone(),
                run_at_ms: order.entry.run_at_ms,
                job: self.view_of(&order.job.id).map(Box::new),
            });
        }
        let store = self.store.clone();
        let runner = self.runner.clone();
        let me = ctx.address();
        actix::spawn(async move {
            let flushed = store.flush().await;
            for order in orders {
                let (runner, me) = (runner.clone(), me.clone());
                let failed = flushed
                    .as_ref()
                    .err()
                    .map(|e| format!("cannot record the run: {e}"));
                actix::spawn(async move {
                    let outcome = match failed {
                        // A runner that panics fails its run; the job goes on.
                        None => AssertUnwindSafe(runner.run(order.clone()))
                            .catch_unwind()
                            .await
                            .unwrap_or_else(|_| Outcome::failed("the run panicked")),
                        Some(e) => Outcome::failed(e),
                    };
                    me.do_send(RunEnded { order, outcome });
                });
            }
        });
    }

    pub(super) fn view_of(&self, id: &str) -> Option<JobView> {
        self.jobs.get(id).map(|s| JobView {
            job: s.job.clone(),
            next_run_ms: s.next,
            effective_agent: None,
        })
    }

    /// Records how a run ended, on the run and on its job.
    fn finish(&mut self, order: Order, outcome: Outcome) {
        let now = self.clock.now_ms();
        let id = order.job.id.clone();
        if self.running.get(&id) == Some(&order.key) {
            self.running.remove(&id);
        }
        let mut entry = finished(order.entry, &outcome, now);
        let Some(slot) = self.jobs.get(&id) else {
            // Removed meanwhile, with its runs: nothing to record.
            return;
        };
        entry.next_run_at_ms = slot.next;
        let mut job = slot.job.clone();
        let schedule = slot.schedule.clone();
        settle(&mut job.state, entry.run_at_ms, &outcome, now);
        let one_shot = matches!(schedule, Schedule::At { .. }) && !entry.manual;
        let delete = one_shot && outcome.status == "ok" && job.delete_after_run != Some(false);
        if one_shot && !delete {
            job.enabled = false;
        }
        let saved = match delete {
            true => record::save_run(&self.store, &order.key, &entry).and_then(|()| {
                self.store
                    .remove(crate::store::Tree::CronJobs, &id)
                    .map(|_| ())
            }),
            false => record::write(&self.store, &job, &order.key, &entry),
        };
        if let Err(e) = saved {
            tracing::error!(job = %id, error = %e, "cannot record how a cron run ended");
        }
        if let Err(e) = record::prune(&self.store, &id) {
            tracing::warn!(job = %id, error = %e, "cannot prune old cron runs");
        }
        self.emit(CronEvent::Finished {
            job_name: job.name.clone(),
            job: Box::new(JobView {
                job: job.clone(),
                next_run_ms: None,
                effective_agent: None,
            }),
            entry: Box::new(entry),
        });
        if delete {
            self.unplace(&id);
            self.bump_revision();
            self.emit(CronEvent::Removed { job_id: id });
        } else {
            self.place(job, schedule, now);
        }
    }

    /// At start: unfinished runs first, then the catch-up, then the timer.
    fn recover(&mut self, ctx: &mut Context<Self>) {
        let now = self.clock.now_ms();
        let jobs = match record::load_jobs(&self.store) {
            Ok(j) => j,
            Err(e) => {
                tracing::error!(error = %e, "cannot load cron jobs; the scheduler runs none");
                return;
            }
        };
        for job in jobs {
            match Schedule::parse(&job.schedule()) {
                Ok(s) => self.place(job, s, now),
                Err(e) => tracing::error!(job = %job.id, error = %e, "stored cron job unreadable"),
            }
        }
        let mut retry = Vec::new();
        let open = record::unfinished(&self.store, self.jobs.values().map(|s| &s.job));
        for (key, mut entry) in open.unwrap_or_default() {
            let Some(slot) = self.jobs.get(&entry.job_id) else {
                continue;
            };
            let job = slot.job.clone();
            match (entry.phase, entry.reply.take(), entry.target.take()) {
                (Phase::Delivering, Some(reply), Some(target)) => {
                    let order = Order { job, key, entry };
                    self.redeliver(order, reply, target, ctx);
                }
                _ => {
                    tracing::warn!(job = %entry.job_id, run = %entry.run_id, "cron run interrupted by a stop; recorded, not repeated");
                    let outcome =
                        Outcome::failed("interrupted: the gateway stopped during the run");
                    entry.interrupted = true;
                    if self.config.retry_interrupted && !entry.manual {
                        retry.push((entry.job_id.clone(), entry.scheduled_at_ms));
                    }
                    self.finish(Order { job, key, entry }, outcome);
                }
            }
        }
        if self.config.enabled {
            for (id, slot) in retry {
                self.retry_slot(&id, slot, ctx);
            }
            self.catch_up(now, ctx);
        }
        self.arm(ctx);
    }

    fn catch_up(&mut self, now: u64, ctx: &mut Context<Self>) {
        let mut missed: Vec<(String, u64)> = self
            .jobs
            .values()
            .filter(|s| s.job.enabled && !self.running.contains_key(&s.job.id))
            .filter_map(|s| {
                let j = &s.job;
                s.schedule
                    .catch_up(
                        j.state.last_slot_ms,
                        now,
                        &j.id,
                        j.created_at_ms,
                        self.config.run_missed,
                    )
                    .map(|slot| (j.id.clone(), slot))
            })
            .collect();
        missed.sort_by_key(|(_, slot)| *slot);
        for (id, slot) in &missed {
            tracing::info!(job = %id, slot, "cron job missed during a stop: run once now");
        }
        let orders = self.claim(missed);
        self.launch(orders, ctx);
    }

    fn retry_slot(&mut self, id: &str, slot: u64, ctx: &mut Context<Self>) {
        let Some(s) = self.jobs.get(id) else {
            return;
        };
        let now = self.clock.now_ms();
        let mut job = s.job.clone();
        job.state.running_at_ms = Some(now);
        let run_id = format!("cron:{id}:{slot}:retry");
        let entry = RunEntry::start(id, &run_id, slot, now, false);
        let key = record::new_key(id);
        if record::write(&self.store, &job, &key, &entry).is_ok() {
            if let Some(s) = self.jobs.get_mut(id) {
                s.job = job.clone();
            }
            self.launch(vec![Order { job, key, entry }], ctx);
        }
    }

    fn redeliver(
        &mut self,
        order: Order,
        reply: String,
        target: super::job::Target,
        ctx: &mut Context<Self>,
    ) {
        self.running.insert(order.job.id.clone(), order.key.clone());
        let runner = self.runner.clone();
        let me = ctx.address();
        actix::spawn(async move {
            let outcome = runner.redeliver(order.clone(), reply, target).await;
            me.do_send(RunEnded { order, outcome });
        });
    }
}

impl Actor for CronActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        self.bump_revision();
        self.recover(ctx);
        tracing::info!(
            jobs = self.jobs.len(),
            enabled = self.config.enabled,
            next_wake_ms = ?self.next_wake(),
            "cron: started"
        );
    }
}

impl Handler<Tick> for CronActor {
    type Result = ();
    fn handle(&mut self, _: Tick, ctx: &mut Context<Self>) {
        let _span = self.span.clone().entered();
        self.fire_due(ctx);
    }
}

impl Handler<RunEnded> for CronActor {
    type Result = ();
    fn handle(&mut self, msg: RunEnded, ctx: &mut Context<Self>) {
        let _span = self.span.clone().entered();
        self.finish(msg.order, msg.outcome);
        self.arm(ctx);
    }
}

/// A run's record once it ended with `outcome` at `now`.
fn finished(mut entry: RunEntry, outcome: &Outcome, now: u64) -> RunEntry {
    entry.phase = Phase::Finished;
    entry.reply = None;
    entry.target = None;
    entry.status = Some(outcome.status.clone());
    entry.error = outcome.error.clone();
    entry.summary = outcome.summary.clone();
    entry.session_key = outcome.session_key.clone();
    entry.delivered = outcome.delivered;
    entry.delivery_status = outcome.delivery_status.clone();
    entry.delivery_error = outcome.delivery_error.clone();
    entry.delivery_suppression_reason = outcome.suppression.clone();
    entry.ended_at_ms = Some(now);
    entry
}

/// A job's state after its run (started at `run_at`) ended with `outcome`.
fn settle(st: &mut crate::cron::job::JobState, run_at: u64, outcome: &Outcome, now: u64) {
    st.running_at_ms = None;
    st.last_run_at_ms = Some(run_at);
    st.last_run_status = Some(outcome.status.clone());
    st.last_error = outcome.error.clone();
    st.last_duration_ms = Some(now.saturating_sub(run_at));
    st.consecutive_errors = match outcome.status.as_str() {
        "error" => st.consecutive_errors + 1,
        _ => 0,
    };
    st.last_delivered = outcome.delivered;
    st.last_delivery_status = outcome.delivery_status.clone();
    st.last_delivery_error = outcome.delivery_error.clone();
}
