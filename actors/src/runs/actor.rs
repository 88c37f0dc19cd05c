//! `RunRegistry`: the handlers. Run events come in from the sessions in
//! the order each run produced them; the registry updates its state first
//! and then passes each event on to the edge.

use crate::ids::RunId;
use crate::ids::SessionKey;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use actix::prelude::*;
use tokio::sync::mpsc;

use super::record::{self, RunRecord};
use super::state::{Recent, Waiters};
use super::{
    BusySessions, CancelWait, GetSessionLanes, ListTaskRuns, LiveRun, LiveRunOf, RunResult,
    RunUpdate, SessionEvent, SessionLanes, SessionNews, TaskRun, WaitRun, WaitTicket, Waiting,
    WatchRun,
};
use crate::audit::{Activity, AuditLog, End, RunActivity, ToolActivity};
use crate::ids::ConnId;
use crate::metrics::Metrics;
use crate::provider::ToolCall;
use crate::provider::Usage;
use crate::run::FailureKind;
use crate::run::{Outcome, RunEvent, RunStatus};
use crate::store::Store;

/// Waiters kept at once, in all and per connection.
pub const MAX_WAITERS: usize = 10_000;
pub const MAX_WAITERS_PER_CONN: usize = 256;
/// Results kept for late waits (older ones are answered from the record).
const KEEP_RESULTS: usize = 1000;
/// Message -> run links kept for ended runs (older ones come from the store).
const KEEP_ALIASES: usize = 4096;

struct Live {
    run: LiveRun,
    /// When its run started (None while queued).
    started_at: Option<u64>,
    /// Audit records of the run so far, and its tool calls not finished
    /// (id, name).
    recorded: u64,
    open_tools: Vec<(String, String)>,
}

pub struct RunRegistry {
    store: Store,
    metrics: Arc<Metrics>,
    /// Where every event goes after the registry: the edge's converter.
    edge: Recipient<SessionEvent>,
    /// Where sessions' news goes, on the same road as their events.
    news: Recipient<SessionNews>,
    live: HashMap<RunId, Live>,
    results: Recent<RunResult>,
    /// message id -> the run that answers it (when they differ).
    aliases: Recent<String>,
    waiters: Waiters<ConnId, RunResult>,
    watchers: HashMap<RunId, Vec<mpsc::UnboundedSender<RunUpdate>>>,
    audit: AuditLog,
    span: tracing::Span,
}

impl RunRegistry {
    pub fn new(
        store: Store,
        metrics: Arc<Metrics>,
        edge: Recipient<SessionEvent>,
        news: Recipient<SessionNews>,
    ) -> Self {
        RunRegistry {
            store,
            metrics,
            edge,
            news,
            live: HashMap::new(),
            results: Recent::new(KEEP_RESULTS),
            aliases: Recent::new(KEEP_ALIASES),
            waiters: Waiters::new(MAX_WAITERS, MAX_WAITERS_PER_CONN),
            watchers: HashMap::new(),
            audit: AuditLog::off(),
            span: tracing::info_span!("run_registry"),
        }
    }

    /// Runs and tool calls are recorded in `audit`.
    pub fn with_audit(mut self, audit: AuditLog) -> Self {
        self.audit = audit;
        self
    }

    fn count_waiters(&self) {
        self.metrics
            .waiters
            .store(self.waiters.count() as i64, Ordering::Relaxed);
    }

    /// Message `message_id` is answered by run `run_id` (which is now
    /// live): waits and watchers registered under the message id follow.
    fn queued(&mut self, run_id: &str, message_id: &str, key: &SessionKey) {
        let live = self.live.entry(run_id.into()).or_insert_with(|| Live {
            run: LiveRun {
                session_key: key.clone(),
                started: false,
            },
            started_at: None,
            recorded: 0,
            open_tools: Vec::new(),
        });
        live.run.session_key = key.clone();
        if message_id == run_id {
            return;
        }
        if let Some(ws) = self.watchers.remove(message_id) {
            self.watchers.entry(run_id.into()).or_default().extend(ws);
        }
        self.aliases
            .insert(message_id.to_string(), run_id.to_string());
    }

    fn started(&mut self, run_id: &str, key: &SessionKey) {
        // A run restarted from its last step starts again: one record.
        let (recorded, open_tools) = match self.live.remove(run_id) {
            Some(l) if l.run.started => (l.recorded, l.open_tools),
            _ => (0, Vec::new()),
        };
        let live = self.live.entry(run_id.into()).or_insert(Live {
            run: LiveRun {
                session_key: key.clone(),
                started: true,
            },
            started_at: Some(crate::now_ms()),
            recorded,
            open_tools,
        });
        if live.recorded == 0 {
            live.recorded = 1;
            self.audit.record(Activity::AgentRun(RunActivity {
                agent_id: key.agent_id().to_string(),
                session_key: key.to_string(),
                run_id: run_id.to_string(),
                source_sequence: 1,
                end: None,
            }));
        }
    }

    /// A tool call of a live run started (`end: None`) or ended.
    fn tool(&mut self, run_id: &str, key: &SessionKey, call: &ToolCall, end: Option<End>) {
        let Some(live) = self.live.get_mut(run_id) else {
            return;
        };
        live.recorded += 1;
        match end {
            None => live.open_tools.push((call.id.clone(), call.name.clone())),
            Some(_) => live.open_tools.retain(|(id, _)| *id != call.id),
        }
        let seq = live.recorded;
        self.audit
            .record(tool_record(key, run_id, seq, &call.id, &call.name, end));
    }

    /// The end of a started run in the audit, its unfinished tool calls
    /// first (cancelled by an abort, else of unknown outcome). A run that
    /// never started (dropped from its queue) has no records.
    fn record_end(&mut self, run_id: &str, key: &SessionKey, end: End) {
        let Some(live) = self.live.get_mut(run_id).filter(|l| l.recorded > 0) else {
            return;
        };
        let tool_end = match end {
            End::Cancelled => End::Cancelled,
            _ => End::Unknown,
        };
        for (id, name) in std::mem::take(&mut live.open_tools) {
            live.recorded += 1;
            let seq = live.recorded;
            self.audit
                .record(tool_record(key, run_id, seq, &id, &name, Some(tool_end)));
        }
        live.recorded += 1;
        self.audit.record(Activity::AgentRun(RunActivity {
            agent_id: key.agent_id().to_string(),
            session_key: key.to_string(),
            run_id: run_id.to_string(),
            source_sequence: live.recorded,
            end: Some(end),
        }));
    }

    fn finish(&mut self, run_id: &str, outcome: Outcome, usage: Option<Usage>, stop: &'static str) {
        let started_at = self
            .live
            .remove(run_id)
            .and_then(|l| l.started_at)
            .unwrap_or_else(crate::now_ms);
        let result = RunResult {
            run_id: run_id.into(),
            outcome,
            started_at,
            ended_at: crate::now_ms(),
            usage,
            stop_reason: stop,
        };
        self.waiters.settle(run_id, &result);
        self.count_waiters();
        for w in self.watchers.remove(run_id).unwrap_or_default() {
            let _ = w.send(RunUpdate::End(result.clone()));
        }
        self.results.insert(run_id.to_string(), result);
    }

    /// A streamed delta to the run's watchers (a gone one is dropped).
    fn delta(&mut self, run_id: &RunId, delta: &str, fresh: bool) {
        if let Some(ws) = self.watchers.get_mut(run_id) {
            ws.retain(|w| {
                let update = RunUpdate::Delta {
                    text: delta.to_string(),
                    fresh,
                };
                w.send(update).is_ok()
            });
        }
    }

    /// Takes what the registry keeps from one run event (the session
    /// already gated the deltas and judged the reply).
    fn apply(&mut self, key: &SessionKey, event: &RunEvent) {
        match event {
            RunEvent::Queued { run_id, message_id } => self.queued(run_id, message_id, key),
            RunEvent::Started { run_id } => self.started(run_id, key),
            RunEvent::Delta {
                run_id,
                delta,
                fresh,
            } => self.delta(run_id, delta, *fresh),
            RunEvent::Final {
                run_id,
                outcome,
                stop_reason,
                usage,
            } => {
                self.record_end(run_id, key, End::Succeeded);
                self.finish(run_id, outcome.clone(), Some(*usage), stop_reason.as_str())
            }
            RunEvent::Failed {
                run_id,
                error,
                kind,
            } => {
                let end = match kind {
                    FailureKind::Timeout => End::TimedOut,
                    _ => End::Failed,
                };
                self.record_end(run_id, key, end);
                self.finish(run_id, Outcome::Error(error.clone()), None, "error")
            }
            RunEvent::Aborted { run_id, text } => {
                self.record_end(run_id, key, End::Cancelled);
                self.finish(run_id, Outcome::Aborted(text.clone()), None, "aborted")
            }
            RunEvent::ToolStarted { run_id, call } => self.tool(run_id, key, call, None),
            RunEvent::ToolFinished {
                run_id,
                call,
                outcome,
                skipped,
            } => {
                let end = tool_end(*skipped, outcome);
                self.tool(run_id, key, call, Some(end))
            }
            RunEvent::Thinking { .. }
            | RunEvent::Message { .. }
            | RunEvent::ToolProgress { .. }
            | RunEvent::ModelSelected { .. }
            | RunEvent::SideResult { .. } => {}
        }
    }

    /// The run an id stands for in the `runs` tree (a message's alias followed).
    fn run_record(&self, id: &str) -> Option<(String, RunRecord)> {
        record::resolve(&self.store, id)
            .map_err(|e| tracing::warn!(run_id = %id, error = %e, "cannot read the run record"))
            .ok()
            .flatten()
    }

    fn wait_for(
        &mut self,
        run_id: &str,
        conn: Option<ConnId>,
        me: Recipient<CancelWait>,
    ) -> WaitTicket {
        let ticket = match self.waiters.add(run_id, conn) {
            Some((id, rx)) => WaitTicket::Waiting(Waiting {
                run_id: run_id.into(),
                rx: Some(rx),
                cancel: Some((me, id)),
            }),
            None => {
                Metrics::inc(&self.metrics.waits_refused);
                WaitTicket::Busy
            }
        };
        self.count_waiters();
        ticket
    }
}

/// A tool call's audit record (its id only as a hash).
fn tool_record(
    key: &SessionKey,
    run_id: &str,
    seq: u64,
    call_id: &str,
    name: &str,
    end: Option<End>,
) -> Activity {
    Activity::ToolAction(ToolActivity {
        agent_id: key.agent_id().to_string(),
        session_key: key.to_string(),
        run_id: run_id.to_string(),
        source_sequence: seq,
        tool_call_id: (!call_id.is_empty()).then(|| crate::audit::call_id(call_id)),
        tool_name: name.to_string(),
        end,
    })
}

/// A stored run record as a result (an `ok` one's text is in the
/// transcript: `Outcome::Recorded`).
fn stored_result(run_id: &str, r: RunRecord) -> RunResult {
    let outcome = match RunStatus::parse(&r.status) {
        RunStatus::Ok => Outcome::Recorded,
        RunStatus::Aborted => Outcome::Aborted(String::new()),
        RunStatus::Error => Outcome::Error(r.error.unwrap_or_default()),
    };
    let stop_reason = match r.stop_reason.as_str() {
        "stop" => "stop",
        "toolUse" => "toolUse",
        "length" => "length",
        "aborted" => "aborted",
        _ => "error",
    };
    RunResult {
        run_id: run_id.into(),
        outcome,
        started_at: r.started_at,
        ended_at: r.ended_at,
        usage: None,
        stop_reason,
    }
}

impl Actor for RunRegistry {
    type Context = Context<Self>;
}

impl Handler<SessionEvent> for RunRegistry {
    type Result = ();
    fn handle(&mut self, msg: SessionEvent, _: &mut Context<Self>) {
        // One per token: the span is entered only for a run's end.
        let _span = msg.event.end_status().map(|_| self.span.clone().entered());
        self.apply(&msg.session_key, &msg.event);
        self.edge.do_send(msg);
    }
}

/// A session's news follows its run events through the registry's
/// mailbox, so the edge gets both in the order the session sent them.
impl Handler<SessionNews> for RunRegistry {
    type Result = ();
    fn handle(&mut self, msg: SessionNews, _: &mut Context<Self>) {
        self.news.do_send(msg);
    }
}

impl Handler<WaitRun> for RunRegistry {
    type Result = MessageResult<WaitRun>;
    fn handle(&mut self, msg: WaitRun, ctx: &mut Context<Self>) -> Self::Result {
        let _span = self.span.clone().entered();
        let me = ctx.address().recipient();
        let asked = self
            .aliases
            .get(&msg.run_id)
            .cloned()
            .unwrap_or(msg.run_id.to_string());
        if let Some(r) = self.results.get(&asked) {
            return MessageResult(WaitTicket::Done(r.clone()));
        }
        if self.live.contains_key(asked.as_str()) {
            return MessageResult(self.wait_for(&asked, msg.conn, me));
        }
        let Some((run_id, r)) = self.run_record(&asked) else {
            return MessageResult(WaitTicket::Unknown);
        };
        if let Some(done) = self.results.get(&run_id) {
            return MessageResult(WaitTicket::Done(done.clone()));
        }
        if self.live.contains_key(run_id.as_str()) || r.is_pending() {
            // Live: its end comes through here. Pending and not live yet:
            // its session settles it (it runs, or a restart marks it cut).
            return MessageResult(self.wait_for(&run_id, msg.conn, me));
        }
        // Ended and not live: every run this process saw start is live
        // until its end passes here, so this end has passed (or happened
        // before a restart) and the record is the answer.
        MessageResult(WaitTicket::Done(stored_result(&run_id, r)))
    }
}

impl Handler<CancelWait> for RunRegistry {
    type Result = ();
    fn handle(&mut self, msg: CancelWait, _: &mut Context<Self>) {
        self.waiters.cancel(&msg.run_id, msg.waiter);
        self.count_waiters();
    }
}

impl Handler<WatchRun> for RunRegistry {
    type Result = ();
    fn handle(&mut self, msg: WatchRun, _: &mut Context<Self>) {
        let run_id = self
            .aliases
            .get(&msg.run_id)
            .cloned()
            .unwrap_or(msg.run_id.to_string());
        if let Some(r) = self.results.get(&run_id) {
            let _ = msg.tx.send(RunUpdate::End(r.clone()));
            return;
        }
        if !self.live.contains_key(run_id.as_str()) {
            // Not live and recorded as ended: a run that ended before this
            // process saw it (a channel delivery resumed after a restart)
            // ends now. Unknown or pending ones are watched (a watcher may
            // register before its run starts).
            if let Some((id, r)) = self.run_record(&run_id).filter(|(_, r)| !r.is_pending()) {
                let _ = msg.tx.send(RunUpdate::End(stored_result(&id, r)));
                return;
            }
        }
        self.watchers.entry(run_id.into()).or_default().push(msg.tx);
    }
}

impl Handler<LiveRunOf> for RunRegistry {
    type Result = Option<LiveRun>;
    fn handle(&mut self, msg: LiveRunOf, _: &mut Context<Self>) -> Option<LiveRun> {
        self.live.get(&msg.run_id).map(|l| l.run.clone())
    }
}

impl Handler<ListTaskRuns> for RunRegistry {
    type Result = ResponseFuture<Result<Vec<TaskRun>, crate::store::StoreError>>;
    fn handle(&mut self, _: ListTaskRuns, _: &mut Context<Self>) -> Self::Result {
        let _span = self.span.clone().entered();
        // The live view is taken here; the tree is read off the registry's
        // thread (events keep flowing while a dashboard lists tasks).
        let live: HashMap<RunId, (LiveRun, Option<String>)> = self
            .live
            .iter()
            .map(|(id, l)| {
                let tool = l.open_tools.last().map(|(_, n)| n.clone());
                (id.clone(), (l.run.clone(), tool))
            })
            .collect();
        let store = self.store.clone();
        let dir = store.dir().to_path_buf();
        let scan = move || store.scan::<RunRecord>(crate::store::Tree::Runs, "");
        Box::pin(async move {
            let records = tokio::task::spawn_blocking(scan).await.map_err(|e| {
                let source = std::io::Error::other(format!("the run records read stopped: {e}"));
                crate::store::StoreError::Io { dir, source }
            })??;
            let tasks = records
                .into_iter()
                .filter(|(_, r)| r.kind.is_task() && r.answered_by.is_none())
                .map(|(id, record)| {
                    let (live, open_tool) = live.get(id.as_str()).cloned().unzip();
                    TaskRun {
                        run_id: id.as_str().into(),
                        record,
                        live,
                        open_tool: open_tool.flatten(),
                    }
                })
                .collect();
            Ok(tasks)
        })
    }
}

impl Handler<BusySessions> for RunRegistry {
    type Result = MessageResult<BusySessions>;
    fn handle(&mut self, _: BusySessions, _: &mut Context<Self>) -> Self::Result {
        let keys: HashSet<String> = self
            .live
            .values()
            .map(|l| l.run.session_key.to_string())
            .collect();
        MessageResult(keys)
    }
}

impl Handler<GetSessionLanes> for RunRegistry {
    type Result = MessageResult<GetSessionLanes>;
    fn handle(&mut self, _: GetSessionLanes, _: &mut Context<Self>) -> Self::Result {
        let mut by: HashMap<&str, (usize, usize)> = HashMap::new();
        for l in self.live.values() {
            let e = by.entry(l.run.session_key.as_str()).or_default();
            if l.run.started {
                e.0 += 1;
            } else {
                e.1 += 1;
            }
        }
        MessageResult(SessionLanes {
            lanes: by.len(),
            running: by.values().map(|v| v.0).sum(),
            queued: by.values().map(|v| v.1).sum(),
            queued_lanes: by.values().filter(|v| v.1 > 0).count(),
        })
    }
}

/// How a finished tool call ended, for the audit.
fn tool_end(skipped: bool, outcome: &crate::tool::ToolOutcome) -> End {
    match (skipped, outcome.blocked, outcome.is_error) {
        (true, _, _) => End::Cancelled,
        (_, true, _) => End::Blocked,
        (_, _, true) => End::Failed,
        _ => End::Succeeded,
    }
}
