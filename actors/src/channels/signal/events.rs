//! `SignalEvents`: one Signal account's connection. It starts the account's
//! daemon when ferroclaw owns it (`daemon.rs`), then reads the daemon's
//! event stream from the stored mark (signal-cli replays what it keeps
//! after that id; an id it does not know, as after its restart, gets every
//! kept event and the ledger's dedupe keys drop the ones seen). Each
//! message is recorded, the mark moved past its event, and the batch
//! flushed before the messages go to the desk. A stream that ends, fails
//! or falls silent is opened again (1 s doubling to 30 s).

use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;

use super::config::SignalAccount;
use super::daemon::SignalDaemon;
use super::envelope::{parse, SigEvent};
use super::inbound::{record, Received};
use super::stream::{self, StreamEvent, Streamed};
use crate::channels::desk::DeskLink;
use crate::channels::dispatch::Incoming;
use crate::channels::flushes::Flushes;
use crate::channels::health::AccountHealth;
use crate::channels::ledger;
use crate::channels::messages::StopAccount;
use crate::store::Store;

const CHANNEL: &str = "signal";
const MAX_BACKOFF_MS: u64 = 30_000;

pub struct SignalEvents {
    cfg: Arc<SignalAccount>,
    rpc: super::api::SignalRpc,
    store: Store,
    desk: DeskLink,
    health: Arc<AccountHealth>,
    daemon: Option<Addr<SignalDaemon>>,
    flushes: Flushes<Incoming>,
    generation: u64,
    /// The stream task running (cancelled when it is replaced).
    reading: Option<SpawnHandle>,
    backoff_ms: u64,
    span: tracing::Span,
}

impl SignalEvents {
    pub fn new(
        cfg: Arc<SignalAccount>,
        rpc: super::api::SignalRpc,
        store: Store,
        desk: DeskLink,
        health: Arc<AccountHealth>,
    ) -> SignalEvents {
        SignalEvents {
            span: tracing::info_span!("channel", channel = CHANNEL, account = %cfg.account_id),
            cfg,
            rpc,
            store,
            desk,
            health,
            daemon: None,
            flushes: Flushes::default(),
            generation: 0,
            reading: None,
            backoff_ms: 0,
        }
    }

    fn connect(&mut self, ctx: &mut Context<Self>) {
        self.generation += 1;
        let last = match ledger::mark(&self.store, CHANNEL, &self.cfg.account_id) {
            Ok(m) => m.unwrap_or_else(|| "0".into()),
            Err(e) => {
                tracing::error!(parent: &self.span, error = %e, "cannot read the signal event mark");
                return self.reconnect_later(ctx);
            }
        };
        let task = stream::run(
            self.rpc.http().clone(),
            self.rpc.events_url(&self.cfg.number),
            last,
            Duration::from_secs(self.cfg.request_timeout_s),
            self.generation,
            ctx.address().recipient(),
        );
        self.reading = Some(ctx.spawn(task.into_actor(self)));
    }

    fn reconnect_later(&mut self, ctx: &mut Context<Self>) {
        self.generation += 1;
        if let Some(h) = self.reading.take() {
            ctx.cancel_future(h);
        }
        self.backoff_ms = (self.backoff_ms * 2).clamp(1000, MAX_BACKOFF_MS);
        ctx.run_later(Duration::from_millis(self.backoff_ms), |act, ctx| {
            act.health.reconnected();
            act.connect(ctx)
        });
    }

    /// One `receive` event: recorded with the mark past it (flushed with
    /// the next flush), the new message queued for the desk.
    fn on_event(&mut self, id: Option<String>, data: &str, ctx: &mut Context<Self>) {
        let got = match parse(data, &self.cfg.number) {
            Ok(SigEvent::Message(m)) => {
                let now = crate::now_ms();
                match record(&self.store, &self.cfg, &m, now) {
                    Ok(r) => Some((r, m)),
                    Err(e) => {
                        tracing::error!(parent: &self.span, error = %e, "cannot record a signal message: reading the stream again from the stored mark");
                        self.health
                            .error(Some(format!("cannot record a message: {e}")));
                        return self.reconnect_later(ctx);
                    }
                }
            }
            Ok(SigEvent::Skip(why)) => {
                tracing::debug!(parent: &self.span, why, "signal event skipped");
                None
            }
            Err(e) => {
                tracing::warn!(parent: &self.span, error = %e, "malformed signal event skipped");
                None
            }
        };
        if let Some(id) = id {
            if let Err(e) = ledger::put_mark(&self.store, CHANNEL, &self.cfg.account_id, &id) {
                tracing::warn!(parent: &self.span, error = %e, "cannot store the signal event mark");
            }
        }
        match got {
            Some((Received::New(inc), _)) => {
                self.flushes.push(*inc);
                crate::channels::receiver::flush_waiting(self, ctx);
            }
            Some((Received::Replay, m)) => {
                self.health
                    .replays
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                tracing::info!(parent: &self.span, ts = m.timestamp, "signal message seen before: not run again");
            }
            Some((Received::Skipped(why), _)) => {
                tracing::debug!(parent: &self.span, why, "signal message skipped")
            }
            None => {}
        }
    }
}

impl crate::channels::receiver::Receiver for SignalEvents {
    fn store(&self) -> Store {
        self.store.clone()
    }
    fn desk(&self) -> &DeskLink {
        &self.desk
    }
    fn flushes(&mut self) -> &mut Flushes<Incoming> {
        &mut self.flushes
    }
    fn span(&self) -> &tracing::Span {
        &self.span
    }
}

impl Actor for SignalEvents {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        if let Some(m) = &self.cfg.managed {
            let daemon = SignalDaemon::new(
                self.cfg.account_id.clone(),
                self.cfg.number.clone(),
                m.clone(),
                self.rpc.clone(),
                self.health.clone(),
            );
            self.daemon = Some(daemon.start());
        }
        self.connect(ctx);
    }

    fn stopped(&mut self, _: &mut Context<Self>) {
        if let Some(d) = self.daemon.take() {
            d.do_send(StopAccount);
        }
    }
}

impl Handler<Streamed> for SignalEvents {
    type Result = ();
    fn handle(&mut self, msg: Streamed, ctx: &mut Context<Self>) {
        if msg.generation != self.generation {
            return;
        }
        let now = crate::now_ms();
        match msg.event {
            StreamEvent::Opened => {
                self.backoff_ms = 0;
                self.health.alive(now);
                tracing::info!(parent: &self.span, "signal event stream open");
            }
            StreamEvent::Alive => self.health.alive(now),
            StreamEvent::Event { id, kind, data } => {
                self.health.alive(now);
                if matches!(kind.as_deref(), None | Some("receive")) {
                    self.on_event(id, &data, ctx);
                }
            }
            StreamEvent::Garbage(what) => {
                tracing::warn!(parent: &self.span, what, "signal event stream: skipped bytes that are not an event");
            }
            StreamEvent::Closed(why) => {
                tracing::warn!(parent: &self.span, error = %why, "signal event stream closed");
                self.health.error(Some(why));
                self.reconnect_later(ctx);
            }
        }
    }
}

impl Handler<StopAccount> for SignalEvents {
    type Result = ();
    fn handle(&mut self, _: StopAccount, ctx: &mut Context<Self>) {
        ctx.stop();
    }
}
