//! The double loop: model calls, tool calls, steering points.

use std::sync::Arc;

use tokio::sync::watch;

use super::messages::{RunEvent, TakeSteers};
use super::reply::Outcome;
use super::{resume_point, FailureKind, Resume, RunConfig, Turn, SKIPPED_TOOL_RESULT};
use crate::provider::hub::{open_stream, OpenOutcome};
use crate::provider::{
    ChatMessage, CompletionRequest, MessageRole, Messages, ProviderError, ProviderEvent,
    StopReason, ToolCall, Usage,
};
use crate::tool::{ExecuteTool, ToolOutcome};

/// A steering point: what the session's queue steered into the run since
/// the last one. `closing`: the run has its final answer and ends unless
/// something comes back.
async fn checkpoint(cfg: &RunConfig, closing: bool) -> Vec<String> {
    let asked = cfg.steers.send(TakeSteers {
        run_id: cfg.run_id.clone(),
        closing,
    });
    asked.await.unwrap_or_default()
}

enum StreamEnd {
    Done(Turn),
    Failed(String, Option<ProviderError>),
    Aborted(String),
}

pub(super) async fn wait_abort(abort: &mut watch::Receiver<bool>) {
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

/// What is sent to the model: the conversation pruned (in memory only),
/// then repaired (every call answered, no orphaned results).
fn request_for(cfg: &RunConfig, messages: &[Arc<ChatMessage>]) -> CompletionRequest {
    let sent = cfg
        .prune
        .as_ref()
        .and_then(|p| {
            crate::compaction::prune::prune(messages, cfg.system.len(), p.window, &p.settings)
        })
        .unwrap_or_else(|| messages.to_vec());
    CompletionRequest {
        system: cfg.system.clone(),
        messages: crate::tool::policy::repair(&sent),
        tools: cfg.tools.current(),
        thinking_budget: cfg.thinking_budget,
        ..Default::default()
    }
}

/// Tells the sink when another model or profile answers than last time.
fn note_serving(
    cfg: &RunConfig,
    serving: &mut Serving,
    model: String,
    profile: &str,
    failed: &[String],
) {
    if serving.model.as_deref() == Some(model.as_str())
        && serving.profile.as_deref() == Some(profile)
    {
        return;
    }
    cfg.sink.do_send(RunEvent::ModelSelected {
        run_id: cfg.run_id.clone(),
        model: model.clone(),
        profile: profile.to_string(),
        failed: failed.to_vec(),
    });
    tracing::Span::current().record("model", model.as_str());
    serving.model = Some(model);
    serving.profile = Some(profile.to_string());
}

/// Text deltas read but not yet sent on: the run forwards what arrived
/// since its last forward as one `Delta` (one message per read of the
/// model's stream, not one per token).
#[derive(Default)]
struct PendingText {
    text: String,
    /// The turn had no text before it (the first delta of a model call).
    fresh: bool,
}

impl PendingText {
    fn send(&mut self, cfg: &RunConfig) {
        if self.text.is_empty() {
            return;
        }
        cfg.sink.do_send(RunEvent::Delta {
            run_id: cfg.run_id.clone(),
            delta: std::mem::take(&mut self.text),
            fresh: std::mem::take(&mut self.fresh),
        });
    }
}

/// One event of the model's stream into the turn; Some when it ends it.
/// Text is held in `pending`; anything else sends it on first, so events
/// keep their order.
fn absorb(
    cfg: &RunConfig,
    turn: &mut Turn,
    usage: &mut Usage,
    pending: &mut PendingText,
    event: Option<ProviderEvent>,
) -> Option<StreamEnd> {
    if let Some(ProviderEvent::TextDelta(d)) = event {
        if pending.text.is_empty() {
            pending.fresh = turn.text.is_empty();
        }
        turn.text.push_str(&d);
        pending.text.push_str(&d);
        return None;
    }
    pending.send(cfg);
    match event {
        Some(ProviderEvent::TextDelta(_)) => {}
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
            return Some(StreamEnd::Done(std::mem::replace(turn, Turn::empty())));
        }
        Some(ProviderEvent::Error(e)) => return Some(StreamEnd::Failed(e.to_string(), Some(e))),
        None => {
            let e = ProviderError::Unavailable("the model stream ended without an answer".into());
            return Some(StreamEnd::Failed(e.to_string(), Some(e)));
        }
    }
    None
}

/// One model call, streamed: what the stream holds is read at once and
/// its text goes to the sink as one delta.
async fn stream_turn(
    cfg: &RunConfig,
    messages: &[Arc<ChatMessage>],
    usage: &mut Usage,
    serving: &mut Serving,
    abort: &mut watch::Receiver<bool>,
) -> StreamEnd {
    let request = request_for(cfg, messages);
    let started = std::time::Instant::now();
    super::hooks::model_call(cfg, None, started);
    let end = stream_call(cfg, &request, usage, serving, abort).await;
    let outcome = match &end {
        StreamEnd::Done(_) => "completed",
        StreamEnd::Failed(..) => "failed",
        StreamEnd::Aborted(_) => "aborted",
    };
    super::hooks::model_call(cfg, Some(outcome), started);
    end
}

/// The call itself: opened through the hub, read to its end.
async fn stream_call(
    cfg: &RunConfig,
    request: &CompletionRequest,
    usage: &mut Usage,
    serving: &mut Serving,
    abort: &mut watch::Receiver<bool>,
) -> StreamEnd {
    let sticky = serving
        .profile
        .clone()
        .or_else(|| cfg.sticky_profile.clone());
    let opened = match open_stream(&cfg.hub, &cfg.models, sticky.as_deref(), request, abort).await {
        OpenOutcome::Opened(o) => *o,
        OpenOutcome::Failed(e) => return StreamEnd::Failed(e.message, e.last),
        OpenOutcome::Aborted => return StreamEnd::Aborted(String::new()),
    };
    let model = opened.model.to_string();
    note_serving(
        cfg,
        serving,
        model,
        &opened.profile,
        &opened.failed_attempts,
    );
    let mut stream = opened.rest;
    let mut pending_first = Some(opened.first);
    let mut turn = Turn::empty();
    let mut pending = PendingText::default();
    loop {
        let mut event = match pending_first.take() {
            Some(first) => Some(first),
            // An abort wins over whatever is ready with it (`select!` would
            // otherwise pick at random and let a short reply finish).
            None => tokio::select! {
                biased;
                _ = wait_abort(abort) => return StreamEnd::Aborted(turn.text),
                e = stream.recv() => e,
            },
        };
        // Then whatever else is ready (at most the stream's buffer).
        loop {
            if let Some(end) = absorb(cfg, &mut turn, usage, &mut pending, event) {
                return end;
            }
            match stream.try_recv() {
                Ok(next) => event = Some(next),
                Err(_) => break,
            }
        }
        pending.send(cfg);
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
    let mut result = ChatMessage::tool_result(&call.id, &outcome.text, outcome.is_error);
    // Images the tool gave the model (`view_image`): by reference.
    result.images = outcome.images.clone();
    append(cfg, messages, result);
    cfg.sink.do_send(RunEvent::ToolFinished {
        run_id: cfg.run_id.clone(),
        call: call.clone(),
        outcome,
        skipped,
    });
}

/// Why a call is not run, if it is not: a name the run was not offered,
/// or a hook's block. A hook may rewrite `call` (the one that runs).
fn refusal(cfg: &RunConfig, offered: &[&str], call: &mut ToolCall) -> Option<String> {
    use crate::tool::policy::{normalize_name, HookDecision};
    match normalize_name(&call.name, &call.id, offered) {
        Ok(name) => {
            call.name = name;
            cfg.hooks
                .iter()
                .find_map(|h| match h.before_tool_call(call) {
                    HookDecision::Block(reason) => {
                        Some(format!("Tool call blocked by policy: {reason}"))
                    }
                    HookDecision::Continue => None,
                })
        }
        Err(e) => Some(e.to_string()),
    }
}

/// The outcome of a call refused before it runs: not offered, or blocked
/// by a policy rule or a `before_tool_call` hook (which may also rewrite
/// `call`).
async fn refused(cfg: &RunConfig, offered: &[&str], call: &mut ToolCall) -> Option<ToolOutcome> {
    let text = match refusal(cfg, offered, call) {
        Some(text) => text,
        None => super::hooks::before_tool(cfg, call).await?,
    };
    tracing::info!(run_id = %cfg.run_id, tool = %call.name, reason = %text, "tool call refused");
    Some(ToolOutcome {
        text,
        is_error: true,
        blocked: true,
        images: Vec::new(),
        ends_turn: None,
    })
}

/// One call's outcome (None: the run was aborted meanwhile).
async fn run_tool(
    cfg: &RunConfig,
    call: &ToolCall,
    offered: &[&str],
    abort: &mut watch::Receiver<bool>,
) -> Option<ToolOutcome> {
    let mut exec_call = call.clone();
    // A hook may take its whole budget: an abort does not wait for it.
    let refused = tokio::select! {
        biased;
        _ = wait_abort(abort) => return None,
        r = refused(cfg, offered, &mut exec_call) => r,
    };
    if let Some(refused) = refused {
        return Some(refused);
    }
    let started = std::time::Instant::now();
    let request = ExecuteTool {
        call: exec_call.clone(),
        cancel: abort.clone(),
        env: cfg.tool_env.clone(),
        session_key: cfg.session_key.clone(),
        agent_id: cfg.agent_id.clone(),
        exec: cfg.exec.clone(),
        trust: cfg.trust.clone(),
        progress: cfg.progress.clone().map(|sink| crate::tool::ProgressSink {
            run_id: cfg.run_id.clone(),
            sink,
        }),
        run_id: Some(cfg.run_id.clone()),
        origin: cfg.origin.clone(),
        model: cfg.models.first().map(|m| m.to_string()),
    };
    // The abort cancels the tool too, so both are often ready together:
    // the abort wins.
    let outcome = tokio::select! {
        biased;
        _ = wait_abort(abort) => return None,
        r = cfg.executor.send(request) => r.unwrap_or_else(|_| ToolOutcome {
            text: format!("tool {} is unavailable", call.name),
            is_error: true,
            blocked: false, images: Vec::new(),
            ends_turn: None,
        }),
    };
    if *abort.borrow() {
        return None;
    }
    let mut outcome = ToolOutcome {
        text: crate::tool::policy::truncate_result(&outcome.text, cfg.result_max_chars),
        is_error: outcome.is_error,
        blocked: outcome.blocked,
        images: outcome.images,
        ends_turn: outcome.ends_turn,
    };
    super::hooks::after_tool(cfg, &exec_call, &mut outcome, started).await;
    Some(outcome)
}

/// Runs a turn's tool calls one by one, checking for steering between them
/// (a steer skips the rest with placeholder results). Returns the steering
/// messages to inject (possibly none), or None when the run was aborted.
async fn run_tools(
    cfg: &RunConfig,
    turn: &Turn,
    messages: &mut Messages,
    abort: &mut watch::Receiver<bool>,
) -> Option<ToolsDone> {
    let tools = cfg.tools.current();
    let offered: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    let mut ends = None;
    for (i, call) in turn.calls.iter().enumerate() {
        cfg.sink.do_send(RunEvent::ToolStarted {
            run_id: cfg.run_id.clone(),
            call: call.clone(),
        });
        let outcome = run_tool(cfg, call, &offered, abort).await?;
        if ends.is_none() {
            ends = outcome.ends_turn.clone();
        }
        tool_done(cfg, messages, call, outcome, false);
        // Steering check between tool calls.
        let steers = checkpoint(cfg, false).await;
        if !steers.is_empty() {
            for skipped in &turn.calls[i + 1..] {
                let outcome = ToolOutcome {
                    text: SKIPPED_TOOL_RESULT.to_string(),
                    is_error: true,
                    blocked: false,
                    images: Vec::new(),
                    ends_turn: None,
                };
                tool_done(cfg, messages, skipped, outcome, true);
            }
            return Some(ToolsDone { steers, ends: None });
        }
    }
    Some(ToolsDone {
        steers: Vec::new(),
        ends,
    })
}

/// How a turn's tool calls went: what was steered in meanwhile, and the
/// final text a tool ended the turn with (`ToolOutcome::ends_turn`).
struct ToolsDone {
    steers: Vec<String>,
    ends: Option<String>,
}

/// Where a (restarted) run starts: the last persisted step's tool calls
/// without a result (those with one never run again), a model call, or
/// its end (a finished answer, unless something was steered in since).
async fn start_point(cfg: &RunConfig, messages: &mut Messages) -> Resume {
    match resume_point(messages) {
        Resume::Finished(text) => {
            let steers = checkpoint(cfg, true).await;
            if steers.is_empty() {
                return Resume::Finished(text);
            }
            for s in steers {
                append(cfg, messages, ChatMessage::user(&s));
            }
            Resume::Model
        }
        other => other,
    }
}

/// The run's conversation and what it has cost, across its model calls.
struct Progress {
    messages: Messages,
    usage: Usage,
    serving: Serving,
    model_calls: u32,
}

/// One model call and its assistant message (Err: the run's end).
async fn model_turn(
    cfg: &RunConfig,
    p: &mut Progress,
    abort: &mut watch::Receiver<bool>,
) -> Result<Turn, RunEvent> {
    let run_id = cfg.run_id.clone();
    if *abort.borrow() {
        let text = String::new();
        return Err(RunEvent::Aborted { run_id, text });
    }
    p.model_calls += 1;
    if p.model_calls > cfg.max_model_calls {
        let n = cfg.max_model_calls;
        return Err(RunEvent::Failed {
            run_id,
            error: format!("the model asked for tools {n} times in one turn"),
            kind: FailureKind::TooManyTurns,
        });
    }
    if p.model_calls > 1
        && p.messages
            .iter()
            .any(|m| m.images.iter().any(|i| i.data.is_empty()))
    {
        // Images a tool returned this turn (`view_image`), by reference.
        crate::media::load_images(cfg.media.as_ref(), &mut p.messages).await;
    }
    let before = p.usage;
    let streamed = stream_turn(cfg, &p.messages, &mut p.usage, &mut p.serving, abort).await;
    let usage = &mut p.usage;
    let prompt = (usage.input + usage.cache_read + usage.cache_write)
        .saturating_sub(before.input + before.cache_read + before.cache_write);
    if prompt > 0 {
        usage.context = prompt + usage.output.saturating_sub(before.output);
    }
    let turn = match streamed {
        StreamEnd::Done(t) => t,
        StreamEnd::Failed(error, cause) => {
            let kind = FailureKind::Provider(cause);
            return Err(RunEvent::Failed {
                run_id,
                error,
                kind,
            });
        }
        StreamEnd::Aborted(text) => return Err(RunEvent::Aborted { run_id, text }),
    };
    let assistant = ChatMessage {
        role: MessageRole::Assistant,
        text: turn.text.clone(),
        tool_calls: turn.calls.clone(),
        tool_call_id: None,
        is_error: false,
        images: Vec::new(),
    };
    append_with_thinking(cfg, &mut p.messages, assistant, turn.thinking.clone());
    Ok(turn)
}

/// The double loop; returns the run's closing event: model calls and tool
/// calls until the model stops asking for tools and nothing was steered
/// in (a steer at the closing check starts another turn of the same run).
pub(super) async fn run_loop(mut cfg: RunConfig, abort: watch::Receiver<bool>) -> RunEvent {
    let started = std::time::Instant::now();
    let end = turns(&mut cfg, abort).await;
    let (ok, text) = match &end {
        RunEvent::Final { outcome, .. } => (true, outcome.for_chat().unwrap_or_default()),
        RunEvent::Aborted { text, .. } => (false, text.clone()),
        _ => (false, String::new()),
    };
    super::hooks::agent_end(&cfg, ok, &text, started);
    end
}

/// How a run opens.
enum Opening {
    /// The turn to resume (None: a model call).
    Go(Option<Turn>),
    /// The run is answered already (a stored final, a hook's reply).
    Answered(String),
    /// Aborted while its hooks ran.
    Aborted,
}

/// The run's conversation (its images loaded) and where it starts, after
/// the hooks of a fresh turn (its request is the last message).
async fn opening(cfg: &mut RunConfig, abort: &mut watch::Receiver<bool>) -> (Progress, Opening) {
    let mut p = Progress {
        messages: cfg.messages.clone(),
        usage: Usage::default(),
        serving: Serving::default(),
        model_calls: 0,
    };
    crate::media::load_images(cfg.media.as_ref(), &mut p.messages).await;
    let resume = match start_point(cfg, &mut p.messages).await {
        Resume::Model => None,
        Resume::Tools(turn) => Some(turn),
        Resume::Finished(text) => return (p, Opening::Answered(text)),
    };
    let last_is_request = p
        .messages
        .last()
        .is_some_and(|m| m.role == MessageRole::User);
    if resume.is_none() && last_is_request {
        let hooks = tokio::select! {
            biased;
            _ = wait_abort(abort) => return (p, Opening::Aborted),
            r = super::hooks::before_turn(cfg, &p.messages) => r,
        };
        if let Some(text) = hooks {
            append(cfg, &mut p.messages, ChatMessage::assistant(&text));
            return (p, Opening::Answered(text));
        }
    }
    (p, Opening::Go(resume))
}

async fn turns(cfg: &mut RunConfig, mut abort: watch::Receiver<bool>) -> RunEvent {
    let (mut p, opened) = opening(cfg, &mut abort).await;
    let (run_id, kind) = (cfg.run_id.clone(), cfg.kind);
    let final_of = |text: &str, stop, usage| RunEvent::Final {
        run_id: run_id.clone(),
        outcome: Outcome::of_final(kind, text),
        stop_reason: stop,
        usage,
    };
    let mut resume = match opened {
        Opening::Go(resume) => resume,
        Opening::Answered(text) => return final_of(&text, StopReason::Stop, p.usage),
        Opening::Aborted => {
            let (run_id, text) = (cfg.run_id.clone(), String::new());
            return RunEvent::Aborted { run_id, text };
        }
    };
    let cfg = &*cfg;
    loop {
        let turn = match resume.take() {
            Some(turn) => turn,
            None => match model_turn(cfg, &mut p, &mut abort).await {
                Ok(turn) => turn,
                Err(end) => return end,
            },
        };
        let Some(done) = run_tools(cfg, &turn, &mut p.messages, &mut abort).await else {
            let (run_id, text) = (cfg.run_id.clone(), turn.text);
            return RunEvent::Aborted { run_id, text };
        };
        if let Some(text) = done.ends {
            // A tool ended the turn (sessions_yield, heartbeat_respond): its
            // text is the answer, kept like one (a restart finds it there).
            append(cfg, &mut p.messages, ChatMessage::assistant(&text));
            return final_of(&text, StopReason::Stop, p.usage);
        }
        let steers = done.steers;
        let asked_tools = !turn.calls.is_empty();
        // After the turn: what was steered in meanwhile (the final
        // answer's check also tells the session the run is closing).
        let steers = if steers.is_empty() {
            checkpoint(cfg, !asked_tools).await
        } else {
            steers
        };
        if !steers.is_empty() {
            for s in steers {
                append(cfg, &mut p.messages, ChatMessage::user(&s));
            }
            continue;
        }
        if !asked_tools {
            return final_of(&turn.text, turn.stop, p.usage);
        }
    }
}
