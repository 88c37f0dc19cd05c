//! `Desk<O>`: one channel account's chat side, the same for every adapter.
//! The adapter's connection actor (Telegram's poller, Slack's socket or
//! Events API receiver, Discord's shard) records what it accepts in the
//! ledger, flushes, and hands the new messages over (`Accepted`). The desk
//! then queues them per chat (in order, with the debounce in front),
//! decides access (pairing codes included), hands each to its session
//! (`dispatch::hand_over`) and follows the answering run with a
//! `Deliverer` over the adapter's `Outlet`. At start it resumes what a stop
//! left: dispatch records not handed over, deliveries not finished.
//!
//! The connection runs as its own actor: it reconnects by itself; a fatal
//! failure (a refused token) is `ConnectionFailed`, which stops the account
//! for the supervisor to restart with backoff.

use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;

use super::access::{self, AccessConfig, Knock, Pairing, Verdict};
use super::deliver::{Deliverer, Outlet, Stream, Target, Typing};
use super::dispatch::{self, Incoming};
use super::health::AccountHealth;
use super::ledger::{self, Delivery, OutState, OutboxItem};
use super::messages::DispatchNext;
pub use super::messages::{Accepted, ConnectionFailed};
use super::messages::{
    AccountStopped, ActOnMessage, ChannelSendError, FollowRun, MessageAct, Notify, SendText,
    StopAccount,
};
use super::queues::ChatQueues;
use crate::audit::{Activity, ControlActivity, End, Flow, Inbound, MessageActivity, Who};
use crate::channels::dispatch::DispatchDeps;
use crate::runs::RunRegistry;
use crate::store::{Store, StoreError};

/// What the desk needs of an account's settings.
#[derive(Debug, Clone, PartialEq)]
pub struct DeskConfig {
    pub channel: &'static str,
    /// The platform's name in notices ("Telegram").
    pub platform: &'static str,
    pub account_id: String,
    pub access: AccessConfig,
    pub stream: Stream,
    pub typing: Typing,
    /// Typing shows as soon as a message is taken.
    pub instant_typing: bool,
    pub typing_every: Duration,
    pub edit_interval_ms: u64,
    pub debounce_ms: u64,
    pub model_override: Option<String>,
    /// How far back a message taken late is still answered.
    pub catch_up: crate::settings::CatchUp,
}

/// What a connection actor holds of its desk.
#[derive(Clone)]
pub struct DeskLink {
    pub accepted: Recipient<Accepted>,
    pub failed: Recipient<ConnectionFailed>,
}

pub struct Desk<O: Outlet> {
    cfg: Arc<DeskConfig>,
    outlet: O,
    deps: ChannelDeps,
    health: Arc<AccountHealth>,
    connection: Option<Recipient<StopAccount>>,
    queues: ChatQueues,
    /// The pending wake-up for the debounce's next due batch.
    debounce_timer: Option<SpawnHandle>,
    fatal: Option<String>,
    /// Each session's replies to a chat in the order of its messages.
    reply_order: super::reply_order::ReplyOrder,
    /// The catch-up notes owed, sent `NOTE_QUIET_MS` after the last skip.
    notes: super::catch_up::Notes,
    note_timer: Option<SpawnHandle>,
    span: tracing::Span,
}

impl<O: Outlet> Desk<O> {
    pub fn new(
        cfg: Arc<DeskConfig>,
        outlet: O,
        deps: ChannelDeps,
        health: Arc<AccountHealth>,
    ) -> Desk<O> {
        Desk {
            span: tracing::info_span!("channel", channel = cfg.channel, account = %cfg.account_id),
            queues: ChatQueues::new(cfg.debounce_ms),
            cfg,
            outlet,
            deps,
            health,
            connection: None,
            debounce_timer: None,
            fatal: None,
            reply_order: Default::default(),
            notes: Default::default(),
            note_timer: None,
        }
    }

    /// Starts the desk with its connection: `connect` gets the desk's link
    /// and starts the connection actor.
    pub fn start_with(
        mut self,
        connect: impl FnOnce(DeskLink) -> Recipient<StopAccount>,
    ) -> Addr<Desk<O>> {
        let ctx = Context::<Desk<O>>::new();
        let addr = ctx.address();
        self.connection = Some(connect(DeskLink {
            accepted: addr.clone().recipient(),
            failed: addr.recipient(),
        }));
        ctx.run(self)
    }

    fn store(&self) -> &Store {
        &self.deps.dispatch.store
    }

    fn deliverer(&self) -> Deliverer<O> {
        Deliverer {
            store: self.store().clone(),
            runs: self.deps.runs.clone(),
            sessions: self.deps.dispatch.sessions.clone(),
            outlet: self.outlet.clone(),
            stream: self.cfg.stream,
            edit_interval_ms: self.cfg.edit_interval_ms,
            typing: self.cfg.typing,
            typing_every: self.cfg.typing_every,
            health: self.health.clone(),
            channel: self.cfg.channel,
            audit: self.deps.audit.clone(),
            media: self.deps.dispatch.media.clone(),
            hooks: self.deps.dispatch.hooks.clone(),
            speech: self.deps.dispatch.speech.clone(),
        }
    }

    fn deliver(&mut self, d: Delivery, ctx: &mut Context<Self>) {
        let mut ticket = self.reply_order.ticket(&d);
        let (lane, seq) = (ticket.lane.clone(), ticket.seq);
        let run = self.deliverer().run(d);
        let ordered = async move {
            ticket.wait().await;
            run.await;
            drop(ticket);
        };
        ctx.spawn(
            ordered
                .into_actor(self)
                .map(move |_, act, _| act.reply_order.release(&lane, seq)),
        );
    }

    /// After a start: messages accepted but not handed over, and replies
    /// not finished.
    fn resume(&mut self, ctx: &mut Context<Self>) {
        let account = self.cfg.account_id.clone();
        match ledger::dispatches(self.store(), &account) {
            Ok(list) => {
                let mut batch = Vec::new();
                for (_, v) in list {
                    match serde_json::from_value::<Incoming>(v) {
                        Ok(inc) => batch.push(inc),
                        Err(e) => {
                            tracing::warn!(parent: &self.span, error = %e, "unreadable dispatch record skipped")
                        }
                    }
                }
                self.take(batch, ctx);
            }
            Err(e) => {
                tracing::error!(parent: &self.span, error = %e, "cannot read the dispatch records")
            }
        }
        match ledger::deliveries(self.store(), &account) {
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

    /// A batch taken together: what `catchUp` bounds out is skipped (its
    /// hand-over records go; each chat gets one note), the rest queued.
    fn take(&mut self, batch: Vec<Incoming>, ctx: &mut Context<Self>) {
        let now = crate::now_ms();
        let store = self.store().clone();
        let may_note = |inc: &Incoming| answered_directly(&self.cfg, &store, inc);
        let (kept, skipped) = super::catch_up::admit(batch, self.cfg.catch_up, now, may_note);
        let any_skipped = !skipped.is_empty();
        for (chat, s) in skipped {
            tracing::info!(parent: &self.span, chat = %chat, count = s.count, "messages from while the gateway was down skipped: beyond catchUp");
            for key in &s.keys {
                if let Err(e) = ledger::dispatched(self.store(), &self.cfg.account_id, key, None) {
                    tracing::error!(parent: &self.span, error = %e, "cannot record a skipped message");
                }
            }
            self.notes.add(&chat, s);
        }
        // The notes wait until the backlog's batches stop coming: a quiet
        // spell, or a batch with nothing skipped (before its answers).
        if let Some(h) = self.note_timer.take() {
            ctx.cancel_future(h);
        }
        if any_skipped {
            let quiet = Duration::from_millis(super::catch_up::NOTE_QUIET_MS);
            self.note_timer = Some(ctx.run_later(quiet, |act, ctx| {
                act.note_timer = None;
                act.send_notes(ctx);
            }));
        } else {
            self.send_notes(ctx);
        }
        for inc in kept {
            self.enqueue(inc, ctx);
        }
    }

    /// The catch-up notes owed (one per chat for the backlog's batches).
    fn send_notes(&mut self, ctx: &mut Context<Self>) {
        let now = crate::now_ms();
        for (chat, s) in self.notes.due(now) {
            // Named by its first message: a restart before the records flush writes the same note.
            let key = format!("catch-up:{}", s.keys.first().map_or("", String::as_str));
            let text = super::catch_up::note(&s, now);
            match notice(self.store(), &self.cfg.account_id, &chat, &key, &text) {
                Ok(d) => self.deliver(d, ctx),
                Err(e) => tracing::error!(parent: &self.span, error = %e, "cannot queue a notice"),
            }
        }
    }

    fn enqueue(&mut self, inc: Incoming, ctx: &mut Context<Self>) {
        let start = self.queues.push(inc, crate::now_ms());
        self.started_chats(start, ctx);
    }

    /// Chats that became busy start handing over; the debounce's next
    /// batch gets its wake-up.
    fn started_chats(&mut self, chats: Vec<String>, ctx: &mut Context<Self>) {
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
                act.started_chats(chats, ctx);
            }));
        }
    }
}

impl<O: Outlet> Actor for Desk<O> {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        self.health.started(crate::now_ms());
        self.resume(ctx);
    }

    fn stopped(&mut self, _: &mut Context<Self>) {
        if let Some(c) = self.connection.take() {
            c.do_send(StopAccount);
        }
        self.health.stopped(crate::now_ms(), self.fatal.clone());
        self.deps.supervisor.do_send(AccountStopped {
            channel: self.cfg.channel.to_string(),
            account: self.cfg.account_id.clone(),
            error: self.fatal.take(),
        });
    }
}

impl<O: Outlet> Handler<Accepted> for Desk<O> {
    type Result = ();
    fn handle(&mut self, msg: Accepted, ctx: &mut Context<Self>) {
        self.take(msg.messages, ctx);
    }
}

impl<O: Outlet> Handler<ConnectionFailed> for Desk<O> {
    type Result = ();
    fn handle(&mut self, msg: ConnectionFailed, ctx: &mut Context<Self>) {
        tracing::error!(parent: &self.span, error = %msg.error, "channel account failed");
        self.fatal = Some(msg.error);
        ctx.stop();
    }
}

impl<O: Outlet> Handler<DispatchNext> for Desk<O> {
    type Result = ();
    fn handle(&mut self, msg: DispatchNext, ctx: &mut Context<Self>) {
        let Some(inc) = self.queues.pop(&msg.chat) else {
            return;
        };
        self.health.inbound(crate::now_ms());
        let work = HandOver {
            cfg: self.cfg.clone(),
            outlet: self.outlet.clone(),
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

impl<O: Outlet> Handler<Notify> for Desk<O> {
    type Result = ();
    fn handle(&mut self, msg: Notify, ctx: &mut Context<Self>) {
        match notice(
            self.store(),
            &self.cfg.account_id,
            &msg.to,
            &msg.key,
            &msg.text,
        ) {
            Ok(d) => self.deliver(d, ctx),
            Err(e) => tracing::error!(parent: &self.span, error = %e, "cannot queue a notice"),
        }
    }
}

impl<O: Outlet> Handler<SendText> for Desk<O> {
    type Result = ResponseActFuture<Self, Result<Vec<String>, ChannelSendError>>;
    fn handle(&mut self, msg: SendText, _: &mut Context<Self>) -> Self::Result {
        let store = self.store().clone();
        let account = self.cfg.account_id.clone();
        let deliverer = self.deliverer();
        let chunks = deliverer.outlet.split(&msg.text);
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

impl<O: Outlet> Handler<ActOnMessage> for Desk<O> {
    type Result = ResponseFuture<Result<(), ChannelSendError>>;
    fn handle(&mut self, msg: ActOnMessage, _: &mut Context<Self>) -> Self::Result {
        let outlet = self.outlet.clone();
        let to = Target {
            chat_id: msg.to,
            thread_id: msg.thread_id,
            answering: None,
        };
        Box::pin(async move {
            let id = msg.message_id.as_str();
            let done = match &msg.act {
                MessageAct::React { emoji, remove } => outlet.react(&to, id, emoji, *remove).await,
                MessageAct::Edit { text } => outlet.edit(&to, id, text, true).await,
                MessageAct::Delete => outlet.delete(&to, id).await,
            };
            done.map_err(|f| match f.unknown {
                true => ChannelSendError::Unknown,
                false => ChannelSendError::Refused(f.error),
            })
        })
    }
}

impl<O: Outlet> Handler<FollowRun> for Desk<O> {
    type Result = ResponseActFuture<Self, Result<(), ChannelSendError>>;
    fn handle(&mut self, msg: FollowRun, _: &mut Context<Self>) -> Self::Result {
        let store = self.store().clone();
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

impl<O: Outlet> Handler<StopAccount> for Desk<O> {
    type Result = ();
    fn handle(&mut self, _: StopAccount, ctx: &mut Context<Self>) {
        ctx.stop();
    }
}

/// A `send` as a finalised delivery of its chunks (`send/<key>`): chunks
/// already there (a repeat) are left as they are.
fn send_delivery(
    store: &Store,
    account: &str,
    msg: &SendText,
    chunks: &[String],
) -> Result<Delivery, StoreError> {
    let d = Delivery {
        account: account.to_string(),
        session_key: ledger::DeliveryOf::Send,
        run_id: msg.key.clone().into(),
        target: msg.to.clone(),
        thread_id: msg.thread_id.clone(),
        reply_to: msg.reply_to.clone(),
        answers: None,
        created_ms: crate::now_ms(),
        finalized: true,
        chat_type: None,
        untrusted: false,
        kind: crate::run::RunKind::Chat,
        voice_in: false,
        late: None,
    };
    let item = |i: usize, text: &str, media: Option<&String>| OutboxItem {
        account: account.to_string(),
        key: ledger::chunk_key(d.session_key.as_str(), &d.run_id, i),
        target: msg.to.clone(),
        thread_id: msg.thread_id.clone(),
        edit_of: None,
        media: media.cloned(),
        text: text.to_string(),
        buttons: Vec::new(),
        voice: msg.voice && media.is_some(),
        speech: None,
        state: OutState::Pending,
        created_ms: d.created_ms,
        receipt: None,
    };
    let mut items: Vec<OutboxItem> = chunks
        .iter()
        .enumerate()
        .map(|(i, t)| item(i, t, None))
        .collect();
    if let Some(last) = items.last_mut() {
        last.buttons = msg.buttons.clone();
    }
    for url in &msg.media {
        items.push(item(items.len(), "", Some(url)));
    }
    if !ledger::run_items(store, account, d.session_key.as_str(), &d.run_id)?.is_empty() {
        return Ok(d); // a repeat: its chunks are in the outbox already
    }
    let writes = ledger::enqueue(store, &items)?;
    ledger::finalize(store, &d, writes)?;
    Ok(d)
}

/// The platform ids of a send's chunks, or why one did not land.
fn sent_ids(store: &Store, d: &Delivery) -> Result<Vec<String>, ChannelSendError> {
    let mut ids = Vec::new();
    for item in ledger::run_items(store, &d.account, d.session_key.as_str(), &d.run_id)? {
        match item.state {
            OutState::Sent { message_id, .. } => ids.push(message_id),
            OutState::Failed { error, .. } => return Err(ChannelSendError::Refused(error)),
            OutState::Unknown { .. } => return Err(ChannelSendError::Unknown),
            OutState::Pending | OutState::Sending { .. } => return Err(ChannelSendError::Down),
        }
    }
    Ok(ids)
}

/// Whether `inc` is a direct message its sender would get an answer to
/// (allowlisted or paired; a store that cannot say is taken for no).
fn answered_directly(cfg: &DeskConfig, store: &Store, inc: &Incoming) -> bool {
    if inc.is_group() {
        return false;
    }
    let approved = access::approved(store, cfg.channel, &cfg.account_id, &inc.sender);
    let knock = Knock {
        sender: &inc.sender,
        group: None,
        mentioned: inc.mentioned,
        parents: &[],
    };
    let approved = approved.unwrap_or(false);
    matches!(
        access::decide(&cfg.access, &knock, approved),
        Verdict::Allow { .. }
    )
}

/// A system notice to `to`, as a finalised delivery of one chunk.
fn notice(
    store: &Store,
    account: &str,
    to: &str,
    key: &str,
    text: &str,
) -> Result<Delivery, StoreError> {
    let d = Delivery {
        account: account.to_string(),
        session_key: ledger::DeliveryOf::Notice,
        run_id: key.into(),
        target: to.to_string(),
        thread_id: None,
        reply_to: None,
        answers: None,
        created_ms: crate::now_ms(),
        finalized: true,
        chat_type: None,
        untrusted: false,
        kind: crate::run::RunKind::Chat,
        voice_in: false,
        late: None,
    };
    let item = OutboxItem {
        account: account.to_string(),
        key: ledger::chunk_key(d.session_key.as_str(), &d.run_id, 0),
        target: to.to_string(),
        thread_id: None,
        edit_of: None,
        media: None,
        text: text.to_string(),
        buttons: Vec::new(),
        voice: false,
        speech: None,
        state: OutState::Pending,
        created_ms: d.created_ms,
        receipt: None,
    };
    let writes = ledger::enqueue(store, &[item])?;
    ledger::finalize(store, &d, writes)?;
    Ok(d)
}

/// One message's way from the ledger to its session.
struct HandOver<O: Outlet> {
    cfg: Arc<DeskConfig>,
    outlet: O,
    deps: ChannelDeps,
}

impl<O: Outlet> HandOver<O> {
    async fn run(self, inc: Incoming) -> Option<Delivery> {
        let store = self.deps.dispatch.store.clone();
        let delivery = match self.decide(&inc).await {
            Ok((d, outcome)) => {
                self.record(&inc, outcome, d.as_ref());
                d
            }
            Err(e) => {
                // Left in the ledger: handed over again at the next start.
                tracing::error!(channel = self.cfg.channel, key = %inc.dedupe_key, error = %e, "channel message not handed over");
                self.record(&inc, Inbound::Failed, None);
                return None;
            }
        };
        if let Err(e) = dispatch::record(&store, &inc, delivery.as_ref()) {
            tracing::error!(channel = self.cfg.channel, key = %inc.dedupe_key, error = %e, "cannot record the hand-over");
        }
        delivery
    }

    /// The message in the audit: metadata and keyed ids, never its text.
    fn record(&self, inc: &Incoming, outcome: Inbound, d: Option<&Delivery>) {
        if !self.deps.audit.wants_messages() {
            return;
        }
        self.deps.audit.record(Activity::Message(MessageActivity {
            channel: self.cfg.channel.to_string(),
            conversation: dispatch::conversation(Some(&inc.chat_type)),
            account: Some(inc.account.clone()),
            chat: Some(inc.chat_id.clone()),
            message: Some(inc.message_id.clone()),
            target: None,
            // A handed-over message names the run that answers it.
            agent_id: d
                .filter(|_| outcome == Inbound::Completed)
                .and_then(|d| d.session_key.agent().map(str::to_string)),
            run_id: d
                .filter(|_| outcome == Inbound::Completed)
                .map(|d| d.run_id.to_string()),
            result_count: None,
            duration_ms: Some(crate::now_ms().saturating_sub(inc.ts_ms)),
            flow: Flow::Inbound {
                sender: inc.sender.clone(),
                outcome,
            },
        }));
    }

    /// A message taken: marked read, and typing shown at once when the
    /// account says so (before the session has it).
    fn taken(&self, inc: &Incoming) {
        let (o, id) = (self.outlet.clone(), inc.message_id.clone());
        let to = Target {
            chat_id: inc.chat_id.clone(),
            thread_id: inc.thread_id.clone(),
            answering: Some(id.clone()),
        };
        let typing = self.cfg.instant_typing;
        actix::spawn(async move {
            if typing {
                o.typing(&to).await;
            }
            o.mark_read(&to, &id).await;
        });
    }

    /// An allowed message: routed, its attachments taken in, handed to
    /// its session.
    async fn admit(
        &self,
        inc: &Incoming,
        commands: bool,
    ) -> Result<(Option<Delivery>, Inbound), dispatch::DispatchError> {
        self.taken(inc);
        let limit = self.outlet.media_limit();
        let model = self.cfg.model_override.clone();
        let ask = super::messages::RouteIncoming {
            query: dispatch::RouteQuery::of(inc),
        };
        let routed =
            (self.deps.routes.send(ask).await).map_err(|_| dispatch::DispatchError::Down)??;
        let taken = super::media_in::take_in(
            &self.deps.dispatch,
            &self.outlet,
            (inc, &routed),
            limit,
            model.as_deref(),
            commands,
        )
        .await;
        dispatch::hand_over(&self.deps.dispatch, inc, commands, taken, (routed, model))
            .await
            .map(|d| (d, Inbound::Completed))
    }

    async fn decide(
        &self,
        inc: &Incoming,
    ) -> Result<(Option<Delivery>, Inbound), dispatch::DispatchError> {
        let store = &self.deps.dispatch.store;
        let (channel, account) = (self.cfg.channel, &self.cfg.account_id);
        let group = inc.is_group().then_some(inc.chat_id.as_str());
        let approved = access::approved(store, channel, account, &inc.sender)?;
        let parents: Vec<&str> = [inc.parent_id.as_deref(), inc.guild_id.as_deref()]
            .into_iter()
            .flatten()
            .collect();
        let knock = Knock {
            sender: &inc.sender,
            group,
            mentioned: inc.mentioned,
            parents: &parents,
        };
        match access::decide(&self.cfg.access, &knock, approved) {
            Verdict::Allow { commands } => self.admit(inc, commands).await,
            Verdict::Pair => {
                let mut random = [0u8; 8];
                let _ = getrandom::fill(&mut random);
                let now = crate::now_ms();
                let name = inc.sender_name.as_deref();
                match access::request(store, channel, account, &inc.sender, name, now, &random)? {
                    Pairing::New(code) => {
                        tracing::info!(channel, account = %account, sender = %inc.sender, "pairing code issued");
                        self.deps.audit.record(Activity::Control(ControlActivity {
                            action: "channel.pairing.requested".into(),
                            outcome: End::Blocked,
                            actor: Who::ChannelSender(inc.sender.clone()),
                            subject: Some(format!("{channel}/{account}")),
                            decision: None,
                            paths: Vec::new(),
                        }));
                        let text = format!(
                            "This assistant does not know you yet.\n\nYour {} user id: {}\nPairing code: {code}\n\nAsk its owner to approve it:\nferroclaw pairing approve {channel} {code}",
                            self.cfg.platform, inc.sender
                        );
                        let key = format!("pairing-{code}");
                        let d = notice(store, account, &inc.chat_id, &key, &text)?;
                        Ok((Some(d), Inbound::Refused))
                    }
                    Pairing::Waiting(_) | Pairing::Full => Ok((None, Inbound::Refused)),
                }
            }
            Verdict::Ignore { why } => {
                tracing::info!(channel, account = %account, sender = %inc.sender, why, "channel message ignored");
                Ok((None, Inbound::Refused))
            }
        }
    }
}

/// What every account actor needs.
#[derive(Clone)]
pub struct ChannelDeps {
    pub dispatch: DispatchDeps,
    pub runs: Addr<RunRegistry>,
    pub supervisor: Recipient<AccountStopped>,
    /// Where an allowed message goes (the supervisor owns the bindings and
    /// the policies a config change replaces).
    pub routes: Recipient<super::messages::RouteIncoming>,
    /// Messages in and out, and pairing requests, are recorded here.
    pub audit: crate::audit::AuditLog,
}

/// A running account's inbox.
#[derive(Clone)]
pub struct AccountHandle {
    pub stop: Recipient<StopAccount>,
    pub send: Recipient<SendText>,
    pub act: Recipient<ActOnMessage>,
    pub follow: Recipient<FollowRun>,
    pub notify: Recipient<Notify>,
    /// Slack's Events API receiver (HTTP mode).
    pub webhook: Option<Recipient<super::messages::Webhook>>,
}

impl AccountHandle {
    pub fn of<O: Outlet>(addr: Addr<Desk<O>>) -> AccountHandle {
        AccountHandle {
            stop: addr.clone().recipient(),
            send: addr.clone().recipient(),
            act: addr.clone().recipient(),
            follow: addr.clone().recipient(),
            notify: addr.recipient(),
            webhook: None,
        }
    }
}
