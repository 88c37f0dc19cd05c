//! Long sessions, the session's side: before a run starts, the context's
//! tokens (the prompt plus the history, calibrated against what the
//! provider last reported) are checked against the budget of the run's
//! model; over the soft threshold the silent memory flush runs once per
//! compaction cycle, over the compaction threshold the older part is
//! summarised (or, when the model's summary cannot be had, summarised
//! deterministically) and the run starts from the summary and the kept
//! messages. A context overflow reported by the provider compacts and runs
//! the turn once more. At most one compaction per turn; the session is busy
//! meanwhile (new messages queue) and always goes on to the run or its end.
//! What to do and the job itself are `crate::compaction::job`; this file
//! plans it from the session's history and applies what it did.

use std::sync::Arc;

use actix::prelude::*;

pub use super::messages::CompactReport;
use super::*;
use crate::compaction::job::{self, Done, Flush, Job, Keep, Room};
use crate::compaction::plan::{plan, Plan, Planned};
use crate::compaction::tokens::estimate;
use crate::compaction::{stored, summary};
use crate::ids::RunId;
use crate::provider::selection::ModelRefError;
use crate::session::history::History;
use crate::session::state::Resumed;

/// What happens once a compaction is done.
pub(super) enum Then {
    /// Launch the active run (automatic and overflow compaction).
    Run,
    /// Answer the `/compact` run with what was done.
    Reply,
    /// Answer `sessions.compact`.
    Report(tokio::sync::oneshot::Sender<CompactReport>),
}

/// Why a compaction asked for did not start.
#[derive(Debug, thiserror::Error)]
pub(super) enum Refused {
    #[error("a run is active")]
    Active,
    #[error("nothing to compact")]
    Nothing,
    #[error("{0}")]
    Model(#[from] ModelRefError),
    #[error("the transcript does not match the context")]
    Mismatch,
}

/// A compaction to start: the flush and/or the summary of what `keep`
/// leaves out, for a run of `models` (system prompt `system`).
pub(super) struct Compaction {
    pub flush: bool,
    pub keep: Option<Keep>,
    pub models: Vec<ModelRef>,
    pub system: Arc<str>,
    pub instructions: Option<String>,
    pub then: Then,
}

/// Stores the compaction entry and gives the context that follows it;
/// None when it could not be stored (nothing changed then).
fn stored_compaction(
    store: &crate::store::Store,
    session_id: &str,
    history: &History,
    plan: &Plan,
    text: &str,
    fallback: Option<&str>,
) -> Option<Messages> {
    let history = history.compacted(summary::summary_message(text), plan.cut);
    let tokens_after: u64 = history.iter().map(|m| estimate(m)).sum();
    let tokens = (plan.tokens_before, tokens_after);
    let entry = stored::entry(text, &plan.first_kept, tokens, fallback);
    match transcript::append(store, session_id, &[entry]) {
        Ok(()) => {
            tracing::info!(
                before = plan.tokens_before,
                after = tokens_after,
                "context compacted"
            );
            Some(history)
        }
        Err(e) => {
            tracing::error!(error = %e, "cannot store the compaction");
            None
        }
    }
}

impl SessionActor {
    /// Called as a run is about to start: true when the context needs room
    /// first (the flush and/or a compaction started; the run is launched
    /// when they are done).
    pub(super) fn needs_room(
        &mut self,
        models: &[ModelRef],
        system: &Arc<str>,
        ctx: &mut Context<Self>,
    ) -> bool {
        if !self.state.may_compact() {
            return false;
        }
        let view = self.view();
        let window = view.window(models);
        let used = self.history.tokens(system.len());
        let due = view.flush_due();
        let Some(Room { flush, keep }) = job::room(&self.deps.compaction, window, used, due) else {
            return false;
        };
        tracing::info!(session_key = %self.key, used, window, flush, compact = keep.is_some(), "context nearly full");
        let compaction = Compaction {
            flush,
            keep,
            models: models.to_vec(),
            system: system.clone(),
            instructions: None,
            then: Then::Run,
        };
        self.start_compaction(compaction, ctx).is_ok()
    }

    /// Starts a compaction asked for (`/compact`, `sessions.compact`,
    /// keeping what `keep` says) as the session's busy state under `run_id`.
    pub(super) fn compact_now(
        &mut self,
        run_id: RunId,
        keep: Keep,
        instructions: Option<String>,
        then: Then,
        ctx: &mut Context<Self>,
    ) -> Result<(), Refused> {
        if job::cut(self.history.messages(), keep).is_none() {
            return Err(Refused::Nothing);
        }
        let models = self.view().models(None)?;
        let quiet = matches!(then, Then::Report(_));
        if !self.state.start_compaction(run_id, quiet, crate::now_ms()) {
            return Err(Refused::Active);
        }
        let compaction = Compaction {
            flush: false,
            keep: Some(keep),
            models,
            system: Arc::from(""),
            instructions,
            then,
        };
        if self.start_compaction(compaction, ctx).is_err() {
            self.running.clear();
            self.state.end();
            return Err(Refused::Mismatch);
        }
        Ok(())
    }

    /// Starts the flush and/or the compaction; Err when there is nothing
    /// to do after all (nothing to compact, no flush due).
    pub(super) fn start_compaction(
        &mut self,
        c: Compaction,
        ctx: &mut Context<Self>,
    ) -> Result<(), Then> {
        let planned = c.keep.and_then(|keep| {
            let entries = transcript::entries(&self.deps.store, &self.entry.session_id).ok()?;
            let on = Planned {
                entries: &entries,
                context_len: self.history.len(),
                session_id: &self.entry.session_id,
                compactions: self.entry.compaction_count,
            };
            plan(on, keep)
        });
        if !c.flush && planned.is_none() {
            return Err(c.then);
        }
        let Some(run_id) = self.state.compacting() else {
            return Err(c.then);
        };
        let (plan, older) = planned.unzip();
        let flush = c.flush.then(|| Flush {
            prompt: self.deps.compaction.memory_flush.prompt.clone(),
            system: c.system,
            history: self.history.messages().clone(),
            workspace: std::path::PathBuf::from(&self.deps.workspace),
        });
        let job = Job {
            hub: self.deps.hub.clone(),
            window: self.view().window(&c.models),
            models: c.models,
            sticky: self.entry.auth_profile_override.clone(),
            timeout: self.deps.compaction.timeout,
            flush,
            older,
            instructions: c.instructions,
        };
        let then = c.then;
        let run = async move { (job::run(job).await, plan) };
        ctx.spawn(run.into_actor(self).map(move |(done, plan), act, ctx| {
            act.compaction_done(run_id, done, plan, then, ctx);
        }));
        Ok(())
    }

    /// Applies what the job did when the session is still the one it
    /// planned for, then, once that is durable, goes on as `then` says.
    fn compaction_done(
        &mut self,
        run_id: RunId,
        out: Done,
        plan: Option<Plan>,
        then: Then,
        ctx: &mut Context<Self>,
    ) {
        let e = &mut self.entry;
        let mut changed = out.flushed;
        if out.flushed {
            e.memory_flush_compaction_count = Some(e.compaction_count);
            e.memory_flush_at = Some(crate::now_ms());
        }
        let mut report = CompactReport::default();
        if let (Some((text, fallback)), Some(plan)) = (out.summary, plan) {
            let current = plan.holds(&e.session_id, e.compaction_count, self.history.len());
            let (store, id, fallen) = (&self.deps.store, &e.session_id, fallback.as_deref());
            let stored = current
                .then(|| stored_compaction(store, id, &self.history, &plan, &text, fallen))
                .flatten();
            match stored {
                _ if !current => report.reason = Some("the session changed meanwhile".into()),
                None => report.reason = Some("the compaction could not be stored".into()),
                Some(history) => {
                    if let Some(why) = &fallback {
                        tracing::warn!(session_key = %self.key, reason = %why, "model summary unusable: deterministic summary used");
                    }
                    self.history.replace(history);
                    self.entry.compaction_count += 1;
                    crate::metrics::Metrics::inc(&self.deps.metrics.compactions);
                    changed = true;
                    report = CompactReport {
                        compacted: true,
                        dropped: plan.cut,
                        kept: self.history.len() - 1,
                        summary_chars: text.chars().count(),
                        tokens_before: plan.tokens_before,
                        fallback,
                        reason: None,
                    };
                }
            }
        }
        if changed {
            if let Err(e) = self.save_entry() {
                tracing::error!(session_key = %self.key, error = %e, "cannot store the session entry");
            }
        }
        if report.compacted {
            // Dashboards: `sessions.changed` with OpenClaw's reason.
            self.tell(SessionChange::Lifecycle { reason: "compact" });
        }
        let store = self.deps.store.clone();
        ctx.spawn(
            async move { store.flush().await }
                .into_actor(self)
                .map(move |_, act, ctx| act.after_compaction(run_id, report, then, ctx)),
        );
    }

    /// Once the compaction is durable: the run goes on, or the report is
    /// the answer (`/compact`, `sessions.compact`).
    fn after_compaction(
        &mut self,
        run_id: RunId,
        report: CompactReport,
        then: Then,
        ctx: &mut Context<Self>,
    ) {
        match then {
            Then::Run => {
                return match self.state.resume(&run_id) {
                    Resumed::Go => self.spawn_run(ctx),
                    Resumed::Aborted => self.end_without_run(&run_id, None, ctx),
                    Resumed::Gone => {}
                }
            }
            Then::Report(tx) => {
                let _ = tx.send(report);
            }
            Then::Reply if self.state.holds(&run_id) => {
                self.forward(commands::answer(run_id.clone(), report.text()));
            }
            Then::Reply => {}
        }
        // It answered for itself: the session is free (unless a reset cut
        // it off and moved on).
        if self.state.compaction_over(&run_id) {
            self.running.clear();
            self.next_turn(ctx);
        }
    }
}

impl Handler<CompactSession> for SessionActor {
    type Result = ResponseFuture<CompactReport>;
    fn handle(&mut self, msg: CompactSession, ctx: &mut Context<Self>) -> Self::Result {
        let refused = |reason: &str| {
            let r = CompactReport {
                reason: Some(reason.to_string()),
                ..Default::default()
            };
            Box::pin(async move { r }) as ResponseFuture<CompactReport>
        };
        let keep = match msg.max_lines {
            Some(n) => Keep::Last(n),
            None => Keep::LastTwoTurns,
        };
        let (tx, rx) = tokio::sync::oneshot::channel();
        let id = ulid::Ulid::generate().to_string();
        if let Err(why) = self.compact_now(id.into(), keep, msg.instructions, Then::Report(tx), ctx)
        {
            return refused(&why.to_string());
        }
        Box::pin(async move {
            rx.await.unwrap_or_else(|_| CompactReport {
                reason: Some("the session stopped".into()),
                ..Default::default()
            })
        })
    }
}
