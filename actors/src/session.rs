//! SessionActor: one conversation (session key), the single writer of its
//! transcript. A message is written to the store and flushed before it is
//! acknowledged. Messages that arrive while a run is active follow the queue
//! mode (`queue.rs`): steered into the run, queued (coalesced for collect),
//! or interrupting it; queued ones are stored at once as `delivery: pending`
//! entries (kept out of the model context) so nothing acknowledged is lost.
//! A run takes a slot of its lane, runs as a `RunActor` whose events come
//! back here: conversation messages are persisted, everything is forwarded
//! to the session's event recipient, and the session always takes the next
//! message, whatever way the run ended.

use std::time::Duration;

use actix::prelude::*;
use serde_json::Value;

use crate::lane::{AcquireSlot, LaneActor, SlotPermit};
use crate::provider::{ChatMessage, StreamCompletion, ToolSpec};
use crate::queue::{Action, QueueSettings, SessionQueue};
use crate::run::{AbortRun, ExecuteTool, RunActor, RunConfig, RunEvent, Steer};
use crate::store::Store;
use crate::transcript::{self, TranscriptError};

/// What a session needs from the tree.
#[derive(Clone)]
pub struct SessionDeps {
    pub store: Store,
    pub provider: Recipient<StreamCompletion>,
    pub executor: Recipient<ExecuteTool>,
    pub lane: Addr<LaneActor>,
    pub events: Recipient<SessionEvent>,
    pub model: String,
    pub system: String,
    pub tools: Vec<ToolSpec>,
    pub timeout: Duration,
    pub max_model_calls: u32,
    pub queue: QueueSettings,
    pub workspace: String,
}

/// A run event, tagged with its session.
#[derive(Debug, Clone, Message)]
#[rtype(result = "()")]
pub struct SessionEvent {
    pub session_key: String,
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
}

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
    pub run_id: String,
}

/// Aborts the active run. Reply: the ids of the runs aborted.
#[derive(Debug, Message)]
#[rtype(result = "Vec<String>")]
pub struct AbortSession;

/// The stored transcript entries, oldest first.
#[derive(Debug, Message)]
#[rtype(result = "Result<Vec<Value>, TranscriptError>")]
pub struct GetTranscript;

#[derive(Debug, Message)]
#[rtype(result = "()")]
struct CheckQueue;

struct Active {
    run_id: String,
    run: Option<Addr<RunActor>>,
    _permit: Option<SlotPermit>,
    /// Steers that arrived before the run actor started.
    early_steers: Vec<String>,
    aborted: bool,
}

/// Written after a user message whose run a gateway stop cut off.
pub const INTERRUPTED_NOTE: &str =
    "The gateway stopped before this message was answered. Send it again to retry.";

/// A message stored while a run was busy and not yet delivered to the model.
fn is_pending(entry: &Value) -> bool {
    entry.get("delivery").and_then(Value::as_str) == Some("pending")
}

/// Texts of `pending` messages after the last delivered one.
fn undelivered(entries: &[Value]) -> Vec<String> {
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
        .filter(|e| is_pending(e))
        .filter_map(|e| transcript::message_text(e))
        .collect()
}

/// True when the last delivered message is the user's (its run never ended).
fn interrupted(entries: &[Value]) -> bool {
    let last = entries
        .iter()
        .rev()
        .filter(|e| e.get("type").and_then(Value::as_str) == Some("message"))
        .find(|e| !is_pending(e));
    last.and_then(|e| e.get("message"))
        .and_then(|m| m.get("role"))
        .and_then(Value::as_str)
        == Some("user")
}

pub struct SessionActor {
    key: String,
    session_id: String,
    deps: SessionDeps,
    queue: SessionQueue,
    active: Option<Active>,
    interrupt_next: Option<(String, String)>,
    /// The model context: every delivered message, oldest first. Loaded from
    /// the store at start, then kept in step with every message written.
    history: Vec<ChatMessage>,
}

impl SessionActor {
    pub fn new(key: String, session_id: String, deps: SessionDeps) -> SessionActor {
        let queue = SessionQueue::new(deps.queue);
        SessionActor {
            key,
            session_id,
            deps,
            queue,
            active: None,
            interrupt_next: None,
            history: Vec::new(),
        }
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
        transcript::append(
            &self.deps.store,
            &self.session_id,
            std::slice::from_ref(&entry),
        )?;
        if !is_pending(&entry) {
            self.history.extend(transcript::to_chat(&entry));
        }
        Ok(())
    }

    fn forward(&self, event: RunEvent) {
        self.deps.events.do_send(SessionEvent {
            session_key: self.key.clone(),
            event,
        });
    }

    fn start_run(&mut self, run_id: String, ctx: &mut Context<Self>) {
        self.active = Some(Active {
            run_id: run_id.clone(),
            run: None,
            _permit: None,
            early_steers: Vec::new(),
            aborted: false,
        });
        let lane = self.deps.lane.clone();
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
                    let messages = act.history.clone();
                    let d = &act.deps;
                    let run = RunActor::new(RunConfig {
                        run_id: run_id.clone(),
                        model: d.model.clone(),
                        system: d.system.clone(),
                        tools: d.tools.clone(),
                        messages,
                        provider: d.provider.clone(),
                        executor: d.executor.clone(),
                        sink: ctx.address().recipient(),
                        timeout: d.timeout,
                        max_model_calls: d.max_model_calls,
                    })
                    .start();
                    if let Some(a) = act.active.as_mut() {
                        for text in a.early_steers.drain(..) {
                            run.do_send(Steer { text });
                        }
                        a.run = Some(run);
                        a._permit = Some(permit);
                    }
                }),
        );
    }

    /// A run that never started (aborted while waiting, or no lane) still ends cleanly.
    fn end_without_run(&mut self, run_id: &str, error: Option<String>, ctx: &mut Context<Self>) {
        let event = match error {
            Some(error) => RunEvent::Failed {
                run_id: run_id.to_string(),
                error,
                kind: crate::run::FailureKind::Provider,
            },
            None => RunEvent::Aborted {
                run_id: run_id.to_string(),
                text: String::new(),
            },
        };
        self.forward(event);
        self.active = None;
        ctx.notify(CheckQueue);
    }

    fn next_turn(&mut self, ctx: &mut Context<Self>) {
        if self.active.is_some() {
            return;
        }
        if let Some((run_id, text)) = self.interrupt_next.take() {
            return self.begin(run_id, text, ctx);
        }
        match self.queue.next_turn(crate::now_ms()) {
            Some(Ok(text)) => self.begin(ulid::Ulid::generate().to_string(), text, ctx),
            Some(Err(wait)) => {
                ctx.run_later(wait, |_, ctx| ctx.notify(CheckQueue));
            }
            None => {}
        }
    }

    /// Stores `text` as the input of a new run and starts it.
    fn begin(&mut self, run_id: String, text: String, ctx: &mut Context<Self>) {
        if let Err(e) = self.append(transcript::user_message(&text), false) {
            tracing::error!(session_key = %self.key, error = %e, "cannot store the next turn");
            self.forward(RunEvent::Failed {
                run_id,
                error: e.to_string(),
                kind: crate::run::FailureKind::Provider,
            });
            return;
        }
        self.start_run(run_id, ctx);
    }
}

impl Actor for SessionActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        let entries = transcript::entries(&self.deps.store, &self.session_id).unwrap_or_default();
        if entries.is_empty() {
            let header = transcript::session_header(&self.session_id, &self.deps.workspace);
            if let Err(e) = transcript::append(&self.deps.store, &self.session_id, &[header]) {
                tracing::error!(session_key = %self.key, error = %e, "cannot write the session header");
            }
            return;
        }
        self.history = entries
            .iter()
            .filter(|e| !is_pending(e))
            .filter_map(transcript::to_chat)
            .collect();
        if interrupted(&entries) {
            // The gateway stopped (crash, kill) before this message was answered:
            // say so in the transcript instead of leaving it silently unanswered.
            let mut entry = transcript::message_entry(
                None,
                serde_json::json!({
                    "role": "assistant",
                    "content": [{ "type": "text", "text": INTERRUPTED_NOTE }],
                    "stopReason": "error",
                }),
            );
            entry["interrupted"] = Value::Bool(true);
            if let Err(e) = self.append_entry(entry) {
                tracing::error!(session_key = %self.key, error = %e, "cannot mark an interrupted run");
            }
        }
        // Messages queued before a stop and never delivered run now.
        let undelivered = undelivered(&entries);
        if !undelivered.is_empty() {
            for text in undelivered {
                self.queue.recover(text);
            }
            ctx.notify(CheckQueue);
        }
    }
}

impl Handler<SendChat> for SessionActor {
    type Result = ResponseFuture<Result<SendAck, TranscriptError>>;
    fn handle(&mut self, msg: SendChat, ctx: &mut Context<Self>) -> Self::Result {
        let action =
            self.queue
                .on_message(msg.text.clone(), self.active.is_some(), crate::now_ms());
        let user = transcript::user_message(&msg.text);
        let stored = match &action {
            Action::StartRun(_) => self.append(user, false),
            Action::Dropped => Ok(()),
            _ => self.append(user, true),
        };
        let status = match (stored.is_ok(), action) {
            (false, _) => SendStatus::Dropped,
            (true, Action::StartRun(_)) => {
                self.start_run(msg.run_id.clone(), ctx);
                SendStatus::Started
            }
            (true, Action::Steer(text)) | (true, Action::SteerAndQueue(text)) => {
                if let Some(a) = self.active.as_mut() {
                    match &a.run {
                        Some(run) => run.do_send(Steer { text }),
                        None => a.early_steers.push(text),
                    }
                }
                SendStatus::Steered
            }
            (true, Action::Interrupt(text)) => {
                self.interrupt_next = Some((msg.run_id.clone(), text));
                ctx.notify(AbortSessionInternal);
                SendStatus::Started
            }
            (true, Action::Queued) => SendStatus::Queued,
            (true, Action::Dropped) => SendStatus::Dropped,
        };
        let store = self.deps.store.clone();
        let run_id = msg.run_id;
        Box::pin(async move {
            stored?;
            store.flush().await?;
            Ok(SendAck { run_id, status })
        })
    }
}

#[derive(Debug, Message)]
#[rtype(result = "()")]
struct AbortSessionInternal;

impl SessionActor {
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
}

impl Handler<AbortSessionInternal> for SessionActor {
    type Result = ();
    fn handle(&mut self, _: AbortSessionInternal, _: &mut Context<Self>) {
        self.abort_active();
    }
}

impl Handler<AbortSession> for SessionActor {
    type Result = MessageResult<AbortSession>;
    fn handle(&mut self, _: AbortSession, _: &mut Context<Self>) -> Self::Result {
        MessageResult(self.abort_active())
    }
}

impl Handler<GetTranscript> for SessionActor {
    type Result = Result<Vec<Value>, TranscriptError>;
    fn handle(&mut self, _: GetTranscript, _: &mut Context<Self>) -> Self::Result {
        transcript::entries(&self.deps.store, &self.session_id)
    }
}

impl Handler<CheckQueue> for SessionActor {
    type Result = ();
    fn handle(&mut self, _: CheckQueue, ctx: &mut Context<Self>) {
        self.next_turn(ctx);
    }
}

impl Handler<RunEvent> for SessionActor {
    type Result = ResponseActFuture<Self, ()>;
    fn handle(&mut self, event: RunEvent, _: &mut Context<Self>) -> Self::Result {
        if let RunEvent::Message { message, .. } = &event {
            if let Err(e) = self.append(transcript::from_chat(message), false) {
                tracing::error!(session_key = %self.key, error = %e, "cannot store a run step");
            }
        }
        let ends = matches!(
            event,
            RunEvent::Final { .. } | RunEvent::Failed { .. } | RunEvent::Aborted { .. }
        );
        if !ends {
            self.forward(event);
            return Box::pin(actix::fut::ready(()));
        }
        // The run's steps are durable before its end is announced.
        let store = self.deps.store.clone();
        Box::pin(async move { store.flush().await }.into_actor(self).map(move |flushed, act, ctx| {
            if let Err(e) = flushed {
                tracing::error!(session_key = %act.key, error = %e, "store flush failed at run end");
            }
            act.forward(event);
            act.active = None;
            act.next_turn(ctx);
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lane::LaneKind;
    use crate::provider::offline::OfflineProvider;
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
            provider: OfflineProvider::new().start().recipient(),
            executor: ToolExecutor::new(dir.path().to_path_buf(), ToolLimits::default())
                .start()
                .recipient(),
            lane: LaneActor::new(LaneKind::Main, 4).start(),
            events: Sink(tx).start().recipient(),
            model: "echo".into(),
            system: "sys".into(),
            tools: ToolExecutor::specs(),
            timeout: Duration::from_secs(30),
            max_model_calls: 8,
            queue,
            workspace: dir.path().display().to_string(),
        };
        let session =
            SessionActor::new("agent:main:main".into(), "sess-1".into(), deps.clone()).start();
        H {
            _dir: dir,
            store,
            deps,
            session,
            events,
        }
    }

    impl H {
        async fn send(&self, text: &str, run_id: &str) -> SendAck {
            self.session
                .send(SendChat {
                    text: text.into(),
                    run_id: run_id.into(),
                })
                .await
                .unwrap()
                .unwrap()
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
            next.contains("Queued #1\nfirst extra") && next.contains("Queued #2\nsecond extra"),
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
        assert!(interrupted(std::slice::from_ref(&user)));
        assert!(!interrupted(&[user.clone(), reply.clone()]));
        assert!(
            !interrupted(&[user.clone(), reply.clone(), pending.clone()]),
            "pending messages never started a run"
        );
        assert!(interrupted(&[reply, user, pending]));
        assert!(!interrupted(&[]));
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
        let _session = SessionActor::new("agent:main:b".into(), "sess-2".into(), deps).start();
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
        let again = SessionActor::new("agent:main:main".into(), "sess-1".into(), deps).start();
        again
            .send(SendChat {
                text: "@context".into(),
                run_id: "k3".into(),
            })
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
        assert!(matches!(events.last(), Some(RunEvent::Failed { .. })));
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
}
