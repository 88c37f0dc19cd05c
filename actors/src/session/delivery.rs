//! The session's delivery contract: what an acknowledged message becomes
//! and how nothing acknowledged is lost or run twice. Accepting a message
//! (its transcript entry, inbox item and run record in one transaction),
//! starting queued turns, ending a run (its record and the removal of its
//! inbox items in one transaction), ending what waited on a reset or a
//! delete, and the steering handshake with the run (`TakeSteers`). The
//! recovery after a stop is `recovery.rs`.

use std::time::Duration;

use actix::prelude::*;
use serde_json::Value;

use super::*;
use crate::run::TakeSteers;
use crate::session::queue::{Placement, TurnPlan};
use crate::session::state::{Effect, Incoming, LiveIds, Next, SessionState};
use crate::transcript::build;

impl SessionActor {
    /// A message (directives already applied) becomes what the state
    /// places it as: a run started now, a steer into the running run, or a
    /// turn to wait for. Its transcript entry, inbox item and run record
    /// (or the alias naming the run that answers it) land in one store
    /// transaction; the reply comes after the flush and names that run.
    pub(super) fn accept(
        &mut self,
        mctx: MsgContext,
        m: Incoming,
        ctx: &mut Context<Self>,
    ) -> ResponseFuture<Result<SendAck, TranscriptError>> {
        let placement = self.state.placement(&m.message_id, m.overrides.untrusted);
        if placement == Placement::Refused {
            let run_id = m.message_id;
            let status = SendStatus::Dropped;
            return Box::pin(async move {
                Ok(SendAck {
                    run_id: run_id.into(),
                    status,
                })
            });
        }
        // A turn that starts now takes the system events waiting for it (a
        // stranger's among them makes it untrusted).
        let (events, drained) = match placement {
            Placement::Start => self.drain_events(m.overrides.untrusted),
            _ => Default::default(),
        };
        let mut m = m;
        m.overrides.untrusted |= events.iter().any(|e| e.untrusted);
        let starts = placement == Placement::Start;
        let (images, message_id) = (m.images.clone(), m.message_id.clone());
        let untrusted = m.overrides.untrusted;
        let mut admitted = self
            .state
            .admit(placement, m, crate::now_ms(), &mut LiveIds);
        admitted.writes.extend(drained.iter().cloned());
        let ids = (admitted.run_id.as_str(), message_id.as_str());
        let entry = accepted_entry(&mctx, images, &events, ids, starts, untrusted);
        let writes = std::mem::take(&mut admitted.writes);
        if let Err(e) = self.commit(vec![entry], writes) {
            self.undrain(events, &drained);
            return Box::pin(async move { Err(e) });
        }
        let run_id = admitted.run_id.clone();
        let (status, effects) = self.state.place(admitted, crate::now_ms());
        self.apply(effects, ctx);
        let store = self.deps.store.clone();
        Box::pin(async move {
            store.flush().await?;
            Ok(SendAck { run_id, status })
        })
    }

    /// Does what a transition of the state said, in order.
    pub(super) fn apply(&mut self, effects: Vec<Effect>, ctx: &mut Context<Self>) {
        for effect in effects {
            match effect {
                Effect::Emit(event) => self.forward(event),
                Effect::Launch { run_id } => self.start_run(run_id, ctx),
                Effect::Abort => self.abort_run(),
                Effect::NextTurn => self.next_turn(ctx),
            }
        }
    }

    /// When the session is free: the next queued turn, now or after the
    /// debounce of a collected run.
    pub(super) fn next_turn(&mut self, ctx: &mut Context<Self>) {
        match self.state.next_turn(crate::now_ms()) {
            Next::Begin(plan) => self.begin(*plan, ctx),
            Next::Wait(wait) => {
                ctx.run_later(wait, |act, ctx| {
                    act.state.check_due();
                    act.next_turn(ctx);
                });
            }
            Next::Idle => {}
        }
    }

    /// Starts a queued turn: its input (one message, or several coalesced)
    /// is stored with the messages it delivers, which are then assigned to
    /// the run, in one store transaction.
    pub(super) fn begin(&mut self, plan: TurnPlan, ctx: &mut Context<Self>) {
        let mut chat = ChatMessage::user(&plan.text);
        chat.images = plan.images.clone();
        let (events, drained) = self.drain_events(plan.overrides.untrusted);
        let body_for_agent =
            (!events.is_empty()).then(|| system_events::prepend(&events, &plan.text));
        let delivers: Vec<&str> = plan
            .items
            .iter()
            .map(|(_, i)| i.message_id.as_str())
            .collect();
        let input = build::turn_input(&chat, body_for_agent, &plan.run_id, &delivers);
        let writes = drained
            .iter()
            .cloned()
            .chain(SessionState::assign(&plan))
            .collect();
        if let Err(e) = self.commit(vec![input], writes) {
            self.undrain(events, &drained);
            // The messages stay queued in the inbox and run after a restart.
            tracing::error!(session_key = %self.key, error = %e, "cannot store the next turn");
            self.forward(RunEvent::Failed {
                run_id: plan.run_id,
                error: e.to_string(),
                kind: FailureKind::Store,
            });
            return;
        }
        let mut overrides = plan.overrides;
        overrides.untrusted |= events.iter().any(|e| e.untrusted);
        let keys = plan.items.into_iter().map(|(k, _)| k).collect();
        let timeout = plan.timeout_ms.map(Duration::from_millis);
        let now = crate::now_ms();
        let launch = self.state.start(plan.run_id, overrides, timeout, keys, now);
        self.apply(vec![launch], ctx);
    }

    /// A run that never started (aborted while waiting, or no lane) still ends cleanly.
    pub(super) fn end_without_run(
        &mut self,
        run_id: &str,
        error: Option<String>,
        ctx: &mut Context<Self>,
    ) {
        if self.state.run(run_id).is_none() {
            // Cut off by a reset: the session has moved on; only say so.
            return self.forward(RunEvent::Aborted {
                run_id: run_id.into(),
                text: String::new(),
            });
        }
        let event = match error {
            Some(error) => RunEvent::Failed {
                run_id: run_id.into(),
                error,
                kind: FailureKind::Provider(None),
            },
            None => RunEvent::Aborted {
                run_id: run_id.into(),
                text: String::new(),
            },
        };
        self.finish(event, ctx);
    }

    /// A finished run's bookkeeping, in one store transaction: the run
    /// record, its messages out of the inbox, the usage entry; then the
    /// entry's counters and abort flag.
    pub(super) fn record_end(&mut self, event: &RunEvent) {
        let now = crate::now_ms();
        let mut writes = self.state.end_writes(event, now);
        let mut entries = Vec::new();
        let mut changed = true;
        match event {
            RunEvent::Final {
                run_id,
                usage,
                outcome,
                ..
            } => {
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
                let (provider, model) = (&self.entry.model_provider, &self.entry.model);
                entries.push(build::usage(
                    run_id,
                    provider.as_deref(),
                    model.as_deref(),
                    usage,
                ));
            }
            RunEvent::Aborted { .. } => self.entry.aborted_last_run = true,
            _ => changed = false,
        }
        if let Some(last) = self.state.last_run(event, now) {
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

    /// Ends the active run (whatever way it ended): recorded, flushed, then
    /// announced; the next turn starts.
    pub(super) fn finish(&mut self, event: RunEvent, ctx: &mut Context<Self>) {
        self.record_end(&event);
        self.announce_to_parent(&event);
        let held = self
            .state
            .active_mut()
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
                    act.forward(RunEvent::Thinking { run_id: run_id.into(), delta: held });
                }
            }
            let ended = run_id_of(&event).is_some_and(|r| act.state.run(r).is_some());
            act.forward(event);
            if ended {
                act.end_active();
            }
            act.next_turn(ctx);
        }));
    }
}

impl Handler<TakeSteers> for SessionActor {
    type Result = MessageResult<TakeSteers>;
    fn handle(&mut self, msg: TakeSteers, _: &mut Context<Self>) -> Self::Result {
        let _span = self.span.clone().entered();
        // Closing with none waiting: from now on messages queue instead.
        let texts = self.state.take_steers(&msg.run_id, msg.closing);
        MessageResult(texts)
    }
}

impl Handler<CancelQueuedRun> for SessionActor {
    type Result = bool;
    fn handle(&mut self, msg: CancelQueuedRun, _: &mut Context<Self>) -> bool {
        let _span = self.span.clone().entered();
        self.last_activity = Instant::now();
        let Some((writes, event)) = self.state.cancel_queued(&msg.run_id, crate::now_ms()) else {
            return false;
        };
        if let Err(e) = self.deps.store.commit(&writes) {
            tracing::error!(session_key = %self.key, error = %e, "cannot cancel a queued run");
        }
        self.forward(event);
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

/// A message's transcript entry (`ids`: its run, its own id): the run's
/// input when it starts one, else pending until its turn; with the system
/// events its turn drained. A stranger's text is marked as outside data to
/// whoever reads the transcript later (`chat.history`, MCP clients).
fn accepted_entry(
    mctx: &MsgContext,
    images: Vec<crate::provider::Image>,
    events: &[system_events::SystemEvent],
    ids: (&str, &str),
    starts: bool,
    untrusted: bool,
) -> Value {
    let mut chat = ChatMessage::user(&mctx.body);
    chat.images = images;
    let body_for_agent = match events.is_empty() {
        false => Some(system_events::prepend(events, &mctx.body_for_agent)),
        true => (mctx.body_for_agent != mctx.body).then(|| mctx.body_for_agent.clone()),
    };
    build::accepted(build::Accepted {
        chat: &chat,
        timestamp_ms: mctx.timestamp_ms,
        media: &mctx.media,
        body_for_agent,
        run_id: ids.0,
        message_id: ids.1,
        pending: !starts,
        untrusted,
    })
}
