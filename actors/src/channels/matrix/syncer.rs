//! `MatrixSync`: one Matrix account's connection. It boots (`whoami` with
//! the token, or a password login), then long-polls `/sync` from the stored
//! `since` token, one poll at a time. Each answer's messages are recorded
//! and its `next_batch` written after them; the batch is flushed before
//! the messages go to the desk and before the next poll, so a restart
//! resumes exactly where the last flush left off (a replayed event finds
//! its key; the token never moves back). The first sync of an account
//! (no token yet) answers nothing from the rooms' history; a later one
//! whose timeline skipped events has them read back first (`backfill.rs`),
//! bounded by `catchUp` like any catch-up. Invites are
//! joined as `autoJoin` says; a room is direct when its invite said so,
//! else when it has two members.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use serde_json::Value;

use super::api::{Login, MatrixApi, MxError};
use super::backfill::Backfill;
use super::config::MatrixAccount;
use super::inbound::record;
use super::messages::Poll;
use super::sync::{filter, read, Batch, Invite};
use crate::channels::desk::{Accepted, ConnectionFailed, DeskLink};
use crate::channels::dispatch::{Incoming, Received};
use crate::channels::health::AccountHealth;
use crate::channels::ledger;
use crate::channels::messages::StopAccount;
use crate::channels::sender::{until_ready, Limiter};
use crate::settings::MatrixAutoJoin;
use crate::store::{Store, Tree};

const CHANNEL: &str = "matrix";
const MAX_BACKOFF_MS: u64 = 60_000;

pub struct MatrixSync {
    cfg: Arc<MatrixAccount>,
    api: MatrixApi,
    limiter: Limiter,
    store: Store,
    desk: DeskLink,
    health: Arc<AccountHealth>,
    /// Members per room, from the sync answers' summaries.
    members: HashMap<String, u64>,
    encrypted_said: HashSet<String>,
    filter: String,
    backoff_ms: u64,
    span: tracing::Span,
}

/// Where a password login is kept.
fn login_key(account: &str) -> String {
    format!("matrix-login/{account}")
}

/// The account's identity: `whoami` with the configured token; else the
/// stored login's token, else a login (as the stored device). The new
/// login, when there was one, to keep.
async fn connect(
    api: MatrixApi,
    cfg: Arc<MatrixAccount>,
    stored: Option<Login>,
) -> Result<(String, Option<Login>), MxError> {
    let Some(pw) = cfg
        .password
        .as_deref()
        .filter(|_| cfg.access_token.is_none())
    else {
        return api.whoami().await.map(|w| (w, None));
    };
    if let Some(l) = &stored {
        api.set_token(&l.access_token);
        match api.whoami().await {
            Ok(w) => return Ok((w, None)),
            Err(MxError::Auth(..)) => {}
            Err(e) => return Err(e),
        }
    }
    let device = stored
        .as_ref()
        .map(|l| l.device_id.clone())
        .or_else(|| cfg.device_id.clone());
    let l = api
        .login(&cfg.user_id, pw, device.as_deref(), &cfg.device_name)
        .await?;
    Ok((l.user_id.clone(), Some(l)))
}

/// Where a room's kind is kept (`direct` or `group`).
fn kind_key(account: &str, room: &str) -> String {
    format!("matrix-room/{account}/{room}")
}

impl MatrixSync {
    pub fn new(
        cfg: Arc<MatrixAccount>,
        api: MatrixApi,
        limiter: Limiter,
        store: Store,
        desk: DeskLink,
    ) -> MatrixSync {
        MatrixSync {
            span: tracing::info_span!("channel", channel = CHANNEL, account = %cfg.account_id),
            health: limiter.health().clone(),
            cfg,
            api,
            limiter,
            store,
            desk,
            members: HashMap::new(),
            encrypted_said: HashSet::new(),
            filter: filter(),
            backoff_ms: 0,
        }
    }

    fn back_off(&mut self, ctx: &mut Context<Self>) {
        self.backoff_ms = (self.backoff_ms * 2).clamp(1000, MAX_BACKOFF_MS);
        ctx.run_later(Duration::from_millis(self.backoff_ms), |_, ctx| {
            ctx.notify(Poll)
        });
    }

    /// Who the account is: the token's owner, after a password login when
    /// the config has no token (the stored login is tried first; a new one
    /// keeps the stored device).
    fn boot(&mut self, ctx: &mut Context<Self>) {
        let (api, cfg) = (self.api.clone(), self.cfg.clone());
        let key = login_key(&cfg.account_id);
        let stored: Option<Login> = self
            .store
            .get::<Login>(Tree::ChannelAccess, &key)
            .ok()
            .flatten()
            .filter(|l| l.user_id == cfg.user_id);
        let fatal = |e: &MxError| matches!(e, MxError::Auth(..) | MxError::Refused(..));
        let fut = until_ready(
            self.health.clone(),
            move || connect(api.clone(), cfg.clone(), stored.clone()),
            fatal,
        );
        ctx.spawn(fut.into_actor(self).map(move |res, act, ctx| match res {
            Ok((who, _)) if who != act.cfg.user_id => {
                act.fail(format!("the token belongs to {who}, not {}", act.cfg.user_id), ctx)
            }
            Ok((who, login)) => {
                if let Some(l) = login {
                    if let Err(e) = act.store.put(Tree::ChannelAccess, &key, &l) {
                        tracing::warn!(parent: &act.span, error = %e, "cannot keep the matrix login");
                    }
                }
                tracing::info!(parent: &act.span, user = %who, "matrix account connected");
                ctx.notify(Poll);
            }
            Err(e) => act.fail(format!("the homeserver refused the account: {e}"), ctx),
        }));
    }

    fn fail(&mut self, error: String, ctx: &mut Context<Self>) {
        self.desk.failed.do_send(ConnectionFailed { error });
        ctx.stop();
    }

    /// Whether a room is a direct chat.
    fn direct(&self, room: &str) -> bool {
        let key = kind_key(&self.cfg.account_id, room);
        match self
            .store
            .get::<String>(Tree::ChannelAccess, &key)
            .ok()
            .flatten()
        {
            Some(k) => k == "direct",
            None => self.members.get(room).is_some_and(|n| *n <= 2),
        }
    }

    /// Records the batch's messages; the new ones, or None when a record
    /// failed (the batch is polled again from the stored token).
    fn accept(&mut self, b: &Batch, first: bool) -> Option<Vec<Incoming>> {
        for (room, n) in &b.members {
            self.members.insert(room.clone(), *n);
        }
        for room in &b.encrypted {
            if self.encrypted_said.insert(room.clone()) {
                tracing::warn!(parent: &self.span, room = %room, "an encrypted matrix room: its messages cannot be read (end-to-end encryption is not supported)");
            }
        }
        if first {
            tracing::info!(parent: &self.span, events = b.events.len(), "first matrix sync: the rooms' history is not answered");
            return Some(Vec::new());
        }
        let mut fresh = Vec::new();
        let now = crate::now_ms();
        for ev in &b.events {
            let direct = self.direct(&ev.room);
            match record(&self.store, &self.cfg, &ev.room, direct, &ev.event, now) {
                Ok(Received::New(inc)) => fresh.push(*inc),
                Ok(Received::Replay) => {
                    self.health
                        .replays
                        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
                Ok(Received::Skipped(why)) => {
                    let id = ev.event["event_id"].as_str().unwrap_or_default();
                    tracing::debug!(parent: &self.span, event = id, why, "matrix event skipped");
                }
                Err(e) => {
                    tracing::error!(parent: &self.span, error = %e, "cannot record a matrix event: the sync is polled again");
                    self.health
                        .error(Some(format!("cannot record an event: {e}")));
                    return None;
                }
            }
        }
        Some(fresh)
    }

    /// Joins an invite when `autoJoin` allows it (from an allowed sender,
    /// or a room listed), keeping whether it is a direct chat.
    fn invited(&mut self, inv: Invite, ctx: &mut Context<Self>) {
        let c = &self.cfg;
        let by = inv.inviter.clone().unwrap_or_default();
        let allowed = c.access.allow_from.iter().chain(&c.access.group_allow_from);
        let ok = match c.auto_join {
            MatrixAutoJoin::Always => true,
            MatrixAutoJoin::Off => false,
            MatrixAutoJoin::Allowlist => {
                c.auto_join_allowlist.contains(&inv.room)
                    || c.access.groups.contains_key(&inv.room)
                    || allowed.into_iter().any(|a| a != "*" && *a == by)
            }
        };
        if !ok {
            tracing::info!(parent: &self.span, room = %inv.room, inviter = %by, "matrix invite not joined (autoJoin)");
            return;
        }
        let kind = if inv.is_direct { "direct" } else { "group" };
        let key = kind_key(&c.account_id, &inv.room);
        if let Err(e) = self.store.put(Tree::ChannelAccess, &key, &kind) {
            tracing::warn!(parent: &self.span, error = %e, "cannot keep a matrix room's kind");
        }
        let (api, limiter, room) = (self.api.clone(), self.limiter.clone(), inv.room.clone());
        let fut = async move { limiter.call(true, || api.join(&room)).await };
        ctx.spawn(fut.into_actor(self).map(move |r, act, _| match r {
            Ok(()) => tracing::info!(parent: &act.span, room = %inv.room, kind, "matrix invite joined"),
            Err(e) => tracing::warn!(parent: &act.span, room = %inv.room, error = %e, "matrix invite not joined"),
        }));
    }

    fn synced(&mut self, res: Result<Value, MxError>, first: bool, ctx: &mut Context<Self>) {
        let v = match res {
            Ok(v) => v,
            Err(MxError::Auth(code, msg)) => {
                return self.fail(
                    format!("the homeserver refused the token ({code}): {msg}"),
                    ctx,
                )
            }
            Err(MxError::RateLimited(_)) => return ctx.notify(Poll), // the gate waits
            Err(e) => {
                tracing::warn!(parent: &self.span, error = %e, "matrix sync failed");
                self.health.error(Some(e.to_string()));
                return self.back_off(ctx);
            }
        };
        self.health.alive(crate::now_ms());
        let batch = match read(&v, &self.cfg.user_id) {
            Ok(b) => b,
            Err(e) => {
                tracing::warn!(parent: &self.span, error = %e, "malformed matrix sync answer");
                return self.back_off(ctx);
            }
        };
        if first || batch.limited.is_empty() {
            return self.took(batch, first, ctx);
        }
        // What the timeline skipped goes first (`backfill.rs`).
        let max_age_ms = self.cfg.catch_up.max_age_minutes.saturating_mul(60_000);
        let backfill = Backfill {
            api: self.api.clone(),
            limiter: self.limiter.clone(),
            store: self.store.clone(),
            account: self.cfg.account_id.clone(),
            oldest_ms: crate::now_ms().saturating_sub(max_age_ms),
        };
        let gaps = batch.limited.clone();
        let fut = async move { backfill.read(&gaps).await };
        ctx.spawn(fut.into_actor(self).map(move |r, act, ctx| match r {
            Ok(mut events) => {
                tracing::info!(parent: &act.span, events = events.len(), "matrix timeline gaps read back");
                let mut batch = batch;
                events.append(&mut batch.events);
                batch.events = events;
                act.took(batch, false, ctx);
            }
            Err(e) => {
                tracing::warn!(parent: &act.span, error = %e, "matrix gap not read back: the sync is polled again");
                act.health.error(Some(e.to_string()));
                act.back_off(ctx);
            }
        }));
    }

    /// Records a sync's batch, stores its token, joins its invites and
    /// hands its messages over once flushed.
    fn took(&mut self, batch: Batch, first: bool, ctx: &mut Context<Self>) {
        let Some(fresh) = self.accept(&batch, first) else {
            return self.back_off(ctx);
        };
        if let Err(e) = ledger::put_mark(&self.store, CHANNEL, &self.cfg.account_id, &batch.next) {
            tracing::error!(parent: &self.span, error = %e, "cannot store the matrix sync token");
            return self.back_off(ctx);
        }
        for inv in batch.invites {
            self.invited(inv, ctx);
        }
        self.durable(fresh, ctx);
    }

    /// Flushes the batch with its token (tried again until it lands), then
    /// hands its messages over and polls on.
    fn durable(&mut self, fresh: Vec<Incoming>, ctx: &mut Context<Self>) {
        let store = self.store.clone();
        ctx.spawn(async move { store.flush().await }.into_actor(self).map(move |flushed, act, ctx| {
            if let Err(e) = flushed {
                tracing::error!(parent: &act.span, error = %e, "cannot flush the matrix ledger: trying again");
                act.health.error(Some(format!("cannot store events: {e}")));
                ctx.run_later(Duration::from_secs(1), move |act, ctx| act.durable(fresh, ctx));
                return;
            }
            act.backoff_ms = 0;
            if !fresh.is_empty() {
                act.desk.accepted.do_send(Accepted { messages: fresh });
            }
            ctx.notify(Poll);
        }));
    }
}

impl Actor for MatrixSync {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        self.boot(ctx);
    }
}

impl Handler<Poll> for MatrixSync {
    type Result = ();
    fn handle(&mut self, _: Poll, ctx: &mut Context<Self>) {
        let since = match ledger::mark(&self.store, CHANNEL, &self.cfg.account_id) {
            Ok(s) => s,
            Err(e) => {
                tracing::error!(parent: &self.span, error = %e, "cannot read the matrix sync token");
                return self.back_off(ctx);
            }
        };
        let first = since.is_none();
        // The first sync returns at once: it only learns where "now" is.
        let hold = if first { 0 } else { self.cfg.poll_timeout_s };
        let (api, limiter, filter) = (self.api.clone(), self.limiter.clone(), self.filter.clone());
        let fut = async move {
            limiter.open().await;
            let r = api.sync(since.as_deref(), hold, &filter).await;
            limiter.record(r.as_ref().map(|_| ()));
            r
        };
        ctx.spawn(
            fut.into_actor(self)
                .map(move |r, act, ctx| act.synced(r, first, ctx)),
        );
    }
}

impl Handler<StopAccount> for MatrixSync {
    type Result = ();
    fn handle(&mut self, _: StopAccount, ctx: &mut Context<Self>) {
        ctx.stop();
    }
}
