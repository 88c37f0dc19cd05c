//! `TelegramActor`: one Telegram account. It boots (`getMe`, the command
//! menu only when it changed), resumes what a stop left (updates accepted
//! and not handed over, deliveries not finished), then long-polls
//! `getUpdates` from the stored cursor: one poll at a time, so one poller
//! per token (a 409 means another process polls: back off, never a second
//! poller here). Each batch is recorded in the ledger and flushed before
//! the next poll acknowledges it; messages are handed over per chat in
//! order; each answer is followed by a `Deliverer`.

use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use base64::Engine;
use serde_json::Value;

use super::api::{BotApi, BotCommand, TgError, Update};
use super::config::{StreamMode, TelegramAccount, TypingMode};
use super::inbound::{parse, Me, Parsed};
use super::outlet::TgOutlet;
use crate::channels::access::{self, Knock, Pairing, Verdict};
use crate::channels::deliver::{Deliverer, Stream, Typing};
use crate::channels::dispatch::{self, Incoming};
use crate::channels::health::AccountHealth;
use crate::channels::ledger::{self, Accepted, Delivery, InboundKey, OutState, OutboxItem};
use crate::channels::limits::RetryPolicy;
use crate::channels::messages::{
    AccountStopped, ChannelSendError, FollowRun, Notify, SendText, StopAccount,
};
use crate::channels::queues::ChatQueues;
use crate::channels::sender::{CallError, Limiter};
use crate::channels::supervisor::ChannelDeps;
use crate::provider::Image;

const CHANNEL: &str = "telegram";
const MAX_BACKOFF_MS: u64 = 60_000;

pub struct TelegramActor {
    cfg: Arc<TelegramAccount>,
    api: BotApi,
    limiter: Limiter,
    deps: ChannelDeps,
    health: Arc<AccountHealth>,
    me: Me,
    queues: ChatQueues,
    /// The pending wake-up for the debounce's next due batch.
    debounce_timer: Option<SpawnHandle>,
    backoff_ms: u64,
    fatal: Option<String>,
    span: tracing::Span,
}

#[derive(Message)]
#[rtype(result = "()")]
struct Poll;

#[derive(Message)]
#[rtype(result = "()")]
struct DispatchNext {
    chat: String,
}

impl TelegramActor {
    pub fn new(
        cfg: Arc<TelegramAccount>,
        deps: ChannelDeps,
        health: Arc<AccountHealth>,
    ) -> TelegramActor {
        let api = BotApi::new(
            &cfg.api_base,
            &cfg.bot_token,
            Duration::from_secs(cfg.request_timeout_s),
        );
        let limiter = Limiter::new(cfg.send_interval_ms, RetryPolicy::TELEGRAM, health.clone());
        let queues = ChatQueues::new(cfg.debounce_ms);
        TelegramActor {
            span: tracing::info_span!("channel", channel = CHANNEL, account = %cfg.account_id),
            cfg,
            api,
            limiter,
            deps,
            health,
            me: Me::default(),
            queues,
            debounce_timer: None,
            backoff_ms: 0,
            fatal: None,
        }
    }

    fn account(&self) -> &str {
        &self.cfg.account_id
    }

    fn deliverer(&self) -> Deliverer<TgOutlet> {
        Deliverer {
            store: self.deps.dispatch.store.clone(),
            runs: self.deps.runs.clone(),
            sessions: self.deps.dispatch.sessions.clone(),
            outlet: TgOutlet {
                api: self.api.clone(),
                limiter: self.limiter.clone(),
                chunk_limit: self.cfg.text_chunk_limit,
            },
            stream: match self.cfg.stream_mode {
                StreamMode::Partial => Stream::Partial,
                StreamMode::Block => Stream::Block,
                StreamMode::Off => Stream::Off,
            },
            edit_interval_ms: self.cfg.edit_interval_ms,
            typing: match self.cfg.typing_mode {
                TypingMode::Never => Typing::Never,
                TypingMode::Message => Typing::Message,
                TypingMode::Thinking | TypingMode::Instant => Typing::Start,
            },
            typing_every: Duration::from_secs(self.cfg.typing_interval_s),
            health: self.health.clone(),
        }
    }

    fn deliver(&self, d: Delivery, ctx: &mut Context<Self>) {
        ctx.spawn(self.deliverer().run(d).into_actor(self));
    }

    /// Waits longer after each failure in a row (1 s doubling to 60 s).
    fn back_off(&mut self, ctx: &mut Context<Self>) {
        self.backoff_ms = (self.backoff_ms * 2).clamp(1000, MAX_BACKOFF_MS);
        ctx.run_later(Duration::from_millis(self.backoff_ms), |_, ctx| {
            ctx.notify(Poll)
        });
    }

    fn fail(&mut self, error: String, ctx: &mut Context<Self>) {
        tracing::error!(parent: &self.span, %error, "telegram account failed");
        self.fatal = Some(error);
        ctx.stop();
    }

    fn boot(&mut self, ctx: &mut Context<Self>) {
        let (api, limiter) = (self.api.clone(), self.limiter.clone());
        let fut = async move { limiter.call(true, || api.get_me()).await };
        ctx.spawn(fut.into_actor(self).map(|res, act, ctx| match res {
            Ok(me) => {
                act.backoff_ms = 0;
                act.me = Me { id: me.id, username: me.username.clone() };
                tracing::info!(parent: &act.span, bot = me.username.as_deref().unwrap_or(""), "telegram account connected");
                act.sync_commands(ctx);
                act.resume(ctx);
                ctx.notify(Poll);
            }
            Err(TgError::Refused { code, description }) if code == 401 || code == 404 => {
                act.fail(format!("the bot token was refused ({code}): {description}"), ctx);
            }
            Err(e) => {
                act.health.error(Some(e.to_string()));
                act.backoff_ms = (act.backoff_ms * 2).clamp(1000, MAX_BACKOFF_MS);
                ctx.run_later(Duration::from_millis(act.backoff_ms), |act, ctx| act.boot(ctx));
            }
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
        let store = self.deps.dispatch.store.clone();
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

    /// After a start: updates accepted but not handed over, and replies not
    /// finished.
    fn resume(&mut self, ctx: &mut Context<Self>) {
        let store = self.deps.dispatch.store.clone();
        match ledger::dispatches(&store, self.account()) {
            Ok(list) => {
                for (_, v) in list {
                    match serde_json::from_value::<Incoming>(v) {
                        Ok(inc) => self.enqueue(inc, ctx),
                        Err(e) => {
                            tracing::warn!(parent: &self.span, error = %e, "unreadable dispatch record skipped")
                        }
                    }
                }
            }
            Err(e) => {
                tracing::error!(parent: &self.span, error = %e, "cannot read the dispatch records")
            }
        }
        match ledger::deliveries(&store, self.account()) {
            Ok(list) => {
                if !list.is_empty() {
                    tracing::info!(parent: &self.span, count = list.len(), "resuming replies after a stop");
                }
                for d in list {
                    self.deliver(d, ctx);
                }
            }
            Err(e) => tracing::error!(parent: &self.span, error = %e, "cannot read the deliveries"),
        }
    }

    fn enqueue(&mut self, inc: Incoming, ctx: &mut Context<Self>) {
        let start = self.queues.push(inc, crate::now_ms());
        self.started(start, ctx);
    }

    /// Chats that became busy start handing over; the debounce's next
    /// batch gets its wake-up.
    fn started(&mut self, chats: Vec<String>, ctx: &mut Context<Self>) {
        for chat in chats {
            ctx.notify(DispatchNext { chat });
        }
        if let Some(h) = self.debounce_timer.take() {
            ctx.cancel_future(h);
        }
        if let Some(due) = self.queues.next_due() {
            let wait = Duration::from_millis(due.saturating_sub(crate::now_ms()));
            self.debounce_timer = Some(ctx.run_later(wait, |act, ctx| {
                act.debounce_timer = None;
                let chats = act.queues.due(crate::now_ms());
                act.started(chats, ctx);
            }));
        }
    }

    /// Records a polled batch; returns the new messages to hand over.
    fn accept(&mut self, updates: Vec<Value>) -> Vec<Incoming> {
        let store = self.deps.dispatch.store.clone();
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
                        .map(|_| (Accepted::Replay, None))
                }
                (Err(e), Some(id)) => {
                    tracing::warn!(parent: &self.span, update_id = id, error = %e, "malformed telegram update skipped");
                    ledger::advance_cursor(&store, CHANNEL, self.account(), id + 1)
                        .map(|_| (Accepted::Replay, None))
                }
                (_, None) => {
                    tracing::warn!(parent: &self.span, "telegram update without an update_id skipped");
                    continue;
                }
            };
            match result {
                Ok((Accepted::New, Some(inc))) => fresh.push(inc.as_ref().clone()),
                Ok((Accepted::Replay, Some(inc))) => {
                    self.health
                        .replays
                        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    tracing::info!(parent: &self.span, key = %inc.dedupe_key, "replayed telegram update not run again");
                }
                Ok(_) => {}
                Err(e) => {
                    tracing::error!(parent: &self.span, error = %e, "cannot record a telegram update")
                }
            }
        }
        fresh
    }

    fn polled(&mut self, res: Result<Vec<Value>, TgError>, ctx: &mut Context<Self>) {
        match res {
            Ok(updates) => {
                self.backoff_ms = 0;
                if updates.is_empty() {
                    ctx.notify(Poll);
                    return;
                }
                let fresh = self.accept(updates);
                let store = self.deps.dispatch.store.clone();
                // Durable before the next poll acknowledges the batch.
                ctx.spawn(async move { store.flush().await }.into_actor(self).map(move |flushed, act, ctx| {
                    if let Err(e) = flushed {
                        tracing::error!(parent: &act.span, error = %e, "cannot flush the telegram ledger");
                    }
                    for inc in fresh {
                        act.enqueue(inc, ctx);
                    }
                    ctx.notify(Poll);
                }));
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

impl Actor for TelegramActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        self.health.started(crate::now_ms());
        self.boot(ctx);
    }

    fn stopped(&mut self, _: &mut Context<Self>) {
        self.health.stopped(crate::now_ms(), self.fatal.clone());
        self.deps.supervisor.do_send(AccountStopped {
            channel: CHANNEL.to_string(),
            account: self.account().to_string(),
            error: self.fatal.take(),
        });
    }
}

impl Handler<Poll> for TelegramActor {
    type Result = ();
    fn handle(&mut self, _: Poll, ctx: &mut Context<Self>) {
        let store = &self.deps.dispatch.store;
        let offset = match ledger::cursor(store, CHANNEL, self.account()) {
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

impl Handler<DispatchNext> for TelegramActor {
    type Result = ();
    fn handle(&mut self, msg: DispatchNext, ctx: &mut Context<Self>) {
        let Some(inc) = self.queues.pop(&msg.chat) else {
            return;
        };
        self.health.inbound(crate::now_ms());
        let work = HandOver {
            cfg: self.cfg.clone(),
            api: self.api.clone(),
            limiter: self.limiter.clone(),
            deps: self.deps.clone(),
        };
        let chat = msg.chat;
        ctx.spawn(
            work.run(inc)
                .into_actor(self)
                .map(move |delivery, act, ctx| {
                    if let Some(d) = delivery {
                        act.deliver(d, ctx);
                    }
                    ctx.notify(DispatchNext { chat });
                }),
        );
    }
}

impl Handler<Notify> for TelegramActor {
    type Result = ();
    fn handle(&mut self, msg: Notify, ctx: &mut Context<Self>) {
        match notice(
            &self.deps.dispatch.store,
            self.account(),
            &msg.to,
            &msg.key,
            &msg.text,
        ) {
            Ok(d) => self.deliver(d, ctx),
            Err(e) => tracing::error!(parent: &self.span, error = %e, "cannot queue a notice"),
        }
    }
}

impl Handler<SendText> for TelegramActor {
    type Result = ResponseActFuture<Self, Result<Vec<String>, ChannelSendError>>;
    fn handle(&mut self, msg: SendText, _: &mut Context<Self>) -> Self::Result {
        let store = self.deps.dispatch.store.clone();
        let account = self.account().to_string();
        let deliverer = self.deliverer();
        let chunks = deliverer.outlet.split_text(&msg.text);
        Box::pin(
            async move {
                let d = send_delivery(&store, &account, &msg, &chunks)?;
                store.flush().await?;
                deliverer.run(d.clone()).await;
                sent_ids(&store, &d)
            }
            .into_actor(self),
        )
    }
}

impl Handler<FollowRun> for TelegramActor {
    type Result = ResponseActFuture<Self, Result<(), ChannelSendError>>;
    fn handle(&mut self, msg: FollowRun, _: &mut Context<Self>) -> Self::Result {
        let store = self.deps.dispatch.store.clone();
        let d = msg.delivery;
        let record = ledger::add_delivery(&store, &d);
        Box::pin(
            async move {
                record?;
                store.flush().await?;
                Ok(d)
            }
            .into_actor(self)
            .map(|res: Result<Delivery, ChannelSendError>, act, ctx| {
                let d = res?;
                act.deliver(d, ctx);
                Ok(())
            }),
        )
    }
}

/// A `send` as a finalised delivery of its chunks (`send/<key>`): chunks
/// already there (a repeat) are left as they are.
fn send_delivery(
    store: &crate::store::Store,
    account: &str,
    msg: &SendText,
    chunks: &[String],
) -> Result<Delivery, crate::store::StoreError> {
    let d = Delivery {
        account: account.to_string(),
        session_key: "send".to_string(),
        run_id: msg.key.clone(),
        target: msg.to.clone(),
        thread_id: msg.thread_id.clone(),
        reply_to: msg.reply_to.clone(),
        created_ms: crate::now_ms(),
        finalized: true,
    };
    let item = |i: usize, text: &str, media: Option<&String>| OutboxItem {
        account: account.to_string(),
        key: ledger::chunk_key(&d.session_key, &d.run_id, i),
        target: msg.to.clone(),
        thread_id: msg.thread_id.clone(),
        edit_of: None,
        media: media.cloned(),
        text: text.to_string(),
        state: OutState::Pending,
        created_ms: d.created_ms,
    };
    let mut items: Vec<OutboxItem> = chunks
        .iter()
        .enumerate()
        .map(|(i, t)| item(i, t, None))
        .collect();
    for url in &msg.media {
        items.push(item(items.len(), "", Some(url)));
    }
    if !ledger::run_items(store, account, &d.session_key, &d.run_id)?.is_empty() {
        return Ok(d); // a repeat: its chunks are in the outbox already
    }
    let writes = ledger::enqueue(store, &items)?;
    ledger::finalize(store, &d, writes)?;
    Ok(d)
}

/// The platform ids of a send's chunks, or why one did not land.
fn sent_ids(store: &crate::store::Store, d: &Delivery) -> Result<Vec<String>, ChannelSendError> {
    let mut ids = Vec::new();
    for item in ledger::run_items(store, &d.account, &d.session_key, &d.run_id)? {
        match item.state {
            OutState::Sent { message_id, .. } => ids.push(message_id),
            OutState::Failed { error, .. } => return Err(ChannelSendError::Refused(error)),
            OutState::Unknown { .. } => return Err(ChannelSendError::Unknown),
            OutState::Pending | OutState::Sending { .. } => return Err(ChannelSendError::Down),
        }
    }
    Ok(ids)
}

impl Handler<StopAccount> for TelegramActor {
    type Result = ();
    fn handle(&mut self, _: StopAccount, ctx: &mut Context<Self>) {
        ctx.stop();
    }
}

/// A system notice to `to`, as a finalised delivery of one chunk.
fn notice(
    store: &crate::store::Store,
    account: &str,
    to: &str,
    key: &str,
    text: &str,
) -> Result<Delivery, crate::store::StoreError> {
    let d = Delivery {
        account: account.to_string(),
        session_key: "notice".to_string(),
        run_id: key.to_string(),
        target: to.to_string(),
        thread_id: None,
        reply_to: None,
        created_ms: crate::now_ms(),
        finalized: true,
    };
    let item = OutboxItem {
        account: account.to_string(),
        key: ledger::chunk_key(&d.session_key, &d.run_id, 0),
        target: to.to_string(),
        thread_id: None,
        edit_of: None,
        media: None,
        text: text.to_string(),
        state: OutState::Pending,
        created_ms: d.created_ms,
    };
    let writes = ledger::enqueue(store, &[item])?;
    ledger::finalize(store, &d, writes)?;
    Ok(d)
}

/// One message's way from the ledger to its session.
struct HandOver {
    cfg: Arc<TelegramAccount>,
    api: BotApi,
    limiter: Limiter,
    deps: ChannelDeps,
}

impl HandOver {
    async fn run(self, inc: Incoming) -> Option<Delivery> {
        let store = self.deps.dispatch.store.clone();
        let result = self.decide(&inc).await;
        let delivery = match result {
            Ok(d) => d,
            Err(e) => {
                // Left in the ledger: handed over again at the next start.
                tracing::error!(channel = CHANNEL, key = %inc.dedupe_key, error = %e, "telegram message not handed over");
                return None;
            }
        };
        if let Err(e) = dispatch::record(&store, &inc, delivery.as_ref()) {
            tracing::error!(channel = CHANNEL, key = %inc.dedupe_key, error = %e, "cannot record the hand-over");
        }
        delivery
    }

    async fn decide(&self, inc: &Incoming) -> Result<Option<Delivery>, dispatch::DispatchError> {
        let store = &self.deps.dispatch.store;
        let account = &self.cfg.account_id;
        let group = inc.is_group().then_some(inc.chat_id.as_str());
        let approved = access::approved(store, CHANNEL, account, &inc.sender)?;
        let knock = Knock {
            sender: &inc.sender,
            group,
            mentioned: inc.mentioned,
        };
        match access::decide(&self.cfg.access, &knock, approved) {
            Verdict::Allow { commands } => {
                if self.cfg.typing_mode == TypingMode::Instant {
                    // Shown as soon as the message is taken, before the session has it.
                    let (api, limiter) = (self.api.clone(), self.limiter.clone());
                    let to = super::api::Target {
                        chat_id: inc.chat_id.clone(),
                        thread_id: inc.thread_id.clone(),
                    };
                    actix::spawn(async move {
                        let _ = limiter.call(true, || api.typing(&to)).await;
                    });
                }
                let (images, note) = self.media(inc).await;
                let model = self.cfg.model_override.clone();
                dispatch::hand_over(&self.deps.dispatch, inc, commands, images, note, model).await
            }
            Verdict::Pair => {
                let mut random = [0u8; 8];
                let _ = getrandom::fill(&mut random);
                let now = crate::now_ms();
                match access::request(
                    store,
                    CHANNEL,
                    account,
                    &inc.sender,
                    inc.sender_name.as_deref(),
                    now,
                    &random,
                )? {
                    Pairing::New(code) => {
                        tracing::info!(channel = CHANNEL, account = %account, sender = %inc.sender, "pairing code issued");
                        let text = format!(
                            "This assistant does not know you yet.\n\nYour Telegram user id: {}\nPairing code: {code}\n\nAsk its owner to approve it:\nferroclaw pairing approve telegram {code}",
                            inc.sender
                        );
                        Ok(Some(notice(
                            store,
                            account,
                            &inc.chat_id,
                            &format!("pairing-{code}"),
                            &text,
                        )?))
                    }
                    Pairing::Waiting(_) | Pairing::Full => Ok(None),
                }
            }
            Verdict::Ignore { why } => {
                tracing::info!(channel = CHANNEL, account = %account, sender = %inc.sender, why, "telegram message ignored");
                Ok(None)
            }
        }
    }

    /// Photos and image documents for the model (size-capped); other files
    /// and refused ones as a note in the text.
    async fn media(&self, inc: &Incoming) -> (Vec<Image>, Option<String>) {
        let mut images = Vec::new();
        let mut notes = Vec::new();
        for m in &inc.media {
            let mime = m
                .mime_type
                .clone()
                .unwrap_or_else(|| crate::inbound::finalize::UNKNOWN_MEDIA.to_string());
            let label = m.name.clone().unwrap_or_else(|| "file".to_string());
            if !mime.starts_with("image/") {
                notes.push(format!(
                    "[attachment: {label} ({mime}{})]",
                    m.size.map(|s| format!(", {s} bytes")).unwrap_or_default()
                ));
                continue;
            }
            if m.size.is_some_and(|s| s > self.cfg.media_max_bytes) {
                notes.push(format!(
                    "[image not loaded: larger than {} bytes]",
                    self.cfg.media_max_bytes
                ));
                continue;
            }
            let got = self
                .limiter
                .call(true, || self.api.download(&m.id, self.cfg.media_max_bytes))
                .await;
            match got {
                Ok(bytes) => images.push(Image {
                    mime_type: mime,
                    data: base64::engine::general_purpose::STANDARD.encode(bytes),
                }),
                Err(e) => {
                    tracing::warn!(channel = CHANNEL, error = %e, "telegram media not loaded");
                    notes.push(format!(
                        "[image not loaded: {}]",
                        if e.unknown_outcome() {
                            "no answer"
                        } else {
                            "refused"
                        }
                    ));
                }
            }
        }
        (images, (!notes.is_empty()).then(|| notes.join("\n")))
    }
}
