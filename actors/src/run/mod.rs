//! RunActor: one agent run, the double loop of seed 001. Inner loop: stream
//! the model, execute its tool calls one by one, and between tool calls check
//! for steering (a steer skips the remaining calls with placeholder results
//! and is injected before the next model call). Outer loop: follow-ups queued
//! during the run start another turn. `Steer`, `FollowUp` and `AbortRun`
//! arrive as mailbox messages; abort cancels the provider stream (its receiver
//! is dropped) and running tools (their cancel signal fires), and the run ends
//! with `Aborted`. Every step is reported to the sink as a `RunEvent`; new
//! conversation messages come as `RunEvent::Message` so the session (the
//! single writer of the transcript) can persist them.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use tokio::sync::{mpsc, watch};

use futures_util::FutureExt;

use crate::provider::hub::{open_stream, OpenOutcome, ProviderHub};
use crate::provider::selection::ModelRef;
use crate::provider::{
    ChatMessage, CompletionRequest, MessageRole, Messages, ProviderError, ProviderEvent,
    StopReason, ToolCall, ToolSpec, Usage,
};

/// The result text of a tool call skipped because the user steered.
pub const SKIPPED_TOOL_RESULT: &str = "Skipped: the user sent a new message before this tool ran.";

/// Runs one tool call. The executor watches `cancel` and stops (killing any
/// child process) when it turns true. Reply: the result for the model.
#[derive(Debug, Message)]
#[rtype(result = "ToolOutcome")]
pub struct ExecuteTool {
    pub call: ToolCall,
    pub cancel: watch::Receiver<bool>,
    /// Extra environment for child processes (skills' env overrides; never
    /// in the prompt).
    pub env: std::sync::Arc<[(String, String)]>,
    /// The session whose run calls the tool (session tools act for it).
    pub session_key: String,
    /// The agent answering that session.
    pub agent_id: String,
    /// Where and how `exec` may run (the session's settings).
    pub exec: crate::approvals::ExecPolicy,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutcome {
    pub text: String,
    pub is_error: bool,
}

/// One step of a run, in order.
#[derive(Debug, Clone, PartialEq, Message)]
#[rtype(result = "()")]
pub enum RunEvent {
    /// From the session, not the run: message `message_id` was accepted
    /// and run `run_id` answers it (started now, queued, collected or
    /// steered). Sent before the message is acknowledged.
    Queued {
        run_id: String,
        message_id: String,
    },
    Started {
        run_id: String,
    },
    /// `text` is the cumulative text of the current assistant message.
    Delta {
        run_id: String,
        text: String,
        delta: String,
    },
    Thinking {
        run_id: String,
        delta: String,
    },
    /// The model (and auth profile) that answers; sent when it changes,
    /// e.g. after a failover. `failed` lists the attempts that failed first.
    ModelSelected {
        run_id: String,
        model: String,
        profile: String,
        failed: Vec<String>,
    },
    ToolStarted {
        run_id: String,
        call: ToolCall,
    },
    ToolFinished {
        run_id: String,
        call: ToolCall,
        outcome: ToolOutcome,
        skipped: bool,
    },
    /// A message added to the conversation (assistant, tool result, injected
    /// user text). `thinking`: what the model reasoned before an assistant
    /// message (stored in the transcript; never sent back to a model).
    Message {
        run_id: String,
        message: ChatMessage,
        thinking: String,
    },
    Final {
        run_id: String,
        text: String,
        stop_reason: StopReason,
        usage: Usage,
    },
    Failed {
        run_id: String,
        error: String,
        kind: FailureKind,
    },
    Aborted {
        run_id: String,
        text: String,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub enum FailureKind {
    /// No model could answer; the last provider error when there was one.
    Provider(Option<ProviderError>),
    Timeout,
    TooManyTurns,
    /// The run's task went away without ending (its arbiter stopped).
    Stopped,
    /// The run's future panicked (caught at the future boundary).
    Panicked,
    /// The session could not store the run's input.
    Store,
    /// The queue's cap pushed the run's messages out before it started.
    Dropped,
}

impl FailureKind {
    /// Whether the session restarts the run from its last persisted step.
    pub fn restartable(&self) -> bool {
        match self {
            FailureKind::Provider(Some(e)) => e.transient(),
            FailureKind::Provider(None) | FailureKind::Stopped | FailureKind::Panicked => true,
            FailureKind::Timeout
            | FailureKind::TooManyTurns
            | FailureKind::Store
            | FailureKind::Dropped => false,
        }
    }

    /// The wire's `errorKind`.
    pub fn wire_kind(&self) -> &'static str {
        match self {
            FailureKind::Provider(Some(e)) => e.wire_kind(),
            FailureKind::Timeout => "timeout",
            _ => "unknown",
        }
    }
}

/// Everything a run needs.
pub struct RunConfig {
    pub run_id: String,
    /// The session this run belongs to.
    pub session_key: String,
    /// The agent answering it.
    pub agent_id: String,
    /// The session's exec host, security and ask settings.
    pub exec: crate::approvals::ExecPolicy,
    /// The model, then its fallbacks, tried in order.
    pub models: Vec<ModelRef>,
    /// The session's auth profile (kept unless it cools down).
    pub sticky_profile: Option<String>,
    pub thinking_budget: Option<u32>,
    pub system: std::sync::Arc<str>,
    /// Environment for tool processes (skill env overrides).
    pub tool_env: std::sync::Arc<[(String, String)]>,
    /// Before-tool-call hooks, in order.
    pub hooks: std::sync::Arc<[std::sync::Arc<dyn crate::tool::policy::ToolHook>]>,
    /// Characters of a tool result kept for the model (head and tail).
    pub result_max_chars: usize,
    pub tools: std::sync::Arc<[ToolSpec]>,
    /// The conversation so far, ending with the new user message.
    pub messages: Messages,
    pub hub: Addr<ProviderHub>,
    pub executor: Recipient<ExecuteTool>,
    pub sink: Recipient<RunEvent>,
    /// The session's steering queue, asked at every steering point (None:
    /// only `Steer` messages sent to the run itself).
    pub steers: Option<Recipient<TakeSteers>>,
    pub timeout: Duration,
    /// Model calls allowed per turn before the run fails (runaway tool loops).
    pub max_model_calls: u32,
}

/// Injects a message into the running turn (before the next model call).
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct Steer {
    pub text: String,
}

/// From a run at a steering point (between tool calls, after a model
/// turn): the messages steered into it since. With `closing` the run has
/// its final answer: when nothing waits, the session stops steering into it
/// (later messages queue) and the run ends; otherwise it goes on with them.
/// So a steered message is always taken by the run it was steered into,
/// unless that run fails or is aborted. Reply: the texts, in order.
#[derive(Debug, Message)]
#[rtype(result = "Vec<String>")]
pub struct TakeSteers {
    pub run_id: String,
    pub closing: bool,
}

/// Queues a message for another turn after this one.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct FollowUp {
    pub text: String,
}

/// Stops the run: provider stream and tools are cancelled.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct AbortRun;

#[derive(Debug, Message)]
#[rtype(result = "()")]
struct LoopEnded;

enum Control {
    Steer(String),
    FollowUp(String),
}

pub struct RunActor {
    config: Option<RunConfig>,
    control: mpsc::UnboundedSender<Control>,
    control_rx: Option<mpsc::UnboundedReceiver<Control>>,
    abort: watch::Sender<bool>,
}

impl RunActor {
    pub fn new(config: RunConfig) -> RunActor {
        let (control, control_rx) = mpsc::unbounded_channel();
        let (abort, _) = watch::channel(false);
        RunActor {
            config: Some(config),
            control,
            control_rx: Some(control_rx),
            abort,
        }
    }
}

impl Actor for RunActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        let (Some(cfg), Some(control)) = (self.config.take(), self.control_rx.take()) else {
            ctx.stop();
            return;
        };
        let abort = self.abort.subscribe();
        let me = ctx.address();
        actix::spawn(async move {
            let sink = cfg.sink.clone();
            cfg.sink.do_send(RunEvent::Started {
                run_id: cfg.run_id.clone(),
            });
            guarded(cfg, control, abort).await;
            drop(sink);
            me.do_send(LoopEnded);
        });
    }
}

impl Handler<Steer> for RunActor {
    type Result = ();
    fn handle(&mut self, msg: Steer, _: &mut Context<Self>) {
        let _ = self.control.send(Control::Steer(msg.text));
    }
}

impl Handler<FollowUp> for RunActor {
    type Result = ();
    fn handle(&mut self, msg: FollowUp, _: &mut Context<Self>) {
        let _ = self.control.send(Control::FollowUp(msg.text));
    }
}

impl Handler<AbortRun> for RunActor {
    type Result = ();
    fn handle(&mut self, _: AbortRun, _: &mut Context<Self>) {
        let _ = self.abort.send(true);
    }
}

impl Handler<LoopEnded> for RunActor {
    type Result = ();
    fn handle(&mut self, _: LoopEnded, ctx: &mut Context<Self>) {
        ctx.stop();
    }
}

/// Tells the sink when the run's future is dropped before it ended (its
/// task was cancelled or its arbiter stopped): a run never ends silently.
struct EndGuard {
    sink: Recipient<RunEvent>,
    run_id: String,
    armed: bool,
}

impl Drop for EndGuard {
    fn drop(&mut self) {
        if self.armed {
            self.sink.do_send(RunEvent::Failed {
                run_id: self.run_id.clone(),
                error: "the run stopped before it finished".into(),
                kind: FailureKind::Stopped,
            });
        }
    }
}

/// The run with its boundaries: the timeout, a panic caught and turned into
/// a failure, and the guard that reports a dropped run. Sends the closing
/// event to the sink.
async fn guarded(
    cfg: RunConfig,
    control: mpsc::UnboundedReceiver<Control>,
    abort: watch::Receiver<bool>,
) {
    let (sink, run_id, timeout) = (cfg.sink.clone(), cfg.run_id.clone(), cfg.timeout);
    bounded(sink, run_id, timeout, run_loop(cfg, control, abort)).await;
}

/// Runs `run` to its closing event and hands that to `sink`, whatever
/// happens: a timeout, a panic (caught at this boundary) or the future
/// being dropped all become a `Failed` event.
async fn bounded(
    sink: Recipient<RunEvent>,
    run_id: String,
    timeout: Duration,
    run: impl std::future::Future<Output = RunEvent>,
) {
    let mut guard = EndGuard {
        sink,
        run_id: run_id.clone(),
        armed: true,
    };
    let run = std::panic::AssertUnwindSafe(run).catch_unwind();
    let end = match actix::clock::timeout(timeout, run).await {
        Ok(Ok(end)) => end,
        Ok(Err(panic)) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            tracing::error!(%run_id, panic = %what, "run panicked");
            RunEvent::Failed {
                run_id,
                error: format!("internal error in the run: {what}"),
                kind: FailureKind::Panicked,
            }
        }
        Err(_) => RunEvent::Failed {
            run_id,
            error: format!("run timed out after {}s", timeout.as_secs()),
            kind: FailureKind::Timeout,
        },
    };
    guard.armed = false;
    guard.sink.do_send(end);
}

/// Steering and follow-ups that arrived so far.
fn drain(
    control: &mut mpsc::UnboundedReceiver<Control>,
    followups: &mut VecDeque<String>,
) -> Vec<String> {
    let mut steers = Vec::new();
    while let Ok(c) = control.try_recv() {
        match c {
            Control::Steer(t) => steers.push(t),
            Control::FollowUp(t) => followups.push_back(t),
        }
    }
    steers
}

/// A steering point: what was steered into the run (its own `Steer`
/// messages, then the session's queue). `closing`: the run has its final
/// answer and ends unless something comes back.
async fn checkpoint(
    cfg: &RunConfig,
    control: &mut mpsc::UnboundedReceiver<Control>,
    followups: &mut VecDeque<String>,
    closing: bool,
) -> Vec<String> {
    let mut steers = drain(control, followups);
    if let Some(session) = &cfg.steers {
        let closing = closing && steers.is_empty() && followups.is_empty();
        let asked = session.send(TakeSteers {
            run_id: cfg.run_id.clone(),
            closing,
        });
        steers.extend(asked.await.unwrap_or_default());
    }
    steers
}

struct Turn {
    text: String,
    thinking: String,
    calls: Vec<ToolCall>,
    stop: StopReason,
}

enum StreamEnd {
    Done(Turn),
    Failed(String, Option<ProviderError>),
    Aborted(String),
}

async fn wait_abort(abort: &mut watch::Receiver<bool>) {
    while !*abort.borrow() {
        if abort.changed().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

/// Which model and profile answered the last model call of the run.
#[derive(Default)]
struct Serving {
    model: Option<String>,
    profile: Option<String>,
}

async fn stream_turn(
    cfg: &RunConfig,
    messages: &[Arc<ChatMessage>],
    usage: &mut Usage,
    serving: &mut Serving,
    abort: &mut watch::Receiver<bool>,
) -> StreamEnd {
    let request = CompletionRequest {
        system: cfg.system.clone(),
        // Transcript repair: every call answered, no orphaned results.
        messages: crate::tool::policy::repair(&messages.to_vec()),
        tools: cfg.tools.clone(),
        thinking_budget: cfg.thinking_budget,
        ..Default::default()
    };
    let sticky = serving
        .profile
        .clone()
        .or_else(|| cfg.sticky_profile.clone());
    let opened = match open_stream(&cfg.hub, &cfg.models, sticky.as_deref(), &request, abort).await
    {
        OpenOutcome::Opened(o) => o,
        OpenOutcome::Failed(e) => return StreamEnd::Failed(e.message, e.last),
        OpenOutcome::Aborted => return StreamEnd::Aborted(String::new()),
    };
    let model = opened.model.to_string();
    if serving.model.as_deref() != Some(model.as_str())
        || serving.profile.as_deref() != Some(opened.profile.as_str())
    {
        cfg.sink.do_send(RunEvent::ModelSelected {
            run_id: cfg.run_id.clone(),
            model: model.clone(),
            profile: opened.profile.clone(),
            failed: opened.failed_attempts.clone(),
        });
        serving.model = Some(model);
        serving.profile = Some(opened.profile.clone());
    }
    let opened = *opened;
    let mut stream = opened.rest;
    let mut pending_first = Some(opened.first);
    let mut turn = Turn {
        text: String::new(),
        thinking: String::new(),
        calls: Vec::new(),
        stop: StopReason::Stop,
    };
    loop {
        let event = match pending_first.take() {
            Some(first) => Some(first),
            // An abort wins over whatever is ready with it (`select!` would
            // otherwise pick at random and let a short reply finish).
            None => tokio::select! {
                biased;
                _ = wait_abort(abort) => return StreamEnd::Aborted(turn.text),
                e = stream.recv() => e,
            },
        };
        match event {
            Some(ProviderEvent::TextDelta(d)) => {
                turn.text.push_str(&d);
                cfg.sink.do_send(RunEvent::Delta {
                    run_id: cfg.run_id.clone(),
                    text: turn.text.clone(),
                    delta: d,
                });
            }
            Some(ProviderEvent::ThinkingDelta(d)) => {
                turn.thinking.push_str(&d);
                cfg.sink.do_send(RunEvent::Thinking {
                    run_id: cfg.run_id.clone(),
                    delta: d,
                });
            }
            Some(ProviderEvent::ToolCall(c)) => turn.calls.push(c),
            Some(ProviderEvent::Usage(u)) => {
                usage.input += u.input;
                usage.output += u.output;
                usage.cache_read += u.cache_read;
                usage.cache_write += u.cache_write;
            }
            Some(ProviderEvent::Done(stop)) => {
                turn.stop = stop;
                return StreamEnd::Done(turn);
            }
            Some(ProviderEvent::Error(e)) => return StreamEnd::Failed(e.to_string(), Some(e)),
            None => {
                let e =
                    ProviderError::Unavailable("the model stream ended without an answer".into());
                return StreamEnd::Failed(e.to_string(), Some(e));
            }
        }
    }
}

/// Adds a message to the run's conversation and reports it to the sink
/// (the session persists it).
fn append(cfg: &RunConfig, messages: &mut Messages, message: ChatMessage) {
    append_with_thinking(cfg, messages, message, String::new());
}

fn append_with_thinking(
    cfg: &RunConfig,
    messages: &mut Messages,
    message: ChatMessage,
    thinking: String,
) {
    cfg.sink.do_send(RunEvent::Message {
        run_id: cfg.run_id.clone(),
        message: message.clone(),
        thinking,
    });
    messages.push(Arc::new(message));
}

/// Records a tool call's result: in the conversation and as `ToolFinished`.
fn tool_done(
    cfg: &RunConfig,
    messages: &mut Messages,
    call: &ToolCall,
    outcome: ToolOutcome,
    skipped: bool,
) {
    let result = ChatMessage::tool_result(&call.id, &outcome.text, outcome.is_error);
    append(cfg, messages, result);
    cfg.sink.do_send(RunEvent::ToolFinished {
        run_id: cfg.run_id.clone(),
        call: call.clone(),
        outcome,
        skipped,
    });
}

/// Runs a turn's tool calls one by one, checking for steering between them
/// (a steer skips the rest with placeholder results). Returns the steering
/// messages to inject (possibly none), or None when the run was aborted.
async fn run_tools(
    cfg: &RunConfig,
    turn: &Turn,
    messages: &mut Messages,
    control: &mut mpsc::UnboundedReceiver<Control>,
    followups: &mut VecDeque<String>,
    abort: &mut watch::Receiver<bool>,
) -> Option<Vec<String>> {
    let offered: Vec<&str> = cfg.tools.iter().map(|t| t.name.as_str()).collect();
    for (i, call) in turn.calls.iter().enumerate() {
        cfg.sink.do_send(RunEvent::ToolStarted {
            run_id: cfg.run_id.clone(),
            call: call.clone(),
        });
        // Plumbing: the offered name, then the hooks (block / rewrite).
        let mut exec_call = call.clone();
        let refused = match crate::tool::policy::normalize_name(&call.name, &call.id, &offered) {
            Ok(name) => {
                exec_call.name = name;
                cfg.hooks
                    .iter()
                    .find_map(|h| match h.before_tool_call(&mut exec_call) {
                        crate::tool::policy::HookDecision::Block(reason) => {
                            Some(format!("Tool call blocked by policy: {reason}"))
                        }
                        crate::tool::policy::HookDecision::Continue => None,
                    })
            }
            Err(e) => Some(e),
        };
        let outcome = match refused {
            Some(text) => {
                tracing::info!(run_id = %cfg.run_id, tool = %call.name, reason = %text, "tool call refused");
                ToolOutcome {
                    text,
                    is_error: true,
                }
            }
            None => {
                let request = ExecuteTool {
                    call: exec_call,
                    cancel: abort.clone(),
                    env: cfg.tool_env.clone(),
                    session_key: cfg.session_key.clone(),
                    agent_id: cfg.agent_id.clone(),
                    exec: cfg.exec,
                };
                // The abort cancels the tool too, so both are often ready
                // together: the abort wins.
                let outcome = tokio::select! {
                    biased;
                    _ = wait_abort(abort) => return None,
                    r = cfg.executor.send(request) => r.unwrap_or_else(|_| ToolOutcome {
                        text: format!("tool {} is unavailable", call.name),
                        is_error: true,
                    }),
                };
                if *abort.borrow() {
                    return None;
                }
                outcome
            }
        };
        let outcome = ToolOutcome {
            text: crate::tool::policy::truncate_result(&outcome.text, cfg.result_max_chars),
            is_error: outcome.is_error,
        };
        tool_done(cfg, messages, call, outcome, false);
        // Steering check between tool calls.
        let steers = checkpoint(cfg, control, followups, false).await;
        if !steers.is_empty() {
            for skipped in &turn.calls[i + 1..] {
                let outcome = ToolOutcome {
                    text: SKIPPED_TOOL_RESULT.to_string(),
                    is_error: true,
                };
                tool_done(cfg, messages, skipped, outcome, true);
            }
            return Some(steers);
        }
    }
    Some(Vec::new())
}

enum Resume {
    /// Call the model (the conversation ends with user text or tool results).
    Model,
    /// Run these unanswered tool calls of the last assistant message first.
    Tools(Turn),
    /// The last step was a finished answer: nothing left to do.
    Finished(String),
}

fn resume_point<M: std::borrow::Borrow<ChatMessage>>(messages: &[M]) -> Resume {
    let Some(i) = messages
        .iter()
        .rposition(|m| m.borrow().role == MessageRole::Assistant)
    else {
        return Resume::Model;
    };
    let assistant = messages[i].borrow();
    let after: Vec<&ChatMessage> = messages[i + 1..].iter().map(|m| m.borrow()).collect();
    if assistant.tool_calls.is_empty() {
        return match after.iter().any(|m| m.role == MessageRole::User) {
            true => Resume::Model,
            false => Resume::Finished(assistant.text.clone()),
        };
    }
    if after.iter().any(|m| m.role == MessageRole::User) {
        return Resume::Model;
    }
    let answered: Vec<&str> = after
        .iter()
        .filter_map(|m| m.tool_call_id.as_deref())
        .collect();
    let missing: Vec<ToolCall> = assistant
        .tool_calls
        .iter()
        .filter(|c| !answered.contains(&c.id.as_str()))
        .cloned()
        .collect();
    if missing.is_empty() {
        return Resume::Model;
    }
    Resume::Tools(Turn {
        text: assistant.text.clone(),
        thinking: String::new(),
        calls: missing,
        stop: StopReason::ToolUse,
    })
}

/// The double loop; returns the run's closing event.
async fn run_loop(
    cfg: RunConfig,
    mut control: mpsc::UnboundedReceiver<Control>,
    mut abort: watch::Receiver<bool>,
) -> RunEvent {
    let run_id = cfg.run_id.clone();
    let mut messages = cfg.messages.clone();
    let mut followups = VecDeque::new();
    let mut usage = Usage::default();
    let mut serving = Serving::default();
    // A restarted run resumes from the last persisted step: tool calls of
    // the last assistant message that have no result yet run first (those
    // with a result never run again); a finished answer is the result.
    let mut resume = match resume_point(&messages) {
        Resume::Model => None,
        Resume::Tools(turn) => Some(turn),
        Resume::Finished(text) => {
            // Finished before the restart, unless something was steered in since.
            let steers = checkpoint(&cfg, &mut control, &mut followups, true).await;
            if steers.is_empty() {
                return RunEvent::Final {
                    run_id,
                    text,
                    stop_reason: StopReason::Stop,
                    usage,
                };
            }
            for s in steers {
                append(&cfg, &mut messages, ChatMessage::user(&s));
            }
            None
        }
    };
    // Set by every model call (or the resumed step).
    let mut last: Turn;
    loop {
        // Inner loop: model calls and tool calls until the model stops asking for tools.
        let mut model_calls = 0;
        loop {
            let turn = match resume.take() {
                Some(turn) => turn,
                None => {
                    if *abort.borrow() {
                        return RunEvent::Aborted {
                            run_id,
                            text: String::new(),
                        };
                    }
                    model_calls += 1;
                    if model_calls > cfg.max_model_calls {
                        return RunEvent::Failed {
                            run_id,
                            error: format!(
                                "the model asked for tools {} times in one turn",
                                cfg.max_model_calls
                            ),
                            kind: FailureKind::TooManyTurns,
                        };
                    }
                    let turn =
                        match stream_turn(&cfg, &messages, &mut usage, &mut serving, &mut abort)
                            .await
                        {
                            StreamEnd::Done(t) => t,
                            StreamEnd::Failed(error, cause) => {
                                return RunEvent::Failed {
                                    run_id,
                                    error,
                                    kind: FailureKind::Provider(cause),
                                }
                            }
                            StreamEnd::Aborted(text) => return RunEvent::Aborted { run_id, text },
                        };
                    let assistant = ChatMessage {
                        role: MessageRole::Assistant,
                        text: turn.text.clone(),
                        tool_calls: turn.calls.clone(),
                        tool_call_id: None,
                        is_error: false,
                        images: Vec::new(),
                    };
                    append_with_thinking(&cfg, &mut messages, assistant, turn.thinking.clone());
                    turn
                }
            };
            let Some(steers) = run_tools(
                &cfg,
                &turn,
                &mut messages,
                &mut control,
                &mut followups,
                &mut abort,
            )
            .await
            else {
                return RunEvent::Aborted {
                    run_id,
                    text: turn.text,
                };
            };
            let asked_tools = !turn.calls.is_empty();
            last = turn;
            // After the turn: what was steered in meanwhile (the final
            // answer's check also tells the session the run is closing).
            let steers = if steers.is_empty() {
                checkpoint(&cfg, &mut control, &mut followups, !asked_tools).await
            } else {
                steers
            };
            if !steers.is_empty() {
                for s in steers {
                    append(&cfg, &mut messages, ChatMessage::user(&s));
                }
                continue;
            }
            if !asked_tools {
                break;
            }
        }
        // Outer loop: follow-ups queued during the turn.
        drain(&mut control, &mut followups);
        match followups.pop_front() {
            Some(f) => append(&cfg, &mut messages, ChatMessage::user(&f)),
            None => break,
        }
    }
    RunEvent::Final {
        run_id,
        text: last.text,
        stop_reason: last.stop,
        usage,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::hub::ProviderHub;
    use crate::provider::offline::OfflineProvider;
    use std::sync::{Arc, Mutex};

    /// Runs tools from a script: `sleep <ms>` waits (stopping when cancelled),
    /// anything else echoes its arguments.
    #[derive(Default)]
    struct ScriptedTools {
        calls: Arc<Mutex<Vec<String>>>,
        cancelled: Arc<Mutex<u32>>,
    }

    impl Actor for ScriptedTools {
        type Context = Context<Self>;
    }

    impl Handler<ExecuteTool> for ScriptedTools {
        type Result = ResponseFuture<ToolOutcome>;
        fn handle(&mut self, msg: ExecuteTool, _: &mut Context<Self>) -> Self::Result {
            self.calls.lock().unwrap().push(msg.call.name.clone());
            let cancelled = self.cancelled.clone();
            Box::pin(async move {
                let ms = msg
                    .call
                    .arguments
                    .get("ms")
                    .and_then(|v| v.as_u64())
                    .unwrap_or(0);
                let mut cancel = msg.cancel;
                tokio::select! {
                    _ = actix::clock::sleep(Duration::from_millis(ms)) => {}
                    _ = wait_abort(&mut cancel) => {
                        *cancelled.lock().unwrap() += 1;
                        return ToolOutcome { text: "killed".into(), is_error: true };
                    }
                }
                ToolOutcome {
                    text: format!("{} ok {}", msg.call.name, msg.call.arguments),
                    is_error: false,
                }
            })
        }
    }

    struct Sink(mpsc::UnboundedSender<RunEvent>);
    impl Actor for Sink {
        type Context = Context<Self>;
    }
    impl Handler<RunEvent> for Sink {
        type Result = ();
        fn handle(&mut self, msg: RunEvent, _: &mut Context<Self>) {
            let _ = self.0.send(msg);
        }
    }

    fn test_tools(names: &[&str]) -> Arc<[ToolSpec]> {
        names
            .iter()
            .map(|n| ToolSpec {
                name: n.to_string(),
                description: String::new(),
                parameters: serde_json::json!({"type": "object"}),
            })
            .collect::<Vec<_>>()
            .into()
    }

    struct Harness {
        run: Addr<RunActor>,
        events: mpsc::UnboundedReceiver<RunEvent>,
        tool_calls: Arc<Mutex<Vec<String>>>,
        tools_cancelled: Arc<Mutex<u32>>,
        provider_active: Arc<std::sync::atomic::AtomicUsize>,
    }

    fn start(text: &str, timeout: Duration) -> Harness {
        let provider = OfflineProvider::new();
        let provider_active = provider.active();
        let hub = ProviderHub::builtins()
            .with_provider("offline", provider.start().recipient())
            .start();
        let tools = ScriptedTools::default();
        let (tool_calls, tools_cancelled) = (tools.calls.clone(), tools.cancelled.clone());
        let (tx, events) = mpsc::unbounded_channel();
        let run = RunActor::new(RunConfig {
            run_id: "r1".into(),
            session_key: "agent:main:main".into(),
            agent_id: "main".into(),
            exec: Default::default(),
            models: vec![ModelRef::parse("offline/echo").unwrap()],
            sticky_profile: None,
            thinking_budget: None,
            system: "sys".into(),
            tool_env: Vec::new().into(),
            hooks: Vec::new().into(),
            result_max_chars: 100_000,
            tools: test_tools(&["exec", "read", "slow", "second", "third"]),
            messages: vec![ChatMessage::user(text).into()],
            hub,
            executor: tools.start().recipient(),
            sink: Sink(tx).start().recipient(),
            steers: None,
            timeout,
            max_model_calls: 8,
        })
        .start();
        Harness {
            run,
            events,
            tool_calls,
            tools_cancelled,
            provider_active,
        }
    }

    impl Harness {
        async fn next(&mut self) -> RunEvent {
            actix::clock::timeout(Duration::from_secs(10), self.events.recv())
                .await
                .unwrap()
                .unwrap()
        }

        /// Events until the closing one (inclusive).
        async fn until_end(&mut self) -> Vec<RunEvent> {
            let mut out = Vec::new();
            loop {
                let e = self.next().await;
                let end = matches!(
                    e,
                    RunEvent::Final { .. } | RunEvent::Failed { .. } | RunEvent::Aborted { .. }
                );
                out.push(e);
                if end {
                    return out;
                }
            }
        }

        async fn wait_for(&mut self, pred: impl Fn(&RunEvent) -> bool) -> Vec<RunEvent> {
            let mut seen = Vec::new();
            loop {
                let e = self.next().await;
                let hit = pred(&e);
                seen.push(e);
                if hit {
                    return seen;
                }
            }
        }
    }

    fn last(events: &[RunEvent]) -> &RunEvent {
        events.last().unwrap()
    }

    #[actix::test]
    async fn a_plain_turn_streams_cumulative_deltas_then_final() {
        let mut h = start("hello there", Duration::from_secs(10));
        let events = h.until_end().await;
        assert_eq!(
            events[0],
            RunEvent::Started {
                run_id: "r1".into()
            }
        );
        let deltas: Vec<&String> = events
            .iter()
            .filter_map(|e| match e {
                RunEvent::Delta { text, .. } => Some(text),
                _ => None,
            })
            .collect();
        assert_eq!(deltas.first().map(|s| s.as_str()), Some("You "));
        assert_eq!(
            deltas.last().map(|s| s.as_str()),
            Some("You said: hello there")
        );
        assert!(
            matches!(last(&events), RunEvent::Final { text, stop_reason: StopReason::Stop, .. } if text == "You said: hello there")
        );
    }

    #[actix::test]
    async fn tool_calls_run_and_their_results_go_back_to_the_model() {
        let mut h = start(
            "checking\n@tool exec {\"command\":\"ls\"}\n@tool read {\"path\":\"a\"}",
            Duration::from_secs(10),
        );
        let events = h.until_end().await;
        assert_eq!(*h.tool_calls.lock().unwrap(), ["exec", "read"]);
        let finished = events
            .iter()
            .filter(|e| matches!(e, RunEvent::ToolFinished { skipped: false, .. }))
            .count();
        assert_eq!(finished, 2);
        match last(&events) {
            RunEvent::Final { text, .. } => {
                assert!(text.contains("Tool exec returned: exec ok"), "{text}");
                assert!(text.contains("Tool read returned: read ok"), "{text}");
            }
            other => panic!("{other:?}"),
        }
        let persisted = events
            .iter()
            .filter(|e| matches!(e, RunEvent::Message { .. }))
            .count();
        assert_eq!(persisted, 4, "assistant, two tool results, final assistant");
    }

    #[actix::test]
    async fn a_steer_between_tool_calls_skips_the_rest_and_reaches_the_next_model_call() {
        let script = "@tool slow {\"ms\":1000}\n@tool second {}\n@tool third {}";
        let mut h = start(script, Duration::from_secs(10));
        h.wait_for(|e| matches!(e, RunEvent::ToolStarted { call, .. } if call.name == "slow"))
            .await;
        h.run.do_send(Steer {
            text: "actually, stop".into(),
        });
        let events = h.until_end().await;
        assert_eq!(
            *h.tool_calls.lock().unwrap(),
            ["slow"],
            "the remaining tools never ran"
        );
        let skipped: Vec<&str> = events
            .iter()
            .filter_map(|e| match e {
                RunEvent::ToolFinished {
                    call,
                    skipped: true,
                    outcome,
                    ..
                } => {
                    assert_eq!(outcome.text, SKIPPED_TOOL_RESULT);
                    Some(call.name.as_str())
                }
                _ => None,
            })
            .collect();
        assert_eq!(skipped, ["second", "third"]);
        assert!(events.iter().any(|e| matches!(e, RunEvent::Message { message, .. } if message.role == MessageRole::User && message.text == "actually, stop")));
        assert!(
            matches!(last(&events), RunEvent::Final { text, .. } if text == "You said: actually, stop"),
            "{:?}",
            last(&events)
        );
    }

    #[actix::test]
    async fn follow_ups_run_as_another_turn_after_the_first() {
        let mut h = start("@tool slow {\"ms\":1000}", Duration::from_secs(10));
        h.wait_for(|e| matches!(e, RunEvent::ToolStarted { .. }))
            .await;
        h.run.do_send(FollowUp {
            text: "and then this".into(),
        });
        let events = h.until_end().await;
        let finals: Vec<&RunEvent> = events
            .iter()
            .filter(|e| matches!(e, RunEvent::Final { .. }))
            .collect();
        assert_eq!(finals.len(), 1);
        assert!(events.iter().any(|e| matches!(e, RunEvent::Delta { text, .. } if text.starts_with("Tool slow returned"))), "first turn answered");
        assert!(
            matches!(last(&events), RunEvent::Final { text, .. } if text == "You said: and then this")
        );
    }

    #[actix::test]
    async fn abort_cancels_the_model_stream() {
        let mut h = start("@tokens 1000\n@delay 20", Duration::from_secs(10));
        h.wait_for(|e| matches!(e, RunEvent::Delta { .. })).await;
        h.run.do_send(AbortRun);
        let events = h.until_end().await;
        assert!(
            matches!(last(&events), RunEvent::Aborted { .. }),
            "{events:?}"
        );
        for _ in 0..100 {
            if h.provider_active.load(std::sync::atomic::Ordering::Relaxed) == 0 {
                break;
            }
            actix::clock::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(
            h.provider_active.load(std::sync::atomic::Ordering::Relaxed),
            0
        );
    }

    #[actix::test]
    async fn abort_cancels_a_running_tool() {
        let mut h = start("@tool slow {\"ms\":60000}", Duration::from_secs(10));
        h.wait_for(|e| matches!(e, RunEvent::ToolStarted { .. }))
            .await;
        h.run.do_send(AbortRun);
        let events = h.until_end().await;
        assert!(
            matches!(last(&events), RunEvent::Aborted { .. }),
            "{events:?}"
        );
        for _ in 0..100 {
            if *h.tools_cancelled.lock().unwrap() == 1 {
                break;
            }
            actix::clock::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(
            *h.tools_cancelled.lock().unwrap(),
            1,
            "the tool saw the cancel signal"
        );
    }

    #[actix::test]
    async fn timeouts_and_provider_errors_fail_the_run_clearly() {
        let mut h = start("@tokens 1000\n@delay 50", Duration::from_millis(300));
        let events = h.until_end().await;
        assert!(
            matches!(
                last(&events),
                RunEvent::Failed {
                    kind: FailureKind::Timeout,
                    ..
                }
            ),
            "{:?}",
            last(&events)
        );
        let mut h = start("@error unavailable", Duration::from_secs(10));
        let events = h.until_end().await;
        assert!(
            matches!(last(&events), RunEvent::Failed { kind: FailureKind::Provider(_), error, .. } if error.contains("unavailable"))
        );
    }

    #[actix::test]
    async fn a_panic_or_a_dropped_run_still_ends_with_a_failure() {
        let (tx, mut events) = mpsc::unbounded_channel();
        let sink = Sink(tx).start().recipient::<RunEvent>();
        bounded(sink.clone(), "p1".into(), Duration::from_secs(5), async {
            if std::hint::black_box(true) {
                panic!("boom in the loop");
            }
            RunEvent::Aborted {
                run_id: "p1".into(),
                text: String::new(),
            }
        })
        .await;
        match events.recv().await.unwrap() {
            RunEvent::Failed {
                kind: FailureKind::Panicked,
                error,
                ..
            } => {
                assert!(error.contains("boom in the loop"), "{error}")
            }
            other => panic!("{other:?}"),
        }
        let task = actix::spawn(bounded(sink, "p2".into(), Duration::from_secs(60), async {
            std::future::pending::<RunEvent>().await
        }));
        actix::clock::sleep(Duration::from_millis(20)).await;
        task.abort();
        let e = actix::clock::timeout(Duration::from_secs(5), events.recv())
            .await
            .unwrap()
            .unwrap();
        assert!(
            matches!(e, RunEvent::Failed { kind: FailureKind::Stopped, ref run_id, .. } if run_id == "p2"),
            "{e:?}"
        );
        assert!(FailureKind::Stopped.restartable() && FailureKind::Panicked.restartable());
        assert!(!FailureKind::Timeout.restartable());
    }

    #[test]
    fn a_restarted_run_resumes_at_the_first_unanswered_tool_call() {
        let call = |id: &str| ToolCall {
            id: id.into(),
            name: "exec".into(),
            arguments: serde_json::json!({}),
        };
        let assistant = ChatMessage {
            role: MessageRole::Assistant,
            text: "working".into(),
            tool_calls: vec![call("a"), call("b")],
            tool_call_id: None,
            is_error: false,
            images: Vec::new(),
        };
        let user = ChatMessage::user("go");
        assert!(matches!(
            resume_point(std::slice::from_ref(&user)),
            Resume::Model
        ));
        let half = [
            user.clone(),
            assistant.clone(),
            ChatMessage::tool_result("a", "done", false),
        ];
        match resume_point(&half) {
            Resume::Tools(t) => assert_eq!(
                t.calls.iter().map(|c| c.id.as_str()).collect::<Vec<_>>(),
                ["b"]
            ),
            _ => panic!("b is still to run"),
        }
        let all = [
            half.to_vec(),
            vec![ChatMessage::tool_result("b", "done", false)],
        ]
        .concat();
        assert!(
            matches!(resume_point(&all), Resume::Model),
            "results complete: ask the model"
        );
        let mut answered = assistant.clone();
        answered.tool_calls.clear();
        answered.text = "all done".into();
        assert!(matches!(resume_point(&[user, answered]), Resume::Finished(t) if t == "all done"));
    }

    #[actix::test]
    async fn a_resumed_run_executes_only_the_missing_tool_calls() {
        let mut h = start("unused", Duration::from_secs(10));
        drop(h.run);
        let tools = ScriptedTools::default();
        let calls = tools.calls.clone();
        let (tx, events) = mpsc::unbounded_channel();
        let call = |id: &str, name: &str| ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: serde_json::json!({}),
        };
        let history = vec![
            ChatMessage::user("two tools"),
            ChatMessage {
                role: MessageRole::Assistant,
                text: String::new(),
                tool_calls: vec![call("1", "first"), call("2", "second")],
                tool_call_id: None,
                is_error: false,
                images: Vec::new(),
            },
            ChatMessage::tool_result("1", "first ok", false),
        ];
        h.run = RunActor::new(RunConfig {
            run_id: "r2".into(),
            session_key: "agent:main:main".into(),
            agent_id: "main".into(),
            exec: Default::default(),
            models: vec![ModelRef::parse("offline/echo").unwrap()],
            sticky_profile: None,
            thinking_budget: None,
            system: "".into(),
            tool_env: Vec::new().into(),
            hooks: Vec::new().into(),
            result_max_chars: 100_000,
            tools: test_tools(&["exec", "read", "slow", "second", "third"]),
            messages: history.into_iter().map(Into::into).collect(),
            hub: ProviderHub::builtins().start(),
            executor: tools.start().recipient(),
            sink: Sink(tx).start().recipient(),
            steers: None,
            timeout: Duration::from_secs(10),
            max_model_calls: 8,
        })
        .start();
        h.events = events;
        let events = h.until_end().await;
        assert_eq!(
            *calls.lock().unwrap(),
            ["second"],
            "the completed call never ran again"
        );
        match last(&events) {
            RunEvent::Final { text, .. } => {
                assert!(text.contains("Tool second returned"), "{text}")
            }
            other => panic!("{other:?}"),
        }
    }
}
