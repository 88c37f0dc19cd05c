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

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::agent_context::{channel_of_key, AgentContext};
use crate::directives::{self, Directive, Parsed};
use crate::inbox::{self, InboxItem};
use crate::lane::{AcquireSlot, LaneActor, SlotPermit};
use crate::msg_context::{ChatType, MsgContext};
use crate::provider::hub::ProviderHub;
use crate::provider::selection::{resolve_model, ModelChain, ModelRef};
use crate::provider::{thinking_budget, ChatMessage, Image, Messages, ToolSpec};
pub use crate::queue::RunOverrides;
use crate::queue::{
    parse_queue_directive, Placement, QueueSettings, RunView, SessionQueue, TurnPlan,
};
use crate::run::{AbortRun, ExecuteTool, FailureKind, RunActor, RunConfig, RunEvent, TakeSteers};
use crate::runs::RunRecord;
use crate::store::{Store, StoreError, StoreWrite, Tree};
use crate::transcript::{self, TranscriptError};

/// What the store keeps per session key (the `sessions` tree). Field names
/// follow OpenClaw's session store rows.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionEntry {
    pub session_id: String,
    pub created_at: u64,
    pub updated_at: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking_level: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verbose_level: Option<String>,
    /// `provider/model` chosen for this session (`sessions.patch model`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_override: Option<String>,
    /// The auth profile the session sticks to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth_profile_override: Option<String>,
    /// The provider and model of the last answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_provider: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// `/queue` arguments in force (mode and options).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send_policy: Option<String>,
    #[serde(default)]
    pub input_tokens: u64,
    #[serde(default)]
    pub output_tokens: u64,
    #[serde(default)]
    pub total_tokens: u64,
    #[serde(default)]
    pub aborted_last_run: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_message_preview: Option<String>,
    /// `/reasoning off|on|stream` (None: stream).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_level: Option<String>,
    /// `/usage off|tokens|full`: a usage line under each reply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_usage: Option<String>,
    /// `/agent <id>`: the agent that answers this session instead of the key's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_override: Option<String>,
    /// A sub-agent: the session that spawned it (results are announced there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spawned_by: Option<String>,
    /// `sessions.patch execHost` (`gateway` | `sandbox`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exec_host: Option<String>,
    /// `sessions.patch execSecurity` (`deny` | `allowlist` | `full`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exec_security: Option<String>,
    /// `sessions.patch execAsk` (`off` | `on-miss` | `always`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exec_ask: Option<String>,
    /// Skills this session's runs may use (a sub-agent's `skills`); None: all eligible.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skill_filter: Option<Vec<String>>,
    /// Sub-agent nesting depth (0 for sessions people talk to).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub spawn_depth: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl SessionEntry {
    pub fn new(now: u64) -> SessionEntry {
        SessionEntry {
            session_id: ulid::Ulid::generate().to_string(),
            created_at: now,
            updated_at: now,
            ..Default::default()
        }
    }

    /// The entry after `sessions.reset`: a new sessionId; the user's
    /// settings kept; the sticky profile, last model and counters cleared.
    fn renewed(&self, now: u64) -> SessionEntry {
        SessionEntry {
            created_at: self.created_at,
            label: self.label.clone(),
            thinking_level: self.thinking_level.clone(),
            verbose_level: self.verbose_level.clone(),
            model_override: self.model_override.clone(),
            send_policy: self.send_policy.clone(),
            queue: self.queue.clone(),
            reasoning_level: self.reasoning_level.clone(),
            response_usage: self.response_usage.clone(),
            agent_override: self.agent_override.clone(),
            spawned_by: self.spawned_by.clone(),
            exec_host: self.exec_host.clone(),
            exec_security: self.exec_security.clone(),
            exec_ask: self.exec_ask.clone(),
            spawn_depth: self.spawn_depth,
            skill_filter: self.skill_filter.clone(),
            ..SessionEntry::new(now)
        }
    }
}

/// Replies with `result` once the store is flushed (the durability point
/// of patch, reset and inject).
fn when_flushed<T: 'static>(
    store: Store,
    result: Result<T, String>,
) -> ResponseFuture<Result<T, String>> {
    Box::pin(async move {
        let value = result?;
        store.flush().await.map_err(|e| e.to_string())?;
        Ok(value)
    })
}

/// Which models a session's runs use: per agent and global, each a primary
/// and its fallbacks (`agents.defaults.model`, `agents.list[].model`).
#[derive(Debug, Clone, Default)]
pub struct ModelPlan {
    pub global: String,
    pub fallbacks: Vec<String>,
    /// agent id -> (primary, fallbacks).
    pub agents: HashMap<String, (String, Vec<String>)>,
}

impl ModelPlan {
    /// The models a run tries in order: the resolved model (session ->
    /// agent -> global), then the fallbacks, then the configured primary
    /// when an override was used. Duplicates and bad refs are dropped.
    pub fn candidates(
        &self,
        agent_id: &str,
        session: Option<&str>,
    ) -> Result<Vec<ModelRef>, String> {
        let agent = self.agents.get(agent_id);
        let (first, _) = resolve_model(
            &ModelChain {
                heartbeat: None,
                session,
                channel: None,
                agent: agent.map(|(p, _)| p.as_str()),
                global: &self.global,
            },
            false,
        )?;
        let fallbacks = match agent {
            Some((_, f)) if !f.is_empty() => f,
            _ => &self.fallbacks,
        };
        let primary = agent.map(|(p, _)| p.as_str()).unwrap_or(&self.global);
        let mut out = vec![first];
        for r in fallbacks.iter().map(String::as_str).chain([primary]) {
            match ModelRef::parse(r) {
                Ok(m) if !out.contains(&m) => out.push(m),
                Ok(_) => {}
                Err(e) => tracing::warn!(error = %e, "fallback model skipped"),
            }
        }
        Ok(out)
    }
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
    pub subagent_done: Arc<std::sync::OnceLock<Recipient<crate::tool::sessions::SubagentDone>>>,
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

/// A run event, tagged with its session and the session's verbose level
/// (which gates tool events on the wire).
#[derive(Debug, Clone, Message)]
#[rtype(result = "()")]
pub struct SessionEvent {
    pub session_key: String,
    pub verbose: String,
    pub event: RunEvent,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SendStatus {
    /// A run started with this message.
    Started,
    /// Injected into the active run.
    Steered,
    /// Waiting for the active run to end.
    Queued,
    /// Refused by the queue cap (`drop: new`).
    Dropped,
    /// A directive (`/think`, `/status`, `/queue ...`) was handled by the
    /// gateway; its answer is the run's final and nothing reached the model.
    Directive,
    /// The message id was seen before: nothing new is stored; `live` says
    /// whether its run is still queued or running.
    Duplicate { live: bool },
}

/// What a message became. `run_id`: the run that answers it (its own id
/// when it started a run or waits for a turn of its own; the collected
/// run it joined; the run it was steered into).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SendAck {
    pub run_id: String,
    pub status: SendStatus,
}

/// A user message. Reply (after the message is durable): what happened to it.
#[derive(Debug, Message)]
#[rtype(result = "Result<SendAck, TranscriptError>")]
pub struct SendChat {
    pub text: String,
    /// The message's id (the client's idempotency key): the run id when it
    /// starts a run; a second message with the same id is a duplicate.
    pub run_id: String,
    pub images: Vec<Image>,
    /// Thinking level for this message (`chat.send thinking`).
    pub thinking: Option<String>,
    /// Run timeout for this message (`chat.send timeoutMs`), capped by the agent's.
    pub timeout: Option<Duration>,
    /// Whether the sender may use directives (deny-by-default; an operator
    /// with write scope may). Otherwise `/...` is plain text.
    pub command_authorized: bool,
}

impl SendChat {
    pub fn text(text: &str, run_id: &str) -> SendChat {
        SendChat {
            text: text.to_string(),
            run_id: run_id.to_string(),
            images: Vec::new(),
            thinking: None,
            timeout: None,
            // Deny-by-default: the caller says when a sender may use directives.
            command_authorized: false,
        }
    }
}

/// Aborts the active run. Reply: the ids of the runs aborted.
#[derive(Debug, Message)]
#[rtype(result = "Vec<String>")]
pub struct AbortSession;

/// Cancels a run that waits in the queue (`chat.abort` with its id): its
/// messages never run; it ends as aborted. Reply: whether it was queued.
#[derive(Debug, Message)]
#[rtype(result = "bool")]
pub struct CancelQueuedRun {
    pub run_id: String,
}

/// The stored transcript entries, oldest first.
#[derive(Debug, Message)]
#[rtype(result = "Result<Vec<Value>, TranscriptError>")]
pub struct GetTranscript;

/// The session's entry and whether a run is active.
#[derive(Debug, Message)]
#[rtype(result = "(SessionEntry, bool)")]
pub struct GetEntry;

/// `sessions.patch`: each field None = leave, Some(None) = clear.
#[derive(Debug, Default, Clone)]
pub struct SessionPatch {
    pub label: Option<Option<String>>,
    pub thinking_level: Option<Option<String>>,
    pub verbose_level: Option<Option<String>>,
    pub model: Option<Option<String>>,
    pub send_policy: Option<Option<String>>,
    pub reasoning_level: Option<Option<String>>,
    pub response_usage: Option<Option<String>>,
    pub exec_host: Option<Option<String>>,
    pub exec_security: Option<Option<String>>,
    pub exec_ask: Option<Option<String>>,
}

/// Applies a patch. Reply: the new entry (stored and flushed).
#[derive(Debug, Message)]
#[rtype(result = "Result<SessionEntry, String>")]
pub struct PatchSession(pub SessionPatch);

/// `sessions.reset`: aborts any run, starts a new transcript (a new
/// sessionId; the old one stays in the store), clears the sticky profile
/// and counters. Reply: the new entry.
#[derive(Debug, Message)]
#[rtype(result = "Result<SessionEntry, String>")]
pub struct ResetSession;

/// `chat.inject`: appends an assistant note. Reply: the entry id.
#[derive(Debug, Message)]
#[rtype(result = "Result<String, String>")]
pub struct InjectNote {
    pub text: String,
    pub label: Option<String>,
}

/// The `/status` text (the `session_status` tool).
#[derive(Debug, Message)]
#[rtype(result = "String")]
pub struct GetStatus;

/// Steers the active run. Reply: whether a run was there to take it.
#[derive(Debug, Message)]
#[rtype(result = "bool")]
pub struct SteerSession {
    pub text: String,
}

/// From the router: stop now if still idle. Reply: whether it stopped.
#[derive(Debug, Message)]
#[rtype(result = "bool")]
pub struct StopIfIdle;

/// From the router before a delete: abort any run and stop.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct CloseSession;

/// To the router: this session has been idle for a while.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct SessionIdle {
    pub key: String,
    pub session: Addr<SessionActor>,
}

#[derive(Debug, Message)]
#[rtype(result = "()")]
struct CheckQueue;

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

/// Written after a user message whose run a gateway stop cut off.
pub const INTERRUPTED_NOTE: &str =
    "The gateway stopped before this message was answered. Send it again to retry.";

/// A message stored while a run was busy and not yet delivered to the model.
fn is_pending(entry: &Value) -> bool {
    entry.get("delivery").and_then(Value::as_str) == Some("pending")
}

/// Written by this version: delivery is tracked by the inbox. Transcripts
/// of earlier versions (no `messageId`) are recovered from the transcript.
fn tracked(entry: &Value) -> bool {
    entry.get("messageId").is_some()
}

/// Earlier versions: the `pending` messages after the last delivered one
/// (text and images).
fn undelivered(entries: &[Value]) -> Vec<crate::provider::ChatMessage> {
    let messages: Vec<&Value> = entries
        .iter()
        .filter(|e| e.get("type").and_then(Value::as_str) == Some("message"))
        .collect();
    let start = messages
        .iter()
        .rposition(|e| !is_pending(e))
        .map(|i| i + 1)
        .unwrap_or(0);
    messages[start..]
        .iter()
        .filter(|e| is_pending(e) && !tracked(e))
        .filter_map(|e| transcript::to_chat(e))
        .collect()
}

/// Earlier versions: the last delivered message when it is the user's
/// (its run never ended).
fn interrupted(entries: &[Value]) -> Option<&Value> {
    entries
        .iter()
        .rev()
        .filter(|e| e.get("type").and_then(Value::as_str) == Some("message"))
        .find(|e| !is_pending(e))
        .filter(|e| {
            e.get("message")
                .and_then(|m| m.get("role"))
                .and_then(Value::as_str)
                == Some("user")
                && !tracked(e)
        })
}

/// The assistant note written where a gateway stop cut a run off.
fn interrupted_note() -> Value {
    let mut entry = transcript::message_entry(
        None,
        json!({
            "role": "assistant",
            "content": [{ "type": "text", "text": INTERRUPTED_NOTE }],
            "stopReason": "error",
        }),
    );
    entry["interrupted"] = Value::Bool(true);
    entry
}

/// Message ids this session has seen, with the run that answers each
/// (duplicates are answered from here). The most recent are kept.
#[derive(Debug, Default)]
struct RecentIds {
    runs: HashMap<String, String>,
    order: std::collections::VecDeque<String>,
}

impl RecentIds {
    const KEEP: usize = 1000;

    fn insert(&mut self, message_id: &str, run_id: &str) {
        if self
            .runs
            .insert(message_id.to_string(), run_id.to_string())
            .is_none()
        {
            self.order.push_back(message_id.to_string());
        }
        while self.order.len() > Self::KEEP {
            if let Some(old) = self.order.pop_front() {
                self.runs.remove(&old);
            }
        }
    }

    fn get(&self, message_id: &str) -> Option<&String> {
        self.runs.get(message_id)
    }
}

fn preview(text: &str) -> String {
    let one: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    one.chars().take(120).collect()
}

fn check_level(field: &str, v: &str, allowed: &[&str]) -> Result<(), String> {
    if allowed.contains(&v) {
        Ok(())
    } else {
        Err(format!(
            "invalid {field} {v:?} (one of {})",
            allowed.join(", ")
        ))
    }
}

pub use crate::directives::{THINKING_LEVELS, VERBOSE_LEVELS};

pub struct SessionActor {
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
            entry["delivery"] = Value::String("pending".into());
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
        for entry in entries.iter().filter(|e| !is_pending(e)) {
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

    fn start_run(
        &mut self,
        run_id: String,
        overrides: RunOverrides,
        timeout: Option<Duration>,
        items: Vec<String>,
        ctx: &mut Context<Self>,
    ) {
        self.active = Some(Active {
            run_id: run_id.clone(),
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
        });
        let lane = self.lane.clone();
        ctx.spawn(
            async move { lane.send(AcquireSlot).await }
                .into_actor(self)
                .map(move |permit, act, ctx| {
                    let still_ours = act
                        .active
                        .as_ref()
                        .is_some_and(|a| a.run_id == run_id && !a.aborted);
                    let permit = match permit {
                        Ok(Ok(p)) if still_ours => p,
                        Ok(Ok(_)) => return act.end_without_run(&run_id, None, ctx),
                        _ => {
                            return act.end_without_run(
                                &run_id,
                                Some("lane unavailable".into()),
                                ctx,
                            )
                        }
                    };
                    if let Some(a) = act.active.as_mut() {
                        a.permit = Some(permit);
                    }
                    act.spawn_run(ctx);
                }),
        );
    }

    /// Starts (or restarts) the active run's actor from the current history.
    fn spawn_run(&mut self, ctx: &mut Context<Self>) {
        let Some(a) = self.active.as_ref() else {
            return;
        };
        let run_id = a.run_id.clone();
        let model_choice = a
            .overrides
            .model
            .as_deref()
            .or(self.entry.model_override.as_deref());
        let models = match self.deps.models.candidates(self.agent(), model_choice) {
            Ok(m) => m,
            Err(e) => {
                return self.end_without_run(&run_id, Some(format!("model: {e}")), ctx);
            }
        };
        let level = self.thinking_level(a.overrides.thinking.as_deref());
        let timeout = a
            .timeout
            .map_or(self.deps.timeout, |t| t.min(self.deps.timeout));
        let d = &self.deps;
        let model = models.first().map(|m| m.to_string()).unwrap_or_default();
        let tools: Arc<[ToolSpec]> = d
            .tool_policy
            .offered(&d.tools, self.agent(), channel_of_key(&self.key), None)
            .into();
        let context = d.context.for_run(
            &self.key,
            self.agent(),
            &model,
            &level,
            &tools,
            self.entry.skill_filter.as_deref(),
        );
        let exec = self.exec_policy();
        let run = RunActor::new(RunConfig {
            session_key: self.key.clone(),
            agent_id: self.agent().to_string(),
            exec,
            run_id,
            models,
            sticky_profile: self.entry.auth_profile_override.clone(),
            thinking_budget: thinking_budget(&level),
            system: context.prompt.text.clone(),
            tool_env: context.skills.env.into(),
            hooks: d.tool_policy.hooks.clone().into(),
            result_max_chars: d.tool_policy.result_max_chars,
            tools,
            messages: self.history.clone(),
            hub: d.hub.clone(),
            executor: d.executor.clone(),
            sink: ctx.address().recipient(),
            steers: Some(ctx.address().recipient()),
            timeout,
            max_model_calls: d.max_model_calls,
        })
        .start();
        crate::metrics::Metrics::inc(&self.deps.metrics.runs_started);
        if let Some(a) = self.active.as_mut() {
            a.closing = false;
            a.run = Some(run);
        }
    }

    /// A run that never started (aborted while waiting, or no lane) still ends cleanly.
    fn end_without_run(&mut self, run_id: &str, error: Option<String>, ctx: &mut Context<Self>) {
        let event = match error {
            Some(error) => RunEvent::Failed {
                run_id: run_id.to_string(),
                error,
                kind: FailureKind::Provider(None),
            },
            None => RunEvent::Aborted {
                run_id: run_id.to_string(),
                text: String::new(),
            },
        };
        self.finish(event, ctx);
    }

    /// When the session is free: the next queued turn, now or after the
    /// debounce of a collected run.
    fn next_turn(&mut self, ctx: &mut Context<Self>) {
        if self.active.is_some() {
            return;
        }
        match self.queue.next_turn(crate::now_ms()) {
            Some(Ok(plan)) => self.begin(plan, ctx),
            Some(Err(wait)) if !self.check_scheduled => {
                self.check_scheduled = true;
                ctx.run_later(wait, |act, ctx| {
                    act.check_scheduled = false;
                    act.next_turn(ctx);
                });
            }
            _ => {}
        }
    }

    /// Starts a queued turn: its input (one message, or several coalesced)
    /// is stored with the messages it delivers, which are then assigned to
    /// the run, in one store transaction.
    fn begin(&mut self, plan: TurnPlan, ctx: &mut Context<Self>) {
        let TurnPlan {
            run_id,
            text,
            images,
            items,
            overrides,
            timeout_ms,
        } = plan;
        let mut chat = ChatMessage::user(&text);
        chat.images = images;
        let mut input = transcript::message_entry(None, transcript::from_chat(&chat));
        input["runId"] = json!(run_id);
        input["messageId"] = json!(run_id);
        input["delivers"] = json!(items
            .iter()
            .map(|(_, i)| i.message_id.as_str())
            .collect::<Vec<_>>());
        let writes = items
            .iter()
            .map(|(key, item)| {
                let mut item = item.clone();
                item.assigned = true;
                inbox::put(key, &item)
            })
            .collect();
        if let Err(e) = self.commit(vec![input], writes) {
            // The messages stay queued in the inbox and run after a restart.
            tracing::error!(session_key = %self.key, error = %e, "cannot store the next turn");
            self.forward(RunEvent::Failed {
                run_id,
                error: e.to_string(),
                kind: FailureKind::Store,
            });
            return;
        }
        let keys = items.into_iter().map(|(k, _)| k).collect();
        self.start_run(
            run_id,
            overrides,
            timeout_ms.map(Duration::from_millis),
            keys,
            ctx,
        );
    }

    /// The active run's id while it can take a steered message.
    fn steerable(&self) -> Option<&str> {
        self.active
            .as_ref()
            .filter(|a| !a.aborted && !a.closing && !a.compaction)
            .map(|a| a.run_id.as_str())
    }

    /// Whether `run_id` is queued or running here.
    fn is_live(&self, run_id: &str) -> bool {
        self.active.as_ref().is_some_and(|a| a.run_id == run_id)
            || self.queue.run_ids().any(|r| r == run_id)
    }

    fn abort_active(&mut self) -> Vec<String> {
        match self.active.as_mut() {
            Some(a) if !a.aborted => {
                a.aborted = true;
                if let Some(run) = &a.run {
                    run.do_send(AbortRun);
                }
                vec![a.run_id.clone()]
            }
            _ => Vec::new(),
        }
    }

    /// `/queue [mode] [options]`: applies and stores the session's queue
    /// settings. Returns the answer text.
    fn queue_directive(&mut self, args: &str) -> Result<String, String> {
        let args = args.trim();
        let describe = |s: &QueueSettings| {
            format!(
                "Queue mode: {:?} (debounce {} ms, cap {}, drop {:?}).",
                s.mode,
                s.debounce.as_millis(),
                s.cap,
                s.drop
            )
            .to_lowercase()
        };
        if args.is_empty() {
            return Ok(describe(&self.queue.settings));
        }
        if args == "reset" || args == "default" {
            self.queue.settings = self.deps.queue;
            self.entry.queue = None;
        } else {
            let s = parse_queue_directive(args, self.queue.settings)?;
            self.queue.settings = s;
            let merged = match &self.entry.queue {
                Some(old) => format!("{old} {args}"),
                None => args.to_string(),
            };
            self.entry.queue = Some(merged);
        }
        self.save_entry().map_err(|e| e.to_string())?;
        Ok(describe(&self.queue.settings))
    }

    /// The record of how a run ended (`agent.wait`, also after a restart).
    fn end_record(&self, event: &RunEvent) -> Option<(String, RunRecord)> {
        let (run_id, status, error, stop) = match event {
            RunEvent::Final {
                run_id,
                stop_reason,
                ..
            } => (run_id, "ok", None, stop_reason.as_str()),
            RunEvent::Failed { run_id, error, .. } => (run_id, "error", Some(error), "error"),
            RunEvent::Aborted { run_id, .. } => (run_id, "aborted", None, "aborted"),
            _ => return None,
        };
        let started_at = self
            .active
            .as_ref()
            .filter(|a| &a.run_id == run_id)
            .map_or_else(crate::now_ms, |a| a.started_at);
        let record = RunRecord {
            session_key: self.key.clone(),
            status: status.to_string(),
            started_at,
            ended_at: crate::now_ms(),
            error: error.cloned(),
            stop_reason: stop.to_string(),
            answered_by: None,
        };
        Some((run_id.clone(), record))
    }

    /// A finished run's bookkeeping, in one store transaction: the run
    /// record, its messages out of the inbox, the usage entry; then the
    /// entry's counters and abort flag.
    fn record_end(&mut self, event: &RunEvent) {
        let mut writes = Vec::new();
        if let Some((run_id, record)) = self.end_record(event) {
            writes.push(crate::runs::write(&run_id, &record));
        }
        if let Some(a) = self.active.as_ref() {
            writes.extend(a.items.iter().map(|k| inbox::remove(k)));
        }
        let mut entries = Vec::new();
        let mut changed = true;
        match event {
            RunEvent::Final {
                run_id,
                usage,
                text,
                ..
            } => {
                let total = usage.input + usage.output + usage.cache_read + usage.cache_write;
                self.entry.input_tokens += usage.input;
                self.entry.output_tokens += usage.output;
                self.entry.total_tokens += total;
                self.entry.aborted_last_run = false;
                if !text.is_empty() {
                    self.entry.last_message_preview = Some(preview(text));
                }
                entries.push(json!({
                    "type": "custom", "customType": "usage", "id": ulid::Ulid::generate().to_string(),
                    "timestamp": crate::now_ms(),
                    "data": { "runId": run_id, "provider": self.entry.model_provider, "model": self.entry.model,
                              "input": usage.input, "output": usage.output, "cacheRead": usage.cache_read,
                              "cacheWrite": usage.cache_write, "totalTokens": total },
                }));
            }
            RunEvent::Aborted { .. } => self.entry.aborted_last_run = true,
            _ => changed = false,
        }
        if let Err(e) = self.commit(entries, writes) {
            tracing::error!(session_key = %self.key, error = %e, "cannot store the end of a run");
        }
        if changed {
            if let Err(e) = self.save_entry() {
                tracing::error!(session_key = %self.key, error = %e, "cannot store the session entry");
            }
        }
    }

    /// Ends the active run (whatever way it ended): recorded, flushed, then
    /// announced; the next turn starts.
    fn finish(&mut self, event: RunEvent, ctx: &mut Context<Self>) {
        self.record_end(&event);
        self.announce_to_parent(&event);
        let held = self
            .active
            .as_mut()
            .map(|a| std::mem::take(&mut a.reasoning))
            .unwrap_or_default();
        let event = self.with_usage_footer(event);
        // The run's steps are durable before its end is announced.
        let store = self.deps.store.clone();
        ctx.spawn(async move { store.flush().await }.into_actor(self).map(move |flushed, act, ctx| {
            if let Err(e) = flushed {
                tracing::error!(session_key = %act.key, error = %e, "store flush failed at run end");
            }
            if !held.is_empty() {
                if let Some(run_id) = run_id_of(&event) {
                    act.forward(RunEvent::Thinking { run_id: run_id.to_string(), delta: held });
                }
            }
            act.forward(event);
            if let Some(a) = act.active.take() {
                drop(a.permit);
            }
            act.next_turn(ctx);
        }));
    }

    /// Ends queued runs that will never start (reset, delete): recorded as
    /// aborted with `why`, their messages out of the inbox; the active run
    /// (aborted by the caller) is recorded too, and announced when
    /// `announce_active` (its own end will not reach a stopped session).
    /// Returns the writes and the events to send once they are durable.
    fn end_queued(&mut self, why: &str, announce_active: bool) -> (Vec<StoreWrite>, Vec<RunEvent>) {
        let mut writes = Vec::new();
        let mut events = Vec::new();
        let mut ended: Vec<String> = Vec::new();
        for (key, item) in self.queue.take_all() {
            writes.push(inbox::remove(&key));
            if !ended.contains(&item.run_id) {
                let now = crate::now_ms();
                writes.push(crate::runs::write(
                    &item.run_id,
                    &RunRecord {
                        session_key: self.key.clone(),
                        status: "aborted".into(),
                        started_at: now,
                        ended_at: now,
                        error: Some(why.to_string()),
                        stop_reason: "aborted".into(),
                        answered_by: None,
                    },
                ));
                events.push(RunEvent::Aborted {
                    run_id: item.run_id.clone(),
                    text: String::new(),
                });
                ended.push(item.run_id);
            }
        }
        if let Some(a) = self.active.as_ref() {
            writes.extend(a.items.iter().map(|k| inbox::remove(k)));
            let now = crate::now_ms();
            writes.push(crate::runs::write(
                &a.run_id,
                &RunRecord {
                    session_key: self.key.clone(),
                    status: "aborted".into(),
                    started_at: a.started_at,
                    ended_at: now,
                    error: Some(why.to_string()),
                    stop_reason: "aborted".into(),
                    answered_by: None,
                },
            ));
            if announce_active {
                events.push(RunEvent::Aborted {
                    run_id: a.run_id.clone(),
                    text: String::new(),
                });
            }
        }
        (writes, events)
    }

    fn idle(&self) -> bool {
        self.active.is_none() && self.queue.is_empty()
    }

    /// A sub-agent's run ended: its result goes to the session that spawned it.
    fn announce_to_parent(&self, event: &RunEvent) {
        let Some(parent) = &self.entry.spawned_by else {
            return;
        };
        let (run_id, status, text) = match event {
            RunEvent::Final { run_id, text, .. } => (run_id, "ok", text.clone()),
            RunEvent::Failed { run_id, error, .. } => (run_id, "error", error.clone()),
            RunEvent::Aborted { run_id, text } => (run_id, "aborted", text.clone()),
            _ => return,
        };
        if let Some(to) = self.deps.subagent_done.get() {
            to.do_send(crate::tool::sessions::SubagentDone {
                child_key: self.key.clone(),
                parent_key: parent.clone(),
                label: self.entry.label.clone(),
                run_id: run_id.clone(),
                status: status.to_string(),
                text,
            });
        }
    }

    /// `/usage tokens|full`: a usage line under the reply (wire only; the
    /// transcript keeps the model's text).
    fn with_usage_footer(&self, event: RunEvent) -> RunEvent {
        let mode = self.entry.response_usage.as_deref().unwrap_or("off");
        match event {
            RunEvent::Final {
                run_id,
                text,
                stop_reason,
                usage,
            } if mode != "off" && !text.is_empty() && !crate::prompt::is_silent(&text) => {
                let mut footer = format!("Usage: {} in · {} out", usage.input, usage.output);
                if mode == "full" {
                    footer.push_str(&format!(
                        " · cache {} read, {} write · session {} total",
                        usage.cache_read, usage.cache_write, self.entry.total_tokens
                    ));
                    if let (Some(p), Some(m)) = (&self.entry.model_provider, &self.entry.model) {
                        footer.push_str(&format!(" · {p}/{m}"));
                    }
                }
                RunEvent::Final {
                    run_id,
                    text: format!("{text}\n\n{footer}"),
                    stop_reason,
                    usage,
                }
            }
            other => other,
        }
    }

    /// Answers a directive: the answer is the "run"'s final (no model call,
    /// nothing stored in the transcript); acked once session changes are durable.
    fn directive_reply(
        &mut self,
        run_id: String,
        answer: String,
    ) -> ResponseFuture<Result<SendAck, TranscriptError>> {
        self.forward(RunEvent::Started {
            run_id: run_id.clone(),
        });
        self.forward(RunEvent::Final {
            run_id: run_id.clone(),
            text: answer,
            stop_reason: crate::provider::StopReason::Stop,
            usage: Default::default(),
        });
        let store = self.deps.store.clone();
        Box::pin(async move {
            store.flush().await?;
            Ok(SendAck {
                run_id,
                status: SendStatus::Directive,
            })
        })
    }

    /// `/compact [instructions]`: summarises the older context with the
    /// session's model (the session is busy meanwhile: messages queue), then
    /// stores a `compaction` entry and continues from the summary.
    fn compact(
        &mut self,
        run_id: String,
        instructions: Option<String>,
        ctx: &mut Context<Self>,
    ) -> ResponseFuture<Result<SendAck, TranscriptError>> {
        if self.active.is_some() {
            return self.directive_reply(
                run_id,
                "A run is active: send /compact when it has ended (or /stop it first).".into(),
            );
        }
        let entries = match transcript::entries(&self.deps.store, &self.entry.session_id) {
            Ok(e) => e,
            Err(e) => return self.directive_reply(run_id, format!("Could not compact: {e}")),
        };
        let (history, ids) = crate::compaction::load_history(&entries);
        let Some(cut) = crate::compaction::cut_point(&history) else {
            return self.directive_reply(
                run_id,
                format!(
                    "Nothing to compact yet: the context holds {} messages.",
                    history.len()
                ),
            );
        };
        let Some(first_kept) = ids.get(cut).cloned().flatten() else {
            return self.directive_reply(
                run_id,
                "Could not compact: the transcript does not match the context.".into(),
            );
        };
        let models = match self
            .deps
            .models
            .candidates(self.agent(), self.entry.model_override.as_deref())
        {
            Ok(m) => m,
            Err(e) => return self.directive_reply(run_id, format!("Could not compact: {e}")),
        };
        let older: Messages = history[..cut].to_vec();
        let kept: Messages = history[cut..].to_vec();
        let chars_before: usize = older.iter().map(|m| m.text.len()).sum();
        // Busy while summarising: new messages queue like during a run.
        self.active = Some(Active {
            run_id: run_id.clone(),
            run: None,
            permit: None,
            steers: Default::default(),
            closing: false,
            compaction: true,
            items: Vec::new(),
            aborted: false,
            restarts: 0,
            overrides: RunOverrides::default(),
            timeout: None,
            started_at: crate::now_ms(),
            reasoning: String::new(),
        });
        self.forward(RunEvent::Started {
            run_id: run_id.clone(),
        });
        let summarize = crate::compaction::summarize(
            self.deps.hub.clone(),
            models,
            self.entry.auth_profile_override.clone(),
            older.clone(),
            instructions,
        );
        let rid = run_id.clone();
        ctx.spawn(summarize.into_actor(self).map(move |result, act, ctx| {
            let answer = match result {
                Ok(summary) => {
                    let entry = crate::compaction::entry(&summary, &first_kept, (chars_before / 4) as u64);
                    match transcript::append(&act.deps.store, &act.entry.session_id, &[entry]) {
                        Ok(()) => {
                            let mut h: Messages = vec![Arc::new(crate::compaction::summary_message(&summary))];
                            h.extend(kept.iter().cloned());
                            act.history = h;
                            format!(
                                "Compacted {} earlier messages into a summary ({} characters); kept the last {}.",
                                older.len(),
                                summary.chars().count(),
                                kept.len()
                            )
                        }
                        Err(e) => format!("Could not compact: {e}"),
                    }
                }
                Err(e) => format!("Could not compact: {e}. The context is unchanged."),
            };
            let store = act.deps.store.clone();
            ctx.spawn(async move { store.flush().await }.into_actor(act).map(move |_, act, ctx| {
                act.forward(RunEvent::Final {
                    run_id: rid,
                    text: answer,
                    stop_reason: crate::provider::StopReason::Stop,
                    usage: Default::default(),
                });
                act.active = None;
                act.next_turn(ctx);
            }));
        }));
        Box::pin(async move {
            Ok(SendAck {
                run_id,
                status: SendStatus::Directive,
            })
        })
    }

    /// Checks a model ref and that this session's agent can run it.
    fn check_model(&self, model: &str) -> Result<(), String> {
        ModelRef::parse(model).map_err(|e| format!("Invalid model {model:?}: {e}"))?;
        self.deps
            .models
            .candidates(self.agent(), Some(model))
            .map(|_| ())
            .map_err(|e| format!("Invalid model {model:?}: {e}"))
    }

    /// Inline directives: they set `overrides` for this message's run.
    fn inline_overrides(&self, list: Vec<Directive>, o: &mut RunOverrides) -> Result<(), String> {
        for d in list {
            match d {
                Directive::Think(Some(l)) => o.thinking = Some(l),
                Directive::Verbose(Some(l)) => o.verbose = Some(l),
                Directive::Reasoning(Some(l)) => o.reasoning = Some(l),
                Directive::Model(Some(m)) => {
                    self.check_model(&m)?;
                    o.model = Some(m);
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// A new transcript (new sessionId), settings kept; any run aborted and
    /// what waited ended as aborted.
    fn reset(&mut self) -> Result<(), String> {
        self.abort_active();
        let (writes, events) =
            self.end_queued("the session was reset before this message ran", false);
        // The aborted run's late events are no longer ours: not written.
        self.active = None;
        self.entry = self.entry.renewed(crate::now_ms());
        self.history.clear();
        self.transcript_model = None;
        let header = transcript::session_header(&self.entry.session_id, &self.deps.workspace);
        self.commit(vec![header], writes)
            .map_err(|e| e.to_string())?;
        for e in events {
            self.forward(e);
        }
        self.save_entry().map_err(|e| e.to_string())
    }

    fn history_chars(&self) -> usize {
        self.history
            .iter()
            .map(|m| {
                m.text.len()
                    + m.tool_calls
                        .iter()
                        .map(|c| c.arguments.to_string().len())
                        .sum::<usize>()
            })
            .sum()
    }

    /// The prompt the next run would get (for `/context`).
    fn next_prompt(&self) -> Arc<crate::prompt::BuiltPrompt> {
        let model = self
            .deps
            .models
            .candidates(self.agent(), self.entry.model_override.as_deref())
            .ok()
            .and_then(|m| m.first().map(|m| m.to_string()))
            .unwrap_or_default();
        let level = self.thinking_level(None);
        let tools = self.deps.tool_policy.offered(
            &self.deps.tools,
            self.agent(),
            channel_of_key(&self.key),
            None,
        );
        self.deps
            .context
            .for_run(
                &self.key,
                self.agent(),
                &model,
                &level,
                &tools,
                self.entry.skill_filter.as_deref(),
            )
            .prompt
    }

    fn status_text(&self) -> String {
        let e = &self.entry;
        let model = self
            .deps
            .models
            .candidates(self.agent(), e.model_override.as_deref())
            .ok()
            .and_then(|m| m.first().map(|m| m.to_string()))
            .unwrap_or_else(|| "unknown".into());
        let last = match (&e.model_provider, &e.model) {
            (Some(p), Some(m)) if format!("{p}/{m}") != model => format!(" · last reply: {p}/{m}"),
            _ => String::new(),
        };
        let prompt_chars = self.next_prompt().report.total_chars;
        let used = (prompt_chars + self.history_chars()).div_ceil(4);
        let window = self.deps.context_window;
        format!(
            "Session {} ({})\nAgent: {} · Model: {model}{}{last}\nThinking: {} · Verbose: {} · Reasoning: {}\nTokens: {} in, {} out, {} total\nContext: ~{used} of {window} tokens ({:.0}% full) · {} messages\nQueue: {}\nRun: {}",
            self.key,
            e.session_id,
            self.agent(),
            e.model_override.as_ref().map(|_| " (session override)").unwrap_or(""),
            self.thinking_level(None),
            self.verbose(),
            self.reasoning(),
            e.input_tokens,
            e.output_tokens,
            e.total_tokens,
            used as f64 * 100.0 / window.max(1) as f64,
            self.history.len(),
            format!("{:?}", self.queue.settings.mode).to_lowercase(),
            if self.active.is_some() { "active" } else { "idle" },
        )
    }

    /// Applies a message of directives; returns the confirmation.
    fn apply_commands(&mut self, list: Vec<Directive>, _ctx: &mut Context<Self>) -> String {
        let mut answers = Vec::new();
        let mut entry_changed = false;
        for d in list {
            let answer = match d {
                Directive::Think(Some(l)) => {
                    self.entry.thinking_level = Some(l.clone());
                    entry_changed = true;
                    format!("Thinking level set to {l}.")
                }
                Directive::Think(None) => format!(
                    "Current thinking level: {}. Options: {}.",
                    self.thinking_level(None),
                    THINKING_LEVELS.join(", ")
                ),
                Directive::Verbose(Some(l)) => {
                    self.entry.verbose_level = Some(l.clone());
                    entry_changed = true;
                    format!("Verbose set to {l}.")
                }
                Directive::Verbose(None) => format!(
                    "Current verbose level: {}. Options: off, on, full.",
                    self.verbose()
                ),
                Directive::Reasoning(Some(l)) => {
                    self.entry.reasoning_level = Some(l.clone());
                    entry_changed = true;
                    format!("Reasoning visibility set to {l}.")
                }
                Directive::Reasoning(None) => format!(
                    "Current reasoning visibility: {}. Options: off, on, stream.",
                    self.reasoning()
                ),
                Directive::Model(Some(m)) if m == "default" || m == "reset" => {
                    self.entry.model_override = None;
                    self.entry.auth_profile_override = None;
                    entry_changed = true;
                    "Model reset to the agent's default.".to_string()
                }
                Directive::Model(Some(m)) => match self.check_model(&m) {
                    Ok(()) => {
                        if self.entry.model_override.as_deref() != Some(m.as_str()) {
                            self.entry.auth_profile_override = None;
                        }
                        self.entry.model_override = Some(m.clone());
                        entry_changed = true;
                        format!("Model set to {m}.")
                    }
                    Err(e) => e,
                },
                Directive::Model(None) => {
                    let current = self
                        .deps
                        .models
                        .candidates(self.agent(), self.entry.model_override.as_deref())
                        .ok()
                        .and_then(|m| m.first().map(|m| m.to_string()))
                        .unwrap_or_else(|| "unknown".into());
                    format!(
                        "Current model: {current}{}.",
                        if self.entry.model_override.is_some() {
                            " (session override; /model default to clear)"
                        } else {
                            ""
                        }
                    )
                }
                Directive::New(model) => {
                    if let Some(m) = &model {
                        if let Err(e) = self.check_model(m) {
                            answers.push(e);
                            continue;
                        }
                    }
                    match self.reset() {
                        Ok(()) => {
                            if let Some(m) = &model {
                                self.entry.model_override = Some(m.clone());
                                self.entry.auth_profile_override = None;
                                entry_changed = true;
                            }
                            match model {
                                Some(m) => format!("New session started with model {m}."),
                                None => "New session started.".to_string(),
                            }
                        }
                        Err(e) => format!("Could not start a new session: {e}"),
                    }
                }
                Directive::Reset => match self.reset() {
                    Ok(()) => "Session reset.".to_string(),
                    Err(e) => format!("Could not reset the session: {e}"),
                },
                Directive::Compact(_) => "/compact must be sent on its own.".to_string(),
                Directive::Queue(args) => self.queue_directive(&args).unwrap_or_else(|e| e),
                Directive::Status => self.status_text(),
                Directive::Context(arg) => {
                    let report = self.next_prompt().report.clone();
                    match arg.as_deref() {
                        None | Some("list") => crate::prompt::context_list(&report, self.history.len(), self.history_chars()),
                        Some("detail") => crate::prompt::context_detail(&report, self.history.len(), self.history_chars()),
                        Some(other) => format!("Unknown /context option {other:?}: use /context list or /context detail."),
                    }
                }
                Directive::Usage(Some(l)) => {
                    self.entry.response_usage = (l != "off").then(|| l.clone());
                    entry_changed = true;
                    format!("Usage footer set to {l}.")
                }
                Directive::Usage(None) => {
                    let e = &self.entry;
                    format!(
                        "Usage this session: {} in, {} out, {} total tokens. Footer: {}.",
                        e.input_tokens,
                        e.output_tokens,
                        e.total_tokens,
                        e.response_usage.as_deref().unwrap_or("off")
                    )
                }
                Directive::Send(Some(l)) => {
                    self.entry.send_policy = match l.as_str() {
                        "on" => Some("allow".into()),
                        "off" => Some("deny".into()),
                        _ => None,
                    };
                    entry_changed = true;
                    format!("Send policy set to {l}.")
                }
                Directive::Send(None) => format!(
                    "Send policy: {}.",
                    match self.entry.send_policy.as_deref() {
                        Some("allow") => "on",
                        Some("deny") => "off",
                        _ => "inherit",
                    }
                ),
                Directive::Agent(Some(id)) => {
                    let id = id.to_ascii_lowercase();
                    if self.deps.context.agents.contains(&id) {
                        self.entry.agent_override = (id != self.agent_id).then(|| id.clone());
                        self.entry.auth_profile_override = None;
                        entry_changed = true;
                        format!("Agent set to {id}.")
                    } else {
                        format!(
                            "Unknown agent {id:?}. Agents: {}.",
                            self.deps.context.agents.join(", ")
                        )
                    }
                }
                Directive::Agent(None) => format!(
                    "Current agent: {}. Agents: {}.",
                    self.agent(),
                    self.deps.context.agents.join(", ")
                ),
                Directive::Stop => {
                    if self.abort_active().is_empty() {
                        "No run is active.".to_string()
                    } else {
                        "Stopped the current run.".to_string()
                    }
                }
            };
            answers.push(answer);
        }
        if entry_changed {
            if let Err(e) = self.save_entry() {
                answers.push(format!("(not saved: {e})"));
            }
        }
        answers.join("\n")
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
                .find(|e| e.get("type").and_then(Value::as_str) == Some("model_change"))
                .and_then(|e| {
                    Some(format!(
                        "{}/{}",
                        e.get("provider")?.as_str()?,
                        e.get("modelId")?.as_str()?
                    ))
                });
            self.history = crate::compaction::load_history(&entries).0;
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

impl SessionActor {
    /// After a stop: runs that were cut off (messages assigned to a run
    /// that never ended) are marked interrupted, in the transcript and for
    /// `agent.wait`; queued messages run again, in order, exactly once.
    /// Transcripts of earlier versions are recovered from the transcript.
    fn recover(&mut self, entries: &[Value], ctx: &mut Context<Self>) {
        let items = match inbox::load(&self.deps.store, &self.key) {
            Ok(items) => items,
            Err(e) => {
                tracing::error!(session_key = %self.key, error = %e, "cannot read the inbox");
                Vec::new()
            }
        };
        let mut writes = Vec::new();
        let mut notes = Vec::new();
        let mut events = Vec::new();
        let mut cut: Vec<String> = Vec::new();
        let mut queued = Vec::new();
        for (key, item) in items {
            if item.assigned {
                writes.push(inbox::remove(&key));
                if !cut.contains(&item.run_id) {
                    cut.push(item.run_id);
                }
            } else {
                queued.push((key, item));
            }
        }
        if let Some(last) = interrupted(entries) {
            // An earlier version's cut run: its user message is the last one.
            let run_id = last
                .get("runId")
                .and_then(Value::as_str)
                .map(str::to_string)
                .unwrap_or_else(|| ulid::Ulid::generate().to_string());
            cut.push(run_id);
        }
        for run_id in cut {
            let ended = crate::runs::load(&self.deps.store, &run_id)
                .ok()
                .flatten()
                .is_some_and(|r| !r.is_pending());
            if ended {
                continue;
            }
            let now = crate::now_ms();
            let record = RunRecord {
                session_key: self.key.clone(),
                status: "error".into(),
                started_at: now,
                ended_at: now,
                error: Some(INTERRUPTED_NOTE.to_string()),
                stop_reason: "error".into(),
                answered_by: None,
            };
            writes.push(crate::runs::write(&run_id, &record));
            // Said in the transcript instead of leaving it silently unanswered.
            notes.push(interrupted_note());
            events.push(RunEvent::Failed {
                run_id,
                error: INTERRUPTED_NOTE.to_string(),
                kind: FailureKind::Stopped,
            });
        }
        // An earlier version's queued messages become inbox items.
        for m in undelivered(entries) {
            let id = ulid::Ulid::generate().to_string();
            let item = InboxItem {
                message_id: id.clone(),
                run_id: id,
                assigned: false,
                text: m.text,
                images: m.images,
                at_ms: 0,
                joinable: false,
                overrides: RunOverrides::default(),
                timeout_ms: None,
            };
            let key = inbox::new_key(&self.key);
            writes.push(inbox::put(&key, &item));
            queued.push((key, item));
        }
        if let Err(e) = self.commit(notes, writes) {
            tracing::error!(session_key = %self.key, error = %e, "cannot mark interrupted runs");
        }
        for e in events {
            self.forward(e);
        }
        for (key, item) in queued {
            self.seen.insert(&item.message_id, &item.run_id);
            self.forward(RunEvent::Queued {
                run_id: item.run_id.clone(),
                message_id: item.message_id.clone(),
            });
            self.queue.recover(key, item);
        }
        if !self.queue.is_empty() {
            ctx.notify(CheckQueue);
        }
    }
}

impl Handler<SendChat> for SessionActor {
    type Result = ResponseFuture<Result<SendAck, TranscriptError>>;
    fn handle(&mut self, msg: SendChat, ctx: &mut Context<Self>) -> Self::Result {
        self.last_activity = Instant::now();
        let store = self.deps.store.clone();
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
        let chat_type = if crate::agent_context::is_private(&self.key) {
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
                let answer = self.apply_commands(list, ctx);
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
        let placement = self.queue.place(
            &message_id,
            RunView {
                active: self.active.is_some(),
                steerable: self.steerable(),
            },
        );
        let (run_id, assigned, joinable) = match &placement {
            Placement::Refused => {
                return Box::pin(async move {
                    Ok(SendAck {
                        run_id: message_id,
                        status: SendStatus::Dropped,
                    })
                })
            }
            Placement::Start => (message_id.clone(), true, false),
            Placement::Steer { run_id } | Placement::SteerAndBacklog { run_id } => {
                (run_id.clone(), true, false)
            }
            Placement::Queue {
                run_id, joinable, ..
            } => (run_id.clone(), false, *joinable),
        };
        let now = crate::now_ms();
        let item = InboxItem {
            message_id: message_id.clone(),
            run_id: run_id.clone(),
            assigned,
            text: mctx.body_for_agent.clone(),
            images: if matches!(placement, Placement::Start | Placement::Queue { .. }) {
                msg.images.clone()
            } else {
                // Steering carries text only.
                Vec::new()
            },
            at_ms: now,
            joinable,
            overrides: overrides.clone(),
            timeout_ms: msg.timeout.map(|t| t.as_millis() as u64),
        };
        // The transcript entry: the run's input when it starts one, else
        // pending (out of the model context) until its turn.
        let mut chat = ChatMessage::user(&mctx.body);
        chat.images = msg.images;
        let mut user = transcript::from_chat(&chat);
        user["timestamp"] = json!(mctx.timestamp_ms);
        if mctx.body_for_agent != mctx.body {
            user["bodyForAgent"] = json!(mctx.body_for_agent);
        }
        let mut entry = transcript::message_entry(None, user);
        entry["runId"] = json!(run_id);
        entry["messageId"] = json!(message_id);
        if !matches!(placement, Placement::Start) {
            entry["delivery"] = Value::String("pending".into());
        }
        let key = inbox::new_key(&self.key);
        let mut writes = vec![inbox::put(&key, &item)];
        writes.push(if run_id == message_id {
            crate::runs::write(&run_id, &RunRecord::pending(&self.key, now))
        } else {
            crate::runs::write(&message_id, &RunRecord::alias(&self.key, &run_id, now))
        });
        // steer-backlog: a copy waits for a turn of its own.
        let backlog = matches!(placement, Placement::SteerAndBacklog { .. }).then(|| {
            let id = ulid::Ulid::generate().to_string();
            let copy = InboxItem {
                run_id: id.clone(),
                message_id: id,
                assigned: false,
                ..item.clone()
            };
            (inbox::new_key(&self.key), copy)
        });
        if let Some((k, copy)) = &backlog {
            writes.push(inbox::put(k, copy));
            writes.push(crate::runs::write(
                &copy.run_id,
                &RunRecord::pending(&self.key, now),
            ));
        }
        // The cap pushes the oldest out (`drop: old | summarize`): a run
        // left with none of its messages ends as dropped.
        let dropped = match placement {
            Placement::Queue { .. } => self.queue.overflow(),
            _ => Vec::new(),
        };
        let mut ended: Vec<(String, String)> = Vec::new();
        for (k, old) in &dropped {
            writes.push(inbox::remove(k));
            let still_queued = self.queue.run_ids().filter(|r| *r == old.run_id).count()
                > dropped
                    .iter()
                    .filter(|(_, d)| d.run_id == old.run_id)
                    .count()
                || old.run_id == run_id;
            if still_queued || ended.iter().any(|(r, _)| *r == old.run_id) {
                continue;
            }
            let error = format!(
                "dropped from the queue (cap {}, drop {:?})",
                self.queue.settings.cap, self.queue.settings.drop
            )
            .to_lowercase();
            let record = RunRecord {
                status: "error".into(),
                ended_at: now,
                error: Some(error.clone()),
                stop_reason: "error".into(),
                ..RunRecord::pending(&self.key, old.at_ms)
            };
            writes.push(crate::runs::write(&old.run_id, &record));
            ended.push((old.run_id.clone(), error));
        }
        if let Err(e) = self.commit(vec![entry], writes) {
            return Box::pin(async move { Err(e) });
        }
        self.seen.insert(&message_id, &run_id);
        self.forward(RunEvent::Queued {
            run_id: run_id.clone(),
            message_id: message_id.clone(),
        });
        for (run, error) in ended {
            self.forward(RunEvent::Failed {
                run_id: run,
                error,
                kind: FailureKind::Dropped,
            });
        }
        let status = match placement {
            Placement::Start => {
                self.start_run(run_id.clone(), overrides, msg.timeout, vec![key], ctx);
                SendStatus::Started
            }
            Placement::Steer { .. } | Placement::SteerAndBacklog { .. } => {
                if let Some(a) = self.active.as_mut() {
                    a.steers.push_back(item.text);
                    a.items.push(key);
                }
                if let Some((k, copy)) = backlog {
                    self.forward(RunEvent::Queued {
                        run_id: copy.run_id.clone(),
                        message_id: copy.message_id.clone(),
                    });
                    self.queue.push(k, copy);
                }
                SendStatus::Steered
            }
            Placement::Queue { interrupt, .. } => {
                self.queue.push(key, item);
                if interrupt {
                    self.abort_active();
                }
                if run_id == message_id && self.queue.len() == 1 && interrupt {
                    // Nothing waits before it: it runs as soon as the aborted run ended.
                    SendStatus::Started
                } else {
                    SendStatus::Queued
                }
            }
            Placement::Refused => SendStatus::Dropped,
        };
        if self.active.is_none() {
            self.next_turn(ctx);
        }
        Box::pin(async move {
            store.flush().await?;
            Ok(SendAck { run_id, status })
        })
    }
}

impl Handler<AbortSession> for SessionActor {
    type Result = MessageResult<AbortSession>;
    fn handle(&mut self, _: AbortSession, _: &mut Context<Self>) -> Self::Result {
        self.last_activity = Instant::now();
        MessageResult(self.abort_active())
    }
}

impl Handler<CancelQueuedRun> for SessionActor {
    type Result = bool;
    fn handle(&mut self, msg: CancelQueuedRun, _: &mut Context<Self>) -> bool {
        self.last_activity = Instant::now();
        let gone = self.queue.remove_run(&msg.run_id);
        let Some((_, first)) = gone.first() else {
            return false;
        };
        let now = crate::now_ms();
        let mut writes: Vec<StoreWrite> = gone.iter().map(|(k, _)| inbox::remove(k)).collect();
        writes.push(crate::runs::write(
            &msg.run_id,
            &RunRecord {
                status: "aborted".into(),
                ended_at: now,
                stop_reason: "aborted".into(),
                ..RunRecord::pending(&self.key, first.at_ms)
            },
        ));
        if let Err(e) = self.deps.store.commit(&writes) {
            tracing::error!(session_key = %self.key, error = %e, "cannot cancel a queued run");
        }
        self.forward(RunEvent::Aborted {
            run_id: msg.run_id,
            text: String::new(),
        });
        true
    }
}

impl Handler<GetTranscript> for SessionActor {
    type Result = Result<Vec<Value>, TranscriptError>;
    fn handle(&mut self, _: GetTranscript, _: &mut Context<Self>) -> Self::Result {
        transcript::entries(&self.deps.store, &self.entry.session_id)
    }
}

impl Handler<GetEntry> for SessionActor {
    type Result = MessageResult<GetEntry>;
    fn handle(&mut self, _: GetEntry, _: &mut Context<Self>) -> Self::Result {
        MessageResult((self.entry.clone(), self.active.is_some()))
    }
}

impl Handler<PatchSession> for SessionActor {
    type Result = ResponseFuture<Result<SessionEntry, String>>;
    fn handle(&mut self, msg: PatchSession, _: &mut Context<Self>) -> Self::Result {
        self.last_activity = Instant::now();
        let p = msg.0;
        let result = (|| {
            if let Some(Some(l)) = &p.thinking_level {
                check_level("thinkingLevel", l, THINKING_LEVELS)?;
            }
            if let Some(Some(l)) = &p.verbose_level {
                check_level("verboseLevel", l, VERBOSE_LEVELS)?;
            }
            if let Some(Some(l)) = &p.send_policy {
                check_level("sendPolicy", l, &["allow", "deny"])?;
            }
            if let Some(Some(l)) = &p.reasoning_level {
                check_level("reasoningLevel", l, crate::directives::REASONING_LEVELS)?;
            }
            if let Some(Some(l)) = &p.response_usage {
                check_level("responseUsage", l, crate::directives::USAGE_LEVELS)?;
            }
            if let Some(Some(l)) = &p.exec_host {
                check_level("execHost", l, &["gateway", "sandbox"])?;
            }
            if let Some(Some(l)) = &p.exec_security {
                check_level("execSecurity", l, &["deny", "allowlist", "full"])?;
            }
            if let Some(Some(l)) = &p.exec_ask {
                check_level("execAsk", l, &["off", "on-miss", "always"])?;
            }
            if let Some(Some(l)) = &p.label {
                if l.chars().count() > 100 {
                    return Err("invalid label: longer than 100 characters".to_string());
                }
            }
            if let Some(Some(m)) = &p.model {
                ModelRef::parse(m).map_err(|e| format!("invalid model: {e}"))?;
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
            self.save_entry().map_err(|e| e.to_string())?;
            Ok(self.entry.clone())
        })();
        when_flushed(self.deps.store.clone(), result)
    }
}

impl Handler<ResetSession> for SessionActor {
    type Result = ResponseFuture<Result<SessionEntry, String>>;
    fn handle(&mut self, _: ResetSession, _: &mut Context<Self>) -> Self::Result {
        self.last_activity = Instant::now();
        let result = self.reset().map(|_| self.entry.clone());
        when_flushed(self.deps.store.clone(), result)
    }
}

impl Handler<InjectNote> for SessionActor {
    type Result = ResponseFuture<Result<String, String>>;
    fn handle(&mut self, msg: InjectNote, _: &mut Context<Self>) -> Self::Result {
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
        let stored = self.append_entry(entry).map_err(|e| e.to_string());
        when_flushed(self.deps.store.clone(), stored.map(|_| id))
    }
}

impl Handler<GetStatus> for SessionActor {
    type Result = String;
    fn handle(&mut self, _: GetStatus, _: &mut Context<Self>) -> String {
        self.status_text()
    }
}

impl Handler<SteerSession> for SessionActor {
    type Result = bool;
    fn handle(&mut self, msg: SteerSession, _: &mut Context<Self>) -> bool {
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

impl Handler<TakeSteers> for SessionActor {
    type Result = MessageResult<TakeSteers>;
    fn handle(&mut self, msg: TakeSteers, _: &mut Context<Self>) -> Self::Result {
        let texts = match self.active.as_mut() {
            Some(a) if a.run_id == msg.run_id && !a.aborted => {
                let texts: Vec<String> = a.steers.drain(..).collect();
                if texts.is_empty() && msg.closing {
                    // From now on messages queue instead of steering.
                    a.closing = true;
                }
                texts
            }
            _ => Vec::new(),
        };
        MessageResult(texts)
    }
}

impl Handler<StopIfIdle> for SessionActor {
    type Result = bool;
    fn handle(&mut self, _: StopIfIdle, ctx: &mut Context<Self>) -> bool {
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
        self.next_turn(ctx);
    }
}

impl Handler<RunEvent> for SessionActor {
    // `()`, not a future per event: a future returned here is spawned into
    // the actor's context, whose item list keeps the capacity a burst of
    // deltas grew it to for the session's whole life.
    type Result = ();
    fn handle(&mut self, event: RunEvent, ctx: &mut Context<Self>) {
        self.last_activity = Instant::now();
        // Events of a run that is no longer ours (reset) are not written.
        let ours = self
            .active
            .as_ref()
            .is_some_and(|a| Some(a.run_id.as_str()) == run_id_of(&event));
        match &event {
            RunEvent::Message {
                message, thinking, ..
            } if ours => {
                let mut entry = transcript::from_chat(message);
                if !thinking.is_empty() {
                    // OpenClaw's shape: a thinking block before the reply.
                    if let Some(blocks) = entry.get_mut("content").and_then(|c| c.as_array_mut()) {
                        blocks.insert(
                            0,
                            serde_json::json!({ "type": "thinking", "thinking": thinking }),
                        );
                    }
                }
                if let Err(e) = self.append(entry, false) {
                    tracing::error!(session_key = %self.key, error = %e, "cannot store a run step");
                }
            }
            RunEvent::ModelSelected {
                model,
                profile,
                failed,
                ..
            } if ours => {
                if !failed.is_empty() {
                    tracing::warn!(session_key = %self.key, %model, attempts = ?failed, "model failover");
                }
                if let Ok(r) = ModelRef::parse(model) {
                    if self.transcript_model.as_deref() != Some(model.as_str()) && ours {
                        let entry = json!({ "type": "model_change", "id": ulid::Ulid::generate().to_string(),
                            "timestamp": crate::now_ms(), "provider": r.provider, "modelId": r.model });
                        if transcript::append(&self.deps.store, &self.entry.session_id, &[entry])
                            .is_ok()
                        {
                            self.transcript_model = Some(model.clone());
                        }
                    }
                    self.entry.model_provider = Some(r.provider);
                    self.entry.model = Some(r.model);
                }
                self.entry.auth_profile_override = Some(profile.clone());
                if let Err(e) = self.save_entry() {
                    tracing::error!(session_key = %self.key, error = %e, "cannot store the session entry");
                }
            }
            _ => {}
        }
        if let RunEvent::Thinking { delta, .. } = &event {
            match self.reasoning() {
                "off" => return,
                "on" => {
                    // Held back and sent whole before the reply's end.
                    if let Some(a) = self.active.as_mut().filter(|_| ours) {
                        a.reasoning.push_str(delta);
                    }
                    return;
                }
                _ => {}
            }
        }
        let ends = matches!(
            event,
            RunEvent::Final { .. } | RunEvent::Failed { .. } | RunEvent::Aborted { .. }
        );
        if !ends {
            self.forward(event);
            return;
        }
        if !ours {
            // A run cut off by a reset: tell the clients, touch nothing.
            self.forward(event);
            return;
        }
        // Supervision: restart a failed run from its last persisted step.
        if let RunEvent::Failed { error, kind, .. } = &event {
            let restart = self.deps.restart;
            if let Some(a) = self.active.as_mut() {
                if kind.restartable() && !a.aborted && a.restarts < restart.max {
                    a.restarts += 1;
                    a.run = None;
                    let n = a.restarts;
                    let wait = restart.backoff * 2u32.saturating_pow(n - 1);
                    let run_id = a.run_id.clone();
                    tracing::warn!(session_key = %self.key, %run_id, %error, restart = n, ?wait, "run failed; restarting from its last step");
                    ctx.run_later(wait, move |act, ctx| match act.active.as_ref() {
                        Some(a) if a.run_id == run_id && !a.aborted => act.spawn_run(ctx),
                        Some(a) if a.run_id == run_id => act.end_without_run(&run_id, None, ctx),
                        _ => {}
                    });
                    return;
                }
            }
        }
        let event = match event {
            RunEvent::Failed {
                run_id,
                error,
                kind,
            } => {
                let tries = self.active.as_ref().map(|a| a.restarts).unwrap_or(0);
                let error = match tries {
                    0 => error,
                    n => format!("{error} (gave up after {} tries)", n + 1),
                };
                RunEvent::Failed {
                    run_id,
                    error,
                    kind,
                }
            }
            other => other,
        };
        self.finish(event, ctx);
    }
}

fn run_id_of(e: &RunEvent) -> Option<&str> {
    match e {
        RunEvent::Started { run_id }
        | RunEvent::Delta { run_id, .. }
        | RunEvent::Thinking { run_id, .. }
        | RunEvent::ModelSelected { run_id, .. }
        | RunEvent::ToolStarted { run_id, .. }
        | RunEvent::ToolFinished { run_id, .. }
        | RunEvent::Message { run_id, .. }
        | RunEvent::Final { run_id, .. }
        | RunEvent::Failed { run_id, .. }
        | RunEvent::Aborted { run_id, .. }
        | RunEvent::Queued { run_id, .. } => Some(run_id),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lane::LaneKind;
    use crate::provider::hub::ProviderHub;
    use crate::queue::QueueMode;
    use crate::tool::{ToolExecutor, ToolLimits};
    use tokio::sync::mpsc;

    struct Sink(mpsc::UnboundedSender<SessionEvent>);
    impl Actor for Sink {
        type Context = Context<Self>;
    }
    impl Handler<SessionEvent> for Sink {
        type Result = ();
        fn handle(&mut self, msg: SessionEvent, _: &mut Context<Self>) {
            let _ = self.0.send(msg);
        }
    }

    fn entry(id: &str) -> SessionEntry {
        SessionEntry {
            session_id: id.into(),
            ..SessionEntry::new(0)
        }
    }

    struct H {
        _dir: tempfile::TempDir,
        store: Store,
        deps: SessionDeps,
        session: Addr<SessionActor>,
        events: mpsc::UnboundedReceiver<SessionEvent>,
    }

    fn setup(queue: QueueSettings) -> H {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let (tx, events) = mpsc::unbounded_channel();
        let deps = SessionDeps {
            store: store.clone(),
            hub: ProviderHub::builtins().start(),
            executor: ToolExecutor::new(dir.path().to_path_buf(), ToolLimits::default())
                .start()
                .recipient(),
            lane: LaneActor::new(LaneKind::Main, 4).start(),
            events: Sink(tx).start().recipient(),
            models: std::sync::Arc::new(ModelPlan {
                global: "offline/echo".into(),
                ..Default::default()
            }),
            thinking_default: "off".into(),
            verbose_default: "on".into(),
            context: Arc::new(AgentContext::new(dir.path().to_path_buf(), dir.path())),
            tools: ToolExecutor::specs().into(),
            context_window: 200_000,
            tool_policy: Default::default(),
            subagent_done: Default::default(),
            timeout: Duration::from_secs(30),
            max_model_calls: 8,
            queue,
            restart: RestartPolicy {
                max: 3,
                backoff: Duration::from_millis(20),
            },
            idle_stop: Duration::from_secs(600),
            workspace: dir.path().display().to_string(),
            metrics: Default::default(),
        };
        let session =
            SessionActor::new("agent:main:main".into(), entry("sess-1"), deps.clone()).start();
        H {
            _dir: dir,
            store,
            deps,
            session,
            events,
        }
    }

    impl H {
        /// From an authorised sender (an operator).
        async fn send(&self, text: &str, run_id: &str) -> SendAck {
            let mut msg = SendChat::text(text, run_id);
            msg.command_authorized = true;
            self.session.send(msg).await.unwrap().unwrap()
        }

        /// Events until the end of the run `run_id`.
        async fn until_end(&mut self, run_id: &str) -> Vec<RunEvent> {
            let mut out = Vec::new();
            loop {
                let e = actix::clock::timeout(Duration::from_secs(10), self.events.recv())
                    .await
                    .unwrap()
                    .unwrap()
                    .event;
                let end = match &e {
                    RunEvent::Final { run_id: r, .. }
                    | RunEvent::Failed { run_id: r, .. }
                    | RunEvent::Aborted { run_id: r, .. } => r == run_id,
                    _ => false,
                };
                out.push(e);
                if end {
                    return out;
                }
            }
        }

        fn texts(&self) -> Vec<(String, String)> {
            transcript::entries(&self.store, "sess-1")
                .unwrap()
                .iter()
                .filter_map(|e| {
                    let role = e.get("message")?.get("role")?.as_str()?.to_string();
                    Some((role, transcript::message_text(e).unwrap_or_default()))
                })
                .collect()
        }
    }

    fn final_text(events: &[RunEvent]) -> String {
        match events.last() {
            Some(RunEvent::Final { text, .. }) => text.clone(),
            other => panic!("{other:?}"),
        }
    }

    #[actix::test]
    async fn a_message_is_durable_before_its_ack_and_the_reply_is_stored() {
        let mut h = setup(QueueSettings::default());
        let ack = h.send("hello", "k1").await;
        assert_eq!(
            ack,
            SendAck {
                run_id: "k1".into(),
                status: SendStatus::Started
            }
        );
        assert!(
            h.texts().contains(&("user".into(), "hello".into())),
            "stored before the ack"
        );
        let events = h.until_end("k1").await;
        assert_eq!(final_text(&events), "You said: hello");
        assert_eq!(
            h.texts(),
            [
                ("user".to_string(), "hello".to_string()),
                ("assistant".into(), "You said: hello".into())
            ]
        );
    }

    #[actix::test]
    async fn an_unauthorised_sender_gets_directives_treated_as_plain_text() {
        let mut h = setup(QueueSettings::default());
        let mut msg = SendChat::text("/think high", "u1");
        msg.command_authorized = false;
        let ack = h.session.send(msg).await.unwrap().unwrap();
        assert_eq!(ack.status, SendStatus::Started, "a run, not a directive");
        let events = h.until_end("u1").await;
        assert_eq!(final_text(&events), "You said: /think high");
        let (entry, _) = h.session.send(GetEntry).await.unwrap();
        assert_eq!(entry.thinking_level, None, "the session is unchanged");
        // An authorised sender's directive changes the session and never runs.
        let ack = h.send("/think high", "u2").await;
        assert_eq!(ack.status, SendStatus::Directive);
        assert_eq!(
            final_text(&h.until_end("u2").await),
            "Thinking level set to high."
        );
        let (entry, _) = h.session.send(GetEntry).await.unwrap();
        assert_eq!(entry.thinking_level.as_deref(), Some("high"));
        // `/stop` as a directive (channels): aborts the active run.
        h.send("/stop", "u3").await;
        assert_eq!(final_text(&h.until_end("u3").await), "No run is active.");
        h.send("@tokens 500\n@delay 20", "u4").await;
        h.send("/stop", "u5").await;
        let mut ended = Vec::new();
        while ended.len() < 2 {
            match h.events.recv().await.unwrap().event {
                RunEvent::Final { run_id, text, .. } if run_id == "u5" => ended.push(text),
                RunEvent::Aborted { run_id, .. } if run_id == "u4" => ended.push("aborted".into()),
                _ => {}
            }
        }
        assert!(
            ended.contains(&"Stopped the current run.".to_string()),
            "{ended:?}"
        );
        assert!(ended.contains(&"aborted".to_string()), "{ended:?}");
    }

    #[actix::test]
    async fn messages_sent_while_busy_are_collected_into_one_follow_up_turn() {
        let mut h = setup(QueueSettings {
            debounce: Duration::from_millis(50),
            ..QueueSettings::default()
        });
        assert_eq!(
            h.send("@tokens 30\n@delay 10", "k1").await.status,
            SendStatus::Started
        );
        assert_eq!(h.send("first extra", "k2").await.status, SendStatus::Queued);
        assert_eq!(
            h.send("second extra", "k3").await.status,
            SendStatus::Queued
        );
        h.until_end("k1").await;
        let next = loop {
            let e = actix::clock::timeout(Duration::from_secs(10), h.events.recv())
                .await
                .unwrap()
                .unwrap()
                .event;
            if let RunEvent::Final { text, .. } = e {
                break text;
            }
        };
        assert!(
            // Each queued message keeps its own time envelope.
            next.contains("Queued #1\n[")
                && next.contains("] first extra")
                && next.contains("Queued #2\n[")
                && next.contains("] second extra"),
            "{next}"
        );
        let users: Vec<String> = h
            .texts()
            .into_iter()
            .filter(|(r, _)| r == "user")
            .map(|(_, t)| t)
            .collect();
        assert_eq!(
            users.len(),
            4,
            "both queued messages stored at arrival, plus the coalesced turn: {users:?}"
        );
    }

    #[actix::test]
    async fn steer_mode_reaches_the_active_run() {
        let mut h = setup(QueueSettings {
            mode: QueueMode::Steer,
            ..QueueSettings::default()
        });
        h.send(
            "@tool exec {\"command\":\"sleep 1\"}\n@tool exec {\"command\":\"echo never\"}",
            "k1",
        )
        .await;
        loop {
            let e = actix::clock::timeout(Duration::from_secs(10), h.events.recv())
                .await
                .unwrap()
                .unwrap()
                .event;
            if matches!(e, RunEvent::ToolStarted { .. }) {
                break;
            }
        }
        assert_eq!(
            h.send("change of plan", "k2").await.status,
            SendStatus::Steered
        );
        let events = h.until_end("k1").await;
        assert_eq!(final_text(&events), "You said: change of plan");
        assert!(events
            .iter()
            .any(|e| matches!(e, RunEvent::ToolFinished { skipped: true, .. })));
    }

    #[test]
    fn a_trailing_user_message_means_an_interrupted_run() {
        let user = transcript::message_entry(None, transcript::user_message("hi"));
        let reply = transcript::message_entry(
            None,
            serde_json::json!({"role": "assistant", "content": []}),
        );
        let mut pending = transcript::message_entry(None, transcript::user_message("later"));
        pending["delivery"] = Value::String("pending".into());
        assert_eq!(interrupted(std::slice::from_ref(&user)), Some(&user));
        assert_eq!(interrupted(&[user.clone(), reply.clone()]), None);
        assert_eq!(
            interrupted(&[user.clone(), reply.clone(), pending.clone()]),
            None,
            "pending messages never started a run"
        );
        assert_eq!(interrupted(&[reply, user.clone(), pending]), Some(&user));
        assert_eq!(interrupted(&[]), None);
    }

    #[actix::test]
    async fn a_restarted_session_marks_the_cut_run_and_delivers_what_was_queued() {
        let h = setup(QueueSettings::default());
        // As a killed gateway leaves it: a user message without an answer,
        // then a queued one never delivered.
        let user = transcript::message_entry(None, transcript::user_message("first"));
        let mut queued = transcript::message_entry(None, transcript::user_message("second"));
        queued["delivery"] = Value::String("pending".into());
        transcript::append(&h.store, "sess-2", &[user, queued]).unwrap();
        let deps = SessionDeps {
            store: h.store.clone(),
            ..h.deps.clone()
        };
        let (tx, mut events) = mpsc::unbounded_channel();
        let deps = SessionDeps {
            events: Sink(tx).start().recipient(),
            ..deps
        };
        let _session = SessionActor::new("agent:main:b".into(), entry("sess-2"), deps).start();
        let text = loop {
            let e = actix::clock::timeout(Duration::from_secs(10), events.recv())
                .await
                .unwrap()
                .unwrap()
                .event;
            if let RunEvent::Final { text, .. } = e {
                break text;
            }
        };
        assert_eq!(
            text, "You said: second",
            "the queued message ran after the restart"
        );
        let entries = transcript::entries(&h.store, "sess-2").unwrap();
        assert!(
            entries
                .iter()
                .any(|e| e.get("interrupted") == Some(&Value::Bool(true))),
            "the cut run is marked"
        );
    }

    /// Events until the end of each run in `runs` (any order).
    async fn until_ends(
        events: &mut mpsc::UnboundedReceiver<SessionEvent>,
        runs: &[&str],
    ) -> Vec<RunEvent> {
        let mut out = Vec::new();
        let mut left: Vec<&str> = runs.to_vec();
        while !left.is_empty() {
            let e = actix::clock::timeout(Duration::from_secs(10), events.recv())
                .await
                .unwrap()
                .unwrap()
                .event;
            if let RunEvent::Final { run_id, .. }
            | RunEvent::Failed { run_id, .. }
            | RunEvent::Aborted { run_id, .. } = &e
            {
                left.retain(|r| r != run_id);
            }
            out.push(e);
        }
        out
    }

    #[actix::test]
    async fn after_a_crash_a_cut_run_is_marked_and_queued_messages_run_in_order() {
        let h = setup(QueueSettings::default());
        let key = "agent:main:crashed";
        let store = &h.store;
        // As a killed gateway leaves it: run r1 started with its input, two
        // messages wait to be collected into run q1.
        let mut input = transcript::message_entry(None, transcript::user_message("first"));
        input["runId"] = json!("r1");
        input["messageId"] = json!("r1");
        transcript::append(store, "sess-c", &[input]).unwrap();
        let item = |id: &str, run: &str, assigned: bool, text: &str| InboxItem {
            message_id: id.into(),
            run_id: run.into(),
            assigned,
            text: text.into(),
            images: Vec::new(),
            at_ms: 1,
            joinable: true,
            overrides: RunOverrides::default(),
            timeout_ms: None,
        };
        let mut writes = Vec::new();
        for it in [
            item("r1", "r1", true, "first"),
            item("q1", "q1", false, "second"),
            item("q2", "q1", false, "third"),
        ] {
            writes.push(inbox::put(&inbox::new_key(key), &it));
        }
        writes.push(crate::runs::write("r1", &RunRecord::pending(key, 1)));
        writes.push(crate::runs::write("q1", &RunRecord::pending(key, 1)));
        writes.push(crate::runs::write("q2", &RunRecord::alias(key, "q1", 1)));
        store.commit(&writes).unwrap();

        let (tx, mut events) = mpsc::unbounded_channel();
        let deps = SessionDeps {
            events: Sink(tx).start().recipient(),
            ..h.deps.clone()
        };
        let _s = SessionActor::new(key.into(), entry("sess-c"), deps).start();
        let seen = until_ends(&mut events, &["r1", "q1"]).await;
        assert!(
            seen.iter().any(|e| matches!(e,
            RunEvent::Failed { run_id, error, .. } if run_id == "r1" && error == INTERRUPTED_NOTE))
        );
        let queued: Vec<(&str, &str)> = seen
            .iter()
            .filter_map(|e| match e {
                RunEvent::Queued { run_id, message_id } => {
                    Some((run_id.as_str(), message_id.as_str()))
                }
                _ => None,
            })
            .collect();
        assert_eq!(queued, [("q1", "q1"), ("q1", "q2")]);
        let text = seen
            .iter()
            .find_map(|e| match e {
                RunEvent::Final { run_id, text, .. } if run_id == "q1" => Some(text.clone()),
                _ => None,
            })
            .unwrap();
        let (a, b) = (text.find("second"), text.find("third"));
        assert!(a.is_some() && a < b, "{text}");
        assert_eq!(
            crate::runs::load(store, "r1").unwrap().unwrap().status,
            "error"
        );
        assert_eq!(
            crate::runs::resolve(store, "q2").unwrap().unwrap().1.status,
            "ok"
        );
        assert!(
            inbox::load(store, key).unwrap().is_empty(),
            "nothing left to recover"
        );
        let notes = transcript::entries(store, "sess-c")
            .unwrap()
            .iter()
            .filter(|e| e.get("interrupted") == Some(&Value::Bool(true)))
            .count();
        assert_eq!(notes, 1);
    }

    #[actix::test]
    async fn once_the_run_is_closing_a_steer_waits_for_its_own_turn() {
        let mut h = setup(QueueSettings {
            mode: QueueMode::Steer,
            ..QueueSettings::default()
        });
        h.send("@tokens 40\n@delay 10", "k1").await;
        // As the run does with its final answer: nothing waits, so it closes.
        let taken = h
            .session
            .send(TakeSteers {
                run_id: "k1".into(),
                closing: true,
            })
            .await
            .unwrap();
        assert!(taken.is_empty());
        let late = h.send("late", "k2").await;
        assert_eq!(
            late,
            SendAck {
                run_id: "k2".into(),
                status: SendStatus::Queued
            },
            "not steered into a run that is ending"
        );
        let seen = until_ends(&mut h.events, &["k1", "k2"]).await;
        assert!(seen.iter().any(|e| matches!(e,
            RunEvent::Final { run_id, text, .. } if run_id == "k2" && text == "You said: late")));
    }

    #[actix::test]
    async fn a_repeated_message_id_is_answered_from_what_was_stored() {
        let mut h = setup(QueueSettings::default());
        h.send("@tokens 30\n@delay 10", "k1").await;
        assert_eq!(
            h.send("again", "k1").await.status,
            SendStatus::Duplicate { live: true }
        );
        h.until_end("k1").await;
        assert_eq!(
            h.send("again", "k1").await,
            SendAck {
                run_id: "k1".into(),
                status: SendStatus::Duplicate { live: false }
            }
        );
        let users = h.texts().into_iter().filter(|(r, _)| r == "user").count();
        assert_eq!(users, 1, "stored once");
    }

    #[actix::test]
    async fn earlier_turns_reach_the_model_and_survive_a_session_restart() {
        let mut h = setup(QueueSettings::default());
        h.send("hello", "k1").await;
        h.until_end("k1").await;
        h.send("@context", "k2").await;
        assert_eq!(final_text(&h.until_end("k2").await), "context: 3 messages");
        // A new actor for the same session reloads its history from the store.
        let (tx, mut events) = mpsc::unbounded_channel();
        let deps = SessionDeps {
            events: Sink(tx).start().recipient(),
            ..h.deps.clone()
        };
        let again = SessionActor::new("agent:main:main".into(), entry("sess-1"), deps).start();
        again
            .send(SendChat::text("@context", "k3"))
            .await
            .unwrap()
            .unwrap();
        let text = loop {
            let e = actix::clock::timeout(Duration::from_secs(10), events.recv())
                .await
                .unwrap()
                .unwrap()
                .event;
            if let RunEvent::Final { text, .. } = e {
                break text;
            }
        };
        assert_eq!(text, "context: 5 messages");
    }

    #[actix::test]
    async fn after_a_failed_run_the_session_answers_the_next_message() {
        let mut h = setup(QueueSettings::default());
        h.send("@error unavailable", "k1").await;
        let events = h.until_end("k1").await;
        match events.last() {
            Some(RunEvent::Failed { error, .. }) => {
                assert!(error.contains("gave up after 4 tries"), "{error}")
            }
            other => panic!("{other:?}"),
        }
        let starts = events
            .iter()
            .filter(|e| matches!(e, RunEvent::Started { .. }))
            .count();
        assert_eq!(starts, 4, "the first try and three restarts");
        h.send("are you there?", "k2").await;
        assert_eq!(
            final_text(&h.until_end("k2").await),
            "You said: are you there?"
        );
    }

    #[actix::test]
    async fn abort_ends_the_active_run_and_interrupt_mode_starts_the_newest() {
        let mut h = setup(QueueSettings::default());
        h.send("@tokens 500\n@delay 20", "k1").await;
        loop {
            let e = actix::clock::timeout(Duration::from_secs(10), h.events.recv())
                .await
                .unwrap()
                .unwrap()
                .event;
            if matches!(e, RunEvent::Delta { .. }) {
                break;
            }
        }
        assert_eq!(h.session.send(AbortSession).await.unwrap(), ["k1"]);
        assert!(matches!(
            h.until_end("k1").await.last(),
            Some(RunEvent::Aborted { .. })
        ));
        assert!(
            h.session.send(AbortSession).await.unwrap().is_empty(),
            "nothing left to abort"
        );

        let mut h = setup(QueueSettings {
            mode: QueueMode::Interrupt,
            ..QueueSettings::default()
        });
        h.send("@tokens 500\n@delay 20", "k1").await;
        assert_eq!(
            h.send("never mind, do this", "k2").await.status,
            SendStatus::Started
        );
        assert!(matches!(
            h.until_end("k1").await.last(),
            Some(RunEvent::Aborted { .. })
        ));
        assert_eq!(
            final_text(&h.until_end("k2").await),
            "You said: never mind, do this"
        );
    }

    #[actix::test]
    async fn idle_sessions_stop_and_come_back_from_the_store() {
        use crate::router::{CountLive, GetSession, RouterActor};
        let h = setup(QueueSettings::default());
        let (tx, mut events) = mpsc::unbounded_channel();
        let deps = SessionDeps {
            idle_stop: Duration::from_millis(200),
            events: Sink(tx).start().recipient(),
            ..h.deps.clone()
        };
        let router = RouterActor::new(deps).start();
        let key = crate::inbound::SessionKey::canonical("idle", "main", "main").unwrap();
        let (s1, e1) = router
            .send(GetSession { key: key.clone() })
            .await
            .unwrap()
            .unwrap();
        s1.send(SendChat::text("remember me", "i1"))
            .await
            .unwrap()
            .unwrap();
        loop {
            let e = actix::clock::timeout(Duration::from_secs(10), events.recv())
                .await
                .unwrap()
                .unwrap();
            if matches!(e.event, RunEvent::Final { .. }) {
                break;
            }
        }
        assert_eq!(router.send(CountLive).await.unwrap(), 1);
        for _ in 0..100 {
            if router.send(CountLive).await.unwrap() == 0 {
                break;
            }
            actix::clock::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(
            router.send(CountLive).await.unwrap(),
            0,
            "the idle session stopped"
        );
        assert!(!s1.connected());
        let (s2, e2) = router.send(GetSession { key }).await.unwrap().unwrap();
        assert_eq!(e1.session_id, e2.session_id, "same transcript");
        s2.send(SendChat::text("@context", "i2"))
            .await
            .unwrap()
            .unwrap();
        let text = loop {
            let e = actix::clock::timeout(Duration::from_secs(10), events.recv())
                .await
                .unwrap()
                .unwrap();
            if let RunEvent::Final { text, .. } = e.event {
                break text;
            }
        };
        assert_eq!(
            text, "context: 3 messages",
            "history reloaded from the store"
        );
    }
}
