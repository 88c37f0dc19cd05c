//! EventBridge: the edge's encoder of the tree's typed events. Every
//! session's `RunEvent`s (passed on by the run registry) become the wire's
//! `chat`, `agent` and `session.tool` events (protocol.md 6.3); presence,
//! health and approval events become `presence`, `health` and
//! `exec.approval.*`. All go onto the bus with their audience (the payloads
//! and the table are `protocol::events`). It keeps
//! only what the wire needs per run: the `seq`, the 150 ms `chat` delta
//! throttle (deltas are droppable; the final carries the full text), the
//! reasoning so far, and the connections that asked for tool events. What
//! a run is and who waits for it is the run registry's
//! (`ferroclaw_actors::runs`).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::prelude::*;
use ferroclaw_actors::approvals::ApprovalEvent;
use ferroclaw_actors::bus::{send_to_bus, BusEvent, EventBus, Publish, PublishTo};
use ferroclaw_actors::gateway::HealthUpdated;
use ferroclaw_actors::ids::ConnId;
use ferroclaw_actors::metrics::Metrics;
use ferroclaw_actors::now_ms;
use ferroclaw_actors::presence::PresenceChanged;
use ferroclaw_actors::run::{Outcome, RunEvent};
use ferroclaw_actors::runs::SessionEvent;
use serde_json::Value;

pub use super::messages::{AddToolRecipient, ChatSendAcked, PublishChat, TimeChatSend};

use crate::protocol::messages::{display_message, with_transcript_meta, HISTORY_FIELD_CHARS};
use crate::protocol::{events, session_rows};
use crate::ws::send_timing::SendTimings;
use ferroclaw_actors::session::{SessionChange, SessionNews};

/// Chat deltas per run are sent at most this often.
pub const DELTA_INTERVAL: Duration = Duration::from_millis(150);

/// Tool-event recipients of runs that never started are dropped after this.
const RECIPIENTS_KEPT_MS: u64 = 3_600_000;

#[derive(Default)]
struct RunState {
    seq: u64,
    /// When the run started (ms), for its lifecycle end.
    started_at: u64,
    last_delta: Option<Instant>,
    emitted: String,
    text: String,
    /// The run's reasoning so far (`agent` events with stream `thinking`).
    thinking: String,
}

impl RunState {
    /// The next event of the run: its number and time.
    fn at<'a>(&mut self, run_id: &'a str, session_key: &'a str) -> events::At<'a> {
        self.seq += 1;
        events::At {
            run_id,
            session_key,
            seq: self.seq,
            ts: now_ms(),
        }
    }
}

pub struct EventBridge {
    /// The actor's span, entered where it logs (not per token).
    span: tracing::Span,
    bus: Addr<EventBus>,
    metrics: Arc<Metrics>,
    runs: HashMap<String, RunState>,
    /// run id -> (connections, registered at ms). Registered before the
    /// run starts; entries of runs that never started are pruned after an hour.
    tool_recipients: HashMap<String, (Vec<ConnId>, u64)>,
    timings: SendTimings,
    /// Signs the media links of `session.message` messages.
    links: Arc<crate::media_links::MediaLinks>,
}

impl EventBridge {
    pub fn new(
        bus: Addr<EventBus>,
        metrics: Arc<Metrics>,
        links: Arc<crate::media_links::MediaLinks>,
    ) -> EventBridge {
        EventBridge {
            links,
            span: tracing::info_span!("event_bridge"),
            bus,
            metrics,
            runs: HashMap::new(),
            tool_recipients: HashMap::new(),
            timings: SendTimings::default(),
        }
    }

    fn publish(&self, event: &str, payload: impl serde::Serialize, drop_if_slow: bool) {
        self.broadcast(events::bus_event(event, &payload, drop_if_slow));
    }

    fn broadcast(&self, event: BusEvent) {
        send_to_bus(&self.bus, &self.metrics, Publish { event });
    }

    /// The next `seq` of the run's events.
    fn next<'a>(&mut self, run_id: &'a str, session_key: &'a str) -> events::At<'a> {
        // The id is copied on the run's first event only, not per token.
        if !self.runs.contains_key(run_id) {
            self.runs.insert(run_id.to_string(), RunState::default());
        }
        match self.runs.get_mut(run_id) {
            Some(st) => st.at(run_id, session_key),
            None => RunState::default().at(run_id, session_key),
        }
    }

    fn agent(&mut self, run_id: &str, key: &str, stream: &str, data: Value) {
        let at = self.next(run_id, key);
        self.publish("agent", events::agent(at, stream, data), false);
    }

    /// `agent` tool events: only to the run's tool-event recipients, gated
    /// by the session's verbose level (off: none; on: no result text).
    fn tool_event(&mut self, run_id: &str, key: &str, data: Value) {
        let Some((targets, _)) = self.tool_recipients.get(run_id).cloned() else {
            return;
        };
        let payload = events::agent(self.next(run_id, key), "tool", data);
        send_to_bus(
            &self.bus,
            &self.metrics,
            PublishTo {
                event: events::bus_event("agent", &payload, false),
                targets,
            },
        );
    }

    /// A run's end: its `chat` end state, then its `agent` lifecycle end;
    /// its wire state goes.
    fn ended(&mut self, run_id: &str, key: &str, chat: Value, lifecycle: Value) {
        self.publish("chat", chat, false);
        self.agent(run_id, key, "lifecycle", lifecycle);
        self.end(run_id);
    }

    /// The run ended: its wire state goes. (News of it settling comes
    /// next, on the same road: the session sends it after the end.)
    fn end(&mut self, run_id: &str) {
        self.runs.remove(run_id);
        self.tool_recipients.remove(run_id);
        let timing = self.timings.ended(run_id);
        self.send_timing(timing);
    }

    /// A `chat.send_timing` to the one connection that sent the message.
    fn send_timing(&self, timing: Option<(ConnId, Value)>) {
        if let Some((conn, payload)) = timing {
            let event = events::bus_event("chat.send_timing", &payload, true);
            let to = PublishTo {
                event,
                targets: vec![conn],
            };
            send_to_bus(&self.bus, &self.metrics, to);
        }
    }

    /// `session.message` / `sessions.changed` to the session's watchers.
    fn tell(&self, news: SessionNews) {
        let displayed = match &news.change {
            SessionChange::Message { entry } => with_transcript_meta(entry, None)
                .map(|m| display_message(m, HISTORY_FIELD_CHARS, &self.links).0),
            _ => None,
        };
        let (event, payload) = session_rows::news_event(&news, displayed, now_ms());
        // Droppable: a watcher that missed one reloads on the next.
        let e = events::bus_event(event, &payload, true).about(&news.session_key);
        self.broadcast(e);
    }

    /// Message `message_id` is answered by run `run_id`: tool-event
    /// recipients registered under the message id follow the run.
    fn queued(&mut self, run_id: &str, message_id: &str) {
        self.timings.follow(message_id, run_id);
        if message_id == run_id {
            return;
        }
        if let Some((conns, at)) = self.tool_recipients.remove(message_id) {
            let entry = self
                .tool_recipients
                .entry(run_id.to_string())
                .or_insert_with(|| (Vec::new(), at));
            for c in conns {
                if !entry.0.contains(&c) {
                    entry.0.push(c);
                }
            }
        }
    }

    /// A `chat` delta at most every [`DELTA_INTERVAL`]; every delta is an
    /// `agent` assistant event. What streams at all (nothing that may still
    /// become the silent token, nothing of a heartbeat) the session decided.
    /// A new assistant message first flushes what the chat was not shown
    /// of the one before (a throttled tail is never lost).
    fn delta(&mut self, run_id: &str, key: &str, delta: &str, fresh: bool) {
        if !self.runs.contains_key(run_id) {
            self.runs.insert(run_id.to_string(), RunState::default());
        }
        let Some(st) = self.runs.get_mut(run_id) else {
            return;
        };
        if fresh {
            let tail = (st.text != st.emitted).then(|| chat_delta_of(st, run_id, key));
            st.text.clear();
            if let Some(payload) = tail {
                self.publish("chat", payload, true);
            }
        }
        let Some(st) = self.runs.get_mut(run_id) else {
            return;
        };
        st.text.push_str(delta);
        let at = st.at(run_id, key);
        let event = events::bus_event("agent", &events::agent_text(at, &st.text, delta), false);
        send_to_bus(&self.bus, &self.metrics, Publish { event });
        let now = Instant::now();
        if st
            .last_delta
            .is_some_and(|t| now.duration_since(t) < DELTA_INTERVAL)
        {
            return;
        }
        st.last_delta = Some(now);
        let payload = chat_delta_of(st, run_id, key);
        self.publish("chat", payload, true);
    }

    /// How run `run_id` ended, for its lifecycle events.
    fn ending<'a>(
        &self,
        run_id: &str,
        stop_reason: &'a str,
        aborted: bool,
        working: bool,
    ) -> events::Ending<'a> {
        let ended_at = now_ms();
        let started_at = self.runs.get(run_id).map_or(ended_at, |st| st.started_at);
        events::Ending {
            started_at,
            ended_at,
            stop_reason,
            aborted,
            working,
        }
    }

    /// A run's end as its `chat` and `agent` lifecycle events: finishing,
    /// the chat's end state, then the lifecycle's end (OpenClaw's order).
    fn run_end(&mut self, key: &str, event: RunEvent) {
        match event {
            RunEvent::Final {
                run_id,
                outcome,
                stop_reason,
                usage,
            } => {
                let ending = self.ending(&run_id, stop_reason.as_str(), false, true);
                self.agent(
                    &run_id,
                    key,
                    "lifecycle",
                    events::lifecycle_finishing(&ending),
                );
                let at = self.next(&run_id, key);
                let silent = matches!(outcome, Outcome::Silent { .. } | Outcome::Recorded);
                let payload =
                    events::chat_final(at, outcome.text(), stop_reason.as_str(), &usage, silent);
                let end = events::lifecycle_end(&ending, silent);
                self.ended(&run_id, key, payload, end);
            }
            RunEvent::Failed {
                run_id,
                error,
                kind,
            } => {
                let ending = self.ending(&run_id, "error", false, false);
                let payload = events::chat_error(self.next(&run_id, key), &error, &kind);
                let end = events::lifecycle_error(&ending, &error);
                self.ended(&run_id, key, payload, end);
            }
            RunEvent::Aborted { run_id, text } => {
                let ending = self.ending(&run_id, "aborted", true, !text.is_empty());
                let payload = events::chat_aborted(self.next(&run_id, key), &text);
                let end = events::lifecycle_end(&ending, false);
                self.ended(&run_id, key, payload, end);
            }
            _ => {}
        }
    }

    /// A tool call as `session.tool` and (to those who asked) `agent`
    /// tool events; `full`: with its output.
    fn tool(&mut self, key: &str, full: bool, event: RunEvent) {
        match event {
            RunEvent::ToolStarted { run_id, call } => {
                let payload = events::session_tool_running(&run_id, key, &call);
                self.publish("session.tool", payload, false);
                self.tool_event(&run_id, key, events::tool_start(&call));
            }
            RunEvent::ToolFinished {
                run_id,
                call,
                outcome,
                skipped,
            } => {
                let payload = events::session_tool_done(&run_id, key, &call, &outcome, full);
                self.publish("session.tool", payload, false);
                let data = events::tool_result(&call, &outcome, skipped, full);
                self.tool_event(&run_id, key, data);
            }
            RunEvent::ToolProgress {
                run_id,
                call,
                progress,
                total,
                message,
            } => {
                let mut data = events::tool_update(&call, progress, total, message.as_deref());
                if !full {
                    if let Some(o) = data.as_object_mut() {
                        o.remove("partialResult");
                    }
                }
                self.tool_event(&run_id, key, data);
            }
            _ => {}
        }
    }

    fn thinking(&mut self, run_id: &str, key: &str, delta: String) {
        // The session already applied `/reasoning` (off: none; on: whole,
        // before the end; stream: as it comes).
        let at = self.next(run_id, key);
        let Some(st) = self.runs.get_mut(run_id) else {
            return;
        };
        st.thinking.push_str(&delta);
        let data = serde_json::json!({ "text": st.thinking, "delta": delta });
        let payload = events::agent(at, "thinking", data);
        self.publish("agent", payload, false);
    }
}

impl Actor for EventBridge {
    type Context = Context<Self>;
}

/// The `chat` delta that brings a client from what it was shown of the
/// run's current message to its text so far (a new message replaces it).
fn chat_delta_of(st: &mut RunState, run_id: &str, key: &str) -> Value {
    let (delta_text, replace) = match st.text.strip_prefix(st.emitted.as_str()) {
        Some(rest) => (rest.to_string(), false),
        None => (st.text.clone(), true),
    };
    st.emitted.clone_from(&st.text);
    let at = st.at(run_id, key);
    events::chat_delta(at, &delta_text, &st.text, replace)
}

impl Handler<SessionEvent> for EventBridge {
    type Result = ();
    fn handle(&mut self, msg: SessionEvent, _: &mut Context<Self>) {
        // One per token: the span is entered only for a run's end.
        let _span = msg.event.end_status().map(|_| self.span.clone().entered());
        let key = msg.session_key.as_str();
        let verbose = msg.verbose.as_str();
        match msg.event {
            RunEvent::Queued { run_id, message_id } => self.queued(&run_id, &message_id),
            RunEvent::Started { run_id } => {
                let timing = self.timings.started(&run_id);
                self.send_timing(timing);
                let now = now_ms();
                self.agent(&run_id, key, "lifecycle", events::lifecycle_start(now));
                if let Some(st) = self.runs.get_mut(run_id.as_str()) {
                    st.started_at = now;
                }
                let at = self.next(&run_id, key);
                self.publish("chat", events::chat_status(at, "starting_model"), true);
            }
            RunEvent::Delta {
                run_id,
                delta,
                fresh,
            } => {
                let timing = self.timings.assistant(&run_id);
                self.send_timing(timing);
                self.delta(&run_id, key, &delta, fresh)
            }
            e @ (RunEvent::Final { .. } | RunEvent::Failed { .. } | RunEvent::Aborted { .. }) => {
                self.run_end(key, e)
            }
            e @ (RunEvent::ToolStarted { .. }
            | RunEvent::ToolFinished { .. }
            | RunEvent::ToolProgress { .. }) => {
                if verbose != "off" {
                    self.tool(key, verbose == "full", e)
                }
            }
            RunEvent::Thinking { run_id, delta } => self.thinking(&run_id, key, delta),
            RunEvent::SideResult {
                run_id,
                question,
                text,
            } => {
                // OpenClaw's `/btw` answer: live only, never in history.
                let payload = serde_json::json!({ "kind": "btw", "runId": run_id, "sessionKey": key,
                    "question": question, "text": text, "ts": now_ms() });
                self.publish("chat.side_result", payload, false);
            }
            RunEvent::Message { .. } | RunEvent::ModelSelected { .. } => {}
        }
    }
}

impl Handler<AddToolRecipient> for EventBridge {
    type Result = ();
    fn handle(&mut self, msg: AddToolRecipient, _: &mut Context<Self>) {
        let _span = self.span.clone().entered();
        let now = now_ms();
        self.tool_recipients
            .retain(|_, (_, at)| now.saturating_sub(*at) < RECIPIENTS_KEPT_MS);
        let (list, _) = self
            .tool_recipients
            .entry(msg.run_id.to_string())
            .or_insert_with(|| (Vec::new(), now));
        if !list.contains(&msg.conn_id) {
            list.push(msg.conn_id);
        }
    }
}

impl Handler<SessionNews> for EventBridge {
    type Result = ();
    fn handle(&mut self, msg: SessionNews, _: &mut Context<Self>) {
        let _span = self.span.clone().entered();
        self.tell(msg);
    }
}

impl Handler<PresenceChanged> for EventBridge {
    type Result = ();
    fn handle(&mut self, msg: PresenceChanged, _: &mut Context<Self>) {
        let _span = self.span.clone().entered();
        self.broadcast(events::presence(&msg.entries, msg.version));
    }
}

impl Handler<HealthUpdated> for EventBridge {
    type Result = ();
    fn handle(&mut self, msg: HealthUpdated, _: &mut Context<Self>) {
        let _span = self.span.clone().entered();
        self.broadcast(events::health(msg.snapshot, msg.version));
    }
}

impl Handler<ApprovalEvent> for EventBridge {
    type Result = ();
    fn handle(&mut self, msg: ApprovalEvent, _: &mut Context<Self>) {
        let _span = self.span.clone().entered();
        self.broadcast(events::approval(msg));
    }
}

impl Handler<ferroclaw_actors::questions::QuestionEvent> for EventBridge {
    type Result = ();
    fn handle(&mut self, msg: ferroclaw_actors::questions::QuestionEvent, _: &mut Context<Self>) {
        let _span = self.span.clone().entered();
        self.broadcast(events::question(msg));
    }
}

impl Handler<ferroclaw_actors::nodes::NodeNews> for EventBridge {
    type Result = ();
    fn handle(&mut self, msg: ferroclaw_actors::nodes::NodeNews, _: &mut Context<Self>) {
        let _span = self.span.clone().entered();
        if let Some((name, payload)) = crate::protocol::nodes::news(&msg) {
            self.publish(name, payload, true);
        }
    }
}

impl Handler<ferroclaw_actors::cron::CronEvent> for EventBridge {
    type Result = ();
    fn handle(&mut self, msg: ferroclaw_actors::cron::CronEvent, _: &mut Context<Self>) {
        let _span = self.span.clone().entered();
        self.publish("cron", events::cron(&msg), true);
    }
}

impl Handler<ferroclaw_actors::cron::beat::HeartbeatEvent> for EventBridge {
    type Result = ();
    fn handle(&mut self, msg: ferroclaw_actors::cron::beat::HeartbeatEvent, _: &mut Context<Self>) {
        let _span = self.span.clone().entered();
        self.publish("heartbeat", crate::protocol::cron::beat(&msg.beat), true);
    }
}

impl Handler<TimeChatSend> for EventBridge {
    type Result = ();
    fn handle(&mut self, msg: TimeChatSend, _: &mut Context<Self>) {
        let _span = self.span.clone().entered();
        self.timings
            .received(msg.run_id, msg.conn_id, msg.session_key);
    }
}

impl Handler<ChatSendAcked> for EventBridge {
    type Result = ();
    fn handle(&mut self, msg: ChatSendAcked, _: &mut Context<Self>) {
        let _span = self.span.clone().entered();
        let timing = self.timings.acked(&msg.run_id);
        self.send_timing(timing);
    }
}

impl Handler<PublishChat> for EventBridge {
    type Result = ();
    fn handle(&mut self, msg: PublishChat, _: &mut Context<Self>) {
        let _span = self.span.clone().entered();
        self.publish("chat", msg.payload, false);
    }
}
