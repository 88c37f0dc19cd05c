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
use crate::compaction::tokens::{estimate, estimate_text, Budget};
use crate::compaction::{stored, summary};
use crate::provider::ProviderError;

/// What happens once a compaction is done.
pub(super) enum Then {
    /// Launch the active run (automatic and overflow compaction).
    Run,
    /// Answer the `/compact` run with what was done.
    Reply,
    /// Answer `sessions.compact`.
    Report(tokio::sync::oneshot::Sender<CompactReport>),
}

/// The part a compaction replaces.
struct Plan {
    cut: usize,
    dropped: usize,
    first_kept: String,
    tokens_before: u64,
    history_len: usize,
    compactions: u32,
    session_id: String,
}

impl SessionActor {
    /// The context's tokens now: `prompt_chars` of prompt plus the
    /// history, estimated and calibrated.
    pub(super) fn context_tokens(&self, prompt_chars: usize) -> u64 {
        let est = estimate_text(prompt_chars) + self.history_tokens;
        (est as f64 * self.calibration) as u64
    }

    /// After a run: the context's size, the provider's count of the last
    /// call when reported (and the estimate calibrated against it), else
    /// the calibrated estimate.
    pub(super) fn account_context(&mut self, usage: &crate::provider::Usage) {
        let raw = estimate_text(self.prompt_chars) + self.history_tokens;
        if usage.context > 0 {
            self.calibration = crate::compaction::tokens::calibration(usage.context, raw);
            self.entry.total_tokens = usage.context;
            self.entry.total_tokens_fresh = true;
        } else {
            self.entry.total_tokens = (raw as f64 * self.calibration) as u64;
            self.entry.total_tokens_fresh = false;
        }
        self.last_call_at = Some(std::time::Instant::now());
    }

    /// Adds a run's tokens to the entry's per-model counts; returns the
    /// `usage` row to write with the run's end.
    pub(super) fn record_usage(
        &mut self,
        run_id: &str,
        usage: &crate::provider::Usage,
    ) -> Option<StoreWrite> {
        let (p, m) = (
            self.entry.model_provider.as_ref()?,
            self.entry.model.as_ref()?,
        );
        let model = format!("{p}/{m}");
        let tokens = crate::usage::Totals::of(usage);
        self.entry
            .usage_by_model
            .entry(model.clone())
            .or_default()
            .add(&tokens);
        let row = crate::usage::RunUsage {
            agent_id: self.agent().to_string(),
            session_key: self.key.clone(),
            model,
            at_ms: crate::now_ms(),
            tokens,
        };
        crate::usage::record(run_id, &row).ok()
    }

    pub(super) fn window_of(&self, models: &[ModelRef]) -> u64 {
        models
            .first()
            .map_or(crate::compaction::tokens::DEFAULT_WINDOW, |m| {
                self.deps.windows.of(&m.to_string())
            })
    }

    /// Whether this run prunes old tool results: `sliding` always,
    /// `cache-ttl` once the TTL since the last model call has passed (the
    /// provider's prompt cache is cold then anyway).
    pub(super) fn prune_for_run(&self, models: &[ModelRef]) -> Option<crate::run::Prune> {
        use crate::compaction::PruneMode;
        let s = &self.deps.pruning;
        let on = match s.mode {
            PruneMode::None => false,
            PruneMode::Sliding => true,
            PruneMode::CacheTtl => self.last_call_at.is_none_or(|t| t.elapsed() >= s.ttl),
        };
        on.then(|| crate::run::Prune {
            settings: s.clone(),
            window: self.window_of(models),
        })
    }

    /// A memory flush is due. Never for a turn holding a stranger's
    /// message: what it causes does not write the notes trusted turns read.
    fn flush_due(&self) -> bool {
        let f = &self.deps.compaction.memory_flush;
        f.enabled
            && self.deps.memory_writable
            && !self.trust().untrusted
            && self.entry.memory_flush_compaction_count != Some(self.entry.compaction_count)
    }

    /// Called as a run is about to start: true when the context needs room
    /// first (the flush and/or a compaction started; the run is launched
    /// when they are done).
    pub(super) fn needs_room(
        &mut self,
        models: &[ModelRef],
        system: &Arc<str>,
        prompt_chars: usize,
        ctx: &mut Context<Self>,
    ) -> bool {
        let compacted = self.state.active().is_none_or(|a| a.compacted);
        if compacted {
            return false;
        }
        let window = self.window_of(models);
        let used = self.context_tokens(prompt_chars);
        let settings = &self.deps.compaction;
        let Some(Room { flush, keep }) = job::room(settings, window, used, self.flush_due()) else {
            return false;
        };
        tracing::info!(session_key = %self.key, used, window, flush, compact = keep.is_some(), "context nearly full");
        let started = self.start_compaction(
            flush,
            keep,
            models.to_vec(),
            system.clone(),
            window,
            None,
            Then::Run,
            ctx,
        );
        started.is_ok()
    }

    /// A run failed with a context overflow: compact and run the turn
    /// again, once. True when that started (the event is then not an end).
    pub(super) fn recover_overflow(&mut self, event: &RunEvent, ctx: &mut Context<Self>) -> bool {
        let RunEvent::Failed {
            kind: FailureKind::Provider(Some(ProviderError::ContextOverflow(why))),
            ..
        } = event
        else {
            return false;
        };
        let Some(a) = self.state.active_mut() else {
            return false;
        };
        if a.compacted || a.aborted {
            return false;
        }
        a.launched = false;
        self.run = None;
        let models = self
            .deps
            .models
            .candidates(self.agent(), self.entry.model_override.as_deref())
            .unwrap_or_default();
        let budget = Budget::new(self.window_of(&models), &self.deps.compaction);
        tracing::warn!(session_key = %self.key, error = %why, "context overflow: compacting and running the turn again");
        // The provider says the window is smaller than we thought: keep
        // only the last two user turns.
        let keep = Some(Keep::LastTwoTurns);
        let started = self.start_compaction(
            false,
            keep,
            models,
            Arc::from(""),
            budget.window,
            None,
            Then::Run,
            ctx,
        );
        if started.is_ok() {
            return true;
        }
        // Nothing to compact: the turn cannot be retried usefully.
        if let Some(a) = self.state.active_mut() {
            a.compacted = true;
        }
        false
    }

    /// The clear error of an overflow that compaction could not fix.
    pub(super) fn overflow_error(&self, event: RunEvent) -> RunEvent {
        match event {
            RunEvent::Failed {
                run_id,
                error,
                kind: kind @ FailureKind::Provider(Some(ProviderError::ContextOverflow(_))),
            } => RunEvent::Failed {
                run_id,
                error: format!("The conversation does not fit the model's context window, even after compaction ({error}). Send a shorter message, or /new to start over; the session keeps working."),
                kind,
            },
            other => other,
        }
    }

    /// Where a compaction would cut, from the stored transcript.
    fn plan(&self, keep: Keep) -> Option<(Plan, Messages)> {
        let entries = transcript::entries(&self.deps.store, &self.entry.session_id).ok()?;
        let (history, ids) = stored::load_history(&entries);
        let cut = job::cut(&history, keep)?;
        let first_kept = ids.get(cut).cloned().flatten()?;
        if history.len() != self.history.len() {
            tracing::warn!(session_key = %self.key, "the context does not match the transcript: not compacted");
            return None;
        }
        let tokens_before = history.iter().map(|m| estimate(m)).sum();
        let plan = Plan {
            cut,
            dropped: cut,
            first_kept,
            tokens_before,
            history_len: history.len(),
            compactions: self.entry.compaction_count,
            session_id: self.entry.session_id.clone(),
        };
        Some((plan, history[..cut].to_vec()))
    }

    /// Starts the flush and/or the compaction; false when there is nothing
    /// to do after all (nothing to compact, no flush due).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn start_compaction(
        &mut self,
        flush: bool,
        keep: Option<Keep>,
        models: Vec<ModelRef>,
        system: Arc<str>,
        window: u64,
        instructions: Option<String>,
        then: Then,
        ctx: &mut Context<Self>,
    ) -> Result<(), Then> {
        let planned = keep.and_then(|k| self.plan(k));
        if !flush && planned.is_none() {
            return Err(then);
        }
        let Some(a) = self.state.active_mut() else {
            return Err(then);
        };
        a.compaction = true;
        a.compacted = true;
        let run_id = a.run_id.clone();
        let (plan, older) = match planned {
            Some((plan, older)) => (Some(plan), Some(older)),
            None => (None, None),
        };
        let flush = flush.then(|| Flush {
            prompt: self.deps.compaction.memory_flush.prompt.clone(),
            system,
            history: self.history.clone(),
            workspace: std::path::PathBuf::from(&self.deps.workspace),
        });
        let job = Job {
            hub: self.deps.hub.clone(),
            models,
            sticky: self.entry.auth_profile_override.clone(),
            window,
            timeout: self.deps.compaction.timeout,
            flush,
            older,
            instructions,
        };
        let run = async move { (job::run(job).await, plan) };
        ctx.spawn(run.into_actor(self).map(move |(done, plan), act, ctx| {
            act.compaction_done(&run_id, done, plan, then, ctx);
        }));
        Ok(())
    }

    /// Applies what the job did (when the session is still the one it
    /// planned for), then goes on as `then` says.
    /// Applies a compaction's result if the session is still the one it
    /// was planned on; what happened, for the report.
    fn take_summary(
        &mut self,
        summary: Option<(String, Option<String>)>,
        plan: Option<Plan>,
    ) -> CompactReport {
        let mut report = CompactReport::default();
        let (Some((text, fallback)), Some(plan)) = (summary, plan) else {
            return report;
        };
        let current = plan.session_id == self.entry.session_id
            && plan.compactions == self.entry.compaction_count
            && self.history.len() >= plan.history_len;
        if !current {
            report.reason = Some("the session changed meanwhile".into());
        } else if self.apply_compaction(&text, fallback.clone(), &plan) {
            report = CompactReport {
                compacted: true,
                dropped: plan.dropped,
                kept: self.history.len() - 1,
                summary_chars: text.chars().count(),
                tokens_before: plan.tokens_before,
                fallback,
                reason: None,
            };
        } else {
            report.reason = Some("the compaction could not be stored".into());
        }
        report
    }

    fn compaction_done(
        &mut self,
        run_id: &str,
        out: Done,
        plan: Option<Plan>,
        then: Then,
        ctx: &mut Context<Self>,
    ) {
        let mut changed = false;
        if out.flushed {
            self.entry.memory_flush_compaction_count = Some(self.entry.compaction_count);
            self.entry.memory_flush_at = Some(crate::now_ms());
            changed = true;
        }
        let report = self.take_summary(out.summary, plan);
        if changed || report.compacted {
            if let Err(e) = self.save_entry() {
                tracing::error!(session_key = %self.key, error = %e, "cannot store the session entry");
            }
        }
        if report.compacted {
            // Dashboards: `sessions.changed` with OpenClaw's reason.
            self.tell(SessionChange::Lifecycle { reason: "compact" });
        }
        let store = self.deps.store.clone();
        let run_id = run_id.to_string();
        ctx.spawn(
            async move { store.flush().await }
                .into_actor(self)
                .map(move |_, act, ctx| act.after_compaction(run_id.into(), report, then, ctx)),
        );
    }

    /// Once the compaction is durable: the run goes on, or the report is
    /// the answer (`/compact`, `sessions.compact`).
    fn after_compaction(
        &mut self,
        run_id: crate::ids::RunId,
        report: CompactReport,
        then: Then,
        ctx: &mut Context<Self>,
    ) {
        let ours = self.state.active().is_some_and(|a| a.run_id == run_id);
        if !ours {
            if let Then::Report(tx) = then {
                let _ = tx.send(report);
            }
            return;
        }
        match then {
            Then::Run => match self.state.active_mut() {
                Some(a) if !a.aborted => {
                    a.compaction = false;
                    self.spawn_run(ctx);
                }
                _ => self.end_without_run(&run_id, None, ctx),
            },
            Then::Reply => {
                self.forward_answer(run_id, report.text());
                self.end_active();
                self.next_turn(ctx);
            }
            Then::Report(tx) => {
                let _ = tx.send(report);
                self.end_active();
                self.next_turn(ctx);
            }
        }
    }

    /// Stores the compaction entry and replaces the context; false when it
    /// could not be stored (nothing changed then).
    fn apply_compaction(&mut self, text: &str, fallback: Option<String>, plan: &Plan) -> bool {
        let mut history: Messages = vec![Arc::new(summary::summary_message(text))];
        // The history only grew by appending since the plan: everything
        // from the cut on stays.
        history.extend(self.history.iter().skip(plan.cut).cloned());
        let tokens_after: u64 = history.iter().map(|m| estimate(m)).sum();
        let tokens = (plan.tokens_before, tokens_after);
        let entry = stored::entry(text, &plan.first_kept, tokens, fallback.as_deref());
        if let Some(why) = &fallback {
            tracing::warn!(session_key = %self.key, reason = %why, "model summary unusable: deterministic summary used");
        }
        match transcript::append(&self.deps.store, &self.entry.session_id, &[entry]) {
            Ok(()) => {
                tracing::info!(session_key = %self.key, before = plan.tokens_before, after = tokens_after, "context compacted");
                self.set_history(history);
                self.entry.compaction_count += 1;
                crate::metrics::Metrics::inc(&self.deps.metrics.compactions);
                true
            }
            Err(e) => {
                tracing::error!(session_key = %self.key, error = %e, "cannot store the compaction");
                false
            }
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
        if self.state.active().is_some() {
            return refused("a run is active");
        }
        let keep = match msg.max_lines {
            Some(n) => Keep::Last(n),
            None => Keep::LastTwoTurns,
        };
        let possible = job::cut(&self.history, keep).is_some();
        if !possible {
            return refused("nothing to compact");
        }
        let (tx, rx) = tokio::sync::oneshot::channel();
        let id = ulid::Ulid::generate().to_string();
        if let Err(why) = self.compact_now(id.into(), keep, msg.instructions, Then::Report(tx), ctx)
        {
            return refused(&why);
        }
        Box::pin(async move {
            rx.await.unwrap_or_else(|_| CompactReport {
                reason: Some("the session stopped".into()),
                ..Default::default()
            })
        })
    }
}
