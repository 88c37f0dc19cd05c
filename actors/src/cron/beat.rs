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
use serde_json::Value;

use super::clock::Clock;
use super::exec::Announcer;
use super::heartbeat;
pub use super::heartbeat::{Beat, BeatStatus, HeartbeatConfig, HeartbeatHealth, HeartbeatView};
pub use super::messages::RunHeartbeat;
pub use super::messages::{
    HeartbeatEvent, HeartbeatStatus, LastHeartbeat, SetHeartbeatConfig, SetHeartbeats,
};
use crate::inbound::SessionKey;
use crate::router::QueuedSystemEvents;
use crate::run::{Outcome, RunKind};
use crate::runs::{wait_run, BusySessions, RunRegistry, Waited};
use crate::session::SendChat;
use crate::store::Tree;

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
    last: Option<Beat>,
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
    /// Read leniently: a last beat this version cannot read is dropped,
    /// never the schedule.
    #[serde(default, deserialize_with = "lenient")]
    last: Option<Beat>,
}

fn lenient<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Beat>, D::Error> {
    let v = Value::deserialize(d)?;
    Ok(serde_json::from_value(v).ok())
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

    fn emit(&mut self, mut event: Beat) {
        event.ts = self.clock.now_ms();
        self.last = Some(event.clone());
        self.save();
        if let Some(e) = &self.events {
            e.do_send(HeartbeatEvent { beat: event });
        }
    }

    fn skipped(&mut self, reason: &str) {
        tracing::debug!(reason, "heartbeat skipped");
        self.emit(Beat {
            duration_ms: Some(0),
            ..Beat::skipped(reason)
        });
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

impl Turn {
    /// The heartbeat prompt into the main session, unless there is
    /// nothing to do (read off the actor: `HEARTBEAT.md` and the queue of
    /// system events) or the session is busy.
    async fn start(self) -> Result<Turn, Beat> {
        let a = &self.announcer;
        let Ok(key) = SessionKey::canonical("main", &a.default_agent, &a.main_key) else {
            return Err(Beat::failed("no main session"));
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
            return Err(Beat {
                duration_ms: Some(0),
                ..Beat::skipped("empty-heartbeat-file")
            });
        }
        let busy = self.runs.send(BusySessions).await.unwrap_or_default();
        if busy.contains(key.as_str()) {
            return Err(Beat::skipped("requests-in-flight"));
        }
        let mut msg = SendChat::text(&self.config.prompt, &self.run_id);
        msg.model = self.config.model.clone();
        msg.kind = RunKind::Heartbeat {
            ack_max_chars: self.config.ack_max_chars,
        };
        match crate::router::deliver(&a.router, key, msg).await {
            Ok(_) => Ok(self),
            Err(e) => Err(Beat::failed(e.to_string())),
        }
    }

    /// The turn's reply when it has one worth delivering, else how the
    /// beat ended.
    async fn reply(&self) -> Result<String, Beat> {
        let limit = Duration::from_secs(15 * 60);
        let result = match wait_run(&self.runs, &self.run_id, None, limit).await {
            Waited::Ended(r) => r,
            _ => return Err(Beat::failed("the heartbeat turn did not end in time")),
        };
        let duration_ms = Some(crate::now_ms().saturating_sub(self.started));
        let run_id = Some(self.run_id.clone());
        let quiet = |status| Beat {
            status,
            duration_ms,
            run_id: run_id.clone(),
            ..Beat::default()
        };
        match result.outcome {
            Outcome::Alert(text) | Outcome::Text(text) => Ok(text),
            Outcome::Silent { empty: true } => Err(quiet(BeatStatus::OkEmpty)),
            Outcome::Silent { empty: false } | Outcome::Recorded => Err(quiet(BeatStatus::OkToken)),
            failure => {
                let why = failure.error().unwrap_or(failure.status().as_str());
                Err(Beat {
                    duration_ms,
                    ..Beat::failed(why)
                })
            }
        }
    }

    /// Waits for the turn, then delivers what is worth delivering.
    async fn finish(self) -> Beat {
        let a = &self.announcer;
        let text = match self.reply().await {
            Ok(text) => text,
            Err(beat) => return beat,
        };
        let duration = Some(crate::now_ms().saturating_sub(self.started));
        let run_id = Some(self.run_id.clone());
        let preview = Some(text.chars().take(200).collect());
        let Some(target) = &self.config.target else {
            return Beat {
                preview,
                duration_ms: duration,
                run_id,
                ..Beat::skipped("target-none")
            };
        };
        let to = match a.resolve(&a.default_agent, target).await {
            Ok(to) => to,
            Err(e) => {
                return Beat {
                    message: Some(e.to_string()),
                    preview,
                    duration_ms: duration,
                    ..Beat::skipped("no-route")
                }
            }
        };
        let (delivered, status, error) = a.send(&to, &text, &self.run_id).await;
        Beat {
            status: if delivered {
                BeatStatus::Sent
            } else {
                BeatStatus::Failed
            },
            reason: error,
            to: Some(to.to.clone()),
            channel: Some(to.channel.clone()),
            preview,
            duration_ms: duration,
            has_media: Some(false),
            run_id,
            delivery_status: Some(status.to_string()),
            ..Beat::default()
        }
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
    type Result = Option<Beat>;
    fn handle(&mut self, _: LastHeartbeat, _: &mut Context<Self>) -> Option<Beat> {
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
        if msg.config != self.config {
            tracing::info!(every = ?msg.config.every, "heartbeat settings changed");
            self.config = msg.config;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_beat_is_openclaws_event_and_an_unreadable_stored_one_keeps_the_schedule() {
        let b = Beat {
            preview: Some("hi".into()),
            duration_ms: Some(5),
            ts: 7,
            ..Beat::skipped("target-none")
        };
        assert_eq!(
            serde_json::to_value(&b).unwrap(),
            serde_json::json!({"status": "skipped", "reason": "target-none",
                "preview": "hi", "durationMs": 5, "ts": 7})
        );
        let ok = Beat {
            status: BeatStatus::OkToken,
            ..Beat::default()
        };
        assert_eq!(serde_json::to_value(&ok).unwrap()["status"], "ok-token");
        // A beat written before it was typed reads back; one this version
        // cannot read is dropped, the schedule kept.
        let s: Stored = serde_json::from_value(serde_json::json!({"nextDueAt": 9,
            "last": {"status": "sent", "to": "42", "channel": "telegram", "hasMedia": false,
                "deliveryStatus": "delivered", "durationMs": 3, "runId": "heartbeat:1", "ts": 4}}))
        .unwrap();
        assert_eq!(s.last.as_ref().unwrap().status, BeatStatus::Sent);
        assert_eq!(s.last.unwrap().to.as_deref(), Some("42"));
        let s: Stored =
            serde_json::from_value(serde_json::json!({"nextDueAt": 9, "last": {"status": 3}}))
                .unwrap();
        assert_eq!((s.next_due_at, s.last), (Some(9), None));
    }
}
