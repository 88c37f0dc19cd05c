//! The live event queue behind `events_poll` and `events_wait`, as
//! OpenClaw's bridge keeps it: conversation messages (`session.message`)
//! and exec approvals (`exec.approval.requested|resolved`) seen since the
//! queue started, each with a cursor; bounded (the oldest go first, and a
//! reader whose cursor predates what is kept is told so by a `gap`).
//!
//! Fed by [`McpEvents`] (an actor subscribed to the gateway's bus, for
//! `/mcp`, started by the first `/mcp` request) or by the stdio bridge's
//! second WebSocket (`sessions.subscribe`). Trust: a stranger's message
//! (`untrusted` on the transcript message) reaches the MCP client wrapped
//! as outside data, never as text that reads like instructions.

use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix::prelude::*;
use ferroclaw_actors::bus::{send_to_bus, Outbound, Subscribe, Unsubscribe, Watch, WatchChange};
use ferroclaw_actors::ids::ConnId;
use ferroclaw_actors::scopes::Role;
use serde_json::{json, Map, Value};

use crate::state::AppState;

/// Events kept (OpenClaw's bridge keeps 1,000).
pub const QUEUE_LIMIT: usize = 1000;
/// Events one poll returns at most.
pub const POLL_MAX: usize = 200;
/// The longest `events_wait` (5 minutes).
pub const WAIT_MAX_MS: u64 = 300_000;
/// A message's text as queued (the full one is `messages_read`'s).
const TEXT_MAX: usize = 8_000;

#[derive(Default)]
struct Queue {
    events: VecDeque<Value>,
    cursor: u64,
}

/// The queue and its waiters.
#[derive(Default)]
pub struct Events {
    queue: Mutex<Queue>,
    arrived: tokio::sync::Notify,
}

fn matches(e: &Value, after: u64, session: Option<&str>) -> bool {
    e["cursor"].as_u64().unwrap_or(0) > after
        && session.is_none_or(|s| e["sessionKey"].as_str() == Some(s))
}

/// The first text block of a message (a plain string content too).
fn first_text(message: &Value) -> Option<String> {
    match &message["content"] {
        Value::String(s) => Some(s.clone()),
        Value::Array(parts) => parts
            .iter()
            .find(|p| p["type"] == "text")
            .and_then(|p| p["text"].as_str())
            .map(str::to_string),
        _ => None,
    }
}

/// A stranger's text as the MCP client gets it: outside data, wrapped.
pub fn guarded_text(message: &Value, text: &str) -> String {
    if message["untrusted"] == json!(true) {
        ferroclaw_actors::trust::wrap("a channel message from a sender who is not the owner", text)
    } else {
        text.to_string()
    }
}

fn message_event(p: &Value) -> Option<Map<String, Value>> {
    let key = p["sessionKey"].as_str()?;
    let message = &p["message"];
    let mut e = Map::new();
    e.insert("type".into(), json!("message"));
    e.insert("sessionKey".into(), json!(key));
    if let Some(channel) = p["lastChannel"].as_str() {
        e.insert(
            "conversation".into(),
            json!({ "sessionKey": key, "channel": channel, "to": p["lastTo"],
                "accountId": p["lastAccountId"], "threadId": p["lastThreadId"] }),
        );
    }
    for (from, to) in [("messageId", "messageId"), ("runId", "runId")] {
        if let Some(v) = p.get(from).filter(|v| v.is_string()) {
            e.insert(to.into(), v.clone());
        }
    }
    e.insert("role".into(), message["role"].clone());
    if let Some(text) = first_text(message) {
        let cut: String = text.chars().take(TEXT_MAX).collect();
        e.insert("text".into(), json!(guarded_text(message, &cut)));
    }
    if message["untrusted"] == json!(true) {
        e.insert("untrusted".into(), json!(true));
    }
    Some(e)
}

impl Events {
    pub fn new() -> Arc<Events> {
        Arc::new(Events::default())
    }

    /// Queues what a gateway event means to an MCP client (others are
    /// not queued).
    pub fn push(&self, event: &str, payload: &Value) {
        let mut e = match event {
            "session.message" => match message_event(payload) {
                Some(e) => e,
                None => return,
            },
            "exec.approval.requested" | "exec.approval.resolved" => {
                let kind = event.replace('.', "_");
                let mut e = Map::new();
                e.insert("type".into(), json!(kind));
                e.insert("raw".into(), payload.clone());
                e
            }
            _ => return,
        };
        let Ok(mut q) = self.queue.lock() else { return };
        q.cursor += 1;
        e.insert("cursor".into(), json!(q.cursor));
        q.events.push_back(Value::Object(e));
        while q.events.len() > QUEUE_LIMIT {
            q.events.pop_front();
        }
        drop(q);
        self.arrived.notify_waiters();
    }

    fn gap(q: &Queue, after: u64) -> Option<Value> {
        let oldest = q.events.front()?["cursor"].as_u64()?;
        (after + 1 < oldest)
            .then(|| json!({ "requested_after_cursor": after, "oldest_available_cursor": oldest }))
    }

    /// `events_poll`: the matching events after `after`, without consuming them.
    pub fn poll(&self, after: u64, session: Option<&str>, limit: usize) -> Value {
        let Ok(q) = self.queue.lock() else {
            return json!({ "events": [], "next_cursor": after });
        };
        let events: Vec<Value> = q
            .events
            .iter()
            .filter(|e| matches(e, after, session))
            .take(limit.clamp(1, POLL_MAX))
            .cloned()
            .collect();
        let gap = Self::gap(&q, after);
        let next = match (events.last(), &gap) {
            (Some(e), _) => e["cursor"].as_u64().unwrap_or(after),
            (None, Some(g)) => g["oldest_available_cursor"].as_u64().unwrap_or(1) - 1,
            (None, None) => after,
        };
        let mut out = json!({ "events": events, "next_cursor": next });
        if let Some(g) = gap {
            out["gap"] = g;
        }
        out
    }

    /// What a wait returns now, if anything: the first matching event, or
    /// a gap.
    fn ready(&self, after: u64, session: Option<&str>) -> Option<Value> {
        let q = self.queue.lock().ok()?;
        let first = q
            .events
            .iter()
            .find(|e| matches(e, after, session))
            .cloned();
        let gap = Self::gap(&q, after);
        if first.is_none() && gap.is_none() {
            return None;
        }
        let mut out = json!({ "event": first });
        if let Some(g) = gap {
            out["gap"] = g;
        }
        Some(out)
    }

    /// `events_wait`: the next matching event, or `{event: null}` when
    /// `timeout` passes first.
    pub async fn wait(&self, after: u64, session: Option<&str>, timeout: Duration) -> Value {
        let deadline =
            tokio::time::Instant::now() + timeout.min(Duration::from_millis(WAIT_MAX_MS));
        loop {
            // Created before the check: a push between the two still wakes it.
            let arrived = self.arrived.notified();
            if let Some(out) = self.ready(after, session) {
                return out;
            }
            if tokio::time::timeout_at(deadline, arrived).await.is_err() {
                return json!({ "event": null });
            }
        }
    }
}

/// `/mcp`'s feed: a bus subscriber (operator, read and approvals scopes)
/// watching every session, pushing into the queue.
pub struct McpEvents {
    state: std::sync::Weak<AppState>,
    events: Arc<Events>,
    conn_id: ConnId,
    buffered: Arc<std::sync::atomic::AtomicUsize>,
    span: tracing::Span,
}

impl McpEvents {
    pub fn start(state: &Arc<AppState>, events: Arc<Events>) -> Addr<McpEvents> {
        McpEvents {
            state: Arc::downgrade(state),
            events,
            conn_id: ConnId::new(format!("mcp-events-{}", ulid::Ulid::generate())),
            buffered: Arc::default(),
            span: tracing::info_span!("mcp_events"),
        }
        .start()
    }
}

impl Actor for McpEvents {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        let Some(state) = self.state.upgrade() else {
            ctx.stop();
            return;
        };
        let gw = &state.gateway;
        send_to_bus(
            &gw.bus,
            &gw.metrics,
            Subscribe {
                conn_id: self.conn_id.clone(),
                recipient: ctx.address().recipient(),
                role: Role::Operator,
                scopes: vec!["operator.read".into(), "operator.approvals".into()],
                buffered: self.buffered.clone(),
                max_buffered: usize::MAX,
            },
        );
        send_to_bus(
            &gw.bus,
            &gw.metrics,
            Watch {
                conn_id: self.conn_id.clone(),
                change: WatchChange::AllSessions(true),
            },
        );
        self.span
            .in_scope(|| tracing::debug!("mcp event queue subscribed"));
    }

    fn stopped(&mut self, _: &mut Context<Self>) {
        if let Some(state) = self.state.upgrade() {
            let gw = &state.gateway;
            send_to_bus(
                &gw.bus,
                &gw.metrics,
                Unsubscribe {
                    conn_id: self.conn_id.clone(),
                },
            );
        }
    }
}

impl Handler<Outbound> for McpEvents {
    type Result = ();

    fn handle(&mut self, msg: Outbound, ctx: &mut Context<Self>) {
        match msg {
            Outbound::Event {
                event, reserved, ..
            } => {
                self.buffered.fetch_sub(reserved, Ordering::Relaxed);
                let wanted = matches!(
                    event.event.as_str(),
                    "session.message" | "exec.approval.requested" | "exec.approval.resolved"
                );
                if !wanted {
                    return;
                }
                if let Ok(payload) = serde_json::from_str::<Value>(event.payload.get()) {
                    self.events.push(&event.event, &payload);
                }
            }
            Outbound::Close(_) => ctx.stop(),
        }
    }
}
