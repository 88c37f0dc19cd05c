//! `SlackSocket`: one Slack app's Socket Mode connection (the account's
//! connection actor, under its `Desk`).
//!
//! Each WebSocket is a task numbered by a generation; its frames come here
//! tagged with it. The rules that keep Slack from losing or repeating
//! events (OpenClaw #128809, #122624, #17216):
//! - **One connection counts.** A new socket (from `apps.connections.open`)
//!   counts once its `hello` arrives; the old one is closed at that moment.
//!   At most one socket is being opened at a time, and at most one retry
//!   timer is pending: opening a socket cancels it.
//! - **`disconnect` reconnects first.** The next socket is opened while
//!   the old one still delivers; the old closes at the new one's `hello`.
//! - **Acknowledged once durable.** A message event is recorded in the
//!   ledger and flushed, then its envelope is acknowledged (Slack retries
//!   what is not acknowledged within 3 s; a retry finds the ledger key);
//!   envelopes go in order, one flush at a time, a failed flush retried
//!   (`channels::flushes`). Envelope ids seen in the last 10 minutes are
//!   acknowledged again once stored, without work; an envelope that could
//!   not be recorded is not acknowledged and not remembered as seen.
//! - **Zombies.** A ping goes out every `pingIntervalSeconds`; a socket that
//!   shows no frame for two intervals is degraded, closed and replaced.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use tokio::sync::mpsc;

use super::api::{BotIdentity, SlackError, WebApi};
use super::config::SlackAccount;
use super::dedupe::{Seen, DEFAULT_CAP, DEFAULT_TTL_MS};
use super::envelope::{parse_envelope, Callback, Envelope};
use super::inbound::{record, Received};
use crate::channels::desk::{Accepted, ConnectionFailed, DeskLink};
use crate::channels::dispatch::Incoming;
use crate::channels::flushes::Flushes;
use crate::channels::health::AccountHealth;
use crate::channels::messages::StopAccount;
use crate::channels::sender::Buckets;
use crate::channels::ws::{self, SocketEvent, Tagged, Ws};
use crate::store::Store;

const MAX_BACKOFF_MS: u64 = 60_000;
const MAX_FRAME: usize = 1 << 20;
/// A socket that held this long resets the backoff.
const STABLE_MS: u64 = 30_000;

struct Conn {
    tx: Option<mpsc::UnboundedSender<Ws>>,
    since_ms: u64,
    last_frame_ms: u64,
}

pub struct SlackSocket {
    cfg: Arc<SlackAccount>,
    api: WebApi,
    buckets: Buckets,
    store: Store,
    desk: DeskLink,
    health: Arc<AccountHealth>,
    bot: BotIdentity,
    seen: Seen,
    next_gen: u64,
    conns: HashMap<u64, Conn>,
    /// The socket that counts (said `hello`).
    current: Option<u64>,
    /// The socket being opened.
    opening: Option<u64>,
    retry: Option<SpawnHandle>,
    backoff_ms: u64,
    /// Envelopes (socket generation, id, the new message it brought)
    /// waiting for a flush before they are acknowledged and handed over.
    flushes: Flushes<(u64, String, Option<Incoming>)>,
    span: tracing::Span,
}

impl SlackSocket {
    pub fn new(
        cfg: Arc<SlackAccount>,
        api: WebApi,
        buckets: Buckets,
        store: Store,
        desk: DeskLink,
    ) -> SlackSocket {
        SlackSocket {
            span: tracing::info_span!("channel", channel = "slack", account = %cfg.account_id),
            health: buckets.health().clone(),
            cfg,
            api,
            buckets,
            store,
            desk,
            bot: BotIdentity::default(),
            seen: Seen::new(DEFAULT_TTL_MS, DEFAULT_CAP),
            flushes: Flushes::default(),
            next_gen: 1,
            conns: HashMap::new(),
            current: None,
            opening: None,
            retry: None,
            backoff_ms: 0,
        }
    }

    fn fail(&mut self, error: String, ctx: &mut Context<Self>) {
        self.desk.failed.do_send(ConnectionFailed { error });
        ctx.stop();
    }

    fn boot(&mut self, ctx: &mut Context<Self>) {
        let fut = super::who_am_i(self.api.clone(), self.buckets.clone());
        ctx.spawn(fut.into_actor(self).map(|res, act, ctx| match res {
            Ok(bot) => {
                tracing::info!(parent: &act.span, bot = %bot.user_id, team = %bot.team_id, "slack account connected");
                act.bot = bot;
                act.open(ctx);
            }
            Err(e) => act.fail(e.to_string(), ctx),
        }));
    }

    /// Opens the next socket, unless one is being opened.
    fn open(&mut self, ctx: &mut Context<Self>) {
        if self.opening.is_some() {
            return;
        }
        if let Some(h) = self.retry.take() {
            ctx.cancel_future(h);
        }
        let generation = self.next_gen;
        self.next_gen += 1;
        self.opening = Some(generation);
        let now = crate::now_ms();
        self.conns.insert(
            generation,
            Conn {
                tx: None,
                since_ms: now,
                last_frame_ms: now,
            },
        );
        let limit = Duration::from_secs(self.cfg.request_timeout_s);
        let (api, limiter) = (self.api.clone(), self.buckets.get("apps.connections.open"));
        let url = async move { limiter.call(true, || api.connections_open()).await };
        ctx.spawn(url.into_actor(self).map(move |url, act, ctx| match url {
            Ok(url) => {
                let to = ctx.address().recipient();
                actix::spawn(ws::run(url, limit, MAX_FRAME, generation, to));
            }
            Err(e) => {
                let error = format!("apps.connections.open: {e}");
                match e {
                    SlackError::Auth(_) => act.fail(error, ctx),
                    _ => act.closed(generation, error, ctx),
                }
            }
        }));
    }

    /// A retry after `backoff` (one timer at most; none while a socket is
    /// being opened).
    fn schedule_open(&mut self, ctx: &mut Context<Self>) {
        if self.opening.is_some() || self.retry.is_some() {
            return;
        }
        self.backoff_ms = (self.backoff_ms * 2).clamp(500, MAX_BACKOFF_MS);
        let wait = Duration::from_millis(self.backoff_ms);
        self.retry = Some(ctx.run_later(wait, |act, ctx| {
            act.retry = None;
            act.open(ctx);
        }));
    }

    /// Closes a socket (its task ends when its sender goes).
    fn close(&mut self, generation: u64) {
        if let Some(c) = self.conns.remove(&generation) {
            if let Some(tx) = c.tx {
                let _ = tx.send(Ws::Close(None));
            }
        }
    }

    fn send(&self, generation: u64, text: String) {
        let tx = self
            .conns
            .get(&generation)
            .or_else(|| self.current.and_then(|g| self.conns.get(&g)))
            .and_then(|c| c.tx.as_ref());
        if let Some(tx) = tx {
            let _ = tx.send(Ws::Text(text.into()));
        }
    }

    fn ack(&self, generation: u64, envelope_id: &str) {
        self.send(generation, super::envelope::ack(envelope_id));
    }

    fn on_event(
        &mut self,
        generation: u64,
        envelope_id: String,
        callback: Callback,
        ctx: &mut Context<Self>,
    ) {
        let now = crate::now_ms();
        if !self.seen.first(&format!("env:{envelope_id}"), now) {
            self.health
                .replays
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            tracing::info!(parent: &self.span, %envelope_id, "slack envelope delivered again: acknowledged once stored, not run again");
            self.flushes.push((generation, envelope_id, None));
            return self.flush_waiting(ctx);
        }
        let fresh = match callback {
            Callback::Message(m) => {
                match record(&self.store, &self.cfg.account_id, &self.bot, &m, now) {
                    Ok(Received::New(inc)) => Some(*inc),
                    Ok(Received::Replay) => {
                        self.health
                            .replays
                            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        tracing::info!(parent: &self.span, channel_id = %m.channel, ts = %m.ts, "slack message seen before: not run again");
                        None
                    }
                    Ok(Received::Skipped(why)) => {
                        tracing::debug!(parent: &self.span, why, "slack message skipped");
                        None
                    }
                    Err(e) => {
                        // Not acknowledged: Slack sends it again (and it is
                        // no longer taken for one seen).
                        tracing::error!(parent: &self.span, error = %e, "cannot record a slack message");
                        self.seen.forget(&format!("env:{envelope_id}"));
                        return;
                    }
                }
            }
            _ => None,
        };
        self.flushes.push((generation, envelope_id, fresh));
        self.flush_waiting(ctx);
    }

    /// What was said while no socket counted (`catch_up.rs`), handed over
    /// as one batch.
    fn catch_up(&mut self, ctx: &mut Context<Self>) {
        let (api, store) = (self.api.clone(), self.store.clone());
        let read = super::catch_up::read(api, store, self.cfg.account_id.clone(), self.bot.clone());
        ctx.spawn(read.into_actor(self).map(|fresh, act, _| {
            if !fresh.is_empty() {
                act.desk.accepted.do_send(Accepted { messages: fresh });
            }
        }));
    }

    /// Durable before acknowledged: flushes what waits (one flush at a
    /// time), then acknowledges those envelopes and hands their messages
    /// over in order; a failed flush is tried again after a backoff.
    fn flush_waiting(&mut self, ctx: &mut Context<Self>) {
        let Some(batch) = self.flushes.start() else {
            return;
        };
        let store = self.store.clone();
        ctx.spawn(async move { store.flush().await }.into_actor(self).map(
            move |flushed, act, ctx| {
                if let Err(e) = &flushed {
                    tracing::error!(parent: &act.span, error = %e, "cannot flush the slack ledger: trying again");
                }
                match act.flushes.finished(batch, flushed.is_ok()) {
                    Ok(batch) => {
                        let mut fresh = Vec::new();
                        for (generation, envelope_id, inc) in batch {
                            act.ack(generation, &envelope_id);
                            fresh.extend(inc);
                        }
                        if !fresh.is_empty() {
                            act.desk.accepted.do_send(Accepted { messages: fresh });
                        }
                        act.flush_waiting(ctx);
                    }
                    Err(wait) => {
                        ctx.run_later(wait, |act, ctx| act.flush_waiting(ctx));
                    }
                }
            },
        ));
    }

    /// Every ping interval: a ping on the socket that counts, or, when it
    /// has been silent for two intervals, its replacement. A socket that
    /// does not say `hello` in time is given up.
    fn check(&mut self, ctx: &mut Context<Self>) {
        let now = crate::now_ms();
        let window = self.cfg.ping_interval_ms * 2;
        if let Some(g) = self.opening {
            let hello_by = self.cfg.request_timeout_s * 1000 + window;
            if self
                .conns
                .get(&g)
                .is_some_and(|c| now.saturating_sub(c.since_ms) > hello_by)
            {
                tracing::warn!(parent: &self.span, generation = g, "slack socket did not say hello in time: given up");
                self.close(g);
                self.opening = None;
                self.schedule_open(ctx);
            }
        }
        let Some(g) = self.current else { return };
        let Some(c) = self.conns.get(&g) else { return };
        if now.saturating_sub(c.since_ms) > STABLE_MS {
            self.backoff_ms = 0; // it held: the next drop reconnects at once
        }
        if now.saturating_sub(c.last_frame_ms) > window {
            tracing::warn!(parent: &self.span, generation = g, silent_ms = now.saturating_sub(c.last_frame_ms),
                "slack socket silent past its heartbeat window: replaced");
            self.health.zombie();
            self.health.reconnected();
            self.close(g);
            self.current = None;
            self.open(ctx);
        } else if let Some(tx) = &c.tx {
            let _ = tx.send(Ws::Ping(Vec::new().into()));
        }
    }
}

impl Actor for SlackSocket {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        self.boot(ctx);
        let every = Duration::from_millis(self.cfg.ping_interval_ms);
        ctx.run_interval(every, |act, ctx| act.check(ctx));
    }

    fn stopped(&mut self, _: &mut Context<Self>) {
        let gens: Vec<u64> = self.conns.keys().copied().collect();
        for g in gens {
            self.close(g);
        }
    }
}

impl Handler<Tagged> for SlackSocket {
    type Result = ();
    fn handle(&mut self, msg: Tagged, ctx: &mut Context<Self>) {
        let g = msg.generation;
        match msg.event {
            SocketEvent::Opened(tx) => match self.conns.get_mut(&g) {
                Some(c) => {
                    c.tx = Some(tx);
                    c.last_frame_ms = crate::now_ms();
                }
                // Given up while it connected: it closes when `tx` goes.
                None => drop(tx),
            },
            SocketEvent::Frame(text) => self.frame(g, text, ctx),
            SocketEvent::Closed { error, .. } => self.closed(g, error, ctx),
        }
    }
}

impl SlackSocket {
    fn frame(&mut self, g: u64, text: Option<String>, ctx: &mut Context<Self>) {
        let now = crate::now_ms();
        let Some(c) = self.conns.get_mut(&g) else {
            return; // a socket already closed
        };
        c.last_frame_ms = now;
        self.health.alive(now);
        let Some(text) = text else { return };
        let envelope = match parse_envelope(&text) {
            Ok(e) => e,
            Err(e) => {
                tracing::warn!(parent: &self.span, error = %e, "malformed slack envelope ignored");
                return;
            }
        };
        match envelope {
            Envelope::Hello { num_connections } => {
                if self.opening == Some(g) || self.current.is_none() {
                    self.opening = self.opening.filter(|o| *o != g);
                    // A socket that replaces a live one (Slack's refresh) left no gap to read back.
                    let gap = self.current.is_none();
                    if let Some(old) = self.current.replace(g) {
                        if old != g {
                            self.close(old);
                        }
                    }
                    tracing::info!(parent: &self.span, generation = g, num_connections, "slack socket ready");
                    if gap {
                        self.catch_up(ctx);
                    }
                }
            }
            Envelope::Disconnect { reason } => {
                tracing::info!(parent: &self.span, generation = g, %reason, "slack asks to reconnect: opening the next socket first");
                if self.current == Some(g) {
                    self.health.reconnected();
                    self.open(ctx);
                }
            }
            Envelope::Event {
                envelope_id,
                callback,
                ..
            } => self.on_event(g, envelope_id, callback, ctx),
            Envelope::Other { envelope_id, kind } => {
                tracing::debug!(parent: &self.span, %kind, "slack envelope not handled");
                if let Some(id) = envelope_id {
                    self.ack(g, &id);
                }
            }
        }
    }

    /// Socket `g` ended, or could not be opened.
    fn closed(&mut self, g: u64, error: String, ctx: &mut Context<Self>) {
        let known = self.conns.remove(&g).is_some();
        if self.opening == Some(g) {
            self.opening = None;
            tracing::warn!(parent: &self.span, %error, "slack socket could not open");
            self.health.error(Some(error));
            self.schedule_open(ctx);
        } else if self.current == Some(g) {
            self.current = None;
            tracing::warn!(parent: &self.span, %error, "slack socket closed: reconnecting");
            self.health.reconnected();
            if self.backoff_ms == 0 {
                // The first drop after a stable socket reconnects at once;
                // a socket that keeps dropping backs off.
                self.backoff_ms = 250;
                self.open(ctx);
            } else {
                self.schedule_open(ctx);
            }
        } else if known {
            tracing::debug!(parent: &self.span, generation = g, "old slack socket closed");
        }
    }
}

impl Handler<StopAccount> for SlackSocket {
    type Result = ();
    fn handle(&mut self, _: StopAccount, ctx: &mut Context<Self>) {
        ctx.stop();
    }
}
