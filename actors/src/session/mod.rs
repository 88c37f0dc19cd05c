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
use crate::lane::{AcquireSlot, LaneActor, SlotPermit};
use crate::msg_context::{ChatType, MsgContext};
use crate::provider::hub::ProviderHub;
use crate::provider::selection::{resolve_model, ModelChain, ModelRef};
use crate::provider::{thinking_budget, ChatMessage, Image, Messages, ToolSpec};
pub use crate::queue::RunOverrides;
use crate::queue::{parse_queue_directive, QueueSettings, SessionQueue};
use crate::run::{AbortRun, ExecuteTool, FailureKind, RunActor, RunConfig, RunEvent};
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

mod delivery;
use delivery::{is_pending, RecentIds};

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

impl Handler<SendChat> for SessionActor {
    type Result = ResponseFuture<Result<SendAck, TranscriptError>>;
    fn handle(&mut self, msg: SendChat, ctx: &mut Context<Self>) -> Self::Result {
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
        self.accept(message_id, mctx, msg.images, overrides, msg.timeout, ctx)
    }
}

impl Handler<AbortSession> for SessionActor {
    type Result = MessageResult<AbortSession>;
    fn handle(&mut self, _: AbortSession, _: &mut Context<Self>) -> Self::Result {
        self.last_activity = Instant::now();
        MessageResult(self.abort_active())
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
mod tests;
