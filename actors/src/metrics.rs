//! Process-wide counters read by `/metrics`. Plain atomics: cheap on the hot
//! path, no locks. Mailbox depths are tracked by the senders and handlers of
//! the singleton actors (actix does not expose queue lengths).

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::Instant;

/// Sends to `addr` without waiting, counting the message into `gauge`
/// (the actor counts it out when it handles it).
pub fn counted_do_send<A, M>(addr: &actix::Addr<A>, gauge: &AtomicI64, msg: M)
where
    A: actix::Actor<Context = actix::Context<A>> + actix::Handler<M>,
    M: actix::Message + Send + 'static,
    M::Result: Send,
{
    gauge.fetch_add(1, Ordering::Relaxed);
    addr.do_send(msg);
}

/// Sends to `addr` and waits for the reply, counting the message into `gauge`.
pub async fn counted_send<A, M>(
    addr: &actix::Addr<A>,
    gauge: &AtomicI64,
    msg: M,
) -> Result<M::Result, actix::MailboxError>
where
    A: actix::Actor<Context = actix::Context<A>> + actix::Handler<M>,
    M: actix::Message + Send + 'static,
    M::Result: Send,
{
    gauge.fetch_add(1, Ordering::Relaxed);
    addr.send(msg).await
}

#[derive(Debug)]
pub struct Metrics {
    pub started: Instant,
    pub connections_open: AtomicI64,
    pub connections_total: AtomicU64,
    pub frames_in_req: AtomicU64,
    pub frames_in_invalid: AtomicU64,
    pub frames_out_res: AtomicU64,
    pub frames_out_event: AtomicU64,
    pub events_dropped_slow: AtomicU64,
    pub slow_consumer_closes: AtomicU64,
    pub auth_failures: AtomicU64,
    pub bus_mailbox: AtomicI64,
    pub presence_mailbox: AtomicI64,
    pub devices_mailbox: AtomicI64,
    pub idempotency_mailbox: AtomicI64,
    /// Session actors alive (idle ones stop after `sessionIdleSeconds`).
    pub sessions_live: AtomicI64,
    /// Runs started (each `RunActor`, restarts included).
    pub runs_started: AtomicU64,
    /// Failed runs started again from their last step (`runRestarts`).
    pub runs_restarted: AtomicU64,
    /// Context compactions (automatic, overflow and manual).
    pub compactions: AtomicU64,
    /// `agent.wait` waiters held, and waits refused at the bound.
    pub waiters: AtomicI64,
    pub waits_refused: AtomicU64,
    /// Audit records dropped because the ledger was behind.
    pub audit_dropped: AtomicU64,
    /// The store's writes and flushes (its own counters, shared).
    pub store: std::sync::Arc<crate::store::StoreStats>,
    /// Connections watching sessions (`sessions.subscribe`,
    /// `sessions.messages.subscribe`); at 0 sessions tell no one.
    pub session_watchers: AtomicI64,
    /// What happened to the process (`diagnostics.stability`).
    pub stability: crate::stability::Stability,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics {
            started: Instant::now(),
            connections_open: AtomicI64::new(0),
            connections_total: AtomicU64::new(0),
            frames_in_req: AtomicU64::new(0),
            frames_in_invalid: AtomicU64::new(0),
            frames_out_res: AtomicU64::new(0),
            frames_out_event: AtomicU64::new(0),
            events_dropped_slow: AtomicU64::new(0),
            slow_consumer_closes: AtomicU64::new(0),
            auth_failures: AtomicU64::new(0),
            bus_mailbox: AtomicI64::new(0),
            presence_mailbox: AtomicI64::new(0),
            devices_mailbox: AtomicI64::new(0),
            idempotency_mailbox: AtomicI64::new(0),
            sessions_live: AtomicI64::new(0),
            runs_started: AtomicU64::new(0),
            runs_restarted: AtomicU64::new(0),
            compactions: AtomicU64::new(0),
            waiters: AtomicI64::new(0),
            waits_refused: AtomicU64::new(0),
            audit_dropped: AtomicU64::new(0),
            store: Default::default(),
            session_watchers: AtomicI64::new(0),
            stability: Default::default(),
        }
    }
}

impl Metrics {
    pub fn inc(c: &AtomicU64) {
        c.fetch_add(1, Ordering::Relaxed);
    }
    pub fn uptime_ms(&self) -> u64 {
        self.started.elapsed().as_millis() as u64
    }
}
