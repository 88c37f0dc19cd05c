//! The registry against a real store: waits for live runs, aliases,
//! results, records of runs it never saw, bounds, and the edge receiving
//! every event after the registry.

use std::time::Duration;

use actix::prelude::*;
use tokio::sync::mpsc;

use super::*;
use crate::metrics::Metrics;
use crate::provider::{StopReason, Usage};
use crate::run::{FailureKind, Outcome, RunEvent, RunKind, RunStatus};
use crate::store::Store;

const KEY: &str = "agent:main:main";

/// The edge: run events to one channel; the order of events and news
/// (what arrived, as `event` or `news`) to another.
struct Edge(
    mpsc::UnboundedSender<SessionEvent>,
    mpsc::UnboundedSender<&'static str>,
);
impl Actor for Edge {
    type Context = Context<Self>;
}
impl Handler<SessionEvent> for Edge {
    type Result = ();
    fn handle(&mut self, msg: SessionEvent, _: &mut Context<Self>) {
        let _ = self.1.send("event");
        let _ = self.0.send(msg);
    }
}
impl Handler<SessionNews> for Edge {
    type Result = ();
    fn handle(&mut self, _: SessionNews, _: &mut Context<Self>) {
        let _ = self.1.send("news");
    }
}

struct H {
    _dir: tempfile::TempDir,
    store: Store,
    reg: Addr<RunRegistry>,
    edge: mpsc::UnboundedReceiver<SessionEvent>,
    order: mpsc::UnboundedReceiver<&'static str>,
}

fn start() -> H {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let (tx, edge) = mpsc::unbounded_channel();
    let (order_tx, order) = mpsc::unbounded_channel();
    let edge_addr = Edge(tx, order_tx).start();
    let reg = RunRegistry::new(
        store.clone(),
        std::sync::Arc::new(Metrics::default()),
        edge_addr.clone().recipient(),
        edge_addr.recipient(),
    )
    .start();
    H {
        _dir: dir,
        store,
        reg,
        edge,
        order,
    }
}

fn send(h: &H, event: RunEvent) {
    h.reg.do_send(SessionEvent {
        session_key: crate::ids::SessionKey::stored(KEY),
        verbose: "off".into(),
        event,
    });
}

fn final_event(run_id: &str, text: &str) -> RunEvent {
    RunEvent::Final {
        run_id: run_id.into(),
        outcome: Outcome::of_final(RunKind::Chat, text),
        stop_reason: StopReason::Stop,
        usage: Usage {
            input: 5,
            output: 7,
            ..Usage::default()
        },
    }
}

async fn ticket(h: &H, id: &str) -> WaitTicket {
    h.reg
        .send(WaitRun {
            run_id: id.into(),
            conn: None,
        })
        .await
        .unwrap()
}

#[actix::test]
async fn a_waiter_of_a_live_run_or_of_a_message_it_answers_gets_the_result() {
    let mut h = start();
    send(
        &h,
        RunEvent::Queued {
            run_id: "r1".into(),
            message_id: "r1".into(),
        },
    );
    send(
        &h,
        RunEvent::Queued {
            run_id: "r1".into(),
            message_id: "m2".into(),
        },
    );
    send(
        &h,
        RunEvent::Started {
            run_id: "r1".into(),
        },
    );
    let WaitTicket::Waiting(direct) = ticket(&h, "r1").await else {
        panic!("r1 is live");
    };
    let WaitTicket::Waiting(via_alias) = ticket(&h, "m2").await else {
        panic!("m2 is answered by r1");
    };
    assert_eq!(via_alias.run_id, "r1");
    let live = h
        .reg
        .send(LiveRunOf {
            run_id: "r1".into(),
        })
        .await
        .unwrap();
    assert_eq!(live.map(|l| l.started), Some(true));
    let busy = h.reg.send(BusySessions).await.unwrap();
    assert!(busy.contains(KEY));
    send(&h, final_event("r1", "hello"));
    for w in [direct, via_alias] {
        let r = w.wait(Duration::from_secs(5)).await.expect("settled");
        assert_eq!(
            (r.status(), r.outcome.text(), r.stop_reason),
            (RunStatus::Ok, "hello", "stop")
        );
        assert_eq!(r.usage.map(|u| u.output), Some(7));
    }
    // Later waits are answered from the results; the run is no longer live.
    let WaitTicket::Done(r) = ticket(&h, "m2").await else {
        panic!("ended");
    };
    assert_eq!(r.run_id, "r1");
    assert!(h
        .reg
        .send(LiveRunOf {
            run_id: "r1".into()
        })
        .await
        .unwrap()
        .is_none());
    // The edge got every event, in order, after the registry.
    let mut seen = Vec::new();
    while let Ok(ev) = h.edge.try_recv() {
        seen.push(ev.event.end_status().map_or("-", |s| s.as_str()));
    }
    assert_eq!(seen, ["-", "-", "-", "ok"]);
}

#[actix::test]
async fn an_ended_record_of_a_run_never_seen_live_is_answered_at_once() {
    // A run the stop cut off: the recovering session wrote its record
    // (ended in this process's lifetime) and its event is still on the way.
    let h = start();
    let mut rec = RunRecord::pending(KEY, 10);
    rec.status = "error".into();
    rec.ended_at = crate::now_ms();
    rec.error = Some("gateway stopped".into());
    rec.stop_reason = "error".into();
    save(&h.store, "cut", &rec).unwrap();
    save(&h.store, "msg", &RunRecord::alias(KEY, "cut", 10)).unwrap();
    for id in ["cut", "msg"] {
        let WaitTicket::Done(r) = ticket(&h, id).await else {
            panic!("{id}: answered from the record");
        };
        assert_eq!((r.run_id.as_str(), r.status()), ("cut", RunStatus::Error));
        assert_eq!(r.outcome.error(), Some("gateway stopped"));
    }
    assert!(matches!(ticket(&h, "nobody").await, WaitTicket::Unknown));
}

#[actix::test]
async fn a_pending_record_is_waited_for_until_its_session_settles_it() {
    let h = start();
    save(&h.store, "p", &RunRecord::pending(KEY, 1)).unwrap();
    let WaitTicket::Waiting(w) = ticket(&h, "p").await else {
        panic!("pending: its session settles it");
    };
    send(
        &h,
        RunEvent::Failed {
            run_id: "p".into(),
            error: "gateway stopped".into(),
            kind: FailureKind::Stopped,
        },
    );
    let r = w.wait(Duration::from_secs(5)).await.expect("settled");
    assert_eq!(
        (r.status(), r.stop_reason, r.usage),
        (RunStatus::Error, "error", None)
    );
}

#[actix::test]
async fn watchers_get_each_delta_once_and_a_silent_reply_ends_with_no_text() {
    let h = start();
    let (tx, mut rx) = mpsc::unbounded_channel();
    h.reg.do_send(WatchRun {
        run_id: "s".into(),
        tx,
    });
    send(&h, RunEvent::Started { run_id: "s".into() });
    // What the session's gate let through, piece by piece.
    for (delta, fresh) in [("Hel", true), ("lo", false), ("New", true)] {
        let event = RunEvent::Delta {
            run_id: "s".into(),
            delta: delta.into(),
            fresh,
        };
        send(&h, event);
    }
    send(&h, final_event("s", "NO_REPLY"));
    let mut got = Vec::new();
    let r = loop {
        match rx.recv().await {
            Some(RunUpdate::Delta { text, fresh }) => got.push((text, fresh)),
            Some(RunUpdate::End(r)) => break r,
            None => panic!("the end reaches the watcher"),
        }
    };
    let want = [("Hel", true), ("lo", false), ("New", true)];
    assert_eq!(got, want.map(|(t, f)| (t.to_string(), f)));
    assert_eq!(r.outcome, Outcome::Silent { empty: false });
    assert_eq!(r.outcome.text(), "");
    let (tx, mut rx) = mpsc::unbounded_channel();
    h.reg.do_send(WatchRun {
        run_id: "s".into(),
        tx,
    });
    assert!(
        matches!(rx.recv().await, Some(RunUpdate::End(_))),
        "an ended run answers at once"
    );
}

#[actix::test]
async fn waiters_are_bounded_per_connection_and_freed_when_dropped() {
    let h = start();
    send(
        &h,
        RunEvent::Started {
            run_id: "busy".into(),
        },
    );
    let conn = crate::ids::ConnId::new("c1".to_string());
    let mut held = Vec::new();
    for _ in 0..MAX_WAITERS_PER_CONN {
        let t = h
            .reg
            .send(WaitRun {
                run_id: "busy".into(),
                conn: Some(conn.clone()),
            })
            .await
            .unwrap();
        let WaitTicket::Waiting(w) = t else {
            panic!("within the bound")
        };
        held.push(w);
    }
    let over = h
        .reg
        .send(WaitRun {
            run_id: "busy".into(),
            conn: Some(conn.clone()),
        })
        .await
        .unwrap();
    assert!(matches!(over, WaitTicket::Busy));
    held.pop();
    // The dropped waiter's place is free once its cancel is handled.
    let again = h
        .reg
        .send(WaitRun {
            run_id: "busy".into(),
            conn: Some(conn),
        })
        .await
        .unwrap();
    assert!(matches!(again, WaitTicket::Waiting(_)));
}

#[actix::test]
async fn news_and_run_events_reach_the_edge_in_the_order_the_session_sent_them() {
    let mut h = start();
    let entry = std::sync::Arc::new(crate::session::SessionEntry::new(1));
    let news = |change| SessionNews {
        session_key: crate::ids::SessionKey::stored(KEY),
        entry: entry.clone(),
        running: false,
        change,
    };
    let settled = crate::session::SessionChange::RunSettled {
        run_id: "r".into(),
        status: crate::session::Settled::Done,
        started_at: 1,
        ended_at: 2,
        error: None,
    };
    send(&h, RunEvent::Started { run_id: "r".into() });
    h.reg
        .do_send(news(crate::session::SessionChange::RunStarted {
            run_id: "r".into(),
            started_at: 1,
        }));
    send(&h, final_event("r", "done"));
    h.reg.do_send(news(settled));
    let mut got = Vec::new();
    while got.len() < 4 {
        got.push(h.order.recv().await.unwrap());
    }
    assert_eq!(got, ["event", "news", "event", "news"]);
}

/// Where a test's audit records go.
struct Ledger(mpsc::UnboundedSender<crate::audit::Record>);
impl Actor for Ledger {
    type Context = Context<Self>;
}
impl Handler<crate::audit::Record> for Ledger {
    type Result = ();
    fn handle(&mut self, msg: crate::audit::Record, _: &mut Context<Self>) {
        let _ = self.0.send(msg);
    }
}

#[actix::test]
async fn every_started_run_and_tool_call_is_recorded_ended_once() {
    use crate::audit::{Activity, AuditLog, End};
    let dir = tempfile::tempdir().unwrap();
    let (tx, _edge) = mpsc::unbounded_channel();
    let (order_tx, _order) = mpsc::unbounded_channel();
    let edge = Edge(tx, order_tx).start();
    let (rec_tx, mut records) = mpsc::unbounded_channel();
    let reg = RunRegistry::new(
        Store::open(dir.path()).unwrap(),
        std::sync::Arc::new(Metrics::default()),
        edge.clone().recipient(),
        edge.recipient(),
    )
    .with_audit(AuditLog::new(
        Ledger(rec_tx).start().recipient(),
        Default::default(),
    ))
    .start();
    let send = |event: RunEvent| {
        reg.do_send(SessionEvent {
            session_key: crate::ids::SessionKey::stored(KEY),
            verbose: "off".into(),
            event,
        })
    };
    let call = |id: &str| crate::provider::ToolCall {
        id: id.into(),
        name: "exec".into(),
        arguments: serde_json::json!({"command": "sleep 9"}),
    };
    // Aborted mid-tool, after a restart from its last step (a second
    // `Started`); a timed-out one; one dropped from its queue unstarted.
    for e in [
        RunEvent::Started { run_id: "a".into() },
        RunEvent::ToolStarted {
            run_id: "a".into(),
            call: call("c1"),
        },
        RunEvent::Started { run_id: "a".into() },
        RunEvent::Aborted {
            run_id: "a".into(),
            text: String::new(),
        },
        RunEvent::Started { run_id: "t".into() },
        RunEvent::Failed {
            run_id: "t".into(),
            error: "timed out".into(),
            kind: FailureKind::Timeout,
        },
        RunEvent::Queued {
            run_id: "q".into(),
            message_id: "q".into(),
        },
        RunEvent::Failed {
            run_id: "q".into(),
            error: "dropped".into(),
            kind: FailureKind::Dropped,
        },
    ] {
        send(e);
    }
    // The registry answers in order: after this, every record was sent.
    reg.send(BusySessions).await.unwrap();
    let mut got = Vec::new();
    while let Ok(r) = records.try_recv() {
        got.push(match r.activity {
            Activity::AgentRun(a) => (a.run_id, "run", a.end, a.source_sequence),
            Activity::ToolAction(t) => {
                assert!(t.tool_call_id.unwrap().starts_with("sha256:"));
                (t.run_id, "tool", t.end, t.source_sequence)
            }
            other => panic!("{other:?}"),
        });
    }
    let row = |id: &str, what, end, seq| (id.to_string(), what, end, seq);
    assert_eq!(
        got,
        [
            row("a", "run", None, 1),
            row("a", "tool", None, 2),
            row("a", "tool", Some(End::Cancelled), 3),
            row("a", "run", Some(End::Cancelled), 4),
            row("t", "run", None, 1),
            row("t", "run", Some(End::TimedOut), 2),
        ]
    );
}
