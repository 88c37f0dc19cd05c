//! `NodeRegistry`: the connected nodes, the invocations waiting for a
//! node's answer, and the only writer of the `nodes` and `node_invokes`
//! trees.
//!
//! An invocation with an idempotency key is recorded and flushed before
//! the node is asked; a second call with the key joins the first while it
//! runs, gets its kept answer after, and is refused (never sent again)
//! when the first was sent and its answer never came (a lost connection,
//! a timeout, a restart). Every call ends: with the node's answer, at its
//! deadline (the node is told to cancel), or when the node's connection
//! closes.

use std::collections::{HashMap, VecDeque};
use std::time::Duration;

use actix::prelude::*;
use tokio::sync::oneshot;

use super::*;
use crate::ids::ConnId;
use crate::store::{Store, StoreError, Tree};

/// A call without `timeoutMs` waits this long; none waits longer than
/// `MAX_TIMEOUT_MS`.
pub const DEFAULT_TIMEOUT_MS: u64 = 30_000;
pub const MAX_TIMEOUT_MS: u64 = 10 * 60_000;
/// Calls in flight across all nodes; more are refused (`Busy`).
const MAX_IN_FLIGHT: usize = 1024;
/// Invocations whose connection closed or whose deadline passed: a late
/// answer is still kept for their key.
const LOST_KEPT: usize = 256;

type Waiter = oneshot::Sender<Result<NodeAnswer, InvokeError>>;

struct Live {
    conn_id: ConnId,
    declared: NodeDeclaration,
    sink: Recipient<ToNode>,
    facts: LiveFacts,
}

struct InFlight {
    node_id: String,
    conn_id: ConnId,
    key: Option<String>,
    waiters: Vec<Waiter>,
    timer: Option<SpawnHandle>,
}

pub struct NodeRegistry {
    span: tracing::Span,
    store: Store,
    news: Recipient<NodeNews>,
    policy: NodePolicy,
    live: HashMap<String, Live>,
    in_flight: HashMap<String, InFlight>,
    by_key: HashMap<String, String>,
    lost: VecDeque<(String, String)>,
}

impl NodeRegistry {
    pub fn new(store: Store, news: Recipient<NodeNews>, policy: NodePolicy) -> NodeRegistry {
        NodeRegistry {
            span: tracing::info_span!("nodes"),
            store,
            news,
            policy,
            live: HashMap::new(),
            in_flight: HashMap::new(),
            by_key: HashMap::new(),
            lost: VecDeque::new(),
        }
    }

    fn record(&self, node_id: &str) -> Result<Option<NodeRecord>, StoreError> {
        self.store.get(Tree::Nodes, node_id)
    }

    fn records(&self) -> Result<Vec<NodeRecord>, StoreError> {
        Ok(self
            .store
            .scan::<NodeRecord>(Tree::Nodes, "")?
            .into_iter()
            .map(|(_, r)| r)
            .collect())
    }

    fn allowed(&self, rec: &NodeRecord) -> std::collections::BTreeSet<String> {
        policy::allowlist(rec.platform_id(), &self.policy.allow, &self.policy.deny)
    }

    fn view(&self, rec: &NodeRecord) -> NodeView {
        let live = self.live.get(&rec.node_id).map(|l| {
            let eff = rec.effective(&l.declared, &self.allowed(rec));
            (&l.declared, l.facts.clone(), eff)
        });
        NodeView::of(rec, live)
    }

    /// The node a caller names: its id, else (for the agent) its name.
    fn resolve(&self, name: &str) -> Result<Option<NodeRecord>, StoreError> {
        if let Some(r) = self.record(name)? {
            return Ok(Some(r));
        }
        let lower = name.trim().to_lowercase();
        Ok(self.records()?.into_iter().find(|r| {
            r.display_name().is_some_and(|n| n.to_lowercase() == lower)
                || r.node_id.starts_with(name) && name.len() >= 8
        }))
    }

    /// Ends a call: every waiter gets `result`; a call that reached the
    /// node without an answer keeps its key for a late one.
    fn finish(
        &mut self,
        id: &str,
        result: Result<NodeAnswer, InvokeError>,
        ctx: &mut Context<Self>,
    ) {
        let Some(call) = self.in_flight.remove(id) else {
            return;
        };
        if let Some(t) = call.timer {
            ctx.cancel_future(t);
        }
        if let Some(key) = &call.key {
            self.by_key.remove(key);
            if result.is_err() {
                self.lost.push_back((id.to_string(), key.clone()));
                if self.lost.len() > LOST_KEPT {
                    self.lost.pop_front();
                }
            }
        }
        for w in call.waiters {
            let _ = w.send(result.clone());
        }
    }

    /// Keeps a node's answer under its key (the periodic flush or the next
    /// one makes it durable; until then a repeat after a crash is refused,
    /// never run twice).
    fn keep_answer(&self, key: &str, answer: &NodeAnswer) {
        let rec: Option<InvokeRecord> = self.store.get(Tree::NodeInvokes, key).ok().flatten();
        if let Some(mut rec) = rec {
            rec.answer = Some(answer.clone());
            if let Err(e) = self.store.put(Tree::NodeInvokes, key, &rec) {
                tracing::warn!(error = %e, "node answer not kept");
            }
        }
    }

    fn dispatch(&mut self, id: &str, msg: &InvokeNode, ctx: &mut Context<Self>) {
        let Some(call) = self.in_flight.get(id) else {
            return;
        };
        let live = self
            .live
            .get(&call.node_id)
            .filter(|l| l.conn_id == call.conn_id);
        let Some(live) = live else {
            self.finish(id, Err(InvokeError::Disconnected), ctx);
            return;
        };
        let request = ToNode::Invoke {
            id: id.to_string(),
            node_id: call.node_id.clone(),
            command: msg.command.clone(),
            params_json: msg.params.as_ref().map(|p| p.to_string()),
            timeout_ms: msg.timeout_ms,
            idempotency_key: msg.idempotency_key.clone(),
            session_key: msg.session_key.clone(),
        };
        if live.sink.try_send(request).is_err() {
            self.finish(id, Err(InvokeError::Disconnected), ctx);
        }
    }

    /// The checks before a call is sent: the node, the command, the key.
    fn check(&self, msg: &InvokeNode) -> Result<(NodeRecord, Option<String>), InvokeError> {
        let store_err = |e: StoreError| InvokeError::Store(e.to_string());
        let command = msg.command.trim();
        if msg.node_id.trim().is_empty() || command.is_empty() {
            return Err(InvokeError::Invalid("nodeId and command required".into()));
        }
        if policy::is_private(command) {
            return Err(InvokeError::Invalid(
                "node.invoke does not allow private node controls".into(),
            ));
        }
        if policy::EXEC_APPROVALS.contains(&command) && !msg.internal {
            return Err(InvokeError::Invalid(
                "node.invoke does not allow system.execApprovals.*; use exec.approvals.node.*"
                    .into(),
            ));
        }
        let rec = self
            .resolve(&msg.node_id)
            .map_err(store_err)?
            .ok_or(InvokeError::UnknownNode)?;
        let live = self
            .live
            .get(&rec.node_id)
            .ok_or(InvokeError::NotConnected)?;
        let declared = policy::normalize(&live.declared.commands);
        if msg.internal {
            if !declared.iter().any(|c| c == command) {
                return Err(InvokeError::NotAllowed(format!(
                    "node command not allowed: the node does not support \"{command}\""
                )));
            }
        } else {
            let allowed = self.allowed(&rec);
            let effective = rec.effective(&live.declared, &allowed);
            let platform = rec.platform_id();
            if let Some(why) = policy::refusal(
                command,
                platform,
                &allowed,
                &effective,
                &declared,
                &self.policy.deny,
            ) {
                return Err(InvokeError::NotAllowed(why));
            }
        }
        let key = msg
            .idempotency_key
            .as_deref()
            .filter(|k| !k.is_empty())
            .map(|k| format!("{}\0{k}", rec.node_id));
        Ok((rec, key))
    }

    /// A call's key seen before: joined while in flight, answered from the
    /// record after, refused when its answer never came.
    fn replay(&mut self, key: &str) -> Result<Option<Begin>, InvokeError> {
        if let Some(id) = self.by_key.get(key) {
            if let Some(call) = self.in_flight.get_mut(id) {
                let (tx, rx) = oneshot::channel();
                call.waiters.push(tx);
                return Ok(Some(Begin::Wait(rx)));
            }
        }
        let rec: Option<InvokeRecord> = self
            .store
            .get(Tree::NodeInvokes, key)
            .map_err(|e| InvokeError::Store(e.to_string()))?;
        Ok(rec.map(|r| match r.answer {
            Some(a) => Begin::Done(Ok(a)),
            None => Begin::Done(Err(InvokeError::OutcomeUnknown {
                invoke_id: r.invoke_id,
            })),
        }))
    }

    /// An invoke under an idempotency key, stored before it is sent: a
    /// retry with the key is answered from it.
    fn remember(&mut self, key: &str, id: &str, command: &str) -> Result<(), InvokeError> {
        let record = InvokeRecord {
            invoke_id: id.to_string(),
            command: command.to_string(),
            at_ms: crate::now_ms(),
            answer: None,
        };
        self.store
            .put(Tree::NodeInvokes, key, &record)
            .map_err(|e| InvokeError::Store(e.to_string()))?;
        self.by_key.insert(key.to_string(), id.to_string());
        Ok(())
    }

    fn begin(&mut self, msg: InvokeNode, ctx: &mut Context<Self>) -> Begin {
        let (rec, key) = match self.check(&msg) {
            Ok(v) => v,
            Err(e) => return Begin::Done(Err(e)),
        };
        if let Some(k) = &key {
            match self.replay(k) {
                Ok(Some(b)) => return b,
                Ok(None) => {}
                Err(e) => return Begin::Done(Err(e)),
            }
        }
        if self.in_flight.len() >= MAX_IN_FLIGHT {
            return Begin::Done(Err(InvokeError::Busy));
        }
        let id = ulid::Ulid::generate().to_string().to_lowercase();
        if let Some(k) = &key {
            if let Err(e) = self.remember(k, &id, &msg.command) {
                return Begin::Done(Err(e));
            }
        }
        let Some(conn_id) = self.live.get(&rec.node_id).map(|l| l.conn_id.clone()) else {
            return Begin::Done(Err(InvokeError::NotConnected));
        };
        let timeout = msg
            .timeout_ms
            .unwrap_or(DEFAULT_TIMEOUT_MS)
            .clamp(1, MAX_TIMEOUT_MS);
        let timer_id = id.clone();
        let timer = ctx.run_later(Duration::from_millis(timeout), move |act, ctx| {
            act.timed_out(&timer_id, ctx);
        });
        let (tx, rx) = oneshot::channel();
        let node_id = rec.node_id.clone();
        self.in_flight.insert(
            id.clone(),
            InFlight {
                node_id,
                conn_id,
                key: key.clone(),
                waiters: vec![tx],
                timer: Some(timer),
            },
        );
        let mut msg = msg;
        msg.node_id = rec.node_id;
        if key.is_some() {
            // Durable before the node hears of it.
            let store = self.store.clone();
            let flushed = async move { store.flush().await };
            ctx.spawn(flushed.into_actor(self).map(move |r, act, ctx| match r {
                Ok(()) => act.dispatch(&id, &msg, ctx),
                Err(e) => act.finish(&id, Err(InvokeError::Store(e.to_string())), ctx),
            }));
        } else {
            self.dispatch(&id, &msg, ctx);
        }
        Begin::Wait(rx)
    }

    fn timed_out(&mut self, id: &str, ctx: &mut Context<Self>) {
        let Some(call) = self.in_flight.get_mut(id) else {
            return;
        };
        call.timer = None;
        let node_id = call.node_id.clone();
        if let Some(l) = self
            .live
            .get(&node_id)
            .filter(|l| l.conn_id == call.conn_id)
        {
            let _ = l.sink.try_send(ToNode::Cancel {
                invoke_id: id.to_string(),
                node_id: node_id.clone(),
            });
        }
        tracing::info!(node = %node_id, invoke = %id, "node invoke timed out");
        self.finish(id, Err(InvokeError::Timeout), ctx);
    }

    fn prune(&self) {
        let now = crate::now_ms();
        let old = match self.store.scan::<InvokeRecord>(Tree::NodeInvokes, "") {
            Ok(rows) => rows,
            Err(e) => {
                tracing::warn!(error = %e, "node invoke records unreadable");
                return;
            }
        };
        for (key, rec) in old {
            if now.saturating_sub(rec.at_ms) > INVOKE_KEY_TTL_MS {
                let _ = self.store.remove(Tree::NodeInvokes, &key);
            }
        }
    }
}

enum Begin {
    Done(Result<NodeAnswer, InvokeError>),
    Wait(oneshot::Receiver<Result<NodeAnswer, InvokeError>>),
}

impl Actor for NodeRegistry {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        self.prune();
        ctx.run_interval(Duration::from_secs(3600), |act, _| act.prune());
    }
}

/// Replies after a flush so the change is durable before anyone hears of it.
fn flushed<T: Send + 'static>(
    store: &Store,
    value: T,
    then: impl FnOnce() + Send + 'static,
) -> ResponseFuture<Result<T, StoreError>> {
    let store = store.clone();
    Box::pin(async move {
        store.flush().await?;
        then();
        Ok(value)
    })
}

fn now() -> u64 {
    crate::now_ms()
}

impl Handler<NodeConnected> for NodeRegistry {
    type Result = ResponseFuture<Result<(), StoreError>>;
    fn handle(&mut self, msg: NodeConnected, ctx: &mut Context<Self>) -> Self::Result {
        let _e = self.span.clone().entered();
        let NodeConnected {
            conn_id,
            node_id,
            declared,
            sink,
        } = msg;
        if let Some(old) = self.live.remove(&node_id) {
            let _ = old.sink.try_send(ToNode::Close {
                reason: "replaced by a newer connection",
            });
            self.fail_conn(&old.conn_id, ctx);
        }
        let result = self
            .record(&node_id)
            .map(|existing| admit(existing, &node_id, declared.clone(), now()))
            .and_then(|(rec, admission)| {
                self.store.put(Tree::Nodes, &node_id, &rec)?;
                Ok((rec, admission))
            });
        let (rec, admission) = match result {
            Ok(v) => v,
            Err(e) => return Box::pin(async move { Err(e) }),
        };
        let facts = LiveFacts {
            connected_at_ms: now(),
            ..Default::default()
        };
        self.live.insert(
            node_id.clone(),
            Live {
                conn_id,
                declared,
                sink,
                facts,
            },
        );
        tracing::info!(node = %node_id, approval = ?admission, "node connected");
        let news = self.news.clone();
        flushed(&self.store, (), move || {
            if let Admission::Requested { superseded } = admission {
                if let Some(old) = superseded {
                    let _ = news.try_send(NodeNews::Resolved {
                        request_id: old,
                        node_id: node_id.clone(),
                        decision: "rejected",
                    });
                }
                if let Some(view) = PendingView::of(&rec) {
                    let _ = news.try_send(NodeNews::Requested(Box::new(view)));
                }
            }
        })
    }
}

impl NodeRegistry {
    /// Every call on this connection fails: the node is gone.
    fn fail_conn(&mut self, conn_id: &ConnId, ctx: &mut Context<Self>) {
        let ids: Vec<String> = self
            .in_flight
            .iter()
            .filter(|(_, c)| &c.conn_id == conn_id)
            .map(|(id, _)| id.clone())
            .collect();
        for id in ids {
            self.finish(&id, Err(InvokeError::Disconnected), ctx);
        }
    }
}

impl Handler<NodeDisconnected> for NodeRegistry {
    type Result = ();
    fn handle(&mut self, msg: NodeDisconnected, ctx: &mut Context<Self>) {
        let _e = self.span.clone().entered();
        self.fail_conn(&msg.conn_id, ctx);
        if self
            .live
            .get(&msg.node_id)
            .is_some_and(|l| l.conn_id == msg.conn_id)
        {
            self.live.remove(&msg.node_id);
            if let Ok(Some(mut rec)) = self.record(&msg.node_id) {
                rec.last_disconnected_at_ms = Some(now());
                let _ = self.store.put(Tree::Nodes, &msg.node_id, &rec);
            }
            tracing::info!(node = %msg.node_id, "node disconnected");
        }
    }
}

impl Handler<ListNodes> for NodeRegistry {
    type Result = Result<Vec<NodeView>, StoreError>;
    fn handle(&mut self, _: ListNodes, _: &mut Context<Self>) -> Self::Result {
        let _e = self.span.clone().entered();
        let mut views: Vec<NodeView> = self.records()?.iter().map(|r| self.view(r)).collect();
        views.sort_by(|a, b| {
            let name = |v: &NodeView| {
                v.declared
                    .display_name
                    .clone()
                    .unwrap_or_default()
                    .to_lowercase()
            };
            b.connected
                .cmp(&a.connected)
                .then(name(a).cmp(&name(b)))
                .then(a.node_id.cmp(&b.node_id))
        });
        Ok(views)
    }
}

impl Handler<ListNodePairing> for NodeRegistry {
    type Result = Result<(Vec<PendingView>, Vec<NodeView>), StoreError>;
    fn handle(&mut self, _: ListNodePairing, _: &mut Context<Self>) -> Self::Result {
        let _e = self.span.clone().entered();
        let records = self.records()?;
        let mut pending: Vec<PendingView> = records.iter().filter_map(PendingView::of).collect();
        pending.sort_by_key(|p| std::cmp::Reverse(p.ts));
        let mut paired: Vec<NodeView> = records
            .iter()
            .filter(|r| r.approved.is_some())
            .map(|r| self.view(r))
            .collect();
        paired.sort_by_key(|p| std::cmp::Reverse(p.approved_at_ms));
        Ok((pending, paired))
    }
}

impl NodeRegistry {
    fn by_request(&self, request_id: &str) -> Result<Option<NodeRecord>, StoreError> {
        Ok(self.records()?.into_iter().find(|r| {
            r.pending
                .as_ref()
                .is_some_and(|p| p.request_id == request_id)
        }))
    }

    /// What a node connected on this connection said about itself.
    fn facts(&mut self, node_id: &str, conn_id: &ConnId) -> Option<&mut LiveFacts> {
        let live = self.live.get_mut(node_id)?;
        (&live.conn_id == conn_id).then_some(&mut live.facts)
    }

    fn tell_node(&self, node_id: &str, msg: ToNode) {
        if let Some(l) = self.live.get(node_id) {
            let _ = l.sink.try_send(msg);
        }
    }
}

impl Handler<ApproveNode> for NodeRegistry {
    type Result = ResponseFuture<Result<Result<NodeView, PairRefusal>, StoreError>>;
    fn handle(&mut self, msg: ApproveNode, _: &mut Context<Self>) -> Self::Result {
        let _e = self.span.clone().entered();
        let found = match self.by_request(&msg.request_id) {
            Ok(f) => f,
            Err(e) => return Box::pin(async move { Err(e) }),
        };
        let Some(mut rec) = found else {
            return Box::pin(async { Ok(Err(PairRefusal::UnknownRequest)) });
        };
        let Some(pending) = rec.pending.take() else {
            return Box::pin(async { Ok(Err(PairRefusal::UnknownRequest)) });
        };
        let needed = policy::approval_scopes(&pending.surface.commands);
        if let Some(missing) = needed
            .iter()
            .find(|s| !crate::scopes::scope_allows(&msg.caller_scopes, s))
        {
            let refusal = PairRefusal::MissingScope(missing, needed.clone());
            return Box::pin(async move { Ok(Err(refusal)) });
        }
        rec.approved = Some(pending.surface);
        rec.approved_at_ms = Some(now());
        if let Err(e) = self.store.put(Tree::Nodes, &rec.node_id, &rec) {
            return Box::pin(async move { Err(e) });
        }
        tracing::info!(node = %rec.node_id, request = %msg.request_id, "node approved");
        let view = self.view(&rec);
        let (news, node_id, request_id) = (self.news.clone(), rec.node_id.clone(), msg.request_id);
        let sink = self.live.get(&node_id).map(|l| l.sink.clone());
        flushed(&self.store, Ok(view), move || {
            if let Some(s) = sink {
                let _ = s.try_send(ToNode::PairResolved {
                    request_id: request_id.clone(),
                    node_id: node_id.clone(),
                    decision: "approved",
                });
            }
            let _ = news.try_send(NodeNews::Resolved {
                request_id,
                node_id,
                decision: "approved",
            });
        })
    }
}

impl Handler<RejectNode> for NodeRegistry {
    type Result = ResponseFuture<Result<Option<String>, StoreError>>;
    fn handle(&mut self, msg: RejectNode, _: &mut Context<Self>) -> Self::Result {
        let _e = self.span.clone().entered();
        let found = match self.by_request(&msg.request_id) {
            Ok(f) => f,
            Err(e) => return Box::pin(async move { Err(e) }),
        };
        let Some(mut rec) = found else {
            return Box::pin(async { Ok(None) });
        };
        rec.pending = None;
        if let Err(e) = self.store.put(Tree::Nodes, &rec.node_id, &rec) {
            return Box::pin(async move { Err(e) });
        }
        let (news, node_id, request_id) = (self.news.clone(), rec.node_id.clone(), msg.request_id);
        self.tell_node(
            &node_id,
            ToNode::PairResolved {
                request_id: request_id.clone(),
                node_id: node_id.clone(),
                decision: "rejected",
            },
        );
        flushed(&self.store, Some(node_id.clone()), move || {
            let _ = news.try_send(NodeNews::Resolved {
                request_id,
                node_id,
                decision: "rejected",
            });
        })
    }
}

impl Handler<RemoveNode> for NodeRegistry {
    type Result = ResponseFuture<Result<bool, StoreError>>;
    fn handle(&mut self, msg: RemoveNode, ctx: &mut Context<Self>) -> Self::Result {
        let _e = self.span.clone().entered();
        let existed = match self.store.remove(Tree::Nodes, &msg.node_id) {
            Ok(e) => e,
            Err(e) => return Box::pin(async move { Err(e) }),
        };
        if let Some(l) = self.live.remove(&msg.node_id) {
            let _ = l.sink.try_send(ToNode::Close {
                reason: "device-pair-removed",
            });
            self.fail_conn(&l.conn_id, ctx);
        }
        let (news, node_id) = (self.news.clone(), msg.node_id);
        flushed(&self.store, existed, move || {
            if existed {
                let _ = news.try_send(NodeNews::Resolved {
                    request_id: String::new(),
                    node_id,
                    decision: "removed",
                });
            }
        })
    }
}

impl Handler<RenameNode> for NodeRegistry {
    type Result = ResponseFuture<Result<Option<String>, StoreError>>;
    fn handle(&mut self, msg: RenameNode, _: &mut Context<Self>) -> Self::Result {
        let _e = self.span.clone().entered();
        let renamed = self.record(&msg.node_id).and_then(|found| {
            let Some(mut rec) = found else {
                return Ok(None);
            };
            rec.operator_name = Some(msg.display_name.trim().to_string());
            self.store.put(Tree::Nodes, &rec.node_id, &rec)?;
            Ok(rec.operator_name)
        });
        match renamed {
            Ok(name) => flushed(&self.store, name, || {}),
            Err(e) => Box::pin(async move { Err(e) }),
        }
    }
}

impl Handler<InvokeNode> for NodeRegistry {
    type Result = ResponseFuture<Result<NodeAnswer, InvokeError>>;
    fn handle(&mut self, msg: InvokeNode, ctx: &mut Context<Self>) -> Self::Result {
        let _e = self.span.clone().entered();
        match self.begin(msg, ctx) {
            Begin::Done(r) => Box::pin(async move { r }),
            Begin::Wait(rx) => {
                Box::pin(async move { rx.await.unwrap_or(Err(InvokeError::Disconnected)) })
            }
        }
    }
}

impl Handler<InvokeResult> for NodeRegistry {
    type Result = bool;
    fn handle(&mut self, msg: InvokeResult, ctx: &mut Context<Self>) -> bool {
        let _e = self.span.clone().entered();
        let current = self
            .in_flight
            .get(&msg.id)
            .is_some_and(|c| c.node_id == msg.node_id && c.conn_id == msg.conn_id);
        if current {
            if let Some(key) = self.in_flight.get(&msg.id).and_then(|c| c.key.clone()) {
                self.keep_answer(&key, &msg.answer);
            }
            self.finish(&msg.id, Ok(msg.answer), ctx);
            return true;
        }
        // A late answer to a call that timed out or lost its connection:
        // kept for its key, so a retry gets it instead of a refusal.
        if let Some(pos) = self.lost.iter().position(|(id, _)| id == &msg.id) {
            let (_, key) = self.lost.remove(pos).unwrap_or_default();
            if key.starts_with(&format!("{}\0", msg.node_id)) {
                self.keep_answer(&key, &msg.answer);
            }
        }
        false
    }
}

impl Handler<NodeUpdate> for NodeRegistry {
    type Result = bool;
    fn handle(&mut self, msg: NodeUpdate, _: &mut Context<Self>) -> bool {
        let _e = self.span.clone().entered();
        let Some(f) = self.facts(&msg.node_id, &msg.conn_id) else {
            return false;
        };
        match msg.kind {
            UpdateKind::Skills => f.skills = Some(msg.value),
            UpdateKind::PluginTools => f.plugin_tools = Some(msg.value),
            UpdateKind::RunnerInventory => f.runner_inventory = Some(msg.value),
            UpdateKind::HostStats => {
                f.host_stats = Some(msg.value.clone());
                if let Ok(Some(mut rec)) = self.record(&msg.node_id) {
                    rec.last_host_stats = Some(msg.value);
                    let _ = self.store.put(Tree::Nodes, &msg.node_id, &rec);
                }
            }
        }
        true
    }
}

impl Handler<NodeEventIn> for NodeRegistry {
    type Result = bool;
    fn handle(&mut self, msg: NodeEventIn, _: &mut Context<Self>) -> bool {
        let _e = self.span.clone().entered();
        let Some(f) = self.facts(&msg.node_id, &msg.conn_id) else {
            return false;
        };
        f.last_active_at_ms = Some(now());
        let _ = self.news.try_send(NodeNews::Event {
            node_id: msg.node_id,
            event: msg.event,
            payload: msg.payload,
        });
        true
    }
}

impl Handler<NodePolicy> for NodeRegistry {
    type Result = ();
    fn handle(&mut self, msg: NodePolicy, _: &mut Context<Self>) {
        self.policy = msg;
    }
}
