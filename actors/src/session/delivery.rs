//! The session's delivery contract: what an acknowledged message becomes
//! and how nothing acknowledged is lost or run twice. Accepting a message
//! (its transcript entry, inbox item and run record in one transaction),
//! starting queued turns, ending a run (its record and the removal of its
//! inbox items in one transaction), ending what waited on a reset or a
//! delete, and the steering handshake with the run (`TakeSteers`). The
//! recovery after a stop is `recovery.rs`.

use std::time::Duration;

use actix::prelude::*;
use serde_json::{json, Value};

use super::*;
use crate::run::TakeSteers;
use crate::session::inbox::{self, InboxItem};
use crate::session::queue::{Placement, RunView, TurnPlan};
use crate::session::run_record::RunRecord;
use crate::store::StoreWrite;

/// Message ids this session has seen, with the run that answers each
/// (duplicates are answered from here). The most recent are kept.
#[derive(Debug, Default)]
pub(super) struct RecentIds {
    runs: HashMap<String, String>,
    order: std::collections::VecDeque<String>,
}

impl RecentIds {
    const KEEP: usize = 1000;

    pub(super) fn insert(&mut self, message_id: &str, run_id: &str) {
        if self
            .runs
            .insert(message_id.to_string(), run_id.to_string())
            .is_none()
        {
            self.order.push_back(message_id.to_string());
        }
        while self.order.len() > Self::KEEP {
            if let Some(old) = self.order.pop_front() {
                self.runs.remove(&old);
            }
        }
    }

    pub(super) fn get(&self, message_id: &str) -> Option<&String> {
        self.runs.get(message_id)
    }
}

impl SessionActor {
    /// A message (directives already applied) becomes what `queue.rs`
    /// places it as: a run started now, a steer into the running run, or a
    /// turn to wait for. Its transcript entry, inbox item and run record
    /// (or the alias naming the run that answers it) land in one store
    /// transaction; the reply comes after the flush and names that run.
    pub(super) fn accept(
        &mut self,
        message_id: String,
        mctx: MsgContext,
        images: Vec<Image>,
        overrides: RunOverrides,
        timeout: Option<Duration>,
        ctx: &mut Context<Self>,
    ) -> ResponseFuture<Result<SendAck, TranscriptError>> {
        let store = self.deps.store.clone();
        let placement = self.queue.place(
            &message_id,
            RunView {
                active: self.active.is_some(),
                // An untrusted message waits for a turn of its own.
                steerable: self.steerable().filter(|_| !overrides.untrusted),
            },
        );
        let (run_id, assigned, joinable) = match &placement {
            Placement::Refused => {
                return Box::pin(async move {
                    Ok(SendAck {
                        run_id: message_id,
                        status: SendStatus::Dropped,
                    })
                })
            }
            Placement::Start => (message_id.clone(), true, false),
            Placement::Steer { run_id } | Placement::SteerAndBacklog { run_id } => {
                (run_id.clone(), true, false)
            }
            Placement::Queue {
                run_id, joinable, ..
            } => (run_id.clone(), false, *joinable),
        };
        // A turn that starts now takes the system events waiting for it (a
        // stranger's among them makes it untrusted).
        let (events, drained) = match placement {
            Placement::Start => self.drain_events(overrides.untrusted),
            _ => Default::default(),
        };
        let mut overrides = overrides;
        overrides.untrusted |= events.iter().any(|e| e.untrusted);
        let now = crate::now_ms();
        let item = InboxItem {
            message_id: message_id.clone(),
            run_id: run_id.clone(),
            assigned,
            text: mctx.body_for_agent.clone(),
            // Only a waiting message needs its images again (its turn sends
            // them); a started one has them in its transcript entry, and
            // steering carries text only.
            images: if matches!(placement, Placement::Queue { .. }) {
                images.clone()
            } else {
                Vec::new()
            },
            at_ms: now,
            joinable,
            overrides: overrides.clone(),
            timeout_ms: timeout.map(|t| t.as_millis() as u64),
        };
        // The transcript entry: the run's input when it starts one, else
        // pending (out of the model context) until its turn.
        let mut chat = ChatMessage::user(&mctx.body);
        chat.images = images;
        let mut user = transcript::from_chat(&chat);
        user["timestamp"] = json!(mctx.timestamp_ms);
        if !events.is_empty() {
            let body = system_events::prepend(&events, &mctx.body_for_agent);
            user["bodyForAgent"] = json!(body);
        } else if mctx.body_for_agent != mctx.body {
            user["bodyForAgent"] = json!(mctx.body_for_agent);
        }
        let mut entry = transcript::message_entry(None, user);
        entry["runId"] = json!(run_id);
        entry["messageId"] = json!(message_id);
        if !matches!(placement, Placement::Start) {
            transcript::mark_pending(&mut entry);
        }
        let key = inbox::new_key(&self.key);
        let mut writes = vec![inbox::put(&key, &item)];
        writes.extend(drained.iter().cloned());
        writes.push(if run_id == message_id {
            crate::session::run_record::write(&run_id, &RunRecord::pending(&self.key, now))
        } else {
            crate::session::run_record::write(
                &message_id,
                &RunRecord::alias(&self.key, &run_id, now),
            )
        });
        // steer-backlog: a copy waits for a turn of its own.
        let backlog = matches!(placement, Placement::SteerAndBacklog { .. }).then(|| {
            let id = ulid::Ulid::generate().to_string();
            let copy = InboxItem {
                run_id: id.clone(),
                message_id: id,
                assigned: false,
                ..item.clone()
            };
            (inbox::new_key(&self.key), copy)
        });
        if let Some((k, copy)) = &backlog {
            writes.push(inbox::put(k, copy));
            writes.push(crate::session::run_record::write(
                &copy.run_id,
                &RunRecord::pending(&self.key, now),
            ));
        }
        // The cap pushes the oldest out (`drop: old | summarize`): a run
        // left with none of its messages ends as dropped.
        let dropped = match placement {
            Placement::Queue { .. } => self.queue.overflow(),
            _ => Vec::new(),
        };
        let mut ended: Vec<(String, String)> = Vec::new();
        for (k, old) in &dropped {
            writes.push(inbox::remove(k));
            let still_queued = self.queue.run_ids().filter(|r| *r == old.run_id).count()
                > dropped
                    .iter()
                    .filter(|(_, d)| d.run_id == old.run_id)
                    .count()
                || old.run_id == run_id;
            if still_queued || ended.iter().any(|(r, _)| *r == old.run_id) {
                continue;
            }
            let error = format!(
                "dropped from the queue (cap {}, drop {:?})",
                self.queue.settings.cap, self.queue.settings.drop
            )
            .to_lowercase();
            let record = RunRecord {
                status: "error".into(),
                ended_at: now,
                error: Some(error.clone()),
                stop_reason: "error".into(),
                ..RunRecord::pending(&self.key, old.at_ms)
            };
            writes.push(crate::session::run_record::write(&old.run_id, &record));
            ended.push((old.run_id.clone(), error));
        }
        if let Err(e) = self.commit(vec![entry], writes) {
            self.undrain(events, &drained);
            return Box::pin(async move { Err(e) });
        }
        self.seen.insert(&message_id, &run_id);
        self.forward(RunEvent::Queued {
            run_id: run_id.clone(),
            message_id: message_id.clone(),
        });
        for (run, error) in ended {
            self.forward(RunEvent::Failed {
                run_id: run,
                error,
                kind: FailureKind::Dropped,
            });
        }
        let status = match placement {
            Placement::Start => {
                self.start_run(run_id.clone(), overrides, timeout, vec![key], ctx);
                SendStatus::Started
            }
            Placement::Steer { .. } | Placement::SteerAndBacklog { .. } => {
                if let Some(a) = self.active.as_mut() {
                    a.steers.push_back(item.text);
                    a.items.push(key);
                }
                if let Some((k, copy)) = backlog {
                    self.forward(RunEvent::Queued {
                        run_id: copy.run_id.clone(),
                        message_id: copy.message_id.clone(),
                    });
                    self.queue.push(k, copy);
                }
                SendStatus::Steered
            }
            Placement::Queue { interrupt, .. } => {
                self.queue.push(key, item);
                if interrupt {
                    self.abort_active();
                }
                if run_id == message_id && self.queue.len() == 1 && interrupt {
                    // Nothing waits before it: it runs as soon as the aborted run ended.
                    SendStatus::Started
                } else {
                    SendStatus::Queued
                }
            }
            Placement::Refused => SendStatus::Dropped,
        };
        if self.active.is_none() {
            self.next_turn(ctx);
        }
        Box::pin(async move {
            store.flush().await?;
            Ok(SendAck { run_id, status })
        })
    }

    /// When the session is free: the next queued turn, now or after the
    /// debounce of a collected run.
    pub(super) fn next_turn(&mut self, ctx: &mut Context<Self>) {
        if self.active.is_some() {
            return;
        }
        match self.queue.next_turn(crate::now_ms()) {
            Some(Ok(plan)) => self.begin(plan, ctx),
            Some(Err(wait)) if !self.check_scheduled => {
                self.check_scheduled = true;
                ctx.run_later(wait, |act, ctx| {
                    act.check_scheduled = false;
                    act.next_turn(ctx);
                });
            }
            _ => {}
        }
    }

    /// Starts a queued turn: its input (one message, or several coalesced)
    /// is stored with the messages it delivers, which are then assigned to
    /// the run, in one store transaction.
    pub(super) fn begin(&mut self, plan: TurnPlan, ctx: &mut Context<Self>) {
        let TurnPlan {
            run_id,
            text,
            images,
            items,
            overrides,
            timeout_ms,
        } = plan;
        let mut chat = ChatMessage::user(&text);
        chat.images = images;
        let mut message = transcript::from_chat(&chat);
        let (events, drained) = self.drain_events(overrides.untrusted);
        let mut overrides = overrides;
        overrides.untrusted |= events.iter().any(|e| e.untrusted);
        if !events.is_empty() {
            message["bodyForAgent"] = json!(system_events::prepend(&events, &text));
        }
        let mut input = transcript::message_entry(None, message);
        input["runId"] = json!(run_id);
        input["messageId"] = json!(run_id);
        input["delivers"] = json!(items
            .iter()
            .map(|(_, i)| i.message_id.as_str())
            .collect::<Vec<_>>());
        let writes = drained
            .iter()
            .cloned()
            .chain(items.iter().map(|(key, item)| {
                // Assigned: what it says is in the turn's input now.
                let item = InboxItem {
                    assigned: true,
                    images: Vec::new(),
                    ..item.clone()
                };
                inbox::put(key, &item)
            }))
            .collect();
        if let Err(e) = self.commit(vec![input], writes) {
            self.undrain(events, &drained);
            // The messages stay queued in the inbox and run after a restart.
            tracing::error!(session_key = %self.key, error = %e, "cannot store the next turn");
            self.forward(RunEvent::Failed {
                run_id,
                error: e.to_string(),
                kind: FailureKind::Store,
            });
            return;
        }
        let keys = items.into_iter().map(|(k, _)| k).collect();
        self.start_run(
            run_id,
            overrides,
            timeout_ms.map(Duration::from_millis),
            keys,
            ctx,
        );
    }

    /// A run that never started (aborted while waiting, or no lane) still ends cleanly.
    pub(super) fn end_without_run(
        &mut self,
        run_id: &str,
        error: Option<String>,
        ctx: &mut Context<Self>,
    ) {
        let event = match error {
            Some(error) => RunEvent::Failed {
                run_id: run_id.to_string(),
                error,
                kind: FailureKind::Provider(None),
            },
            None => RunEvent::Aborted {
                run_id: run_id.to_string(),
                text: String::new(),
            },
        };
        self.finish(event, ctx);
    }

    /// The active run's id while it can take a steered message.
    pub(super) fn steerable(&self) -> Option<&str> {
        self.active
            .as_ref()
            .filter(|a| !a.aborted && !a.closing && !a.compaction)
            .map(|a| a.run_id.as_str())
    }

    /// Whether `run_id` is queued or running here.
    pub(super) fn is_live(&self, run_id: &str) -> bool {
        self.active.as_ref().is_some_and(|a| a.run_id == run_id)
            || self.queue.run_ids().any(|r| r == run_id)
    }

    /// The record of how a run ended (`agent.wait`, also after a restart).
    pub(super) fn end_record(&self, event: &RunEvent) -> Option<(String, RunRecord)> {
        let status = event.end_status()?;
        let (run_id, error, stop) = match event {
            RunEvent::Final {
                run_id,
                stop_reason,
                ..
            } => (run_id, None, stop_reason.as_str()),
            RunEvent::Failed { run_id, error, .. } => (run_id, Some(error), "error"),
            RunEvent::Aborted { run_id, .. } => (run_id, None, "aborted"),
            _ => return None,
        };
        let started_at = self
            .active
            .as_ref()
            .filter(|a| &a.run_id == run_id)
            .map_or_else(crate::now_ms, |a| a.started_at);
        let record = RunRecord {
            session_key: self.key.clone(),
            status: status.as_str().to_string(),
            started_at,
            ended_at: crate::now_ms(),
            error: error.cloned(),
            stop_reason: stop.to_string(),
            answered_by: None,
        };
        Some((run_id.clone(), record))
    }

    /// A finished run's bookkeeping, in one store transaction: the run
    /// record, its messages out of the inbox, the usage entry; then the
    /// entry's counters and abort flag.
    pub(super) fn record_end(&mut self, event: &RunEvent) {
        let mut writes = Vec::new();
        if let Some((run_id, record)) = self.end_record(event) {
            writes.push(crate::session::run_record::write(&run_id, &record));
        }
        if let Some(a) = self.active.as_ref() {
            writes.extend(a.items.iter().map(|k| inbox::remove(k)));
        }
        let mut entries = Vec::new();
        let mut changed = true;
        match event {
            RunEvent::Final {
                run_id,
                usage,
                outcome,
                ..
            } => {
                let total = usage.input + usage.output + usage.cache_read + usage.cache_write;
                self.entry.input_tokens += usage.input;
                self.entry.output_tokens += usage.output;
                self.entry.cache_read += usage.cache_read;
                self.entry.cache_write += usage.cache_write;
                self.account_context(usage);
                if let Some(w) = self.record_usage(run_id, usage) {
                    writes.push(w);
                }
                self.entry.aborted_last_run = false;
                if !outcome.text().is_empty() {
                    self.entry.last_message_preview = Some(preview(outcome.text()));
                }
                entries.push(json!({
                    "type": "custom", "customType": "usage", "id": ulid::Ulid::generate().to_string(),
                    "timestamp": crate::now_ms(),
                    "data": { "runId": run_id, "provider": self.entry.model_provider, "model": self.entry.model,
                              "input": usage.input, "output": usage.output, "cacheRead": usage.cache_read,
                              "cacheWrite": usage.cache_write, "totalTokens": total },
                }));
            }
            RunEvent::Aborted { .. } => self.entry.aborted_last_run = true,
            _ => changed = false,
        }
        if let Some(last) = self.last_run(event) {
            self.entry.last_run = Some(last);
            changed = true;
        }
        if let Err(e) = self.commit(entries, writes) {
            tracing::error!(session_key = %self.key, error = %e, "cannot store the end of a run");
        }
        if changed {
            if let Err(e) = self.save_entry() {
                tracing::error!(session_key = %self.key, error = %e, "cannot store the session entry");
            }
        }
    }

    /// The run that `event` ends, when it is this session's active run.
    fn last_run(&self, event: &RunEvent) -> Option<LastRun> {
        let a = self.active.as_ref()?;
        let (status, error) = match event {
            RunEvent::Final { run_id, .. } if *run_id == a.run_id => (Settled::Done, None),
            RunEvent::Failed { run_id, error, .. } if *run_id == a.run_id => {
                (Settled::Failed, Some(error.clone()))
            }
            RunEvent::Aborted { run_id, .. } if *run_id == a.run_id => (Settled::Killed, None),
            _ => return None,
        };
        Some(LastRun {
            run_id: a.run_id.clone(),
            status: status.as_str().to_string(),
            started_at: a.started_at,
            ended_at: crate::now_ms(),
            error,
        })
    }

    /// Ends the active run (whatever way it ended): recorded, flushed, then
    /// announced; the next turn starts.
    pub(super) fn finish(&mut self, event: RunEvent, ctx: &mut Context<Self>) {
        self.record_end(&event);
        self.announce_to_parent(&event);
        let held = self
            .active
            .as_mut()
            .map(|a| std::mem::take(&mut a.reasoning))
            .unwrap_or_default();
        let event = self.with_usage_footer(event);
        // The run's steps are durable before its end is announced.
        let store = self.deps.store.clone();
        ctx.spawn(async move { store.flush().await }.into_actor(self).map(move |flushed, act, ctx| {
            if let Err(e) = flushed {
                tracing::error!(session_key = %act.key, error = %e, "store flush failed at run end");
            }
            if !held.is_empty() {
                if let Some(run_id) = run_id_of(&event) {
                    act.forward(RunEvent::Thinking { run_id: run_id.to_string(), delta: held });
                }
            }
            act.forward(event);
            if let Some(a) = act.active.take() {
                drop(a.permit);
            }
            act.next_turn(ctx);
        }));
    }

    /// Ends queued runs that will never start (reset, delete): recorded as
    /// aborted with `why`, their messages out of the inbox; the active run
    /// (aborted by the caller) is recorded too, and announced when
    /// `announce_active` (its own end will not reach a stopped session).
    /// Returns the writes and the events to send once they are durable.
    pub(super) fn end_queued(
        &mut self,
        why: &str,
        announce_active: bool,
    ) -> (Vec<StoreWrite>, Vec<RunEvent>) {
        let mut writes = Vec::new();
        let mut events = Vec::new();
        let mut ended: Vec<String> = Vec::new();
        for (key, item) in self.queue.take_all() {
            writes.push(inbox::remove(&key));
            if !ended.contains(&item.run_id) {
                let now = crate::now_ms();
                writes.push(crate::session::run_record::write(
                    &item.run_id,
                    &RunRecord {
                        session_key: self.key.clone(),
                        status: "aborted".into(),
                        started_at: now,
                        ended_at: now,
                        error: Some(why.to_string()),
                        stop_reason: "aborted".into(),
                        answered_by: None,
                    },
                ));
                events.push(RunEvent::Aborted {
                    run_id: item.run_id.clone(),
                    text: String::new(),
                });
                ended.push(item.run_id);
            }
        }
        if let Some(a) = self.active.as_ref() {
            writes.extend(a.items.iter().map(|k| inbox::remove(k)));
            let now = crate::now_ms();
            writes.push(crate::session::run_record::write(
                &a.run_id,
                &RunRecord {
                    session_key: self.key.clone(),
                    status: "aborted".into(),
                    started_at: a.started_at,
                    ended_at: now,
                    error: Some(why.to_string()),
                    stop_reason: "aborted".into(),
                    answered_by: None,
                },
            ));
            if announce_active {
                events.push(RunEvent::Aborted {
                    run_id: a.run_id.clone(),
                    text: String::new(),
                });
            }
        }
        (writes, events)
    }
}

impl Handler<TakeSteers> for SessionActor {
    type Result = MessageResult<TakeSteers>;
    fn handle(&mut self, msg: TakeSteers, _: &mut Context<Self>) -> Self::Result {
        let _span = self.span.clone().entered();
        let texts = match self.active.as_mut() {
            Some(a) if a.run_id == msg.run_id && !a.aborted => {
                let texts: Vec<String> = a.steers.drain(..).collect();
                if texts.is_empty() && msg.closing {
                    // From now on messages queue instead of steering.
                    a.closing = true;
                }
                texts
            }
            _ => Vec::new(),
        };
        MessageResult(texts)
    }
}

impl Handler<CancelQueuedRun> for SessionActor {
    type Result = bool;
    fn handle(&mut self, msg: CancelQueuedRun, _: &mut Context<Self>) -> bool {
        let _span = self.span.clone().entered();
        self.last_activity = Instant::now();
        let gone = self.queue.remove_run(&msg.run_id);
        let Some((_, first)) = gone.first() else {
            return false;
        };
        let now = crate::now_ms();
        let mut writes: Vec<StoreWrite> = gone.iter().map(|(k, _)| inbox::remove(k)).collect();
        writes.push(crate::session::run_record::write(
            &msg.run_id,
            &RunRecord {
                status: "aborted".into(),
                ended_at: now,
                stop_reason: "aborted".into(),
                ..RunRecord::pending(&self.key, first.at_ms)
            },
        ));
        if let Err(e) = self.deps.store.commit(&writes) {
            tracing::error!(session_key = %self.key, error = %e, "cannot cancel a queued run");
        }
        self.forward(RunEvent::Aborted {
            run_id: msg.run_id,
            text: String::new(),
        });
        true
    }
}

impl Handler<GetReply> for SessionActor {
    type Result = Result<Option<String>, TranscriptError>;
    fn handle(&mut self, msg: GetReply, _: &mut Context<Self>) -> Self::Result {
        let _span = self.span.clone().entered();
        let entries = transcript::entries(&self.deps.store, &self.entry.session_id)?;
        let want = msg.run_id.as_deref().map(transcript::reply_key);
        let key = |v: &Value| {
            v.get("idempotencyKey")
                .and_then(Value::as_str)
                .map(str::to_string)
        };
        let found = entries.iter().rev().find(|e| match &want {
            Some(w) => key(e).or_else(|| e.get("message").and_then(key)).as_deref() == Some(w),
            None => matches!(
                transcript::Entry::of(e),
                transcript::Entry::Message {
                    role: transcript::Role::Assistant,
                    ..
                }
            ),
        });
        Ok(found.and_then(transcript::message_text))
    }
}
