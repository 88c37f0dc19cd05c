//! The registry against a real store and a node that is a test actor:
//! keys joined, kept and refused (a new registry on the same store is a
//! restart: its memory is empty, its trees are not), deadlines, a node
//! that leaves mid-call, and a late answer kept for its key.

use std::time::Duration;

use actix::prelude::*;
use serde_json::json;
use tokio::sync::mpsc;

use super::*;
use crate::store::Store;

/// A node's connection: what it is sent goes to a channel.
struct Sink(mpsc::UnboundedSender<ToNode>);
impl Actor for Sink {
    type Context = Context<Self>;
}
impl Handler<ToNode> for Sink {
    type Result = ();
    fn handle(&mut self, msg: ToNode, _: &mut Context<Self>) {
        let _ = self.0.send(msg);
    }
}
struct News;
impl Actor for News {
    type Context = Context<Self>;
}
impl Handler<NodeNews> for News {
    type Result = ();
    fn handle(&mut self, _: NodeNews, _: &mut Context<Self>) {}
}

fn registry(store: &Store) -> Addr<NodeRegistry> {
    let policy = NodePolicy {
        allow: vec!["system.run".into()],
        deny: vec![],
    };
    NodeRegistry::new(store.clone(), News.start().recipient(), policy).start()
}

async fn connect(reg: &Addr<NodeRegistry>, conn: &str) -> mpsc::UnboundedReceiver<ToNode> {
    let (tx, rx) = mpsc::unbounded_channel();
    let declared = NodeDeclaration {
        commands: vec!["system.run".into()],
        ..Default::default()
    };
    let msg = NodeConnected {
        conn_id: crate::ids::ConnId::new(conn.to_string()),
        node_id: "n1".into(),
        declared,
        sink: Sink(tx).start().recipient(),
    };
    reg.send(msg).await.unwrap().unwrap();
    rx
}

async fn approve(reg: &Addr<NodeRegistry>) {
    let (pending, _) = reg.send(ListNodePairing).await.unwrap().unwrap();
    let msg = ApproveNode {
        request_id: pending[0].request_id.clone(),
        caller_scopes: vec!["operator.admin".into()],
    };
    reg.send(msg).await.unwrap().unwrap().unwrap();
}

fn call(key: &str, timeout_ms: u64) -> InvokeNode {
    InvokeNode {
        node_id: "n1".into(),
        command: "system.run".into(),
        params: Some(json!({ "command": ["true"] })),
        timeout_ms: Some(timeout_ms),
        idempotency_key: Some(key.into()),
        session_key: None,
        internal: false,
    }
}

async fn sent(rx: &mut mpsc::UnboundedReceiver<ToNode>) -> String {
    loop {
        match tokio::time::timeout(Duration::from_secs(5), rx.recv())
            .await
            .unwrap()
            .unwrap()
        {
            ToNode::Invoke { id, .. } => return id,
            _ => continue,
        }
    }
}

fn answer(conn: &str, id: &str, text: &str) -> InvokeResult {
    InvokeResult {
        conn_id: crate::ids::ConnId::new(conn.to_string()),
        node_id: "n1".into(),
        id: id.into(),
        answer: NodeAnswer {
            ok: true,
            payload: Some(json!({ "stdout": text })),
            payload_json: None,
            error: None,
        },
    }
}

fn nothing_sent(rx: &mut mpsc::UnboundedReceiver<ToNode>) {
    while let Ok(m) = rx.try_recv() {
        assert!(!matches!(m, ToNode::Invoke { .. }), "sent again: {m:?}");
    }
}

#[actix::test]
async fn a_key_is_joined_while_running_answered_after_and_refused_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let reg = registry(&store);
    let mut rx = connect(&reg, "c1").await;
    approve(&reg).await;

    let first = reg.send(call("k", 5_000));
    let second = reg.send(call("k", 5_000));
    let id = sent(&mut rx).await;
    assert!(reg.send(answer("c1", &id, "once")).await.unwrap());
    let (a, b) = (
        first.await.unwrap().unwrap(),
        second.await.unwrap().unwrap(),
    );
    assert_eq!(a, b, "the second call joined the first");
    nothing_sent(&mut rx);
    let kept = reg.send(call("k", 5_000)).await.unwrap().unwrap();
    assert_eq!(kept, a, "answered from the record");
    nothing_sent(&mut rx);

    // Sent, then the gateway "restarts" before the answer: refused, not re-sent.
    let pending = reg.send(call("lost", 60_000));
    let _ = sent(&mut rx).await;
    let restarted = registry(&store);
    let mut rx2 = connect(&restarted, "c2").await;
    let refused = restarted.send(call("lost", 5_000)).await.unwrap();
    assert!(
        matches!(refused, Err(InvokeError::OutcomeUnknown { .. })),
        "{refused:?}"
    );
    nothing_sent(&mut rx2);
    drop(pending);
}

#[actix::test]
async fn deadlines_and_a_vanished_node_end_the_call_and_a_late_answer_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let reg = registry(&store);
    let mut rx = connect(&reg, "c1").await;
    approve(&reg).await;

    let r = reg.send(call("slow", 50)).await.unwrap();
    assert_eq!(r, Err(InvokeError::Timeout));
    let mut cancelled = false;
    while let Ok(m) = rx.try_recv() {
        cancelled |= matches!(m, ToNode::Cancel { .. });
    }
    assert!(cancelled, "the node was told to cancel");

    let pending = reg.send(call("gone", 60_000));
    let id = sent(&mut rx).await;
    reg.send(NodeDisconnected {
        conn_id: crate::ids::ConnId::new("c1".into()),
        node_id: "n1".into(),
    })
    .await
    .unwrap();
    assert_eq!(pending.await.unwrap(), Err(InvokeError::Disconnected));
    let r = reg.send(call("other", 1_000)).await.unwrap();
    assert_eq!(r, Err(InvokeError::NotConnected));

    // It comes back and answers the old call late: kept for the key.
    let mut rx = connect(&reg, "c2").await;
    assert!(
        !reg.send(answer("c2", &id, "late")).await.unwrap(),
        "no call waits"
    );
    let kept = reg.send(call("gone", 1_000)).await.unwrap().unwrap();
    assert_eq!(kept.payload, Some(json!({ "stdout": "late" })));
    nothing_sent(&mut rx);
}
