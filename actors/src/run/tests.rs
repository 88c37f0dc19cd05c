//! The run against the offline provider and a scripted tool executor.

use std::sync::{Arc, Mutex};

use tokio::sync::mpsc;

use super::actor::bounded;
use super::turn::wait_abort;
use super::*;
use crate::provider::hub::ProviderHub;
use crate::provider::offline::OfflineProvider;
use crate::provider::{StopReason, ToolSpec};
use crate::tool::{ExecuteTool, ToolOutcome};

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
                    return ToolOutcome { text: "killed".into(), is_error: true, blocked: false, images: Vec::new(), ends_turn: None, };
                }
            }
            ToolOutcome {
                text: format!("{} ok {}", msg.call.name, msg.call.arguments),
                is_error: false,
                blocked: false,
                images: Vec::new(),
                ends_turn: None,
            }
        })
    }
}

/// The session's side of steering: texts pushed here are what the run
/// takes at its next steering point.
#[derive(Default, Clone)]
struct Steers(Arc<Mutex<Vec<String>>>);
impl Actor for Steers {
    type Context = Context<Self>;
}
impl Handler<TakeSteers> for Steers {
    type Result = MessageResult<TakeSteers>;
    fn handle(&mut self, _: TakeSteers, _: &mut Context<Self>) -> Self::Result {
        MessageResult(std::mem::take(&mut *self.0.lock().unwrap()))
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
    steers: Steers,
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
    let steers = Steers::default();
    let run = RunActor::new(RunConfig {
        run_id: "r1".into(),
        session_key: crate::ids::SessionKey::stored("agent:main:main"),
        agent_id: "main".into(),
        origin: None,
        kind: RunKind::Chat,
        exec: Default::default(),
        trust: Default::default(),
        models: vec![ModelRef::parse("offline/echo").unwrap()],
        sticky_profile: None,
        thinking_budget: None,
        system: "sys".into(),
        tool_env: Vec::new().into(),
        hooks: Vec::new().into(),
        lifecycle: Default::default(),
        workspace: Default::default(),
        result_max_chars: 100_000,
        tools: test_tools(&["exec", "read", "slow", "second", "third"]).into(),
        progress: None,
        messages: vec![ChatMessage::user(text).into()],
        media: None,
        hub,
        executor: tools.start().recipient(),
        sink: Sink(tx).start().recipient(),
        steers: steers.clone().start().recipient(),
        timeout,
        max_model_calls: 8,
        prune: None,
    })
    .start();
    Harness {
        run,
        steers,
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
    // Each delta carries only its piece; the first starts the message.
    let mut so_far = Vec::new();
    for e in &events {
        if let RunEvent::Delta { delta, fresh, .. } = e {
            let mut text: String = if *fresh {
                String::new()
            } else {
                so_far.last().cloned().unwrap_or_default()
            };
            text.push_str(delta);
            so_far.push(text);
        }
    }
    assert_eq!(so_far.first().map(|s| s.as_str()), Some("You "));
    assert_eq!(
        so_far.last().map(|s| s.as_str()),
        Some("You said: hello there")
    );
    let fresh = events
        .iter()
        .filter(|e| matches!(e, RunEvent::Delta { fresh: true, .. }))
        .count();
    assert_eq!(fresh, 1, "one assistant message");
    assert!(
        matches!(last(&events), RunEvent::Final { outcome: Outcome::Text(text), stop_reason: StopReason::Stop, .. } if text == "You said: hello there")
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
        RunEvent::Final {
            outcome: Outcome::Text(text),
            ..
        } => {
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
    h.steers.0.lock().unwrap().push("actually, stop".into());
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
        matches!(last(&events), RunEvent::Final { outcome: Outcome::Text(text), .. } if text == "You said: actually, stop"),
        "{:?}",
        last(&events)
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
        session_key: crate::ids::SessionKey::stored("agent:main:main"),
        agent_id: "main".into(),
        origin: None,
        kind: RunKind::Chat,
        exec: Default::default(),
        trust: Default::default(),
        models: vec![ModelRef::parse("offline/echo").unwrap()],
        sticky_profile: None,
        thinking_budget: None,
        system: "".into(),
        tool_env: Vec::new().into(),
        hooks: Vec::new().into(),
        lifecycle: Default::default(),
        workspace: Default::default(),
        result_max_chars: 100_000,
        tools: test_tools(&["exec", "read", "slow", "second", "third"]).into(),
        progress: None,
        messages: history.into_iter().map(Into::into).collect(),
        media: None,
        hub: ProviderHub::builtins().start(),
        executor: tools.start().recipient(),
        sink: Sink(tx).start().recipient(),
        steers: Steers::default().start().recipient(),
        timeout: Duration::from_secs(10),
        max_model_calls: 8,
        prune: None,
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
        RunEvent::Final {
            outcome: Outcome::Text(text),
            ..
        } => {
            assert!(text.contains("Tool second returned"), "{text}")
        }
        other => panic!("{other:?}"),
    }
}
