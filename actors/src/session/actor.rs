//! `SessionActor`: the struct, its lifecycle (start, recovery on start,
//! idle stop), its writes and what it tells, and its handlers; each
//! concern's methods are in the sibling files (`delivery.rs`, `runs.rs`,
//! `supervision.rs`, `recovery.rs`, `commands.rs`, `autocompact.rs`).

use crate::ids::SessionKey;
use std::sync::Arc;

use actix::prelude::*;
use serde_json::Value;

use super::slot::{IdleWatch, LanePick, RunSlot};
use super::state::Incoming;
use super::view::View;
use super::*;
use crate::lane::Lanes;

pub struct SessionActor {
    /// `session` span (session_key, agent_id), entered by the handlers.
    pub(super) span: tracing::Span,
    pub(super) key: SessionKey,
    pub(super) entry: SessionEntry,
    pub(super) deps: Arc<SessionDeps>,
    /// The lane its runs take a slot of.
    pub(super) lanes: LanePick,
    /// The queue, the active run's bookkeeping and the message ids seen
    /// (`state.rs`: pure; this actor applies what its transitions say).
    pub(super) state: SessionState,
    /// The active run's actor and lane slot, once it has them.
    pub(super) running: RunSlot,
    /// The model context and its token accounting.
    pub(super) history: History,
    /// When it was last busy, and whom to tell once idle (the router).
    pub(super) idle: IdleWatch,
    /// System events waiting for the next trusted turn.
    pub(super) system_events: super::system_events::Pending,
}

impl SessionActor {
    pub fn new(
        key: String,
        entry: SessionEntry,
        deps: impl Into<Arc<SessionDeps>>,
    ) -> SessionActor {
        let deps: Arc<SessionDeps> = deps.into();
        deps.metrics
            .sessions_live
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let session_key = SessionKey::stored(&key);
        let agent_id = crate::ids::key::agent(&key);
        let base = deps.queue;
        let settings = entry
            .queue
            .as_deref()
            .and_then(|q| parse_queue_directive(q, base).ok())
            .unwrap_or(base);
        SessionActor {
            span: tracing::info_span!("session", session_key = %key, agent_id = %agent_id),
            state: SessionState::new(&session_key, SessionQueue::new(settings)),
            key: session_key,
            entry,
            running: RunSlot::default(),
            lanes: LanePick::only(deps.lane.clone()),
            deps,
            history: History::new(),
            idle: IdleWatch::new(),
            system_events: Default::default(),
        }
    }

    /// Placed by the router: it is told when this session idles, and its
    /// runs take a slot of `lanes.for_key(key)` (or of a lane a run names).
    pub fn placed(mut self, idle_to: Recipient<SessionIdle>, lanes: Option<&Lanes>) -> Self {
        self.idle.to = Some(idle_to);
        if let Some(lanes) = lanes {
            self.lanes = LanePick::of(lanes, &self.key);
        }
        self
    }

    /// What its settings come to now (pure reads).
    pub(super) fn view(&self) -> View<'_> {
        View {
            key: &self.key,
            deps: &self.deps,
            entry: &self.entry,
            active: self.state.active(),
        }
    }

    /// Writes the session entry (the caller flushes at its durability point).
    pub(super) fn save_entry(&mut self) -> Result<(), StoreError> {
        self.entry.updated_at = crate::now_ms();
        self.deps.store.put(Tree::Sessions, &self.key, &self.entry)
    }

    /// Appends transcript entries and applies `other` writes in one store
    /// transaction (the caller flushes at its durability point); delivered
    /// messages among the entries join the model context.
    pub(super) fn commit(
        &mut self,
        entries: Vec<Value>,
        other: Vec<StoreWrite>,
    ) -> Result<(), TranscriptError> {
        let mut writes = transcript::entry_writes(&self.entry.session_id, &entries)?;
        writes.extend(other);
        if writes.len() == 1 && writes[0].0 == Tree::Transcripts {
            // One entry: a plain insert is enough (and cheaper).
            let (_, key, value) = &writes[0];
            self.deps.store.put(Tree::Transcripts, key, value)?;
        } else if !writes.is_empty() {
            self.deps.store.commit(&writes)?;
        }
        self.history.extend(&entries);
        for entry in entries {
            if entry["type"] == "message" && entry.get("message").is_some() {
                self.tell(SessionChange::Message { entry });
            }
        }
        Ok(())
    }

    /// Tells watching dashboards about a change, with the entry as it is
    /// now; nothing at all while no connection watches sessions.
    pub(super) fn tell(&self, change: SessionChange) {
        if self
            .deps
            .metrics
            .session_watchers
            .load(std::sync::atomic::Ordering::Relaxed)
            <= 0
        {
            return;
        }
        let running = self.state.launched_run().is_some_and(
            |r| !matches!(&change, SessionChange::RunSettled { run_id, .. } if run_id == r),
        );
        self.deps.news.do_send(SessionNews {
            session_key: self.key.clone(),
            entry: std::sync::Arc::new(self.entry.clone()),
            running,
            change,
        });
    }

    /// Sends a run's event to the registry, and what it changes to
    /// watching dashboards.
    pub(super) fn forward(&self, event: RunEvent) {
        let started_at = self.state.started_at();
        let change = news::change_of(&event, started_at);
        self.deps.events.do_send(SessionEvent {
            session_key: self.key.clone(),
            verbose: self.view().verbose(),
            event,
        });
        if let Some(change) = change {
            self.tell(change);
        }
    }
}

/// The live-sessions gauge counts session state held in memory.
impl Drop for SessionActor {
    fn drop(&mut self) {
        self.deps
            .metrics
            .sessions_live
            .fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    }
}

impl Actor for SessionActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        let _span = self.span.clone().entered();
        let check = (self.deps.idle_stop / 4).max(Duration::from_millis(50));
        ctx.run_interval(check, |act, ctx| {
            if act.state.idle() && act.idle.expired(act.deps.idle_stop) {
                if let Some(to) = &act.idle.to {
                    to.do_send(SessionIdle {
                        key: act.key.to_string(),
                        session: ctx.address(),
                    });
                }
            }
        });
        let entries =
            transcript::entries(&self.deps.store, &self.entry.session_id).unwrap_or_default();
        if entries.is_empty() {
            let header = transcript::session_header(&self.entry.session_id, &self.deps.workspace);
            if let Err(e) = transcript::append(&self.deps.store, &self.entry.session_id, &[header])
            {
                tracing::error!(session_key = %self.key, error = %e, "cannot write the session header");
            }
        } else {
            self.history = History::load(&entries);
            for e in &entries {
                if let (Some(m), Some(r)) = (
                    e.get("messageId").and_then(Value::as_str),
                    e.get("runId").and_then(Value::as_str),
                ) {
                    self.state.remember(m, r);
                }
            }
        }
        self.recover(&entries, ctx);
    }
}

/// A message's context: its channel and chat type. An operator's channel
/// message is recorded on `entry` as the session's last route (written
/// with the message's run at its end); a stranger's never is, so nothing
/// sent to "the last chat" (heartbeat, hooks) goes to a stranger.
fn message_context(key: &SessionKey, entry: &mut SessionEntry, msg: &mut SendChat) -> MsgContext {
    let chat_type = match crate::context::is_private(key) {
        true => ChatType::Direct,
        false => ChatType::Group,
    };
    let channel = match msg.origin.take() {
        Some(o) => {
            let channel = o.channel.clone();
            if !msg.untrusted {
                entry.origin = Some(o);
            }
            channel
        }
        None => channel_of_key(key).to_string(),
    };
    let authorized = msg.command_authorized;
    let mut mctx = MsgContext::new(&msg.text, &channel, chat_type, authorized, crate::now_ms());
    mctx.media = std::mem::take(&mut msg.media);
    if let Some(c) = msg.commands.take() {
        mctx.body_for_commands = c;
    }
    mctx
}

/// The settings a message to the session `key` sets for its run: its
/// own, its route, and the channels whose tool layers apply (the turn that
/// sent it and its own: its origin's, else the key's).
fn overrides_of(msg: &mut SendChat, key: &SessionKey) -> RunOverrides {
    let origin = msg.origin.as_ref().map(|o| o.channel.clone());
    let channel = origin.as_deref().unwrap_or_else(|| channel_of_key(key));
    let mut channels = std::mem::take(&mut msg.channels);
    if !channels.iter().any(|c| c == channel) {
        channels.push(channel.to_string());
    }
    RunOverrides {
        route: msg.origin.clone(),
        thinking: msg.thinking.take(),
        untrusted: msg.untrusted,
        model: msg.model.take(),
        channel: origin,
        channels,
        lane: msg.lane.take(),
        tools_allow: msg.tools_allow.take(),
        kind: msg.kind,
        ..Default::default()
    }
}

/// The directives a message carries, when its sender may use them (and
/// it has no images). Parsed from `body_for_commands` (a voice note's
/// transcript, else the text); inline directives in a transcript stay in
/// its block.
fn parse_directives(
    mctx: &MsgContext,
    no_images: bool,
) -> Result<Parsed, directives::DirectiveError> {
    if !mctx.command_authorized || !no_images {
        return Ok(Parsed::Plain);
    }
    let spoken = mctx.body_for_commands != mctx.body;
    match directives::parse(&mctx.body_for_commands) {
        Ok(Parsed::Inline { .. }) if spoken => Ok(Parsed::Plain),
        p => p,
    }
}

impl Handler<SendChat> for SessionActor {
    type Result = ResponseFuture<Result<SendAck, TranscriptError>>;
    fn handle(&mut self, mut msg: SendChat, ctx: &mut Context<Self>) -> Self::Result {
        let _span = self.span.clone().entered();
        self.idle.touch();
        let message_id = std::mem::take(&mut msg.run_id);
        if let Some((run_id, live)) = self.state.duplicate(&message_id) {
            let status = SendStatus::Duplicate { live };
            return commands::acked(None, SendAck::of(&self.entry, run_id.into(), status));
        }
        if let Some(why) = msg.fresh.and_then(|p| self.entry.stale_now(&p)) {
            tracing::info!(reason = ?why, "session reset by its reset policy");
            let _ = (self.reset()).inspect_err(|e| tracing::error!(error = %e, "cannot reset"));
        }
        let source = self.view().source_of(msg.origin.as_ref());
        let mut overrides = overrides_of(&mut msg, &self.key);
        let mut mctx = message_context(&self.key, &mut self.entry, &mut msg);
        let parsed = parse_directives(&mctx, msg.images.is_empty());
        let run_id = message_id.clone();
        let agent_text = match parsed {
            Err(answer) => return self.directive_reply(run_id, answer.to_string()),
            Ok(Parsed::Commands(list)) => {
                self.state.remember(&message_id, &run_id);
                // Answered under the send policy it came under (`/send off` is).
                let before = self.entry.send_policy.clone();
                let reply = self.commands(run_id, list, ctx);
                return Box::pin(async move {
                    Ok(SendAck {
                        send_policy: before,
                        ..reply.await?
                    })
                });
            }
            Ok(Parsed::Inline { directives, rest }) => {
                let view = self.view();
                if let Err(answer) = commands::inline(&view, directives, &mut overrides) {
                    return self.directive_reply(run_id, answer.to_string());
                }
                rest
            }
            Ok(Parsed::Plain) => mctx.body.clone(),
        };
        // A stranger's text reaches the model as data; `body` keeps it raw.
        let agent_text = match overrides.untrusted {
            true => crate::trust::wrap(&source, &agent_text),
            false => agent_text,
        };
        // People see `shown` when it has one (the typed words, no blocks).
        mctx.stamp(&agent_text, self.deps.context.envelope);
        if let Some(shown) = msg.shown.take() {
            mctx.body = shown;
        }
        let incoming = Incoming {
            message_id: message_id.to_string(),
            text: mctx.body_for_agent.clone(),
            shown: (mctx.body != mctx.body_for_agent).then(|| mctx.body.clone()),
            images: msg.images,
            overrides,
            timeout_ms: msg.timeout.map(|t| t.as_millis() as u64),
        };
        self.accept(mctx, incoming, ctx)
    }
}

impl Handler<AbortSession> for SessionActor {
    type Result = MessageResult<AbortSession>;
    fn handle(&mut self, _: AbortSession, _: &mut Context<Self>) -> Self::Result {
        let _span = self.span.clone().entered();
        self.idle.touch();
        MessageResult(self.abort_active())
    }
}

impl Handler<GetTranscript> for SessionActor {
    type Result = Result<Vec<Value>, TranscriptError>;
    fn handle(&mut self, _: GetTranscript, _: &mut Context<Self>) -> Self::Result {
        let _span = self.span.clone().entered();
        transcript::entries(&self.deps.store, &self.entry.session_id)
    }
}

impl Handler<GetEffectiveTools> for SessionActor {
    type Result = MessageResult<GetEffectiveTools>;
    fn handle(&mut self, _: GetEffectiveTools, _: &mut Context<Self>) -> Self::Result {
        let _span = self.span.clone().entered();
        MessageResult(self.view().offered_tools())
    }
}

impl Handler<GetPendingInputs> for SessionActor {
    type Result = MessageResult<GetPendingInputs>;
    fn handle(&mut self, _: GetPendingInputs, _: &mut Context<Self>) -> Self::Result {
        let _span = self.span.clone().entered();
        let waiting = self.state.queue.items().map(|i| PendingInput {
            message_id: i.message_id.clone(),
            run_id: i.run_id.clone(),
            accepted_at: i.at_ms,
        });
        MessageResult(waiting.collect())
    }
}

impl Handler<GetEntry> for SessionActor {
    type Result = MessageResult<GetEntry>;
    fn handle(&mut self, _: GetEntry, _: &mut Context<Self>) -> Self::Result {
        let _span = self.span.clone().entered();
        MessageResult((self.entry.clone(), self.state.active_id().is_some()))
    }
}

impl Handler<PatchSession> for SessionActor {
    type Result = ResponseFuture<Result<SessionEntry, SessionError>>;
    fn handle(&mut self, msg: PatchSession, _: &mut Context<Self>) -> Self::Result {
        let _span = self.span.clone().entered();
        self.idle.touch();
        let p = msg.patch;
        let result = validate_patch(&p).and_then(|()| {
            if let Some(Some(m)) = &p.model {
                if self.entry.model_override.as_deref() != Some(m.as_str()) {
                    // A new model starts without the old provider's profile.
                    self.entry.auth_profile_override = None;
                }
            }
            let e = &mut self.entry;
            for (field, value) in [
                (&mut e.label, p.label),
                (&mut e.thinking_level, p.thinking_level),
                (&mut e.verbose_level, p.verbose_level),
                (&mut e.model_override, p.model),
                (&mut e.send_policy, p.send_policy),
                (&mut e.reasoning_level, p.reasoning_level),
                (&mut e.response_usage, p.response_usage),
                (&mut e.exec_host, p.exec_host),
                (&mut e.exec_node, p.exec_node),
                (&mut e.exec_security, p.exec_security),
                (&mut e.exec_ask, p.exec_ask),
            ] {
                if let Some(v) = value {
                    *field = v;
                }
            }
            self.save_entry()?;
            Ok(self.entry.clone())
        });
        when_flushed(self.deps.store.clone(), result)
    }
}

impl Handler<PutProgressCard> for SessionActor {
    type Result = ResponseFuture<Result<Option<super::card::ProgressCard>, CardPutError>>;
    fn handle(&mut self, msg: PutProgressCard, _: &mut Context<Self>) -> Self::Result {
        let _span = self.span.clone().entered();
        self.idle.touch();
        let card = super::card::apply(self.entry.progress_card.as_ref(), msg.put, crate::now_ms());
        let result = card.map_err(CardPutError::from).and_then(|card| {
            self.entry.progress_card = card.clone();
            self.save_entry()?;
            Ok(card)
        });
        let store = self.deps.store.clone();
        Box::pin(async move {
            let card = result?;
            store.flush().await?;
            Ok(card)
        })
    }
}

impl Handler<ResetSession> for SessionActor {
    type Result = ResponseFuture<Result<SessionEntry, SessionError>>;
    fn handle(&mut self, _: ResetSession, _: &mut Context<Self>) -> Self::Result {
        let _span = self.span.clone().entered();
        self.idle.touch();
        let result = self.reset().map(|_| self.entry.clone());
        when_flushed(self.deps.store.clone(), result)
    }
}

impl Handler<InjectNote> for SessionActor {
    type Result = ResponseFuture<Result<String, SessionError>>;
    fn handle(&mut self, msg: InjectNote, _: &mut Context<Self>) -> Self::Result {
        let _span = self.span.clone().entered();
        self.idle.touch();
        let text = match &msg.label {
            Some(l) => format!("[{l}]\n\n{}", msg.text),
            None => msg.text,
        };
        let entry = transcript::build::injected(&text);
        let id = entry
            .get("id")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let stored = self
            .commit(vec![entry], Vec::new())
            .map_err(SessionError::from);
        when_flushed(self.deps.store.clone(), stored.map(|_| id))
    }
}

impl Handler<GetStatus> for SessionActor {
    type Result = ResponseFuture<String>;
    fn handle(&mut self, _: GetStatus, ctx: &mut Context<Self>) -> Self::Result {
        let _span = self.span.clone().entered();
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.with_context_files(ctx, move |act, files, _| {
            let text = match files {
                Some(f) => {
                    commands::status(&act.view(), &f, &act.history, &act.state.queue.settings)
                }
                None => commands::UNREADABLE.to_string(),
            };
            let _ = tx.send(text);
        });
        Box::pin(async move {
            rx.await
                .unwrap_or_else(|_| commands::UNREADABLE.to_string())
        })
    }
}

impl Handler<SteerSession> for SessionActor {
    type Result = bool;
    fn handle(&mut self, msg: SteerSession, _: &mut Context<Self>) -> bool {
        let _span = self.span.clone().entered();
        self.idle.touch();
        self.state.steer(msg.text)
    }
}

impl Handler<StopIfIdle> for SessionActor {
    type Result = bool;
    fn handle(&mut self, _: StopIfIdle, ctx: &mut Context<Self>) -> bool {
        let _span = self.span.clone().entered();
        let idle = self.state.idle() && self.idle.expired(self.deps.idle_stop);
        if idle {
            ctx.stop();
        }
        idle
    }
}

impl Handler<CloseSession> for SessionActor {
    type Result = ();
    fn handle(&mut self, _: CloseSession, ctx: &mut Context<Self>) {
        let _span = self.span.clone().entered();
        self.abort_active();
        let why = "the session was deleted before this message ran";
        let (writes, events) = self.state.end_queued(why, true, crate::now_ms());
        if let Err(e) = self.deps.store.commit(&writes) {
            tracing::error!(session_key = %self.key, error = %e, "cannot end the queued runs");
        }
        for e in events {
            self.forward(e);
        }
        ctx.stop();
    }
}

impl Handler<CheckQueue> for SessionActor {
    type Result = ();
    fn handle(&mut self, _: CheckQueue, ctx: &mut Context<Self>) {
        let _span = self.span.clone().entered();
        self.next_turn(ctx);
    }
}
