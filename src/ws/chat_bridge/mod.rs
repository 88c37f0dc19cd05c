//! ChatBridge: turns every session's `RunEvent`s into the wire's `chat` and
//! `agent` events on the bus (protocol.md 6.3). `chat` deltas carry the
//! cumulative `message` and the new `deltaText`, at most one per 150 ms per
//! run (droppable; the final carries the full text); `agent` events carry
//! lifecycle start/end/error, every assistant delta and the model's
//! reasoning (stream `thinking`, `{text, delta}`, as `/reasoning` allows).
//!
//! Also the registry of live runs (queued or running: `in_flight` answers,
//! `chat.abort`), of which run answers which message (a collected or
//! steered message's id resolves to its run), recent results and
//! `agent.wait` waiters. Waiters are bounded per connection and in total,
//! removed when they time out or their connection goes (their `Waiting`
//! is dropped); an id that is neither live nor in the `runs` tree keeps no
//! state here at all.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use actix::prelude::*;
use ferroclaw_actors::bus::{send_to_bus, BusEvent, EventBus, Publish, PublishTo};
use ferroclaw_actors::ids::ConnId;
use ferroclaw_actors::metrics::Metrics;
use ferroclaw_actors::run::RunEvent;
use ferroclaw_actors::runs::RunRecord;
use ferroclaw_actors::session::SessionEvent;
use ferroclaw_actors::store::Store;
use serde_json::{json, Value};

mod waits;
use waits::Waiter;
pub use waits::*;

/// Chat deltas per run are sent at most this often.
pub const DELTA_INTERVAL: Duration = Duration::from_millis(150);

/// A run accepted and not ended.
#[derive(Debug, Clone, PartialEq)]
pub struct LiveRun {
    pub session_key: String,
    /// Its run started (else it waits in its session's queue).
    pub started: bool,
}

/// Runs that were accepted and have not ended: run id -> where they are.
pub type ActiveRuns = Arc<Mutex<HashMap<String, LiveRun>>>;

fn live_runs(runs: &ActiveRuns) -> std::sync::MutexGuard<'_, HashMap<String, LiveRun>> {
    match runs.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}

/// The session key of a live (queued or running) run.
pub fn active_run_session(runs: &ActiveRuns, run_id: &str) -> Option<String> {
    live_runs(runs).get(run_id).map(|r| r.session_key.clone())
}

/// A live run.
pub fn live_run(runs: &ActiveRuns, run_id: &str) -> Option<LiveRun> {
    live_runs(runs).get(run_id).cloned()
}

/// The session keys with a live run.
pub fn busy_sessions(runs: &ActiveRuns) -> std::collections::HashSet<String> {
    live_runs(runs)
        .values()
        .map(|r| r.session_key.clone())
        .collect()
}

/// Message -> run links kept for ended runs (older ones come from the store).
const KEEP_ALIASES: usize = 4096;

/// Registers a connection that asked for tool events (caps
/// `["tool-events"]`) and started this run: `agent` tool events go to it.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct AddToolRecipient {
    pub run_id: String,
    pub conn_id: ConnId,
}

/// Publishes a `chat` event outside any run (`chat.inject`).
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct PublishChat {
    pub payload: Value,
}

/// How a run ended (for `agent` final answers and `agent.wait`).
#[derive(Debug, Clone, PartialEq)]
pub struct RunResult {
    pub run_id: String,
    /// `ok`, `error` or `aborted`.
    pub status: &'static str,
    pub text: String,
    pub error: Option<String>,
    pub started_at: u64,
    pub ended_at: u64,
    pub usage: Value,
    pub stop_reason: &'static str,
}

/// What a run watcher (the OpenAI-compatible HTTP API) gets.
#[derive(Debug, Clone)]
pub enum RunUpdate {
    /// The reply text so far (cumulative; held back while it could still
    /// become the silent token).
    Text(String),
    End(RunResult),
}

/// Streams a run's text and end to `tx` (register before the run starts).
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct WatchRun {
    pub run_id: String,
    pub tx: tokio::sync::mpsc::UnboundedSender<RunUpdate>,
}

/// Results kept for late `agent.wait` calls.
const KEEP_RESULTS: usize = 1000;

struct RunState {
    started_at: u64,
    seq: u64,
    last_delta: Option<Instant>,
    emitted: String,
    text: String,
    /// The run's reasoning so far (`agent` events with stream `thinking`).
    thinking: String,
}

pub struct ChatBridge {
    bus: Addr<EventBus>,
    /// Run records of runs this process did not see end (`agent.wait` after a restart).
    store: Store,
    /// When this bridge started: runs that ended before were not seen here.
    started_at: u64,
    metrics: Arc<Metrics>,
    runs: HashMap<String, RunState>,
    active: ActiveRuns,
    results: HashMap<String, RunResult>,
    result_order: std::collections::VecDeque<String>,
    /// message id -> the run that answers it (when they differ).
    aliases: HashMap<String, String>,
    alias_order: std::collections::VecDeque<String>,
    waiters: HashMap<String, Vec<Waiter>>,
    waiter_count: usize,
    per_conn: HashMap<ConnId, usize>,
    next_waiter: u64,
    /// Run watchers (HTTP streaming clients).
    watchers: HashMap<String, Vec<tokio::sync::mpsc::UnboundedSender<RunUpdate>>>,
    /// run id -> (connections, registered at ms). Registered before the
    /// run starts; entries of runs that never started are pruned after an hour.
    tool_recipients: HashMap<String, (Vec<ConnId>, u64)>,
}

impl ChatBridge {
    pub fn new(
        bus: Addr<EventBus>,
        store: Store,
        metrics: Arc<Metrics>,
        active: ActiveRuns,
    ) -> ChatBridge {
        ChatBridge {
            bus,
            store,
            started_at: ferroclaw_actors::now_ms(),
            metrics,
            runs: HashMap::new(),
            active,
            results: HashMap::new(),
            result_order: Default::default(),
            aliases: HashMap::new(),
            alias_order: Default::default(),
            waiters: HashMap::new(),
            waiter_count: 0,
            per_conn: HashMap::new(),
            next_waiter: 0,
            watchers: HashMap::new(),
            tool_recipients: HashMap::new(),
        }
    }

    /// `agent` tool events: only to the run's tool-event recipients, no seq,
    /// gated by the session's verbose level (off: none; on: no result text).
    fn tool_event(&mut self, run_id: &str, key: &str, verbose: &str, mut data: Value) {
        if verbose == "off" {
            return;
        }
        let Some((targets, _)) = self.tool_recipients.get(run_id).cloned() else {
            return;
        };
        if verbose != "full" {
            if let Some(o) = data.as_object_mut() {
                o.remove("result");
                o.remove("partialResult");
            }
        }
        let payload = json!({
            "runId": run_id, "seq": self.next_seq(run_id), "stream": "tool", "ts": ferroclaw_actors::now_ms(),
            "data": data, "sessionKey": key,
        });
        send_to_bus(
            &self.bus,
            &self.metrics,
            PublishTo {
                event: BusEvent::new("agent", &payload, false),
                targets,
            },
        );
    }

    #[allow(clippy::too_many_arguments)]
    fn finish(
        &mut self,
        run_id: &str,
        status: &'static str,
        text: String,
        error: Option<String>,
        usage: Value,
        stop_reason: &'static str,
    ) {
        let started_at = self
            .runs
            .get(run_id)
            .map(|r| r.started_at)
            .unwrap_or_else(ferroclaw_actors::now_ms);
        let result = RunResult {
            run_id: run_id.to_string(),
            status,
            text,
            error,
            started_at,
            ended_at: ferroclaw_actors::now_ms(),
            usage,
            stop_reason,
        };
        self.settle_waiters(run_id, &result);
        for w in self.watchers.remove(run_id).unwrap_or_default() {
            let _ = w.send(RunUpdate::End(result.clone()));
        }
        self.results.insert(run_id.to_string(), result);
        self.result_order.push_back(run_id.to_string());
        while self.result_order.len() > KEEP_RESULTS {
            if let Some(old) = self.result_order.pop_front() {
                self.results.remove(&old);
            }
        }
        self.runs.remove(run_id);
        self.tool_recipients.remove(run_id);
        self.set_active(run_id, None);
    }

    fn publish(&self, event: &str, payload: Value, drop_if_slow: bool) {
        send_to_bus(
            &self.bus,
            &self.metrics,
            Publish {
                event: BusEvent::new(event, &payload, drop_if_slow),
            },
        );
    }

    fn next_seq(&mut self, run_id: &str) -> u64 {
        let st = self
            .runs
            .entry(run_id.to_string())
            .or_insert_with(|| RunState {
                started_at: ferroclaw_actors::now_ms(),
                seq: 0,
                last_delta: None,
                emitted: String::new(),
                text: String::new(),
                thinking: String::new(),
            });
        st.seq += 1;
        st.seq
    }

    fn agent(&mut self, run_id: &str, session_key: &str, stream: &str, data: Value) {
        let seq = self.next_seq(run_id);
        let payload = json!({
            "runId": run_id, "seq": seq, "stream": stream, "ts": ferroclaw_actors::now_ms(),
            "data": data, "sessionKey": session_key,
        });
        self.publish("agent", payload, false);
    }

    fn set_active(&self, run_id: &str, session: Option<&str>) {
        self.set_live(run_id, session, true);
    }

    fn set_live(&self, run_id: &str, session: Option<&str>, started: bool) {
        let mut map = live_runs(&self.active);
        match session {
            Some(key) => {
                map.insert(
                    run_id.to_string(),
                    LiveRun {
                        session_key: key.to_string(),
                        started,
                    },
                );
            }
            None => {
                map.remove(run_id);
            }
        }
    }

    /// Message `message_id` is answered by run `run_id` (which is now
    /// live): waits, watchers and tool-event recipients registered under
    /// the message id follow the run.
    fn queued(&mut self, run_id: String, message_id: String, key: &str) {
        let started = live_run(&self.active, &run_id).is_some_and(|r| r.started);
        self.set_live(&run_id, Some(key), started);
        if message_id == run_id {
            return;
        }
        if let Some(ws) = self.watchers.remove(&message_id) {
            self.watchers.entry(run_id.clone()).or_default().extend(ws);
        }
        if let Some((conns, at)) = self.tool_recipients.remove(&message_id) {
            let entry = self
                .tool_recipients
                .entry(run_id.clone())
                .or_insert_with(|| (Vec::new(), at));
            for c in conns {
                if !entry.0.contains(&c) {
                    entry.0.push(c);
                }
            }
        }
        if self.aliases.insert(message_id.clone(), run_id).is_none() {
            self.alias_order.push_back(message_id);
        }
        while self.alias_order.len() > KEEP_ALIASES {
            if let Some(old) = self.alias_order.pop_front() {
                self.aliases.remove(&old);
            }
        }
    }
}

fn message(text: &str) -> Value {
    json!({ "role": "assistant", "content": [{ "type": "text", "text": text }], "timestamp": ferroclaw_actors::now_ms() })
}

/// A stored run record as a result (its text is in the transcript, not here).
fn stored_result(run_id: &str, r: RunRecord) -> RunResult {
    let status = match r.status.as_str() {
        "ok" => "ok",
        "aborted" => "aborted",
        _ => "error",
    };
    let stop_reason = match r.stop_reason.as_str() {
        "stop" => "stop",
        "toolUse" => "toolUse",
        "length" => "length",
        "aborted" => "aborted",
        _ => "error",
    };
    RunResult {
        run_id: run_id.to_string(),
        status,
        text: String::new(),
        error: r.error,
        started_at: r.started_at,
        ended_at: r.ended_at,
        usage: Value::Null,
        stop_reason,
    }
}

impl Actor for ChatBridge {
    type Context = Context<Self>;
}

impl Handler<SessionEvent> for ChatBridge {
    type Result = ();
    fn handle(&mut self, msg: SessionEvent, _: &mut Context<Self>) {
        let key = msg.session_key;
        let verbose = msg.verbose;
        match msg.event {
            RunEvent::Queued { run_id, message_id } => self.queued(run_id, message_id, &key),
            RunEvent::Started { run_id } => {
                self.set_active(&run_id, Some(&key));
                self.agent(
                    &run_id,
                    &key,
                    "lifecycle",
                    json!({ "phase": "start", "startedAt": ferroclaw_actors::now_ms() }),
                );
            }
            RunEvent::Delta {
                run_id,
                text,
                delta,
            } => {
                // Text that may still turn out to be the silent token
                // (`NO_REPLY`) is held back until the run decides.
                if ferroclaw_actors::context::prompt::may_become_silent(&text) {
                    if let Some(st) = self.runs.get_mut(&run_id) {
                        st.text = text;
                    }
                    return;
                }
                if let Some(ws) = self.watchers.get_mut(&run_id) {
                    ws.retain(|w| w.send(RunUpdate::Text(text.clone())).is_ok());
                }
                self.agent(
                    &run_id,
                    &key,
                    "assistant",
                    json!({ "text": text, "delta": delta }),
                );
                let now = Instant::now();
                let Some(st) = self.runs.get_mut(&run_id) else {
                    return;
                };
                st.text = text;
                if st
                    .last_delta
                    .is_some_and(|t| now.duration_since(t) < DELTA_INTERVAL)
                {
                    return;
                }
                st.last_delta = Some(now);
                let (delta_text, replace) = match st.text.strip_prefix(st.emitted.as_str()) {
                    Some(rest) => (rest.to_string(), false),
                    None => (st.text.clone(), true),
                };
                st.emitted = st.text.clone();
                st.seq += 1;
                let mut payload = json!({
                    "runId": run_id, "sessionKey": key, "seq": st.seq, "state": "delta",
                    "deltaText": delta_text, "message": message(&st.text),
                });
                if replace {
                    payload["replace"] = json!(true);
                }
                self.publish("chat", payload, true);
            }
            RunEvent::Final {
                run_id,
                text,
                stop_reason: stop,
                usage,
            } => {
                let seq = self.next_seq(&run_id);
                let total = usage.input + usage.output + usage.cache_read + usage.cache_write;
                let usage = json!({ "input": usage.input, "output": usage.output, "cacheRead": usage.cache_read,
                                    "cacheWrite": usage.cache_write, "totalTokens": total });
                let mut payload = json!({
                    "runId": run_id, "sessionKey": key, "seq": seq, "state": "final",
                    "stopReason": stop.as_str(), "usage": usage,
                });
                // A reply that is only `NO_REPLY` is not delivered.
                let silent = ferroclaw_actors::context::prompt::is_silent(&text);
                let text = if silent { String::new() } else { text };
                if !text.is_empty() {
                    payload["message"] = message(&text);
                }
                let mut end = json!({ "phase": "end", "endedAt": ferroclaw_actors::now_ms() });
                if silent {
                    payload["skipReason"] = json!("silent");
                    end["skipReason"] = json!("silent");
                }
                self.publish("chat", payload, false);
                self.agent(&run_id, &key, "lifecycle", end);
                self.finish(&run_id, "ok", text, None, usage, stop.as_str());
            }
            RunEvent::Failed {
                run_id,
                error,
                kind,
            } => {
                let seq = self.next_seq(&run_id);
                let kind = kind.wire_kind();
                self.publish(
                    "chat",
                    json!({
                        "runId": run_id, "sessionKey": key, "seq": seq, "state": "error",
                        "errorMessage": error, "errorKind": kind,
                    }),
                    false,
                );
                self.agent(&run_id, &key, "lifecycle", json!({ "phase": "error", "error": error, "endedAt": ferroclaw_actors::now_ms() }));
                self.finish(
                    &run_id,
                    "error",
                    String::new(),
                    Some(error),
                    Value::Null,
                    "error",
                );
            }
            RunEvent::Aborted { run_id, text } => {
                let seq = self.next_seq(&run_id);
                let mut payload = json!({
                    "runId": run_id, "sessionKey": key, "seq": seq, "state": "aborted", "stopReason": "aborted",
                });
                if !text.is_empty() {
                    payload["message"] = message(&text);
                }
                self.publish("chat", payload, false);
                self.agent(&run_id, &key, "lifecycle", json!({ "phase": "end", "endedAt": ferroclaw_actors::now_ms(), "aborted": true }));
                self.finish(&run_id, "aborted", text, None, Value::Null, "aborted");
            }
            RunEvent::ToolStarted { run_id, call } => {
                if verbose != "off" {
                    self.publish(
                        "session.tool",
                        json!({
                            "runId": run_id, "sessionKey": key, "toolName": call.name,
                            "toolCallId": call.id, "input": call.arguments, "state": "running",
                        }),
                        false,
                    );
                }
                self.tool_event(&run_id, &key, &verbose, json!({
                    "phase": "start", "name": call.name, "toolCallId": call.id, "args": call.arguments,
                }));
            }
            RunEvent::ToolFinished {
                run_id,
                call,
                outcome,
                skipped,
            } => {
                if verbose != "off" {
                    let mut payload = json!({
                        "runId": run_id, "sessionKey": key, "toolName": call.name, "toolCallId": call.id,
                        "state": if outcome.is_error { "error" } else { "done" }, "isError": outcome.is_error,
                    });
                    if verbose == "full" {
                        payload["output"] = json!(outcome.text);
                    }
                    self.publish("session.tool", payload, false);
                }
                self.tool_event(
                    &run_id,
                    &key,
                    &verbose,
                    json!({
                        "phase": "result", "name": call.name, "toolCallId": call.id,
                        "result": outcome.text, "isError": outcome.is_error, "skipped": skipped,
                    }),
                );
            }
            RunEvent::Thinking { run_id, delta } => {
                // The session already applied `/reasoning` (off: none; on:
                // whole, before the end; stream: as it comes).
                let seq = self.next_seq(&run_id);
                let Some(st) = self.runs.get_mut(&run_id) else {
                    return;
                };
                st.thinking.push_str(&delta);
                let payload = json!({
                    "runId": run_id, "seq": seq, "stream": "thinking", "ts": ferroclaw_actors::now_ms(),
                    "data": { "text": st.thinking, "delta": delta }, "sessionKey": key,
                });
                self.publish("agent", payload, false);
            }
            RunEvent::Message { .. } | RunEvent::ModelSelected { .. } => {}
        }
    }
}

impl Handler<WatchRun> for ChatBridge {
    type Result = ();
    fn handle(&mut self, msg: WatchRun, _: &mut Context<Self>) {
        if let Some(r) = self.results.get(&msg.run_id) {
            let _ = msg.tx.send(RunUpdate::End(r.clone()));
            return;
        }
        self.watchers.entry(msg.run_id).or_default().push(msg.tx);
    }
}

impl Handler<AddToolRecipient> for ChatBridge {
    type Result = ();
    fn handle(&mut self, msg: AddToolRecipient, _: &mut Context<Self>) {
        let now = ferroclaw_actors::now_ms();
        self.tool_recipients
            .retain(|_, (_, at)| now.saturating_sub(*at) < 3_600_000);
        let (list, _) = self
            .tool_recipients
            .entry(msg.run_id)
            .or_insert_with(|| (Vec::new(), now));
        if !list.contains(&msg.conn_id) {
            list.push(msg.conn_id);
        }
    }
}

impl Handler<PublishChat> for ChatBridge {
    type Result = ();
    fn handle(&mut self, msg: PublishChat, _: &mut Context<Self>) {
        self.publish("chat", msg.payload, false);
    }
}
