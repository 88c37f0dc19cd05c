//! `TelegramPoller`: one Telegram account's connection. It boots
//! (`getMe`, the command menu only when it changed), then long-polls
//! `getUpdates` from the stored cursor: one poll at a time, so one poller
//! per token (a 409 means another process polls: back off, never a second
//! poller here). Each batch is recorded in the ledger and flushed before
//! the next poll acknowledges it; the new messages go to the account's
//! `Desk`, which hands them over and delivers the replies.

use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use serde_json::Value;

use super::api::{BotApi, BotCommand, TgError, Update};
use super::config::TelegramAccount;
use super::inbound::{parse, Me, Parsed};
use super::messages::Poll;
use crate::channels::desk::{Accepted, ConnectionFailed, DeskLink};
use crate::channels::dispatch::Incoming;
use crate::channels::health::AccountHealth;
use crate::channels::ledger::{self, Accepted as Recorded, InboundKey};
use crate::channels::messages::StopAccount;
use crate::channels::sender::{until_ready, Limiter};
use crate::store::Store;

const CHANNEL: &str = "telegram";
const MAX_BACKOFF_MS: u64 = 60_000;

pub struct TelegramPoller {
    cfg: Arc<TelegramAccount>,
    api: BotApi,
    limiter: Limiter,
    store: Store,
    desk: DeskLink,
    health: Arc<AccountHealth>,
    me: Me,
    backoff_ms: u64,
    /// Wait before flushing a batch again after a failed flush.
    flush_backoff_ms: u64,
    span: tracing::Span,
}

impl TelegramPoller {
    pub fn new(
        cfg: Arc<TelegramAccount>,
        api: BotApi,
        limiter: Limiter,
        store: Store,
        desk: DeskLink,
    ) -> TelegramPoller {
        TelegramPoller {
            span: tracing::info_span!("channel", channel = CHANNEL, account = %cfg.account_id),
            health: limiter.health().clone(),
            cfg,
            api,
            limiter,
            store,
            desk,
            me: Me::default(),
            backoff_ms: 0,
            flush_backoff_ms: 0,
        }
    }

    fn account(&self) -> &str {
        &self.cfg.account_id
    }

    /// Waits longer after each failure in a row (1 s doubling to 60 s).
    fn back_off(&mut self, ctx: &mut Context<Self>) {
        self.backoff_ms = (self.backoff_ms * 2).clamp(1000, MAX_BACKOFF_MS);
        ctx.run_later(Duration::from_millis(self.backoff_ms), |_, ctx| {
            ctx.notify(Poll)
        });
    }

    fn fail(&mut self, error: String, ctx: &mut Context<Self>) {
        self.desk.failed.do_send(ConnectionFailed { error });
        ctx.stop();
    }

    fn boot(&mut self, ctx: &mut Context<Self>) {
        let (api, limiter) = (self.api.clone(), self.limiter.clone());
        let refused = |e: &TgError| {
            matches!(
                e,
                TgError::Refused {
                    code: 401 | 404,
                    ..
                }
            )
        };
        let fut = until_ready(
            self.health.clone(),
            move || {
                let (api, limiter) = (api.clone(), limiter.clone());
                async move { limiter.call(true, || api.get_me()).await }
            },
            refused,
        );
        ctx.spawn(fut.into_actor(self).map(|res, act, ctx| match res {
            Ok(me) => {
                act.me = Me { id: me.id, username: me.username.clone() };
                tracing::info!(parent: &act.span, bot = me.username.as_deref().unwrap_or(""), "telegram account connected");
                act.sync_commands(ctx);
                ctx.notify(Poll);
            }
            Err(e) => act.fail(format!("the bot token was {e}"), ctx),
        }));
    }

    /// The command menu, set only when it differs from the last one set
    /// (OpenClaw #32017: setting it at every boot ran into 429 lockouts).
    fn sync_commands(&mut self, ctx: &mut Context<Self>) {
        let commands = menu();
        let hash = {
            use sha2::Digest;
            let digest = sha2::Sha256::digest(serde_json::to_string(&commands).unwrap_or_default());
            digest
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect::<String>()
        };
        let key = format!("commands/{CHANNEL}/{}", self.account());
        let store = self.store.clone();
        if store
            .get::<String>(crate::store::Tree::ChannelAccess, &key)
            .ok()
            .flatten()
            .as_deref()
            == Some(hash.as_str())
        {
            return;
        }
        let (api, limiter) = (self.api.clone(), self.limiter.clone());
        ctx.spawn(
            async move {
                match limiter.call(true, || api.set_my_commands(&commands)).await {
                    Ok(()) => {
                        if let Err(e) = store.put(crate::store::Tree::ChannelAccess, &key, &hash) {
                            tracing::warn!(error = %e, "cannot record the command menu");
                        }
                    }
                    Err(e) => tracing::warn!(error = %e, "cannot set the telegram command menu"),
                }
            }
            .into_actor(self),
        );
    }

    /// Records a polled batch; returns the new messages to hand over, and
    /// whether a record failed: the batch stops there (the cursor stays
    /// before that update, so the next poll gets it again).
    fn accept(&mut self, updates: Vec<Value>) -> (Vec<Incoming>, bool) {
        let store = self.store.clone();
        let mut fresh = Vec::new();
        let now = crate::now_ms();
        for raw in updates {
            let update_id = raw.get("update_id").and_then(Value::as_i64);
            let parsed =
                serde_json::from_value::<Update>(raw).map(|u| parse(&u, self.account(), &self.me));
            let result = match (&parsed, update_id) {
                (Ok(Parsed::Message(inc)), Some(id)) => {
                    let key = InboundKey {
                        channel: CHANNEL,
                        account: self.account(),
                        peer: &inc.chat_id,
                        message_id: &inc.message_id,
                    };
                    let record = serde_json::to_value(inc.as_ref()).unwrap_or_default();
                    ledger::accept_with(&store, &key, Some(id + 1), now, Some(&record))
                        .map(|a| (a, Some(inc)))
                }
                (Ok(Parsed::Skip(why)), Some(id)) => {
                    tracing::debug!(parent: &self.span, update_id = id, why, "telegram update skipped");
                    ledger::advance_cursor(&store, CHANNEL, self.account(), id + 1)
                        .map(|_| (Recorded::Replay, None))
                }
                (Err(e), Some(id)) => {
                    tracing::warn!(parent: &self.span, update_id = id, error = %e, "malformed telegram update skipped");
                    ledger::advance_cursor(&store, CHANNEL, self.account(), id + 1)
                        .map(|_| (Recorded::Replay, None))
                }
                (_, None) => {
                    tracing::warn!(parent: &self.span, "telegram update without an update_id skipped");
                    continue;
                }
            };
            match result {
                Ok((Recorded::New, Some(inc))) => fresh.push(inc.as_ref().clone()),
                Ok((Recorded::Replay, Some(inc))) => {
                    self.health
                        .replays
                        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    tracing::info!(parent: &self.span, key = %inc.dedupe_key, "replayed telegram update not run again");
                }
                Ok(_) => {}
                Err(e) => {
                    tracing::error!(parent: &self.span, error = %e, "cannot record a telegram update: it is polled again");
                    self.health
                        .error(Some(format!("cannot record an update: {e}")));
                    return (fresh, true);
                }
            }
        }
        (fresh, false)
    }

    /// Makes the recorded batch durable (a failing flush is tried again,
    /// with backoff, before anything else), then hands its messages over
    /// and polls, which confirms the batch to Telegram: nothing is
    /// confirmed that is not stored.
    fn durable(&mut self, fresh: Vec<Incoming>, stopped: bool, ctx: &mut Context<Self>) {
        let store = self.store.clone();
        ctx.spawn(async move { store.flush().await }.into_actor(self).map(move |flushed, act, ctx| {
            if let Err(e) = flushed {
                tracing::error!(parent: &act.span, error = %e, "cannot flush the telegram ledger: trying again");
                act.health.error(Some(format!("cannot store updates: {e}")));
                act.flush_backoff_ms = (act.flush_backoff_ms * 2).clamp(500, MAX_BACKOFF_MS);
                let wait = Duration::from_millis(act.flush_backoff_ms);
                ctx.run_later(wait, move |act, ctx| act.durable(fresh, stopped, ctx));
                return;
            }
            act.flush_backoff_ms = 0;
            act.answer_presses(&fresh, ctx);
            if !fresh.is_empty() {
                act.desk.accepted.do_send(Accepted { messages: fresh });
            }
            if stopped {
                act.back_off(ctx);
            } else {
                ctx.notify(Poll);
            }
        }));
    }

    /// Button presses stop spinning once they are stored (what they
    /// answer is decided when they are handed over).
    fn answer_presses(&self, fresh: &[Incoming], ctx: &mut Context<Self>) {
        for inc in fresh {
            let Some(id) = inc.message_id.strip_prefix(super::inbound::PRESS) else {
                continue;
            };
            let (api, limiter, id) = (self.api.clone(), self.limiter.clone(), id.to_string());
            ctx.spawn(
                async move {
                    if let Err(e) = limiter.call(true, || api.answer_callback(&id, None)).await {
                        tracing::debug!(error = %e, "a button press was not acknowledged");
                    }
                }
                .into_actor(self),
            );
        }
    }

    fn polled(&mut self, res: Result<Vec<Value>, TgError>, ctx: &mut Context<Self>) {
        match res {
            Ok(updates) => {
                self.backoff_ms = 0;
                if updates.is_empty() {
                    ctx.notify(Poll);
                    return;
                }
                let (fresh, stopped) = self.accept(updates);
                // Durable before the next poll acknowledges the batch.
                self.durable(fresh, stopped, ctx);
            }
            Err(TgError::Conflict(d)) => {
                self.health
                    .conflicts
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let msg = format!("another poller uses this bot token (409: {d})");
                tracing::warn!(parent: &self.span, error = %msg, "telegram poll conflict: backing off");
                self.health.error(Some(msg));
                self.backoff_ms = self.backoff_ms.max(1000); // at least 2 s
                self.back_off(ctx);
            }
            Err(TgError::Refused { code, description }) if code == 401 || code == 404 => {
                self.fail(
                    format!("the bot token was refused ({code}): {description}"),
                    ctx,
                );
            }
            Err(TgError::RateLimited { .. }) => ctx.notify(Poll), // the gate waits
            Err(e) => {
                tracing::warn!(parent: &self.span, error = %e, "telegram poll failed");
                self.health.error(Some(e.to_string()));
                self.back_off(ctx);
            }
        }
    }
}

/// The command menu Telegram shows.
fn menu() -> Vec<BotCommand> {
    [
        ("new", "Start a new session"),
        ("reset", "Reset the session"),
        ("status", "Show session status"),
        ("stop", "Stop the current run"),
        ("think", "Set the thinking level"),
        ("model", "Show or set the model"),
        ("compact", "Compact the session context"),
        ("help", "Show the commands"),
    ]
    .iter()
    .map(|(c, d)| BotCommand {
        command: c.to_string(),
        description: d.to_string(),
    })
    .collect()
}

impl Actor for TelegramPoller {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        self.boot(ctx);
    }
}

impl Handler<Poll> for TelegramPoller {
    type Result = ();
    fn handle(&mut self, _: Poll, ctx: &mut Context<Self>) {
        let offset = match ledger::cursor(&self.store, CHANNEL, self.account()) {
            Ok(o) => o,
            Err(e) => {
                tracing::error!(parent: &self.span, error = %e, "cannot read the telegram cursor");
                return self.back_off(ctx);
            }
        };
        let (api, limiter, hold) = (
            self.api.clone(),
            self.limiter.clone(),
            self.cfg.poll_timeout_s,
        );
        let fut = async move {
            limiter.open().await;
            let r = api.get_updates(offset, hold).await;
            limiter.record(r.as_ref().map(|_| ()));
            r
        };
        ctx.spawn(
            fut.into_actor(self)
                .map(|res, act, ctx| act.polled(res, ctx)),
        );
    }
}

impl Handler<StopAccount> for TelegramPoller {
    type Result = ();
    fn handle(&mut self, _: StopAccount, ctx: &mut Context<Self>) {
        ctx.stop();
    }
}
