//! `agent.wait` in the bridge: waiting for the end of any run id a client
//! was given (a message's id resolves to the run that answered it).
//! Waiters are bounded in all and per connection and removed the moment
//! their caller gives up (`Waiting` dropped: timeout, connection gone); an
//! id that is neither live nor in the `runs` tree keeps nothing here.

use std::time::Duration;

use actix::prelude::*;
use ferroclaw_actors::ids::ConnId;
use ferroclaw_actors::metrics::Metrics;
use ferroclaw_actors::runs::RunRecord;
use tokio::sync::oneshot;

use super::{live_run, stored_result, ChatBridge, RunResult};

/// The longest `agent.wait` (24 h); longer `timeoutMs` values are clamped.
pub const WAIT_MAX: Duration = Duration::from_secs(24 * 60 * 60);
/// Waiters kept at once, in all and per connection.
pub const MAX_WAITERS: usize = 10_000;
pub const MAX_WAITERS_PER_CONN: usize = 256;

/// Waits for the end of run `run_id` (or of the run that answers the
/// message with that id). Reply at once: the result, a ticket to wait on,
/// or why there is nothing to wait for.
#[derive(Debug, Message)]
#[rtype(result = "WaitTicket")]
pub struct WaitRun {
    pub run_id: String,
    /// The connection waiting (bounded per connection); None for HTTP.
    pub conn: Option<ConnId>,
}

/// The answer to `WaitRun`.
#[derive(Debug)]
pub enum WaitTicket {
    Done(RunResult),
    /// The run is live (or its end is on the way): wait on it.
    Waiting(Waiting),
    /// Neither live nor recorded: nothing is kept for it.
    Unknown,
    /// Too many waiters (per connection or in all); retry later.
    Busy,
}

/// A registered waiter. Dropping it (timeout, connection gone) removes the
/// waiter from the bridge at once.
#[derive(Debug)]
pub struct Waiting {
    /// The run waited for (an alias resolved).
    pub run_id: String,
    rx: Option<oneshot::Receiver<RunResult>>,
    cancel: Option<(Recipient<CancelWait>, u64)>,
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
        if let Some((bridge, id)) = self.cancel.take() {
            bridge.do_send(CancelWait {
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
        run_id: String,
    },
    /// Too many waiters; retry later.
    Busy,
    /// The bridge is gone (the gateway is stopping).
    Down,
}

/// Waits at most `limit` for the end of the run `id` stands for. An id
/// nobody knows keeps nothing in the bridge: the caller just sleeps out
/// its `limit`.
pub async fn wait_run(
    bridge: &Addr<ChatBridge>,
    id: &str,
    conn: Option<ConnId>,
    limit: Duration,
) -> Waited {
    let ticket = bridge
        .send(WaitRun {
            run_id: id.to_string(),
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
            Waited::TimedOut {
                run_id: id.to_string(),
            }
        }
        Ok(WaitTicket::Busy) => Waited::Busy,
        Err(_) => Waited::Down,
    }
}

/// A waiter gave up (timeout, or its connection closed).
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct CancelWait {
    run_id: String,
    waiter: u64,
}

pub(super) struct Waiter {
    id: u64,
    conn: Option<ConnId>,
    tx: oneshot::Sender<RunResult>,
}

impl ChatBridge {
    /// Answers every waiter of `run_id` with its result.
    pub(super) fn settle_waiters(&mut self, run_id: &str, result: &RunResult) {
        for w in self.take_waiters(run_id) {
            let _ = w.tx.send(result.clone());
        }
    }

    fn take_waiters(&mut self, run_id: &str) -> Vec<Waiter> {
        let ws = self.waiters.remove(run_id).unwrap_or_default();
        for w in &ws {
            self.forget_waiter(w.conn.as_ref());
        }
        ws
    }

    fn forget_waiter(&mut self, conn: Option<&ConnId>) {
        self.waiter_count = self.waiter_count.saturating_sub(1);
        self.metrics.waiters.store(
            self.waiter_count as i64,
            std::sync::atomic::Ordering::Relaxed,
        );
        if let Some(c) = conn {
            if let Some(n) = self.per_conn.get_mut(c) {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    self.per_conn.remove(c);
                }
            }
        }
    }

    /// Registers a waiter for `run_id` (bounded), or None when full.
    fn add_waiter(
        &mut self,
        run_id: &str,
        conn: Option<ConnId>,
        me: Recipient<CancelWait>,
    ) -> Option<Waiting> {
        if self.waiter_count >= MAX_WAITERS {
            // Waiters whose callers went away without a word.
            let mut gone = Vec::new();
            for ws in self.waiters.values_mut() {
                ws.retain(|w| {
                    let open = !w.tx.is_closed();
                    if !open {
                        gone.push(((), w.conn.clone()));
                    }
                    open
                });
            }
            self.waiters.retain(|_, ws| !ws.is_empty());
            for (_, conn) in gone {
                self.forget_waiter(conn.as_ref());
            }
        }
        let per_conn = conn
            .as_ref()
            .map_or(0, |c| self.per_conn.get(c).copied().unwrap_or(0));
        if self.waiter_count >= MAX_WAITERS || per_conn >= MAX_WAITERS_PER_CONN {
            Metrics::inc(&self.metrics.waits_refused);
            return None;
        }
        self.next_waiter += 1;
        let id = self.next_waiter;
        let (tx, rx) = oneshot::channel();
        if let Some(c) = &conn {
            *self.per_conn.entry(c.clone()).or_default() += 1;
        }
        self.waiter_count += 1;
        self.metrics.waiters.store(
            self.waiter_count as i64,
            std::sync::atomic::Ordering::Relaxed,
        );
        self.waiters
            .entry(run_id.to_string())
            .or_default()
            .push(Waiter { id, conn, tx });
        Some(Waiting {
            run_id: run_id.to_string(),
            rx: Some(rx),
            cancel: Some((me, id)),
        })
    }
}

/// How long a waiter for a run that ended in this process waits for the
/// run's events before it is answered from the run record (its result was
/// evicted from memory, or the events are late).
const STORE_FALLBACK: Duration = Duration::from_secs(1);

impl ChatBridge {
    /// The run an id stands for in the `runs` tree (a message's alias followed).
    fn run_record(&self, id: &str) -> Option<(String, RunRecord)> {
        ferroclaw_actors::runs::resolve(&self.store, id)
            .map_err(|e| tracing::warn!(run_id = %id, error = %e, "cannot read the run record"))
            .ok()
            .flatten()
    }

    /// Answers the remaining waiters of `run_id` from its run record.
    fn answer_from_store(&mut self, run_id: &str) {
        if !self.waiters.contains_key(run_id) {
            return;
        }
        if let Some((_, r)) = self.run_record(run_id).filter(|(_, r)| !r.is_pending()) {
            let result = stored_result(run_id, r);
            for w in self.take_waiters(run_id) {
                let _ = w.tx.send(result.clone());
            }
        }
    }
}

impl Handler<WaitRun> for ChatBridge {
    type Result = MessageResult<WaitRun>;
    fn handle(&mut self, msg: WaitRun, ctx: &mut Context<Self>) -> Self::Result {
        let run_id = self.aliases.get(&msg.run_id).cloned().unwrap_or(msg.run_id);
        if let Some(r) = self.results.get(&run_id) {
            return MessageResult(WaitTicket::Done(r.clone()));
        }
        let me = ctx.address().recipient();
        let live = self.runs.contains_key(&run_id) || live_run(&self.active, &run_id).is_some();
        if live {
            return MessageResult(match self.add_waiter(&run_id, msg.conn, me) {
                Some(w) => WaitTicket::Waiting(w),
                None => WaitTicket::Busy,
            });
        }
        let Some((run_id, r)) = self.run_record(&run_id) else {
            return MessageResult(WaitTicket::Unknown);
        };
        if let Some(r) = self.results.get(&run_id) {
            return MessageResult(WaitTicket::Done(r.clone()));
        }
        if !r.is_pending() && r.ended_at < self.started_at {
            // Ended before this process started: its events are not coming.
            return MessageResult(WaitTicket::Done(stored_result(&run_id, r)));
        }
        if !r.is_pending() {
            // The session writes the record before it forwards the run's
            // events, so a record from this process's lifetime may still
            // have its events (and reply text) on the way here.
            let id = run_id.clone();
            ctx.run_later(STORE_FALLBACK, move |act, _| act.answer_from_store(&id));
        }
        // Pending: its session settles it (it runs, or a restart marks it).
        MessageResult(match self.add_waiter(&run_id, msg.conn, me) {
            Some(w) => WaitTicket::Waiting(w),
            None => WaitTicket::Busy,
        })
    }
}

impl Handler<CancelWait> for ChatBridge {
    type Result = ();
    fn handle(&mut self, msg: CancelWait, _: &mut Context<Self>) {
        let Some(ws) = self.waiters.get_mut(&msg.run_id) else {
            return;
        };
        let Some(i) = ws.iter().position(|w| w.id == msg.waiter) else {
            return;
        };
        let w = ws.swap_remove(i);
        if ws.is_empty() {
            self.waiters.remove(&msg.run_id);
        }
        self.forget_waiter(w.conn.as_ref());
    }
}

/// How many `agent.wait` waiters the bridge holds. Reply: the count.
#[derive(Debug, Message)]
#[rtype(result = "usize")]
pub struct CountWaiters;

impl Handler<CountWaiters> for ChatBridge {
    type Result = usize;
    fn handle(&mut self, _: CountWaiters, _: &mut Context<Self>) -> usize {
        self.waiter_count
    }
}
