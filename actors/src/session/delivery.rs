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
use crate::ids::RunId;
use crate::run::TakeSteers;
use crate::session::history::History;
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
            let ack = SendAck::of(&self.entry, m.message_id.into(), SendStatus::Dropped);
            return commands::acked(None, ack);
        }
        // A turn that starts now takes the system events waiting for it (a
        // stranger's among them makes it untrusted).
        let (events, drained) = match placement {
            Placement::Start => {
                let (store, key) = (&self.deps.store, &self.key);
                self.system_events.drain(store, key, m.overrides.untrusted)
            }
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
            self.system_events.undrain(events, &drained);
            return Box::pin(async move { Err(e) });
        }
        let run_id = admitted.run_id.clone();
        let (status, effects) = self.state.place(admitted, crate::now_ms());
        self.apply(effects, ctx);
        let ack = SendAck::of(&self.entry, run_id, status);
        commands::acked(Some(self.deps.store.clone()), ack)
    }

    /// Does what a transition of the state said, in order.
    pub(super) fn apply(&mut self, effects: Vec<Effect>, ctx: &mut Context<Self>) {
        for effect in effects {
            match effect {
                Effect::Emit(event) => self.forward(event),
                Effect::Launch { run_id } => self.start_run(run_id, ctx),
                Effect::Abort => self.running.abort(),
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
        // People see what was typed; the model gets the text with its
        // envelope (and the queue's framing of several messages).
        let shown = plan.shown();
        let mut chat = ChatMessage::user(&shown);
        chat.images = plan.images.clone();
        let (store, key) = (&self.deps.store, &self.key);
        let (events, drained) = self
            .system_events
            .drain(store, key, plan.overrides.untrusted);
        let body_for_agent = match events.is_empty() {
            false => Some(system_events::prepend(&events, &plan.text)),
            true => (shown != plan.text).then(|| plan.text.clone()),
        };
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
            self.system_events.undrain(events, &drained);
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
        if !self.state.holds(run_id) {
            // Cut off by a reset, which announced its end: moved on.
            return;
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

    /// Ends the active run (whatever way it ended): its record, its
    /// messages out of the inbox, its usage and the entry's counters in one
    /// store transaction, flushed, then announced; the next turn starts.
    pub(super) fn finish(&mut self, event: RunEvent, ctx: &mut Context<Self>) {
        let agent = self.view().agent().to_string();
        let parts = Settling {
            key: &self.key,
            entry: &mut self.entry,
            history: &mut self.history,
            state: &self.state,
            agent: &agent,
        };
        let (entries, writes) = parts.settle(&event, crate::now_ms());
        if let Err(e) = self.commit(entries, writes) {
            tracing::error!(session_key = %self.key, error = %e, "cannot store the end of a run");
        }
        if let Err(e) = self.save_entry() {
            tracing::error!(session_key = %self.key, error = %e, "cannot store the session entry");
        }
        if let Some(done) = self.view().subagent_done(&event) {
            if let Some(to) = self.deps.subagent_done.get() {
                to.do_send(done);
            }
        }
        let held = self.state.take_reasoning();
        let event = self.view().with_usage_footer(event);
        // The run's steps are durable before its end is announced.
        let store = self.deps.store.clone();
        ctx.spawn(async move { store.flush().await }.into_actor(self).map(move |flushed, act, ctx| {
            if let Err(e) = flushed {
                tracing::error!(session_key = %act.key, error = %e, "store flush failed at run end");
            }
            let run_id = run_id_of(&event).map(RunId::from);
            if let Some(run_id) = run_id.clone().filter(|_| !held.is_empty()) {
                act.forward(RunEvent::Thinking { run_id, delta: held });
            }
            let ended = run_id.is_some_and(|r| act.state.holds(&r));
            act.forward(event);
            if ended {
                act.running.clear();
                act.state.end();
            }
            act.next_turn(ctx);
        }));
    }
}

/// What a run's end changes besides the state: the entry's counters and
/// last run, and the context's size.
struct Settling<'a> {
    key: &'a crate::ids::SessionKey,
    entry: &'a mut SessionEntry,
    history: &'a mut History,
    state: &'a SessionState,
    agent: &'a str,
}

impl Settling<'_> {
    /// The transcript entries and writes that record `event` as its run's
    /// end (the entry changed in place).
    fn settle(self, event: &RunEvent, now: u64) -> (Vec<Value>, Vec<StoreWrite>) {
        let mut writes = self.state.end_writes(event, now);
        let mut entries = Vec::new();
        let e = self.entry;
        let ended = super::runs::run_id_of(event).and_then(|r| self.state.run(r));
        if let Some(run) = ended {
            writes.extend(super::tally::row(
                e,
                (self.key, self.agent),
                run,
                event,
                now,
            ));
        }
        match event {
            RunEvent::Final {
                run_id,
                usage,
                outcome,
                ..
            } => {
                e.input_tokens += usage.input;
                e.output_tokens += usage.output;
                e.cache_read += usage.cache_read;
                e.cache_write += usage.cache_write;
                let counted = self.history.account(usage, std::time::Instant::now());
                (e.total_tokens, e.total_tokens_fresh) = (counted.tokens, counted.fresh);
                e.aborted_last_run = false;
                if !outcome.text().is_empty() {
                    e.last_message_preview = Some(preview(outcome.text()));
                }
                let (provider, model) = (e.model_provider.as_deref(), e.model.as_deref());
                entries.push(build::usage(run_id, provider, model, usage));
            }
            RunEvent::Aborted { .. } => e.aborted_last_run = true,
            _ => {}
        }
        if let Some(last) = self.state.last_run(event, now) {
            e.last_run = Some(last);
        }
        (entries, writes)
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
        self.idle.touch();
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
