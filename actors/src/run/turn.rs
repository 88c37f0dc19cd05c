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

async fn stream_turn(
    cfg: &RunConfig,
    messages: &[Arc<ChatMessage>],
    usage: &mut Usage,
    serving: &mut Serving,
    abort: &mut watch::Receiver<bool>,
) -> StreamEnd {
    // Pruning (in memory only), then transcript repair: every call
    // answered, no orphaned results.
    let sent = cfg
        .prune
        .as_ref()
        .and_then(|p| {
            crate::compaction::prune::prune(messages, cfg.system.len(), p.window, &p.settings)
        })
        .unwrap_or_else(|| messages.to_vec());
    let request = CompletionRequest {
        system: cfg.system.clone(),
        messages: crate::tool::policy::repair(&sent),
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
        tracing::Span::current().record("model", model.as_str());
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
                let fresh = turn.text.is_empty();
                turn.text.push_str(&d);
                cfg.sink.do_send(RunEvent::Delta {
                    run_id: cfg.run_id.clone(),
                    delta: d,
                    fresh,
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
                    trust: cfg.trust.clone(),
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
        let steers = checkpoint(cfg, false).await;
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

/// The double loop; returns the run's closing event.
pub(super) async fn run_loop(cfg: RunConfig, mut abort: watch::Receiver<bool>) -> RunEvent {
    let run_id = cfg.run_id.clone();
    let mut messages = cfg.messages.clone();
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
            let steers = checkpoint(&cfg, true).await;
            if steers.is_empty() {
                return RunEvent::Final {
                    run_id,
                    outcome: Outcome::of_final(cfg.kind, &text),
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
    // Model calls and tool calls until the model stops asking for tools
    // and nothing was steered in (the outer loop: a steer at the closing
    // check starts another turn of the same run).
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
                let before = usage;
                let streamed =
                    stream_turn(&cfg, &messages, &mut usage, &mut serving, &mut abort).await;
                let prompt = (usage.input + usage.cache_read + usage.cache_write)
                    .saturating_sub(before.input + before.cache_read + before.cache_write);
                if prompt > 0 {
                    usage.context = prompt + usage.output.saturating_sub(before.output);
                }
                let turn = match streamed {
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
        let Some(steers) = run_tools(&cfg, &turn, &mut messages, &mut abort).await else {
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
            checkpoint(&cfg, !asked_tools).await
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
    RunEvent::Final {
        run_id,
        outcome: Outcome::of_final(cfg.kind, &last.text),
        stop_reason: last.stop,
        usage,
    }
}
