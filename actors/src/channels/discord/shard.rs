//! `DiscordShard`: one bot's gateway connection (shard 0 of 1; the
//! account's connection actor, under its `Desk`). It performs what the
//! protocol state machine (`gateway::Shard`) decides: one socket at a
//! time, numbered by a generation (frames from an older socket are
//! dropped); heartbeats on their timer; a missed ack is a zombie (health
//! `degraded`), replaced by a socket that resumes the session, so the
//! events of the gap are replayed by Discord and deduplicated by the
//! ledger. A `MESSAGE_CREATE` is recorded and flushed before the desk
//! hands it over, with the session and the sequence past it: a restarted
//! process resumes that session, so Discord replays what came while it
//! was down; a session Discord no longer knows is identified anew, and
//! what came in that gap is read back from each channel's history
//! (`catch_up.rs`). Only this shard reconnects; a refused token
//! (`ConnectionFailed`) stops the account for the supervisor's backoff.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;

use super::api::{DiscordError, RestApi};
use super::config::DiscordAccount;
use super::gateway::{Action, Session, Shard};
use super::inbound::{record, Received};
use super::outlet::DiscordOutlet;
use crate::channels::desk::{ConnectionFailed, DeskLink};
use crate::channels::flushes::Flushes;
use crate::channels::health::AccountHealth;
use crate::channels::messages::StopAccount;
use crate::channels::sender::{random_unit, until_ready};
use crate::channels::ws::{self, SocketEvent, Tagged, Ws};
use crate::store::Store;

const MAX_BACKOFF_MS: u64 = 60_000;
const MAX_FRAME: usize = 4 << 20;
const STABLE_MS: u64 = 30_000;
/// Threads remembered (id -> parent) at most.
const MAX_THREADS: usize = 10_000;

/// The gateway session as stored (`channel_cursors`,
/// `discord/<account>/session`), so a restarted process resumes it and
/// Discord replays what it missed.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
struct Saved {
    session: Session,
    seq: u64,
}

fn session_key(account: &str) -> String {
    format!("discord/{account}/session")
}

pub struct DiscordShard {
    cfg: Arc<DiscordAccount>,
    rest: DiscordOutlet,
    store: Store,
    desk: DeskLink,
    health: Arc<AccountHealth>,
    proto: Shard,
    bot: String,
    gateway: String,
    threads: HashMap<String, String>,
    generation: u64,
    tx: Option<mpsc::UnboundedSender<Ws>>,
    opened_ms: u64,
    heartbeat: Option<SpawnHandle>,
    identify: Option<SpawnHandle>,
    retry: Option<SpawnHandle>,
    backoff_ms: u64,
    /// Recorded messages waiting for a flush before they go to the desk.
    flushes: Flushes<crate::channels::dispatch::Incoming>,
    /// While a catch-up reads history: the live messages recorded
    /// meanwhile, handed over after it.
    held: Option<Vec<crate::channels::dispatch::Incoming>>,
    span: tracing::Span,
}

impl DiscordShard {
    pub fn new(
        cfg: Arc<DiscordAccount>,
        rest: DiscordOutlet,
        store: Store,
        desk: DeskLink,
    ) -> DiscordShard {
        let mut proto = Shard::new(&cfg.token, cfg.intents);
        let key = session_key(&cfg.account_id);
        match store.get::<Saved>(crate::store::Tree::ChannelCursors, &key) {
            Ok(Some(saved)) => proto.restore(saved.session, saved.seq),
            Ok(None) => {}
            Err(e) => tracing::warn!(error = %e, "discord session not readable: identifying"),
        }
        DiscordShard {
            span: tracing::info_span!("channel", channel = "discord", account = %cfg.account_id),
            health: rest.buckets.health().clone(),
            proto,
            flushes: Flushes::default(),
            held: None,
            cfg,
            rest,
            store,
            desk,
            bot: String::new(),
            gateway: String::new(),
            threads: HashMap::new(),
            generation: 0,
            tx: None,
            opened_ms: 0,
            heartbeat: None,
            identify: None,
            retry: None,
            backoff_ms: 0,
        }
    }

    fn api(&self) -> RestApi {
        self.rest.api.clone()
    }

    fn fail(&mut self, error: String, ctx: &mut Context<Self>) {
        self.desk.failed.do_send(ConnectionFailed { error });
        ctx.stop();
    }

    /// The bot's id, then the gateway URL (the configured one first).
    fn boot(&mut self, ctx: &mut Context<Self>) {
        let (api, rest) = (self.api(), self.rest.clone());
        let configured = self.cfg.gateway_url.clone();
        let op = move || {
            let (api, rest, configured) = (api.clone(), rest.clone(), configured.clone());
            async move {
                let me = rest.call("GET /users/@me", true, || api.me()).await?;
                let url = match configured {
                    Some(u) => u,
                    None => {
                        rest.call("GET /gateway/bot", true, || api.gateway_url())
                            .await?
                    }
                };
                Ok::<_, DiscordError>((me, url))
            }
        };
        let refused = |e: &DiscordError| matches!(e, DiscordError::Auth(_));
        let fut = until_ready(self.health.clone(), op, refused);
        ctx.spawn(fut.into_actor(self).map(|res, act, ctx| match res {
            Ok((me, url)) => {
                tracing::info!(parent: &act.span, bot = %me, "discord account ready to connect");
                act.bot = me;
                act.gateway = url;
                act.connect(ctx);
            }
            Err(e) => act.fail(format!("the bot token was refused: {e}"), ctx),
        }));
    }

    fn cancel_timers(&mut self, ctx: &mut Context<Self>) {
        for h in [
            self.heartbeat.take(),
            self.identify.take(),
            self.retry.take(),
        ]
        .into_iter()
        .flatten()
        {
            ctx.cancel_future(h);
        }
    }

    /// Opens the next socket (closing the current one: one at a time).
    fn connect(&mut self, ctx: &mut Context<Self>) {
        self.cancel_timers(ctx);
        self.close_socket(4000);
        self.generation += 1;
        self.proto.connected();
        self.opened_ms = crate::now_ms();
        let url = self.proto.connect_url(&self.gateway);
        let generation = self.generation;
        let limit = Duration::from_secs(self.cfg.request_timeout_s);
        let to = ctx.address().recipient();
        actix::spawn(ws::run(url, limit, MAX_FRAME, generation, to));
    }

    /// Closes the socket with `code` (not 1000/1001, which would end the
    /// session Discord keeps for a resume).
    fn close_socket(&mut self, code: u16) {
        if let Some(tx) = self.tx.take() {
            let _ = tx.send(Ws::Close(Some(CloseFrame {
                code: CloseCode::from(code),
                reason: "reconnecting".into(),
            })));
        }
    }

    /// A reconnect: at once after a stable socket, else with backoff.
    fn reconnect_later(&mut self, resume: bool, ctx: &mut Context<Self>) {
        self.cancel_timers(ctx);
        self.close_socket(4000);
        self.generation += 1; // frames of the old socket are dropped from now on
        let lived = crate::now_ms().saturating_sub(self.opened_ms);
        if lived > STABLE_MS {
            self.backoff_ms = 0;
        }
        let wait = if !resume {
            // Discord asks for 1-5 s before identifying again.
            1000 + (random_unit() * 4000.0) as u64
        } else if self.backoff_ms == 0 {
            self.backoff_ms = 250;
            0
        } else {
            self.backoff_ms = (self.backoff_ms * 2).min(MAX_BACKOFF_MS);
            self.backoff_ms
        };
        self.retry = Some(ctx.run_later(Duration::from_millis(wait), |act, ctx| {
            act.retry = None;
            act.connect(ctx);
        }));
    }

    fn perform(&mut self, actions: Vec<Action>, ctx: &mut Context<Self>) {
        for a in actions {
            match a {
                Action::Send(v) => {
                    if let Some(tx) = &self.tx {
                        let _ = tx.send(Ws::Text(v.to_string().into()));
                    }
                }
                Action::HeartbeatIn(ms) => {
                    if let Some(h) = self.heartbeat.take() {
                        ctx.cancel_future(h);
                    }
                    self.heartbeat = Some(ctx.run_later(Duration::from_millis(ms), |act, ctx| {
                        act.heartbeat = None;
                        let next = act.proto.on_heartbeat_due();
                        act.perform(next, ctx);
                    }));
                }
                Action::IdentifyIn(ms) => {
                    if let Some(h) = self.identify.take() {
                        ctx.cancel_future(h);
                    }
                    self.identify = Some(ctx.run_later(Duration::from_millis(ms), |act, ctx| {
                        act.identify = None;
                        let next = act.proto.identify(crate::now_ms());
                        act.perform(vec![next], ctx);
                    }));
                }
                Action::Reconnect { resume, why } => {
                    tracing::warn!(parent: &self.span, why, resume, "discord gateway: reconnecting");
                    if !resume {
                        self.save_session(); // the session is gone
                    }
                    if why.contains("zombie") {
                        self.health.zombie();
                    }
                    self.health.reconnected();
                    return self.reconnect_later(resume, ctx);
                }
                Action::Dispatch { kind, data, seq } => self.on_dispatch(&kind, &data, seq, ctx),
                Action::Fatal(e) => return self.fail(e, ctx),
            }
        }
    }

    fn remember_thread(&mut self, t: &Value) {
        if let (Some(id), Some(parent)) = (t["id"].as_str(), t["parent_id"].as_str()) {
            if self.threads.len() >= MAX_THREADS {
                self.threads.clear();
            }
            self.threads.insert(id.to_string(), parent.to_string());
        }
    }

    /// Writes the session and the resume point (flushed with the next
    /// flush: a message's record and the sequence past it land together).
    fn save_session(&mut self) {
        let key = session_key(&self.cfg.account_id);
        let tree = crate::store::Tree::ChannelCursors;
        let res = match (&self.proto.session, self.proto.seq) {
            (Some(session), Some(seq)) => self.store.put(
                tree,
                &key,
                &Saved {
                    session: session.clone(),
                    seq,
                },
            ),
            _ => self.store.remove(tree, &key).map(|_| ()),
        };
        if let Err(e) = res {
            tracing::warn!(parent: &self.span, error = %e, "cannot store the discord session");
        }
    }

    /// The message numbered `seq` could not be recorded: the resume point
    /// goes back to just before it (not to the one last stored: that
    /// write may have failed too, or belong to an older session) and the
    /// socket is replaced, so Discord replays this message (and what
    /// followed it) on the resume. Without a number the resume point
    /// never moved past it.
    fn rewind(&mut self, seq: Option<u64>, ctx: &mut Context<Self>) {
        if let Some(seq) = seq {
            self.proto.replay_from(seq);
        }
        self.health.reconnected();
        self.reconnect_later(true, ctx);
    }

    fn on_dispatch(&mut self, kind: &str, d: &Value, seq: Option<u64>, ctx: &mut Context<Self>) {
        match kind {
            "READY" => {
                tracing::info!(parent: &self.span, "discord gateway ready (identified)");
                self.save_session();
                // Durable at once, not with the next message's flush: a
                // crash before any message would otherwise identify again
                // (Discord allows 1,000 identifies a day).
                let store = self.store.clone();
                ctx.spawn(async move { store.flush().await }.into_actor(self).map(
                    |flushed, act, _| {
                        if let Err(e) = flushed {
                            tracing::warn!(parent: &act.span, error = %e, "cannot flush the discord session");
                        }
                    },
                ));
                self.catch_up(ctx);
            }
            "RESUMED" => tracing::info!(parent: &self.span, "discord gateway resumed"),
            "GUILD_CREATE" => {
                for t in d["threads"].as_array().into_iter().flatten() {
                    self.remember_thread(t);
                }
            }
            "THREAD_CREATE" | "THREAD_UPDATE" => self.remember_thread(d),
            "MESSAGE_CREATE" => self.on_message(d, seq, ctx),
            _ => {}
        }
    }

    fn on_message(&mut self, d: &Value, seq: Option<u64>, ctx: &mut Context<Self>) {
        let now = crate::now_ms();
        let account = self.cfg.account_id.clone();
        let got = record(&self.store, &account, &self.bot, &self.threads, d, now);
        if let Err(e) = &got {
            tracing::error!(parent: &self.span, error = %e, "cannot record a discord message: resuming before it");
            return self.rewind(seq, ctx);
        }
        // The resume point moves past this message with its record (a
        // restart resumes after it; Discord replays what follows).
        self.save_session();
        let fresh = match got {
            Ok(Received::New(inc)) => *inc,
            Ok(Received::Replay) => {
                self.health
                    .replays
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                tracing::info!(parent: &self.span, id = d["id"].as_str().unwrap_or_default(), "discord message seen before: not run again");
                return;
            }
            Ok(Received::Skipped(why)) => {
                tracing::debug!(parent: &self.span, why, "discord message skipped");
                return;
            }
            Err(_) => return,
        };
        match &mut self.held {
            // After what the catch-up reads: it is older.
            Some(held) => held.push(fresh),
            None => {
                self.flushes.push(fresh);
                crate::channels::receiver::flush_waiting(self, ctx);
            }
        }
    }

    /// What was said while Discord kept no session (`catch_up.rs`), handed
    /// over before the live messages that came meanwhile.
    fn catch_up(&mut self, ctx: &mut Context<Self>) {
        if self.held.is_some() {
            return;
        }
        self.held = Some(Vec::new());
        let reader = super::catch_up::Reader::new(
            self.rest.clone(),
            self.store.clone(),
            self.cfg.account_id.clone(),
            self.bot.clone(),
            self.threads.clone(),
        );
        ctx.spawn(reader.read().into_actor(self).map(|fresh, act, ctx| {
            let held = act.held.take().unwrap_or_default();
            for inc in fresh.into_iter().chain(held) {
                act.flushes.push(inc);
            }
            crate::channels::receiver::flush_waiting(act, ctx);
        }));
    }
}

impl crate::channels::receiver::Receiver for DiscordShard {
    fn store(&self) -> Store {
        self.store.clone()
    }
    fn desk(&self) -> &DeskLink {
        &self.desk
    }
    fn flushes(&mut self) -> &mut Flushes<crate::channels::dispatch::Incoming> {
        &mut self.flushes
    }
    fn span(&self) -> &tracing::Span {
        &self.span
    }
}

impl Actor for DiscordShard {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        self.boot(ctx);
    }

    fn stopped(&mut self, _: &mut Context<Self>) {
        self.close_socket(1000);
    }
}

impl Handler<Tagged> for DiscordShard {
    type Result = ();
    fn handle(&mut self, msg: Tagged, ctx: &mut Context<Self>) {
        if msg.generation != self.generation {
            return; // an older socket (its sender, dropped here, closes it)
        }
        match msg.event {
            SocketEvent::Opened(tx) => self.opened(tx, ctx),
            SocketEvent::Frame(Some(text)) => self.frame(&text, ctx),
            SocketEvent::Frame(None) => {}
            SocketEvent::Closed { code, error } => self.closed(code, error, ctx),
        }
    }
}

impl DiscordShard {
    fn opened(&mut self, tx: mpsc::UnboundedSender<Ws>, ctx: &mut Context<Self>) {
        self.tx = Some(tx);
        // A gateway that accepts the socket and says nothing is replaced.
        let g = self.generation;
        let wait = Duration::from_secs(self.cfg.request_timeout_s);
        ctx.run_later(wait, move |act, ctx| {
            if act.generation == g && act.proto.phase == super::gateway::Phase::Connecting {
                let why = "no hello from the gateway";
                act.perform(vec![Action::Reconnect { resume: true, why }], ctx);
            }
        });
    }

    fn frame(&mut self, text: &str, ctx: &mut Context<Self>) {
        let now = crate::now_ms();
        let v: Option<Value> = serde_json::from_str(text).ok();
        let Some(v) = v.filter(|v| v.get("op").and_then(Value::as_u64).is_some()) else {
            tracing::warn!(parent: &self.span, "malformed discord gateway payload ignored");
            return;
        };
        if v["op"] == 11 {
            // A heartbeat acknowledged: the connection is alive (events
            // alone do not say so: a zombie may still replay a few).
            self.health.alive(now);
        }
        let actions = self.proto.on_frame(text, now, random_unit());
        self.perform(actions, ctx);
    }

    fn closed(&mut self, code: Option<u16>, error: String, ctx: &mut Context<Self>) {
        self.tx = None;
        tracing::warn!(parent: &self.span, code = ?code, %error, "discord gateway socket closed");
        self.health.error(Some(error));
        match self.proto.on_close(code) {
            Action::Fatal(e) => self.fail(e, ctx),
            Action::Reconnect { resume, .. } => {
                self.health.reconnected();
                if !resume {
                    self.save_session();
                }
                self.reconnect_later(resume, ctx);
            }
            other => self.perform(vec![other], ctx),
        }
    }
}

impl Handler<StopAccount> for DiscordShard {
    type Result = ();
    fn handle(&mut self, _: StopAccount, ctx: &mut Context<Self>) {
        ctx.stop();
    }
}
