//! The session's active run: taking a lane slot, starting the `RunActor`
//! (and restarting it after a transient failure: supervision), aborting
//! it, and what the session does with each of its `RunEvent`s (persist
//! conversation steps, forward everything, finish the run).

use crate::ids::RunId;
use std::sync::Arc;

use actix::prelude::*;

use super::history::History;
use super::state::{Reasoning, Resumed};
use super::view::{Prepared, View};
use super::*;
use crate::context::ContextFiles;
use crate::lane::AcquireSlot;
use crate::provider::selection::ModelRef;
use crate::provider::thinking_budget;
use crate::run::{RunActor, RunConfig};

/// The `RunActor`'s settings for the prepared run `p` of the session seen
/// as `v`, from the context `messages`; its events come back to `session`.
fn config_of(v: &View, p: Prepared, history: &History, session: Addr<SessionActor>) -> RunConfig {
    let d = v.deps;
    let untrusted = p.trust.untrusted;
    RunConfig {
        session_key: v.key.clone(),
        agent_id: v.agent().to_string(),
        kind: v.active.map(|a| a.overrides.kind).unwrap_or_default(),
        exec: v.exec_policy(untrusted),
        prune: v.prune(&p.models, history),
        run_id: p.run_id,
        models: p.models,
        sticky_profile: v.entry.auth_profile_override.clone(),
        thinking_budget: thinking_budget(&p.level),
        system: p.context.prompt.text.clone(),
        // A stranger's turn gets no skill secrets in its commands' env.
        tool_env: match untrusted {
            true => Vec::new().into(),
            false => p.context.skills.env.into(),
        },
        trust: p.trust,
        origin: v.route(untrusted),
        hooks: d.tool_policy.hooks.clone().into(),
        lifecycle: d.tool_policy.lifecycle.clone(),
        workspace: d.workspace.clone().into(),
        result_max_chars: d.tool_policy.result_max_chars,
        tools: crate::mcp::OfferedTools::live(d.tools.clone(), v.tool_offer(), p.tools),
        messages: history.messages().clone(),
        media: d.media.clone(),
        hub: d.hub.clone(),
        executor: d.executor.clone(),
        sink: session.clone().recipient(),
        progress: Some(session.clone().recipient()),
        steers: session.recipient(),
        timeout: p.timeout,
        max_model_calls: d.max_model_calls,
    }
}

impl SessionActor {
    /// Takes a lane slot for the active run `run_id` (its own lane when
    /// it names one), then launches it.
    pub(super) fn start_run(&mut self, run_id: RunId, ctx: &mut Context<Self>) {
        let lane = self.lanes.for_run(self.state.lane_of(&run_id));
        self.running.clear();
        ctx.spawn(
            async move { lane.send(AcquireSlot).await }
                .into_actor(self)
                .map(
                    move |permit, act, ctx| match (permit, act.state.resume(&run_id)) {
                        (_, Resumed::Gone) => {}
                        (Ok(Ok(_)), Resumed::Aborted) => act.end_without_run(&run_id, None, ctx),
                        (Ok(Ok(permit)), Resumed::Go) => {
                            act.running.permit = Some(permit);
                            act.spawn_run(ctx);
                        }
                        _ => {
                            let why = Some("lane unavailable".into());
                            act.end_without_run(&run_id, why, ctx);
                        }
                    },
                ),
        );
    }

    /// This session's context files, then `then` with them (None: they
    /// could not be read). While nothing changed on disk they are taken
    /// from the shared snapshot at once, on this thread; else they are read
    /// on the blocking pool, and the session takes no other message
    /// meanwhile, so nothing it decides interleaves.
    pub(super) fn with_context_files<F>(&mut self, ctx: &mut Context<Self>, then: F)
    where
        F: FnOnce(&mut Self, Option<Arc<ContextFiles>>, &mut Context<Self>) + 'static,
    {
        let cx = self.deps.context.clone();
        if let Some(files) = cx.cached_files(&self.key) {
            return then(self, Some(files), ctx);
        }
        let key = self.key.clone();
        let read = async move { tokio::task::spawn_blocking(move || cx.read_files(&key)).await };
        ctx.wait(
            read.into_actor(self)
                .map(move |files, act, ctx| then(act, files.ok(), ctx)),
        );
    }

    /// Starts (or restarts) the active run's actor from the current
    /// history, once its context files are read and its context has room.
    pub(super) fn spawn_run(&mut self, ctx: &mut Context<Self>) {
        self.with_context_files(ctx, |act, files, ctx| {
            let Some(run_id) = act.state.active_id() else {
                return;
            };
            let Some(files) = files else {
                let why = Some("cannot read the workspace files".to_string());
                return act.end_without_run(&run_id, why, ctx);
            };
            let p = match act.view().prepare(&files) {
                None => return,
                Some(Err(e)) => {
                    return act.end_without_run(&run_id, Some(format!("model: {e}")), ctx)
                }
                Some(Ok(p)) => p,
            };
            let system = p.context.prompt.text.clone();
            if act.needs_room(&p.models, &system, ctx) {
                return;
            }
            act.history.run_started(system.len());
            act.entry.context_tokens = Some(act.view().window(&p.models));
            let run = RunActor::new(config_of(&act.view(), p, &act.history, ctx.address())).start();
            crate::metrics::Metrics::inc(&act.deps.metrics.runs_started);
            if act.state.launched() {
                act.running.run = Some(run);
            }
        });
    }

    /// Aborts the active run: the ids aborted (none when it was already).
    pub(super) fn abort_active(&mut self) -> Vec<RunId> {
        let aborted: Vec<RunId> = self.state.abort().into_iter().collect();
        if !aborted.is_empty() {
            self.running.abort();
        }
        aborted
    }
}

/// A tool's progress goes on like the run's own events.
impl Handler<crate::tool::ToolProgress> for SessionActor {
    type Result = ();
    fn handle(&mut self, p: crate::tool::ToolProgress, ctx: &mut Context<Self>) {
        if let (Some(_), Some(run)) = (&p.approval, self.state.run_mut(&p.run_id)) {
            // Until the call finishes: `/status` says what it waits for.
            run.awaiting = p.message.clone();
        }
        let event = RunEvent::ToolProgress {
            run_id: p.run_id,
            call: p.call,
            progress: p.progress,
            total: p.total,
            message: p.message,
        };
        <Self as Handler<RunEvent>>::handle(self, event, ctx);
    }
}

impl Handler<RunEvent> for SessionActor {
    // `()`, not a future per event: a future returned here is spawned into
    // the actor's context, whose item list keeps the capacity a burst of
    // deltas grew it to for the session's whole life.
    type Result = ();
    fn handle(&mut self, event: RunEvent, ctx: &mut Context<Self>) {
        // One per token: the span is entered only for a run's end (below),
        // where this handler may log.
        let _span = event.end_status().map(|_| self.span.clone().entered());
        self.idle.touch();
        // Events of a run that is no longer ours (reset) are not written.
        if self.state.owns(&event) {
            self.record_step(&event);
        }
        if let RunEvent::ToolFinished { run_id, .. } = &event {
            if let Some(run) = self.state.run_mut(run_id) {
                run.awaiting = None;
            }
        }
        let reasoning = Reasoning::of(self.view().reasoning());
        let Some(event) = self.state.pass(event, reasoning) else {
            return;
        };
        match event.end_status() {
            None => self.forward(event),
            Some(_) => self.run_ended(event, ctx),
        }
    }
}

impl SessionActor {
    /// Persists a run's step: its messages (with their reasoning) and the
    /// model it chose (a `model_change` entry when it changes).
    fn record_step(&mut self, event: &RunEvent) {
        match &event {
            RunEvent::Message {
                message,
                thinking,
                run_id,
            } => {
                if let Some(run) = self.state.run_mut(run_id) {
                    run.tally(message, crate::now_ms());
                }
                let step = transcript::build::step(message, thinking, run_id);
                let entry = transcript::message_entry(None, step);
                if let Err(e) = self.commit(vec![entry], Vec::new()) {
                    tracing::error!(session_key = %self.key, error = %e, "cannot store a run step");
                }
            }
            RunEvent::ModelSelected {
                model,
                profile,
                failed,
                ..
            } => {
                if !failed.is_empty() {
                    tracing::warn!(session_key = %self.key, %model, attempts = ?failed, "model failover");
                }
                if let Ok(r) = ModelRef::parse(model) {
                    if self.history.model() != Some(model.as_str()) {
                        let entry = transcript::build::model_change(&r.provider, &r.model);
                        if transcript::append(&self.deps.store, &self.entry.session_id, &[entry])
                            .is_ok()
                        {
                            self.history.name_model(model);
                        }
                    }
                    self.entry.model_provider = Some(r.provider);
                    self.entry.model = Some(r.model);
                }
                self.entry.auth_profile_override = Some(profile.clone());
                if let Err(e) = self.save_entry() {
                    tracing::error!(session_key = %self.key, error = %e, "cannot store the session entry");
                }
            }
            _ => {}
        }
    }
}

pub(super) fn run_id_of(e: &RunEvent) -> Option<&str> {
    match e {
        RunEvent::Started { run_id }
        | RunEvent::Delta { run_id, .. }
        | RunEvent::Thinking { run_id, .. }
        | RunEvent::ModelSelected { run_id, .. }
        | RunEvent::ToolStarted { run_id, .. }
        | RunEvent::ToolFinished { run_id, .. }
        | RunEvent::ToolProgress { run_id, .. }
        | RunEvent::Message { run_id, .. }
        | RunEvent::Final { run_id, .. }
        | RunEvent::Failed { run_id, .. }
        | RunEvent::Aborted { run_id, .. }
        | RunEvent::SideResult { run_id, .. }
        | RunEvent::Queued { run_id, .. } => Some(run_id),
    }
}
