//! The heartbeat: every `agents.defaults.heartbeat.every` (default 30m;
//! `0m` disables), within `activeHours`, a turn in the main session with
//! the heartbeat prompt, on `heartbeat.model` when set (the first step of
//! the model chain). Nothing runs, and no token is spent, when
//! `HEARTBEAT.md` holds nothing actionable and no system event waits. A
//! reply that is only `HEARTBEAT_OK` is never delivered; anything else
//! goes to `target` (`none`, the default: kept in the session; `last`: the
//! main session's last route; or a channel with `to`) through the channel
//! outbox, once. Typing is never shown (the turn has no channel origin).
//! Every outcome is a `heartbeat` event; the last is kept for
//! `last-heartbeat`.

use crate::ids::RunId;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::clock::Clock;
use super::exec::Announcer;
use super::heartbeat;
use super::job::Target;
pub use super::messages::RunHeartbeat;
use crate::inbound::SessionKey;
use crate::router::{GetSession, QueuedSystemEvents};
use crate::run::{Outcome, RunKind};
use crate::runs::{wait_run, BusySessions, RunRegistry, Waited};
use crate::session::SendChat;
use crate::store::Tree;

/// `agents.defaults.heartbeat`, read.
#[derive(Debug, Clone, PartialEq)]
pub struct HeartbeatConfig {
    /// None: no scheduled heartbeats (`every: "0m"`).
    pub every: Option<Duration>,
    pub model: Option<String>,
    pub prompt: String,
    /// None: `target: "none"`.
    pub target: Option<Target>,
    pub active_hours: Option<Value>,
    pub ack_max_chars: usize,
}

impl HeartbeatConfig {
    /// The typed section, checked: an unreadable `every` is refused with
    /// its key.
    pub fn from_settings(
        h: &crate::settings::HeartbeatSettings,
    ) -> Result<HeartbeatConfig, String> {
        let text = |s: &Option<String>| {
            s.as_deref()
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
        };
        let every = crate::settings::parse_duration(&h.every).ok_or_else(|| {
            format!(
                "agents.defaults.heartbeat.every: unreadable duration {:?} (e.g. 30m)",
                h.every
            )
        })?;
        let target = match h.target.trim() {
            "none" | "" => None,
            t => Some(Target {
                channel: t.to_string(),
                to: text(&h.to),
                account_id: text(&h.account_id),
                thread_id: None,
                best_effort: true,
            }),
        };
        Ok(HeartbeatConfig {
            every: (!every.is_zero()).then_some(every.max(Duration::from_secs(1))),
            model: text(&h.model),
            prompt: h.prompt.clone(),
            target,
            active_hours: h.active_hours.clone().filter(|a| a.is_object()),
            ack_max_chars: h.ack_max_chars as usize,
        })
    }
}

/// A `heartbeat` event for clients.
#[derive(Debug, Clone, Message)]
#[rtype(result = "()")]
pub struct HeartbeatEvent(pub Value);

/// `last-heartbeat`.
#[derive(Debug, Message)]
#[rtype(result = "Option<Value>")]
pub struct LastHeartbeat;

/// `set-heartbeats`. Reply: whether heartbeats are now on.
#[derive(Debug, Message)]
#[rtype(result = "bool")]
pub struct SetHeartbeats {
    pub enabled: bool,
}

/// A config apply: the heartbeat's new settings (the timer starts over).
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct SetHeartbeatConfig(pub HeartbeatConfig);

/// `status` and `health`: the heartbeat's schedule as it runs.
#[derive(Debug, Message)]
#[rtype(result = "HeartbeatView")]
pub struct HeartbeatStatus;

/// The heartbeat as `status` and `health` report it.
#[derive(Debug, Clone, PartialEq)]
pub struct HeartbeatView {
    pub agent_id: String,
    /// None: no scheduled beats (`every: "0m"` or `set-heartbeats` off).
    pub every: Option<Duration>,
    pub prompt: String,
    /// `none`, `last` or a channel id.
    pub target: String,
    pub model: Option<String>,
    pub ack_max_chars: usize,
    /// When the next scheduled beat is due (ms).
    pub next_due_at: Option<u64>,
}

impl HeartbeatView {
    /// `every` as OpenClaw prints it (`30m`, `disabled`).
    pub fn every_text(&self) -> String {
        self.every
            .map_or("disabled".into(), crate::settings::format_duration)
    }

    /// `status`'s row: `{agentId, enabled, every, everyMs}`.
    pub fn status_row(&self) -> Value {
        json!({
            "agentId": self.agent_id, "enabled": self.every.is_some(), "every": self.every_text(),
            "everyMs": self.every.map(|d| d.as_millis() as u64),
        })
    }

    /// `health`'s per-agent heartbeat (OpenClaw's closed shape).
    pub fn health_row(&self) -> Value {
        let mut row = json!({
            "enabled": self.every.is_some(), "every": self.every_text(),
            "everyMs": self.every.map(|d| d.as_millis() as u64), "prompt": self.prompt,
            "target": self.target, "ackMaxChars": self.ack_max_chars,
        });
        if let Some(m) = &self.model {
            row["model"] = json!(m);
        }
        row
    }
}

pub struct HeartbeatActor {
    /// The actor's span, entered by its handlers.
    span: tracing::Span,
    config: HeartbeatConfig,
    enabled: bool,
    workspace: PathBuf,
    clock: Arc<dyn Clock>,
    announcer: Announcer,
    runs: Addr<RunRegistry>,
    events: Option<Recipient<HeartbeatEvent>>,
    last: Option<Value>,
    in_flight: bool,
    timer: Option<SpawnHandle>,
    /// When the next scheduled beat is due (ms; stored, so a restart keeps
    /// the cadence instead of starting the interval over).
    next_due: Option<u64>,
}

/// What the heartbeat keeps on disk (`meta` tree, key `heartbeat`).
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Stored {
    next_due_at: Option<u64>,
    last: Option<Value>,
}

const STORED_KEY: &str = "heartbeat";

impl HeartbeatActor {
    pub fn new(
        config: HeartbeatConfig,
        workspace: PathBuf,
        clock: Arc<dyn Clock>,
        announcer: Announcer,
        runs: Addr<RunRegistry>,
    ) -> HeartbeatActor {
        HeartbeatActor {
            span: tracing::info_span!("heartbeat"),
            config,
            enabled: true,
            workspace,
            clock,
            announcer,
            runs,
            events: None,
            last: None,
            in_flight: false,
            timer: None,
            next_due: None,
        }
    }

    /// The schedule and last outcome a previous process left.
    fn load(&mut self) {
        let store = &self.announcer.store;
        match store.get::<Stored>(Tree::Meta, STORED_KEY) {
            Ok(Some(s)) => {
                self.next_due = s.next_due_at;
                self.last = s.last;
            }
            Ok(None) => {}
            Err(e) => tracing::warn!(error = %e, "cannot read the heartbeat's schedule"),
        }
    }

    /// Keeps the schedule and the last outcome (flushed with the store's
    /// next flush; a lost write only costs one interval).
    fn save(&self) {
        let stored = Stored {
            next_due_at: self.next_due,
            last: self.last.clone(),
        };
        if let Err(e) = self.announcer.store.put(Tree::Meta, STORED_KEY, &stored) {
            tracing::warn!(error = %e, "cannot store the heartbeat's schedule");
        }
    }

    pub fn with_events(mut self, events: Recipient<HeartbeatEvent>) -> HeartbeatActor {
        self.events = Some(events);
        self
    }

    /// Sets the timer for the next scheduled beat: when it is due (kept
    /// from before, never further than one interval away), or one
    /// interval from now when `fresh` or nothing is due.
    fn arm(&mut self, ctx: &mut Context<Self>, fresh: bool) {
        if let Some(h) = self.timer.take() {
            ctx.cancel_future(h);
        }
        let Some(every) = self.config.every.filter(|_| self.enabled) else {
            return;
        };
        let now = self.clock.now_ms();
        let latest = now.saturating_add(every.as_millis() as u64);
        let due = match self.next_due {
            Some(d) if !fresh => d.min(latest),
            _ => latest,
        };
        if self.next_due != Some(due) {
            self.next_due = Some(due);
            self.save();
        }
        let wait = Duration::from_millis(due.saturating_sub(now));
        self.timer = Some(ctx.run_later(wait, |act, ctx| {
            act.timer = None;
            if let Some(turn) = act.beat("interval") {
                let run = act.launch(turn);
                ctx.spawn(run.map(|_, _, _| ()));
            }
            act.arm(ctx, true);
        }));
    }

    fn emit(&mut self, mut event: Value) {
        event["ts"] = json!(self.clock.now_ms());
        self.last = Some(event.clone());
        self.save();
        if let Some(e) = &self.events {
            e.do_send(HeartbeatEvent(event));
        }
    }

    fn skipped(&mut self, reason: &str) {
        tracing::debug!(reason, "heartbeat skipped");
        self.emit(json!({"status": "skipped", "reason": reason, "durationMs": 0}));
    }

    /// One heartbeat: the checks that cost nothing (None: skipped, the
    /// event says why), then the turn to start.
    fn beat(&mut self, reason: &str) -> Option<Turn> {
        let scheduled = reason == "interval";
        if self.in_flight {
            self.skipped("requests-in-flight");
            return None;
        }
        if scheduled {
            let active = self.config.active_hours.as_ref();
            if active.is_some_and(|a| !heartbeat::in_active_hours(a, self.clock.now_ms())) {
                self.skipped("quiet-hours");
                return None;
            }
        }
        self.in_flight = true;
        Some(Turn {
            workspace: self.workspace.clone(),
            announcer: self.announcer.clone(),
            runs: self.runs.clone(),
            config: self.config.clone(),
            run_id: format!("heartbeat:{}", ulid::Ulid::generate()).into(),
            started: self.clock.now_ms(),
        })
    }

    /// Starts the turn (answered once the main session took the message),
    /// then follows it to its end in the background.
    fn launch(&mut self, turn: Turn) -> ResponseActFuture<Self, Option<String>> {
        Box::pin(
            turn.start()
                .into_actor(self)
                .map(|started, act, ctx| match started {
                    Ok(turn) => {
                        let id = turn.run_id.clone();
                        ctx.spawn(turn.finish().into_actor(act).map(|event, act, _| {
                            act.in_flight = false;
                            act.emit(event);
                        }));
                        Some(id.to_string())
                    }
                    Err(event) => {
                        act.in_flight = false;
                        act.emit(event);
                        None
                    }
                }),
        )
    }
}

/// One heartbeat turn, away from the actor.
struct Turn {
    workspace: PathBuf,
    announcer: Announcer,
    runs: Addr<RunRegistry>,
    config: HeartbeatConfig,
    run_id: RunId,
    started: u64,
}

fn failed(reason: String) -> Value {
    json!({"status": "failed", "reason": reason})
}

impl Turn {
    /// The heartbeat prompt into the main session, unless there is
    /// nothing to do (read off the actor: `HEARTBEAT.md` and the queue of
    /// system events) or the session is busy.
    async fn start(self) -> Result<Turn, Value> {
        let a = &self.announcer;
        let Ok(key) = SessionKey::canonical("main", &a.default_agent, "main") else {
            return Err(failed("no main session".into()));
        };
        // Counted without waking the main session (a beat with nothing to
        // do costs nothing).
        let asked = QueuedSystemEvents { key: key.clone() };
        let queued = a.router.send(asked).await.map_or(0, |e| e.len());
        let path = self.workspace.join("HEARTBEAT.md");
        let worth = tokio::task::spawn_blocking(move || {
            let file = std::fs::read_to_string(path).ok();
            heartbeat::should_run(file.as_deref(), queued)
        })
        .await
        .unwrap_or(false);
        if !worth {
            return Err(
                json!({"status": "skipped", "reason": "empty-heartbeat-file", "durationMs": 0}),
            );
        }
        let busy = self.runs.send(BusySessions).await.unwrap_or_default();
        if busy.contains(key.as_str()) {
            return Err(json!({"status": "skipped", "reason": "requests-in-flight"}));
        }
        let session = match a.router.send(GetSession { key }).await {
            Ok(Ok((s, _))) => s,
            _ => return Err(failed("the main session is unavailable".into())),
        };
        let mut msg = SendChat::text(&self.config.prompt, &self.run_id);
        msg.model = self.config.model.clone();
        msg.kind = RunKind::Heartbeat {
            ack_max_chars: self.config.ack_max_chars,
        };
        match session.send(msg).await {
            Ok(Ok(_)) => Ok(self),
            Ok(Err(e)) => Err(failed(e.to_string())),
            Err(_) => Err(failed("the main session is gone".into())),
        }
    }

    /// Waits for the turn, then delivers what is worth delivering.
    async fn finish(self) -> Value {
        let a = &self.announcer;
        let limit = Duration::from_secs(15 * 60);
        let result = match wait_run(&self.runs, &self.run_id, None, limit).await {
            Waited::Ended(r) => r,
            _ => return failed("the heartbeat turn did not end in time".into()),
        };
        let duration = crate::now_ms().saturating_sub(self.started);
        let text = match result.outcome {
            Outcome::Alert(text) | Outcome::Text(text) => text,
            Outcome::Silent { empty } => {
                let status = if empty { "ok-empty" } else { "ok-token" };
                return json!({"status": status, "durationMs": duration, "runId": self.run_id});
            }
            Outcome::Recorded => {
                return json!({"status": "ok-token", "durationMs": duration, "runId": self.run_id})
            }
            failure => {
                let why = failure.error().unwrap_or(failure.status().as_str());
                let mut e = failed(why.to_string());
                e["durationMs"] = json!(duration);
                return e;
            }
        };
        let preview: String = text.chars().take(200).collect();
        let Some(target) = &self.config.target else {
            return json!({"status": "skipped", "reason": "target-none", "preview": preview,
                "durationMs": duration, "runId": self.run_id});
        };
        let to = match a.resolve(&a.default_agent, target).await {
            Ok(to) => to,
            Err(e) => {
                return json!({"status": "skipped", "reason": "no-route", "message": e,
                "preview": preview, "durationMs": duration})
            }
        };
        let (delivered, status, error) = a.send(&to, &text, &self.run_id).await;
        let mut event = json!({
            "status": if delivered { "sent" } else { "failed" }, "to": to.to, "channel": to.channel,
            "preview": preview, "durationMs": duration, "hasMedia": false, "runId": self.run_id,
            "deliveryStatus": status,
        });
        if let Some(e) = error {
            event["reason"] = json!(e);
        }
        event
    }
}

impl Actor for HeartbeatActor {
    type Context = Context<Self>;
    fn started(&mut self, ctx: &mut Context<Self>) {
        self.load();
        self.arm(ctx, false);
    }
}

impl Handler<RunHeartbeat> for HeartbeatActor {
    type Result = ResponseActFuture<Self, Option<String>>;
    fn handle(&mut self, msg: RunHeartbeat, _: &mut Context<Self>) -> Self::Result {
        let _span = self.span.clone().entered();
        match self.beat(&msg.reason) {
            Some(turn) => self.launch(turn),
            None => Box::pin(actix::fut::ready(None)),
        }
    }
}

impl Handler<LastHeartbeat> for HeartbeatActor {
    type Result = Option<Value>;
    fn handle(&mut self, _: LastHeartbeat, _: &mut Context<Self>) -> Option<Value> {
        let _span = self.span.clone().entered();
        self.last.clone()
    }
}

impl Handler<SetHeartbeats> for HeartbeatActor {
    type Result = bool;
    fn handle(&mut self, msg: SetHeartbeats, ctx: &mut Context<Self>) -> bool {
        let _span = self.span.clone().entered();
        self.enabled = msg.enabled;
        self.arm(ctx, true);
        self.enabled
    }
}

impl Handler<SetHeartbeatConfig> for HeartbeatActor {
    type Result = ();
    fn handle(&mut self, msg: SetHeartbeatConfig, ctx: &mut Context<Self>) {
        let _span = self.span.clone().entered();
        if msg.0 != self.config {
            tracing::info!(every = ?msg.0.every, "heartbeat settings changed");
            self.config = msg.0;
            self.arm(ctx, true);
        }
    }
}

impl Handler<HeartbeatStatus> for HeartbeatActor {
    type Result = MessageResult<HeartbeatStatus>;
    fn handle(&mut self, _: HeartbeatStatus, _: &mut Context<Self>) -> Self::Result {
        let _span = self.span.clone().entered();
        let every = self.config.every.filter(|_| self.enabled);
        let c = &self.config;
        MessageResult(HeartbeatView {
            agent_id: self.announcer.default_agent.clone(),
            every,
            prompt: c.prompt.clone(),
            target: c
                .target
                .as_ref()
                .map_or("none".into(), |t| t.channel.clone()),
            model: c.model.clone(),
            ack_max_chars: c.ack_max_chars,
            next_due_at: self.next_due.filter(|_| every.is_some()),
        })
    }
}
