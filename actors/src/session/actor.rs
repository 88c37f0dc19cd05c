//! `SessionActor`: the struct, its lifecycle (start, recovery on start,
//! idle stop) and its handlers; each concern's methods are in the sibling
//! files (`delivery.rs`, `runs.rs`, `supervision.rs`, `recovery.rs`,
//! `commands.rs`, `compaction.rs`).

use crate::ids::RunId;
use crate::ids::SessionKey;
use std::sync::Arc;
use std::time::Instant;

use actix::prelude::*;
use serde_json::Value;

use super::state::Incoming;
use super::*;

pub struct SessionActor {
    /// `session` span (session_key, agent_id), entered by the handlers.
    pub(super) span: tracing::Span,
    pub(super) key: SessionKey,
    pub(super) agent_id: String,
    pub(super) entry: SessionEntry,
    pub(super) deps: Arc<SessionDeps>,
    pub(super) lane: Addr<LaneActor>,
    /// Every lane, for a run that names its own (`RunOverrides::lane`).
    pub(super) lanes: Option<crate::lane::Lanes>,
    /// The queue, the active run's bookkeeping and the message ids seen
    /// (`state.rs`: pure; this actor applies what its transitions say).
    pub(super) state: SessionState,
    /// The active run's actor, once launched.
    pub(super) run: Option<Addr<RunActor>>,
    /// The active run's lane slot (released when it ends).
    pub(super) permit: Option<SlotPermit>,
    /// The model context: every delivered message, oldest first. Loaded from
    /// the store at start, then kept in step with every message written.
    pub(super) history: Messages,
    /// The model the transcript's last `model_change` names.
    pub(super) transcript_model: Option<String>,
    pub(super) last_activity: Instant,
    pub(super) idle_to: Option<Recipient<SessionIdle>>,
    /// Provider-counted tokens per estimated token (from the last run).
    pub(super) calibration: f64,
    /// When the last model call ended (the pruning TTL counts from it).
    pub(super) last_call_at: Option<Instant>,
    /// Characters of the last run's system prompt.
    pub(super) prompt_chars: usize,
    /// The estimated tokens of `history`, kept in step with it.
    pub(super) history_tokens: u64,
    /// System events waiting for the next trusted turn (loaded on first
    /// use; this session is their only writer).
    pub(super) system_events: Option<Vec<(String, super::system_events::SystemEvent)>>,
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
        let agent_id = crate::ids::key::agent(&key).to_string();
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
            agent_id,
            entry,
            run: None,
            permit: None,
            lane: deps.lane.clone(),
            lanes: None,
            deps,
            history: Vec::new(),
            transcript_model: None,
            last_activity: Instant::now(),
            idle_to: None,
            calibration: 1.0,
            last_call_at: None,
            prompt_chars: 0,
            history_tokens: 0,
            system_events: None,
        }
    }

    /// Runs in `lanes.for_key(key)` instead of the default one, and in a
    /// lane a run names when it names one.
    pub fn in_lanes(mut self, lanes: &crate::lane::Lanes) -> SessionActor {
        self.lane = lanes.for_key(&self.key).clone();
        self.lanes = Some(lanes.clone());
        self
    }

    /// Runs in `lane` instead of the default one.
    pub fn in_lane(mut self, lane: Addr<LaneActor>) -> SessionActor {
        self.lane = lane;
        self
    }

    /// Where to report idleness (the router).
    pub fn idle_to(mut self, to: Recipient<SessionIdle>) -> SessionActor {
        self.idle_to = Some(to);
        self
    }

    pub(super) fn verbose(&self) -> String {
        self.state
            .active()
            .and_then(|a| a.overrides.verbose.clone())
            .or_else(|| self.entry.verbose_level.clone())
            .unwrap_or_else(|| self.deps.verbose_default.clone())
    }

    pub(super) fn reasoning(&self) -> &str {
        self.state
            .active()
            .and_then(|a| a.overrides.reasoning.as_deref())
            .or(self.entry.reasoning_level.as_deref())
            .unwrap_or("stream")
    }

    /// The session's exec settings over the configured defaults. A turn
    /// with a message from an untrusted sender runs its commands in the
    /// sandbox when there is one, else not at all: never on the host.
    pub(super) fn exec_policy(&self, untrusted: bool) -> crate::approvals::ExecPolicy {
        use crate::approvals::{Host, Security};
        let mut p = self.configured_exec_policy();
        if untrusted {
            let sandboxed =
                self.deps.tool_policy.exec.sandbox.mode != crate::tool::sandbox::Mode::Off;
            if sandboxed {
                p.host = Host::Sandbox;
            } else {
                p.security = Security::Deny;
            }
        }
        p
    }

    fn configured_exec_policy(&self) -> crate::approvals::ExecPolicy {
        use crate::approvals::{Ask, Host, Security};
        let d = &self.deps.tool_policy.exec;
        let e = &self.entry;
        crate::approvals::ExecPolicy {
            host: e
                .exec_host
                .as_deref()
                .and_then(|h| Host::parse(h).ok())
                .or(d.host)
                .unwrap_or_else(|| d.sandbox.host_for(&self.key)),
            security: e
                .exec_security
                .as_deref()
                .and_then(|s| Security::parse(s).ok())
                .unwrap_or(d.security),
            ask: e
                .exec_ask
                .as_deref()
                .and_then(|a| Ask::parse(a).ok())
                .unwrap_or(d.ask),
            node: e
                .exec_node
                .as_deref()
                .or(d.node.as_deref())
                .map(std::sync::Arc::from),
        }
    }

    /// The agent answering this session (`/agent` override, else the key's).
    pub(super) fn agent(&self) -> &str {
        self.entry
            .agent_override
            .as_deref()
            .unwrap_or(&self.agent_id)
    }

    pub(super) fn thinking_level(&self, run: Option<&str>) -> String {
        run.map(str::to_string)
            .or_else(|| self.entry.thinking_level.clone())
            .unwrap_or_else(|| self.deps.thinking_default.clone())
    }

    /// Writes the session entry (the caller flushes at its durability point).
    pub(super) fn save_entry(&mut self) -> Result<(), StoreError> {
        self.entry.updated_at = crate::now_ms();
        self.deps.store.put(Tree::Sessions, &self.key, &self.entry)
    }

    /// Stores a message entry; a delivered one joins the model context too.
    /// Pending (queued) messages stay out of it until a turn delivers them.
    pub(super) fn append(&mut self, message: Value, pending: bool) -> Result<(), TranscriptError> {
        let mut entry = transcript::message_entry(None, message);
        if pending {
            transcript::mark_pending(&mut entry);
        }
        self.append_entry(entry)
    }

    /// Replaces the model context (load, reset, compaction) and its
    /// token estimate.
    pub(super) fn set_history(&mut self, history: Messages) {
        self.history_tokens = history
            .iter()
            .map(|m| crate::compaction::tokens::estimate(m))
            .sum();
        self.history = history;
    }

    pub(super) fn append_entry(&mut self, entry: Value) -> Result<(), TranscriptError> {
        self.commit(vec![entry], Vec::new())
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
        for entry in entries
            .iter()
            .filter(|e| !transcript::Entry::of(e).is_pending())
        {
            if let Some(m) = transcript::to_chat(entry) {
                self.history_tokens += crate::compaction::tokens::estimate(&m);
                self.history.push(std::sync::Arc::new(m));
            }
        }
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
        let running = self.state.active().is_some_and(|a| {
            a.launched
                && !matches!(&change, SessionChange::RunSettled { run_id, .. } if *run_id == a.run_id)
        });
        self.deps.news.do_send(SessionNews {
            session_key: self.key.clone(),
            entry: std::sync::Arc::new(self.entry.clone()),
            running,
            change,
        });
    }

    /// Ends `run_id` with `text` as its answer (a directive's, `/compact`'s).
    pub(super) fn forward_answer(&self, run_id: RunId, text: String) {
        self.forward(RunEvent::Final {
            run_id,
            outcome: crate::run::Outcome::Text(text),
            stop_reason: crate::provider::StopReason::Stop,
            usage: Default::default(),
        });
    }

    pub(super) fn forward(&self, event: RunEvent) {
        let started_at = self.state.active().map_or(0, |a| a.started_at);
        let settled = |run_id: &str, status, error: Option<&str>| SessionChange::RunSettled {
            run_id: run_id.into(),
            status,
            started_at,
            ended_at: crate::now_ms(),
            error: error.map(String::from),
        };
        let change = match &event {
            RunEvent::Started { run_id } => Some(SessionChange::RunStarted {
                run_id: run_id.clone(),
                started_at,
            }),
            RunEvent::Final { run_id, .. } => Some(settled(run_id, Settled::Done, None)),
            RunEvent::Failed { run_id, error, .. } => {
                Some(settled(run_id, Settled::Failed, Some(error)))
            }
            RunEvent::Aborted { run_id, .. } => Some(settled(run_id, Settled::Killed, None)),
            _ => None,
        };
        self.deps.events.do_send(SessionEvent {
            session_key: self.key.clone(),
            verbose: self.verbose(),
            event,
        });
        if let Some(change) = change {
            self.tell(change);
        }
    }

    pub(super) fn idle(&self) -> bool {
        self.state.idle()
    }

    /// The active run is over: its state, actor and lane slot let go.
    pub(super) fn end_active(&mut self) -> Option<state::ActiveRun> {
        self.run = None;
        self.permit = None;
        self.state.end()
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
            if act.idle() && act.last_activity.elapsed() >= act.deps.idle_stop {
                if let Some(to) = &act.idle_to {
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
            self.transcript_model = entries
                .iter()
                .rev()
                .map(transcript::Entry::of)
                .find(|e| matches!(e, transcript::Entry::ModelChange { .. }))
                .and_then(|e| match e {
                    transcript::Entry::ModelChange {
                        provider: Some(p),
                        model_id: Some(m),
                    } => Some(format!("{p}/{m}")),
                    _ => None,
                });
            self.set_history(crate::compaction::stored::load_history(&entries).0);
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

impl SessionActor {
    /// A message's context: its channel (a channel's origin is recorded on
    /// the entry) and chat type.
    fn message_context(&mut self, msg: &mut SendChat) -> MsgContext {
        let chat_type = if crate::context::is_private(&self.key) {
            ChatType::Direct
        } else {
            ChatType::Group
        };
        let channel = self.take_origin(msg.origin.take(), msg.untrusted);
        let authorized = msg.command_authorized;
        let mut mctx = MsgContext::new(&msg.text, &channel, chat_type, authorized, crate::now_ms());
        mctx.media = std::mem::take(&mut msg.media);
        if let Some(c) = msg.commands.take() {
            mctx.body_for_commands = c;
        }
        mctx
    }

    /// Puts the agent's text behind the envelope; what people see of the
    /// message becomes `shown` when it has one (the typed words, without
    /// the attachments' blocks only the model reads).
    fn stamp(&self, mctx: &mut MsgContext, agent_text: &str, shown: Option<String>) {
        mctx.stamp(agent_text, self.deps.context.envelope);
        if let Some(shown) = shown {
            mctx.body = shown;
        }
    }

    /// The channel a message came by. An operator's channel message is
    /// recorded on the entry as the session's last route (written with the
    /// message's run at its end); a stranger's never is, so nothing sent to
    /// "the last chat" (heartbeat, hooks) goes to a stranger.
    fn take_origin(&mut self, origin: Option<crate::session::Origin>, untrusted: bool) -> String {
        match origin {
            Some(o) => {
                let channel = o.channel.clone();
                if !untrusted {
                    self.entry.origin = Some(o);
                }
                channel
            }
            None => channel_of_key(&self.key).to_string(),
        }
    }
}

/// The settings a message sets for its run: its own, and the channels
/// whose tool layers apply (the turn that sent it and its own `channel`).
fn overrides_of(msg: &mut SendChat, origin: Option<String>, channel: &str) -> RunOverrides {
    let mut channels = std::mem::take(&mut msg.channels);
    if !channels.iter().any(|c| c == channel) {
        channels.push(channel.to_string());
    }
    RunOverrides {
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

impl SessionActor {
    /// Where a message came from, as its untrusted-content block names it.
    fn source_of(&self, origin: Option<&crate::session::Origin>) -> String {
        match origin {
            Some(o) => format!("{} {} chat {}", o.channel, o.chat_type, o.to),
            None => format!("{} ({})", channel_of_key(&self.key), self.key),
        }
    }
}

/// The directives a message carries, when its sender may use them (and
/// it has no images). Parsed from `body_for_commands` (a voice note's
/// transcript, else the text); inline directives in a transcript stay in
/// its block.
fn parse_directives(mctx: &MsgContext, no_images: bool) -> Result<Parsed, String> {
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
        self.last_activity = Instant::now();
        let message_id = std::mem::take(&mut msg.run_id);
        if let Some((run_id, live)) = self.state.duplicate(&message_id) {
            return Box::pin(async move {
                Ok(SendAck {
                    run_id: run_id.into(),
                    status: SendStatus::Duplicate { live },
                })
            });
        }
        let source = self.source_of(msg.origin.as_ref());
        let channel = msg.origin.as_ref().map(|o| o.channel.clone());
        let route = msg.origin.clone();
        let mut mctx = self.message_context(&mut msg);
        let parsed = parse_directives(&mctx, msg.images.is_empty());
        let mut overrides = overrides_of(&mut msg, channel, &mctx.channel);
        overrides.route = route;
        let run_id = message_id.clone();
        let agent_text = match parsed {
            Err(answer) => return self.directive_reply(run_id, answer),
            Ok(Parsed::Commands(list)) => {
                self.state.remember(&message_id, &run_id);
                match list.as_slice() {
                    [Directive::Compact(instructions)] => {
                        return self.compact(run_id, instructions.clone(), ctx)
                    }
                    [Directive::Btw(q)] => return self.side_question(run_id, q.clone(), ctx),
                    _ => {}
                }
                if list.iter().any(Directive::reads_files) {
                    return self.commands_with_files(run_id, list, ctx);
                }
                let answer = self.apply_commands(list, None);
                return self.directive_reply(run_id, answer);
            }
            Ok(Parsed::Inline { directives, rest }) => {
                if let Err(answer) = self.inline_overrides(directives, &mut overrides) {
                    return self.directive_reply(run_id, answer);
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
        self.stamp(&mut mctx, &agent_text, msg.shown.take());
        let incoming = Incoming {
            message_id: message_id.to_string(),
            text: mctx.body_for_agent.clone(),
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
        self.last_activity = Instant::now();
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

impl Handler<GetEntry> for SessionActor {
    type Result = MessageResult<GetEntry>;
    fn handle(&mut self, _: GetEntry, _: &mut Context<Self>) -> Self::Result {
        let _span = self.span.clone().entered();
        MessageResult((self.entry.clone(), self.state.active().is_some()))
    }
}

impl Handler<PatchSession> for SessionActor {
    type Result = ResponseFuture<Result<SessionEntry, SessionError>>;
    fn handle(&mut self, msg: PatchSession, _: &mut Context<Self>) -> Self::Result {
        let _span = self.span.clone().entered();
        self.last_activity = Instant::now();
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

impl Handler<ResetSession> for SessionActor {
    type Result = ResponseFuture<Result<SessionEntry, SessionError>>;
    fn handle(&mut self, _: ResetSession, _: &mut Context<Self>) -> Self::Result {
        let _span = self.span.clone().entered();
        self.last_activity = Instant::now();
        let result = self.reset().map(|_| self.entry.clone());
        when_flushed(self.deps.store.clone(), result)
    }
}

impl Handler<InjectNote> for SessionActor {
    type Result = ResponseFuture<Result<String, SessionError>>;
    fn handle(&mut self, msg: InjectNote, _: &mut Context<Self>) -> Self::Result {
        let _span = self.span.clone().entered();
        self.last_activity = Instant::now();
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
        let stored = self.append_entry(entry).map_err(SessionError::from);
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
                Some(f) => act.status_text(&f),
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
        self.last_activity = Instant::now();
        self.state.steer(msg.text)
    }
}

impl Handler<StopIfIdle> for SessionActor {
    type Result = bool;
    fn handle(&mut self, _: StopIfIdle, ctx: &mut Context<Self>) -> bool {
        let _span = self.span.clone().entered();
        let idle = self.idle() && self.last_activity.elapsed() >= self.deps.idle_stop;
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
