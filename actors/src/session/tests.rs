//! The session actor's tests: delivery, queue modes, recovery, supervision.

use super::recovery::interrupted;
use super::*;
use crate::lane::LaneKind;
use crate::provider::hub::ProviderHub;
use crate::run::{Outcome, TakeSteers};
use crate::session::inbox::{self, InboxItem};
use crate::session::queue::QueueMode;
use crate::session::run_record::RunRecord;
use crate::tool::{ToolExecutor, ToolLimits};
use serde_json::{json, Value};
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

/// Records (or ignores) what the session tells dashboards.
struct NewsSink(Option<mpsc::UnboundedSender<SessionNews>>);
impl Actor for NewsSink {
    type Context = Context<Self>;
}
impl Handler<SessionNews> for NewsSink {
    type Result = ();
    fn handle(&mut self, msg: SessionNews, _: &mut Context<Self>) {
        if let Some(tx) = &self.0 {
            let _ = tx.send(msg);
        }
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
        news: NewsSink(None).start().recipient(),
        models: std::sync::Arc::new(ModelPlan {
            global: "offline/echo".into(),
            ..Default::default()
        }),
        thinking_default: "off".into(),
        verbose_default: "on".into(),
        context: Arc::new(AgentContext::new(dir.path().to_path_buf(), dir.path())),
        tools: ToolExecutor::specs().into(),
        windows: Default::default(),
        compaction: crate::compaction::shipped().0,
        pruning: Arc::new(crate::compaction::shipped().1),
        memory_writable: true,
        prices: Default::default(),
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
        media: None,
        speech: None,
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
        Some(RunEvent::Final {
            outcome: Outcome::Text(text),
            ..
        }) => text.clone(),
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
            status: SendStatus::Started,
            send_policy: None
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
            RunEvent::Final {
                run_id,
                outcome: Outcome::Text(text),
                ..
            } if run_id == "u5" => ended.push(text),
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
        if let RunEvent::Final {
            outcome: Outcome::Text(text),
            ..
        } = e
        {
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
            status: SendStatus::Queued,
            send_policy: None
        },
        "not steered into a run that is ending"
    );
    let seen = until_ends(&mut h.events, &["k1", "k2"]).await;
    assert!(seen.iter().any(|e| matches!(e,
        RunEvent::Final { run_id, outcome: Outcome::Text(text), .. } if run_id == "k2" && text == "You said: late")));
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
            status: SendStatus::Duplicate { live: false },
            send_policy: None
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
        news: NewsSink(None).start().recipient(),
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
        if let RunEvent::Final {
            outcome: Outcome::Text(text),
            ..
        } = e
        {
            break text;
        }
    };
    assert_eq!(text, "context: 5 messages");
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
        news: NewsSink(None).start().recipient(),
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
        if let RunEvent::Final {
            outcome: Outcome::Text(text),
            ..
        } = e.event
        {
            break text;
        }
    };
    assert_eq!(
        text, "context: 3 messages",
        "history reloaded from the store"
    );
}

#[actix::test]
async fn watchers_are_told_of_each_stored_message_and_when_the_run_starts_and_settles() {
    let mut h = setup(QueueSettings::default());
    let (tx, mut news) = mpsc::unbounded_channel();
    let metrics = Arc::new(crate::metrics::Metrics::default());
    let deps = SessionDeps {
        news: NewsSink(Some(tx)).start().recipient(),
        metrics: metrics.clone(),
        ..h.deps.clone()
    };
    // Nobody watches: nothing is told.
    let quiet = SessionActor::new("agent:main:quiet".into(), entry("sess-q"), deps.clone()).start();
    let mut msg = SendChat::text("unheard", "q1");
    msg.command_authorized = true;
    quiet.send(msg).await.unwrap().unwrap();
    h.until_end("q1").await;
    metrics
        .session_watchers
        .store(1, std::sync::atomic::Ordering::Relaxed);
    h.session = SessionActor::new("agent:main:watched".into(), entry("sess-w"), deps).start();
    h.send("hello", "w1").await;
    h.until_end("w1").await;
    let mut seen = Vec::new();
    while seen.len() < 4 {
        let n = actix::clock::timeout(Duration::from_secs(10), news.recv())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            n.session_key, "agent:main:watched",
            "the quiet one told no one"
        );
        assert_eq!(n.entry.session_id, "sess-w");
        seen.push((n.change, n.running, n.entry.output_tokens));
    }
    match &seen[0] {
        (SessionChange::Message { entry }, _, _) => {
            assert_eq!(entry["message"]["role"], "user");
            assert_eq!(entry["runId"], "w1");
            assert_eq!(entry["messageId"], "w1");
        }
        other => panic!("{other:?}"),
    }
    assert!(
        matches!(&seen[1], (SessionChange::RunStarted { run_id, started_at }, true, _) if run_id == "w1" && *started_at > 0),
        "{:?}",
        seen[1]
    );
    assert!(
        matches!(&seen[2], (SessionChange::Message { entry }, true, _) if entry["message"]["role"] == "assistant"),
        "{:?}",
        seen[2]
    );
    match &seen[3] {
        (
            SessionChange::RunSettled {
                run_id,
                status,
                started_at,
                ended_at,
                error,
            },
            running,
            output_tokens,
        ) => {
            assert_eq!(
                (run_id.as_str(), *status, error),
                ("w1", Settled::Done, &None)
            );
            assert!(ended_at >= started_at);
            assert!(!running, "settled: no run is active");
            assert!(*output_tokens > 0, "the entry carries the run's usage");
        }
        other => panic!("{other:?}"),
    }
}

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

#[path = "recovery_tests.rs"]
mod recovery;

#[path = "supervision_tests.rs"]
mod supervision;

/// Session maintenance through the router: stale sessions go with their
/// transcripts; the main session, a live one and (in warn mode) all of
/// them stay; usage rows older than 400 days go.
#[actix::test]
async fn maintenance_removes_stale_sessions_and_keeps_the_protected() {
    use crate::router::maintenance::Maintenance;
    use crate::router::{CountLive, GetSession, Maintain, RouterActor};
    let h = setup(QueueSettings::default());
    let (tx, mut events) = mpsc::unbounded_channel();
    let deps = SessionDeps {
        idle_stop: Duration::from_millis(100),
        events: Sink(tx).start().recipient(),
        news: NewsSink(None).start().recipient(),
        ..h.deps.clone()
    };
    let policy = Maintenance::from_settings(&crate::settings::shipped()).unwrap();
    let router = RouterActor::new(deps.clone())
        .with_maintenance(policy.clone())
        .start();
    let key = |k: &str| crate::inbound::SessionKey::canonical(k, "main", "main").unwrap();
    let mut ids = Vec::new();
    for (i, name) in ["main", "old-a", "old-b"].iter().enumerate() {
        let (s, e) = router
            .send(GetSession { key: key(name) })
            .await
            .unwrap()
            .unwrap();
        s.send(SendChat::text("hello", &format!("m{i}")))
            .await
            .unwrap()
            .unwrap();
        loop {
            let ev = actix::clock::timeout(Duration::from_secs(10), events.recv())
                .await
                .unwrap()
                .unwrap();
            if matches!(ev.event, RunEvent::Final { .. }) {
                break;
            }
        }
        ids.push(e.session_id);
    }
    for _ in 0..200 {
        if router.send(CountLive).await.unwrap() == 0 {
            break;
        }
        actix::clock::sleep(Duration::from_millis(20)).await;
    }
    // One more, kept live.
    let (_live, _) = router
        .send(GetSession {
            key: key("busy-now"),
        })
        .await
        .unwrap()
        .unwrap();
    h.store
        .put(Tree::Usage, "2020-01-01\u{0}r1", &json!({"input": 1}))
        .unwrap();
    let later = crate::now_ms() + 31 * 86_400_000;
    // Warn mode reports and removes nothing.
    let warn = Maintenance {
        enforce: false,
        ..policy
    };
    let watcher = RouterActor::new(deps).with_maintenance(warn).start();
    let would = watcher
        .send(Maintain { now: later })
        .await
        .unwrap()
        .unwrap();
    assert_eq!(would.len(), 3, "{would:?}");
    assert_eq!(h.store.scan::<Value>(Tree::Sessions, "").unwrap().len(), 4);
    let mut removed = router.send(Maintain { now: later }).await.unwrap().unwrap();
    removed.sort();
    assert_eq!(removed, vec!["agent:main:old-a", "agent:main:old-b"]);
    let left: Vec<String> = h
        .store
        .scan::<Value>(Tree::Sessions, "")
        .unwrap()
        .into_iter()
        .map(|(k, _)| k)
        .collect();
    assert_eq!(left, vec!["agent:main:busy-now", "agent:main:main"]);
    for (i, id) in ids.iter().enumerate() {
        let entries = h
            .store
            .scan::<Value>(Tree::Transcripts, &format!("{id}\u{0}"))
            .unwrap();
        assert_eq!(entries.is_empty(), i > 0, "transcript {i}");
    }
    assert!(h
        .store
        .scan::<Value>(Tree::Usage, "2020-")
        .unwrap()
        .is_empty());
}

/// A channel conversation's reset policy is judged by the session on its
/// own entry: stale, a new transcript starts before the message; fresh, or
/// a message it has seen, nothing is reset.
#[actix::test]
async fn a_stale_conversation_starts_a_new_transcript_before_its_message() {
    use crate::routing::reset::{ResetMode, ResetPolicy};
    let mut h = setup(QueueSettings::default());
    let idle = ResetPolicy {
        mode: ResetMode::Idle,
        at_hour: 4,
        idle_minutes: Some(30),
    };
    let send = |text: &str, id: &str| {
        let mut m = SendChat::text(text, id);
        m.fresh = Some(idle);
        m
    };
    let session_id = |h: &H| {
        let s = h.session.clone();
        async move { s.send(GetEntry).await.unwrap().0.session_id }
    };
    // Last heard at the epoch: stale by 30 idle minutes.
    h.session.send(send("hello", "k1")).await.unwrap().unwrap();
    h.until_end("k1").await;
    let renewed = session_id(&h).await;
    assert_ne!(renewed, "sess-1");
    assert!(
        h.texts().is_empty(),
        "the old transcript keeps no new message"
    );
    let store = h.store.clone();
    let texts = |id: &str| -> Vec<String> {
        transcript::entries(&store, id)
            .unwrap()
            .iter()
            .filter_map(transcript::message_text)
            .collect()
    };
    assert_eq!(texts(&renewed), ["hello", "You said: hello"]);
    // Heard just now: kept.
    h.session.send(send("again", "k2")).await.unwrap().unwrap();
    h.until_end("k2").await;
    assert_eq!(session_id(&h).await, renewed);
    // A message seen before is answered as a duplicate, and resets nothing.
    let dup = h.session.send(send("hello", "k1")).await.unwrap().unwrap();
    assert!(matches!(dup.status, SendStatus::Duplicate { .. }));
    assert_eq!(session_id(&h).await, renewed);
    assert_eq!(texts(&renewed).len(), 4);
}
