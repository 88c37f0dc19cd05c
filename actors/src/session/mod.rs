//! SessionActor: one conversation (session key), the single writer of its
//! transcript, its session entry (overrides, sticky auth profile, token
//! counts) and its inbox (`inbox.rs`). A message is written to the store
//! (transcript entry, inbox item, run record) and flushed before it is
//! acknowledged, and the acknowledgement names the run that answers it.
//! Messages that arrive while the session is busy (a run is active or
//! messages wait) follow the queue mode (`queue.rs`): steered into the run,
//! queued (coalesced for collect), or interrupting it; they run in the order
//! they were acknowledged. Queued ones are stored as `delivery: pending`
//! transcript entries (kept out of the model context) until their turn.
//! A steered message waits here until the run takes it at a steering point
//! (`TakeSteers`). When a run ends, its record and the removal of its inbox
//! items land in one store transaction; at start, items left assigned to a
//! run mark that run interrupted and queued ones run again, in order.
//! A run takes a slot of its lane, runs as a `RunActor` whose events come
//! back here: conversation messages are persisted, everything is forwarded
//! to the session's event recipient. Supervision: a run that fails in a way
//! a retry can fix (transient provider error after failover, its task gone,
//! a panic) is restarted from the last persisted step, at most
//! `RestartPolicy::max` times with doubling backoff; completed tool calls
//! are in the transcript and never run again. The session always takes the
//! next message, whatever way the run ended.
//!
//! Files: `messages.rs` (its inbox of actix messages), `entry.rs` (the
//! stored entry, the model plan), `delivery.rs` (the delivery contract),
//! `runs.rs` (the active run and its events), `commands.rs` (directives),
//! `tests.rs`; this file holds the actor's state and small handlers.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::prelude::*;
use serde_json::{json, Value};

use crate::context::{channel_of_key, AgentContext};
use crate::inbound::msg_context::{ChatType, MsgContext};
use crate::lane::{LaneActor, SlotPermit};
use crate::provider::hub::ProviderHub;
use crate::provider::selection::ModelRef;
use crate::provider::{ChatMessage, Image, Messages, ToolSpec};
use crate::run::{FailureKind, RunActor, RunEvent};
use crate::runs::SessionEvent;
pub use crate::session::queue::RunOverrides;
use crate::session::queue::{parse_queue_directive, QueueSettings, SessionQueue};
use crate::store::{Store, StoreError, StoreWrite, Tree};
use crate::tool::ExecuteTool;
use crate::transcript::{self, TranscriptError};
use directives::{Directive, Parsed};

/// Replies with `result` once the store is flushed (the durability point
/// of patch, reset and inject).
fn when_flushed<T: 'static>(
    store: Store,
    result: Result<T, SessionError>,
) -> ResponseFuture<Result<T, SessionError>> {
    Box::pin(async move {
        let value = result?;
        store.flush().await?;
        Ok(value)
    })
}

/// How failed runs are restarted.
#[derive(Debug, Clone, Copy)]
pub struct RestartPolicy {
    /// Restarts after the first try.
    pub max: u32,
    /// Wait before the first restart; doubles each time.
    pub backoff: Duration,
}

/// What a session needs from the tree. Built once and shared by every
/// session (`Arc`): a live session costs its own state, not a copy of this.
#[derive(Clone)]
pub struct SessionDeps {
    pub store: Store,
    pub hub: Addr<ProviderHub>,
    pub executor: Recipient<ExecuteTool>,
    /// The lane of sessions whose key names no other (the router picks per key).
    pub lane: Addr<LaneActor>,
    pub events: Recipient<SessionEvent>,
    pub models: std::sync::Arc<ModelPlan>,
    pub thinking_default: String,
    pub verbose_default: String,
    /// Prompt and skills: workspace files, skill config, envelope.
    pub context: Arc<AgentContext>,
    pub tools: Arc<[ToolSpec]>,
    /// Where a sub-agent's session reports its run's end (set once the
    /// session tools actor exists).
    pub subagent_done: Arc<std::sync::OnceLock<Recipient<SubagentDone>>>,
    /// Allowlists, hooks and the result cap applied to every run's tools.
    pub tool_policy: Arc<crate::tool::policy::ToolPolicy>,
    /// Tokens of the model's context window (`/status`).
    pub context_window: u64,
    pub timeout: Duration,
    pub max_model_calls: u32,
    pub queue: QueueSettings,
    pub restart: RestartPolicy,
    /// An idle session (no run, nothing queued) stops after this long.
    pub idle_stop: Duration,
    pub workspace: String,
    pub metrics: Arc<crate::metrics::Metrics>,
}

struct Active {
    run_id: String,
    run: Option<Addr<RunActor>>,
    permit: Option<SlotPermit>,
    /// Steered messages the run has not taken yet (it asks at its next
    /// steering point).
    steers: std::collections::VecDeque<String>,
    /// The run said it has its final answer and nothing was waiting:
    /// messages from now on queue instead of steering.
    closing: bool,
    /// A `/compact` in progress (busy, but no run to steer into).
    compaction: bool,
    /// Inbox keys of the messages this run answers (removed when it ends).
    items: Vec<String>,
    aborted: bool,
    /// Restarts so far (supervision).
    restarts: u32,
    overrides: RunOverrides,
    timeout: Option<Duration>,
    started_at: u64,
    /// Reasoning held back until the end (`/reasoning on`).
    reasoning: String,
}

impl Active {
    /// A run that answers the inbox `items`, not started yet.
    fn new(
        run_id: String,
        items: Vec<String>,
        overrides: RunOverrides,
        timeout: Option<Duration>,
    ) -> Active {
        Active {
            run_id,
            run: None,
            permit: None,
            steers: Default::default(),
            closing: false,
            compaction: false,
            items,
            aborted: false,
            restarts: 0,
            overrides,
            timeout,
            started_at: crate::now_ms(),
            reasoning: String::new(),
        }
    }
}

/// Written after a user message whose run a gateway stop cut off.
pub const INTERRUPTED_NOTE: &str =
    "The gateway stopped before this message was answered. Send it again to retry.";

fn preview(text: &str) -> String {
    let one: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    one.chars().take(120).collect()
}

fn check_level(field: &str, v: &str, allowed: &[&str]) -> Result<(), SessionError> {
    if allowed.contains(&v) {
        Ok(())
    } else {
        Err(SessionError::Invalid(format!(
            "invalid {field} {v:?} (one of {})",
            allowed.join(", ")
        )))
    }
}

/// Checks every field of a patch before any is applied.
fn validate_patch(p: &SessionPatch) -> Result<(), SessionError> {
    type Level<'a> = (&'a str, &'a Option<Option<String>>, &'a [&'a str]);
    let levels: [Level; 8] = [
        ("thinkingLevel", &p.thinking_level, THINKING_LEVELS),
        ("verboseLevel", &p.verbose_level, VERBOSE_LEVELS),
        ("sendPolicy", &p.send_policy, &["allow", "deny"]),
        (
            "reasoningLevel",
            &p.reasoning_level,
            directives::REASONING_LEVELS,
        ),
        ("responseUsage", &p.response_usage, directives::USAGE_LEVELS),
        ("execHost", &p.exec_host, &["gateway", "sandbox"]),
        (
            "execSecurity",
            &p.exec_security,
            &["deny", "allowlist", "full"],
        ),
        ("execAsk", &p.exec_ask, &["off", "on-miss", "always"]),
    ];
    for (field, value, allowed) in levels {
        if let Some(Some(l)) = value {
            check_level(field, l, allowed)?;
        }
    }
    if let Some(Some(l)) = &p.label {
        if l.chars().count() > 100 {
            let e = "invalid label: longer than 100 characters";
            return Err(SessionError::Invalid(e.to_string()));
        }
    }
    if let Some(Some(m)) = &p.model {
        ModelRef::parse(m).map_err(|e| SessionError::Invalid(format!("invalid model: {e}")))?;
    }
    Ok(())
}

pub use crate::session::directives::{THINKING_LEVELS, VERBOSE_LEVELS};

mod commands;
pub mod compaction;
mod delivery;
pub mod directives;
mod entry;
pub mod inbox;
mod messages;
pub mod queue;
mod recovery;
mod runs;
mod supervision;
pub mod system_events;
use delivery::RecentIds;
pub use entry::{ModelPlan, SessionEntry};
pub use messages::*;
use runs::run_id_of;

pub struct SessionActor {
    /// `session` span (session_key, agent_id), entered by the handlers.
    span: tracing::Span,
    key: String,
    agent_id: String,
    entry: SessionEntry,
    deps: Arc<SessionDeps>,
    lane: Addr<LaneActor>,
    queue: SessionQueue,
    active: Option<Active>,
    /// A queue check is scheduled (a collected run waits out its debounce).
    check_scheduled: bool,
    seen: RecentIds,
    /// The model context: every delivered message, oldest first. Loaded from
    /// the store at start, then kept in step with every message written.
    history: Messages,
    /// The model the transcript's last `model_change` names.
    transcript_model: Option<String>,
    last_activity: Instant,
    idle_to: Option<Recipient<SessionIdle>>,
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
        let agent_id = key.split(':').nth(1).unwrap_or("main").to_string();
        let base = deps.queue;
        let settings = entry
            .queue
            .as_deref()
            .and_then(|q| parse_queue_directive(q, base).ok())
            .unwrap_or(base);
        SessionActor {
            span: tracing::info_span!("session", session_key = %key, agent_id = %agent_id),
            key,
            agent_id,
            entry,
            queue: SessionQueue::new(settings),
            lane: deps.lane.clone(),
            deps,
            active: None,
            check_scheduled: false,
            seen: RecentIds::default(),
            history: Vec::new(),
            transcript_model: None,
            last_activity: Instant::now(),
            idle_to: None,
        }
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

    fn verbose(&self) -> String {
        self.active
            .as_ref()
            .and_then(|a| a.overrides.verbose.clone())
            .or_else(|| self.entry.verbose_level.clone())
            .unwrap_or_else(|| self.deps.verbose_default.clone())
    }

    fn reasoning(&self) -> &str {
        self.active
            .as_ref()
            .and_then(|a| a.overrides.reasoning.as_deref())
            .or(self.entry.reasoning_level.as_deref())
            .unwrap_or("stream")
    }

    /// The session's exec settings over the configured defaults.
    fn exec_policy(&self) -> crate::approvals::ExecPolicy {
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
        }
    }

    /// The agent answering this session (`/agent` override, else the key's).
    fn agent(&self) -> &str {
        self.entry
            .agent_override
            .as_deref()
            .unwrap_or(&self.agent_id)
    }

    fn thinking_level(&self, run: Option<&str>) -> String {
        run.map(str::to_string)
            .or_else(|| self.entry.thinking_level.clone())
            .unwrap_or_else(|| self.deps.thinking_default.clone())
    }

    /// Writes the session entry (the caller flushes at its durability point).
    fn save_entry(&mut self) -> Result<(), StoreError> {
        self.entry.updated_at = crate::now_ms();
        self.deps.store.put(Tree::Sessions, &self.key, &self.entry)
    }

    /// Stores a message entry; a delivered one joins the model context too.
    /// Pending (queued) messages stay out of it until a turn delivers them.
    fn append(&mut self, message: Value, pending: bool) -> Result<(), TranscriptError> {
        let mut entry = transcript::message_entry(None, message);
        if pending {
            transcript::mark_pending(&mut entry);
        }
        self.append_entry(entry)
    }

    fn append_entry(&mut self, entry: Value) -> Result<(), TranscriptError> {
        self.commit(vec![entry], Vec::new())
    }

    /// Appends transcript entries and applies `other` writes in one store
    /// transaction (the caller flushes at its durability point); delivered
    /// messages among the entries join the model context.
    fn commit(
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
            self.history
                .extend(transcript::to_chat(entry).map(std::sync::Arc::new));
        }
        Ok(())
    }

    fn forward(&self, event: RunEvent) {
        self.deps.events.do_send(SessionEvent {
            session_key: self.key.clone(),
            verbose: self.verbose(),
            event,
        });
    }

    fn idle(&self) -> bool {
        self.active.is_none() && self.queue.is_empty()
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
                        key: act.key.clone(),
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
            self.history = crate::session::compaction::load_history(&entries).0;
            for e in &entries {
                if let (Some(m), Some(r)) = (
                    e.get("messageId").and_then(Value::as_str),
                    e.get("runId").and_then(Value::as_str),
                ) {
                    self.seen.insert(m, r);
                }
            }
        }
        self.recover(&entries, ctx);
    }
}

impl Handler<SendChat> for SessionActor {
    type Result = ResponseFuture<Result<SendAck, TranscriptError>>;
    fn handle(&mut self, msg: SendChat, ctx: &mut Context<Self>) -> Self::Result {
        let _span = self.span.clone().entered();
        self.last_activity = Instant::now();
        let message_id = msg.run_id;
        if let Some(run_id) = self.seen.get(&message_id).cloned() {
            let live = self.is_live(&run_id);
            return Box::pin(async move {
                Ok(SendAck {
                    run_id,
                    status: SendStatus::Duplicate { live },
                })
            });
        }
        let chat_type = if crate::context::is_private(&self.key) {
            ChatType::Direct
        } else {
            ChatType::Group
        };
        let mut mctx = MsgContext::new(
            &msg.text,
            channel_of_key(&self.key),
            chat_type,
            msg.command_authorized,
            crate::now_ms(),
        );
        let parsed = if mctx.command_authorized && msg.images.is_empty() {
            directives::parse(&mctx.body_for_commands)
        } else {
            Ok(Parsed::Plain)
        };
        let mut overrides = RunOverrides {
            thinking: msg.thinking,
            ..Default::default()
        };
        let run_id = message_id.clone();
        let agent_text = match parsed {
            Err(answer) => return self.directive_reply(run_id, answer),
            Ok(Parsed::Commands(list)) => {
                self.seen.insert(&message_id, &run_id);
                if let [Directive::Compact(instructions)] = list.as_slice() {
                    return self.compact(run_id, instructions.clone(), ctx);
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
        mctx.stamp(&agent_text, self.deps.context.envelope);
        self.accept(message_id, mctx, msg.images, overrides, msg.timeout, ctx)
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
        MessageResult((self.entry.clone(), self.active.is_some()))
    }
}

impl Handler<PatchSession> for SessionActor {
    type Result = ResponseFuture<Result<SessionEntry, SessionError>>;
    fn handle(&mut self, msg: PatchSession, _: &mut Context<Self>) -> Self::Result {
        let _span = self.span.clone().entered();
        self.last_activity = Instant::now();
        let p = msg.0;
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
        let mut entry = transcript::message_entry(
            None,
            json!({ "role": "assistant", "content": [{ "type": "text", "text": text }],
                    "stopReason": "injected" }),
        );
        entry["injected"] = Value::Bool(true);
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
        if self.steerable().is_none() || !self.queue.is_empty() {
            return false;
        }
        if let Some(a) = self.active.as_mut() {
            a.steers.push_back(msg.text);
        }
        true
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
        let (writes, events) =
            self.end_queued("the session was deleted before this message ran", true);
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

#[cfg(test)]
mod tests;
