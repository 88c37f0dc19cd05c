//! The session's active run: taking a lane slot, starting the `RunActor`
//! (and restarting it after a transient failure: supervision), aborting
//! it, and what the session does with each of its `RunEvent`s (persist
//! conversation steps, forward everything, finish the run).

use crate::ids::RunId;
use std::sync::Arc;
use std::time::Instant;

use actix::prelude::*;

use super::*;
use crate::context::{ContextFiles, RunInputs};
use crate::lane::AcquireSlot;
use crate::provider::selection::ModelRef;
use crate::provider::thinking_budget;
use crate::run::{AbortRun, Outcome, RunActor, RunConfig};

/// A run's inputs, gathered before it starts (`SessionActor::prepare`).
struct Prepared {
    run_id: RunId,
    models: Vec<ModelRef>,
    level: String,
    timeout: std::time::Duration,
    tools: Arc<[ToolSpec]>,
    trust: crate::trust::Trust,
    context: crate::context::RunContext,
}

impl SessionActor {
    /// Takes a lane slot for the active run `run_id` (its own lane when
    /// it names one), then launches it.
    pub(super) fn start_run(&mut self, run_id: RunId, ctx: &mut Context<Self>) {
        let named = self
            .state
            .run(&run_id)
            .and_then(|a| a.overrides.lane.as_deref());
        let lane = match (named, &self.lanes) {
            (Some(name), Some(lanes)) => lanes.named(name).unwrap_or(&self.lane).clone(),
            _ => self.lane.clone(),
        };
        self.run = None;
        self.permit = None;
        ctx.spawn(
            async move { lane.send(AcquireSlot).await }
                .into_actor(self)
                .map(move |permit, act, ctx| {
                    let still_ours = act.state.run(&run_id).is_some_and(|a| !a.aborted);
                    let permit = match permit {
                        Ok(Ok(p)) if still_ours => p,
                        Ok(Ok(_)) => return act.end_without_run(&run_id, None, ctx),
                        _ => {
                            let why = Some("lane unavailable".into());
                            return act.end_without_run(&run_id, why, ctx);
                        }
                    };
                    act.permit = Some(permit);
                    act.spawn_run(ctx);
                }),
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
    /// history, once its context files are read.
    pub(super) fn spawn_run(&mut self, ctx: &mut Context<Self>) {
        self.with_context_files(ctx, |act, files, ctx| {
            let Some(run_id) = act.state.active().map(|a| a.run_id.clone()) else {
                return;
            };
            match files {
                Some(files) => act.launch_run(&files, ctx),
                None => {
                    let why = Some("cannot read the workspace files".to_string());
                    act.end_without_run(&run_id, why, ctx)
                }
            }
        });
    }

    /// What the active run acts with (an idle session: its key's channel,
    /// trusted).
    pub(super) fn trust(&self) -> crate::trust::Trust {
        match self.state.active() {
            Some(a) => a.overrides.trust(&self.key),
            None => RunOverrides::default().trust(&self.key),
        }
    }

    /// The tools the active run is offered: its channels' layers and, when
    /// it holds a stranger's message, the untrusted profile.
    pub(super) fn offered_tools(&self) -> Arc<[ToolSpec]> {
        (self.tool_offer())(&self.deps.tools.all())
    }

    /// The policy of the active run, as a function of the bench (applied
    /// again when an MCP server's tools change during the run).
    fn tool_offer(&self) -> crate::mcp::Offer {
        let d = &self.deps;
        let run = self
            .state
            .active()
            .and_then(|a| a.overrides.tools_allow.clone())
            .map(|allow| crate::tool::policy::AllowDeny {
                allow: Some(allow),
                deny: Vec::new(),
            });
        let (policy, agent, trust) = (
            d.tool_policy.clone(),
            self.agent().to_string(),
            self.trust(),
        );
        let catalog = d.tools.mcp().clone();
        // `heartbeat_respond` is a heartbeat turn's tool only.
        let heartbeat = self
            .state
            .active()
            .is_some_and(|a| matches!(a.overrides.kind, crate::run::RunKind::Heartbeat { .. }));
        let bench = d.tools.clone();
        Arc::new(move |all: &Arc<[ToolSpec]>| {
            let all = match heartbeat {
                true => all.clone(),
                false => bench.without_heartbeat_tools(all),
            };
            let offered = policy.offered_shared(&all, &agent, &trust, run.as_ref());
            // MCP servers meant for other agents (`mcp.servers.<name>.agents`).
            if offered
                .iter()
                .all(|t| catalog.serves_agent(&t.name, &agent))
            {
                return offered;
            }
            offered
                .iter()
                .filter(|t| catalog.serves_agent(&t.name, &agent))
                .cloned()
                .collect()
        })
    }

    /// The prompt and skills of a run of this session with `model` at
    /// thinking `level`, from its context files.
    pub(super) fn build_context(
        &self,
        files: &ContextFiles,
        model: &str,
        level: &str,
        tools: &[ToolSpec],
    ) -> crate::context::RunContext {
        let inputs = RunInputs {
            agent_id: self.agent(),
            model,
            thinking: level,
            tools,
            skill_filter: self.entry.skill_filter.as_deref(),
            channel: self
                .state
                .active()
                .and_then(|a| a.overrides.channel.as_deref()),
        };
        self.deps.context.build_run(files, &self.key, &inputs)
    }

    /// What the active run is started with: its models, thinking level,
    /// time limit, tools, trust and context (None: it ended before a model
    /// was called, or waits for room).
    fn prepare(&mut self, files: &ContextFiles, ctx: &mut Context<Self>) -> Option<Prepared> {
        let a = self.state.active()?;
        let run_id = a.run_id.clone();
        let model_choice = a
            .overrides
            .model
            .as_deref()
            .or(self.entry.model_override.as_deref());
        let models = match self.deps.models.candidates(self.agent(), model_choice) {
            Ok(m) => m,
            Err(e) => {
                self.end_without_run(&run_id, Some(format!("model: {e}")), ctx);
                return None;
            }
        };
        let level = self.thinking_level(a.overrides.thinking.as_deref());
        let timeout = a
            .timeout
            .map_or(self.deps.timeout, |t| t.min(self.deps.timeout));
        let model = models.first().map(|m| m.to_string()).unwrap_or_default();
        let tools = self.offered_tools();
        let trust = self.trust();
        let context = if trust.untrusted {
            // The operator's private notes stay out of a stranger's turn.
            self.build_context(&files.for_stranger(), &model, &level, &tools)
        } else {
            self.build_context(files, &model, &level, &tools)
        };
        let system = context.prompt.text.clone();
        if self.needs_room(&models, &system, system.len(), ctx) || self.state.active().is_none() {
            return None;
        }
        Some(Prepared {
            run_id,
            models,
            level,
            timeout,
            tools,
            trust,
            context,
        })
    }

    fn launch_run(&mut self, files: &ContextFiles, ctx: &mut Context<Self>) {
        let Some(p) = self.prepare(files, ctx) else {
            return;
        };
        let exec = self.exec_policy(p.trust.untrusted);
        let untrusted = p.trust.untrusted;
        let prune = self.prune_for_run(&p.models);
        self.prompt_chars = p.context.prompt.text.len();
        self.entry.context_tokens = Some(self.window_of(&p.models));
        let d = &self.deps;
        let run = RunActor::new(RunConfig {
            session_key: self.key.clone(),
            agent_id: self.agent().to_string(),
            kind: self
                .state
                .active()
                .map(|a| a.overrides.kind)
                .unwrap_or_default(),
            exec,
            run_id: p.run_id,
            models: p.models,
            sticky_profile: self.entry.auth_profile_override.clone(),
            thinking_budget: thinking_budget(&p.level),
            system: p.context.prompt.text.clone(),
            // A stranger's turn gets no skill secrets in its commands' env.
            tool_env: match p.trust.untrusted {
                true => Vec::new().into(),
                false => p.context.skills.env.into(),
            },
            trust: p.trust,
            origin: self.route_of_run(untrusted),
            hooks: d.tool_policy.hooks.clone().into(),
            result_max_chars: d.tool_policy.result_max_chars,
            tools: crate::mcp::OfferedTools::live(d.tools.clone(), self.tool_offer(), p.tools),
            messages: self.history.clone(),
            media: d.media.clone(),
            prune,
            hub: d.hub.clone(),
            executor: d.executor.clone(),
            sink: ctx.address().recipient(),
            progress: Some(ctx.address().recipient()),
            steers: ctx.address().recipient(),
            timeout: p.timeout,
            max_model_calls: d.max_model_calls,
        })
        .start();
        crate::metrics::Metrics::inc(&self.deps.metrics.runs_started);
        if let Some(a) = self.state.active_mut() {
            a.closing = false;
            a.launched = true;
            self.run = Some(run);
        }
    }

    /// The chat the active run's turn came from; else (a WebSocket turn, a
    /// queued system event) the operator's last route, never for a
    /// stranger's turn.
    fn route_of_run(&self, untrusted: bool) -> Option<crate::tool::Route> {
        self.state
            .active()
            .and_then(|a| a.overrides.route.clone())
            .or_else(|| (!untrusted).then(|| self.entry.origin.clone()).flatten())
            .map(|o| crate::tool::Route {
                channel: o.channel,
                account_id: o.account_id,
                to: o.to,
                thread_id: o.thread_id,
            })
    }

    /// Aborts the active run: the ids aborted (none when it was already).
    pub(super) fn abort_active(&mut self) -> Vec<RunId> {
        let aborted: Vec<RunId> = self.state.abort().into_iter().collect();
        if !aborted.is_empty() {
            self.abort_run();
        }
        aborted
    }

    /// Tells the running `RunActor` to stop (its end comes back as an event).
    pub(super) fn abort_run(&self) {
        if let Some(run) = &self.run {
            run.do_send(AbortRun);
        }
    }

    /// A sub-agent's run ended: its result goes to the session that spawned it.
    pub(super) fn announce_to_parent(&self, event: &RunEvent) {
        let Some(parent) = &self.entry.spawned_by else {
            return;
        };
        let (run_id, status, text) = match event {
            RunEvent::Final {
                run_id, outcome, ..
            } => (run_id, "ok", outcome.text().to_string()),
            RunEvent::Failed { run_id, error, .. } => (run_id, "error", error.clone()),
            RunEvent::Aborted { run_id, text } => (run_id, "aborted", text.clone()),
            _ => return,
        };
        if let Some(to) = self.deps.subagent_done.get() {
            to.do_send(super::SubagentDone {
                child_key: self.key.to_string(),
                parent_key: parent.clone(),
                label: self.entry.label.clone(),
                run_id: run_id.clone(),
                status: status.to_string(),
                text,
                trust: self.trust(),
            });
        }
    }

    /// `/usage tokens|full`: a usage line under the reply (wire only; the
    /// transcript keeps the model's text).
    pub(super) fn with_usage_footer(&self, event: RunEvent) -> RunEvent {
        let mode = self.entry.response_usage.as_deref().unwrap_or("off");
        match event {
            RunEvent::Final {
                run_id,
                outcome: Outcome::Text(text),
                stop_reason,
                usage,
            } if mode != "off" => {
                let mut footer = format!("Usage: {} in · {} out", usage.input, usage.output);
                let model = match (&self.entry.model_provider, &self.entry.model) {
                    (Some(p), Some(m)) => Some(format!("{p}/{m}")),
                    _ => None,
                };
                if mode == "full" {
                    let e = &self.entry;
                    let session = e.input_tokens + e.output_tokens + e.cache_read + e.cache_write;
                    footer.push_str(&format!(
                        " · cache {} read, {} write · session {session} total",
                        usage.cache_read, usage.cache_write
                    ));
                    if let Some(m) = &model {
                        footer.push_str(&format!(" · {m}"));
                    }
                }
                let price = model.as_deref().and_then(|m| self.deps.prices.of(m));
                if let Some(p) = price {
                    let cost = crate::usage::Totals::of(&usage).cost(p);
                    footer.push_str(&format!(" · ${cost:.4}"));
                }
                RunEvent::Final {
                    run_id,
                    outcome: Outcome::Text(format!("{text}\n\n{footer}")),
                    stop_reason,
                    usage,
                }
            }
            other => other,
        }
    }
}

/// A tool's progress goes on like the run's own events.
impl Handler<crate::tool::ToolProgress> for SessionActor {
    type Result = ();
    fn handle(&mut self, p: crate::tool::ToolProgress, ctx: &mut Context<Self>) {
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
        self.last_activity = Instant::now();
        // Events of a run that is no longer ours (reset) are not written.
        let ours = self
            .state
            .active()
            .is_some_and(|a| Some(a.run_id.as_str()) == run_id_of(&event));
        if ours {
            self.record_step(&event);
        }
        let Some(event) = self.gate(event, ours) else {
            return;
        };
        if let RunEvent::Thinking { delta, .. } = &event {
            match self.reasoning() {
                "off" => return,
                "on" => {
                    // Held back and sent whole before the reply's end.
                    if let Some(a) = self.state.active_mut().filter(|_| ours) {
                        a.reasoning.push_str(delta);
                    }
                    return;
                }
                _ => {}
            }
        }
        if event.end_status().is_none() {
            self.forward(event);
            return;
        }
        if !ours {
            // A run cut off by a reset: tell the clients, touch nothing.
            self.forward(event);
            return;
        }
        if self.recover_overflow(&event, ctx) || self.restart_if_transient(&event, ctx) {
            return;
        }
        let event = self.overflow_error(self.with_tries(event));
        self.finish(event, ctx);
    }
}

impl SessionActor {
    /// What of a streamed delta goes out: decided once, here, by the
    /// active run's kind (`StreamGate`); other events pass.
    fn gate(&mut self, event: RunEvent, ours: bool) -> Option<RunEvent> {
        let RunEvent::Delta {
            run_id,
            delta,
            fresh,
        } = event
        else {
            return Some(event);
        };
        let a = self.state.active_mut().filter(|_| ours)?;
        let (delta, fresh) = a.gate.pass(delta, fresh)?;
        Some(RunEvent::Delta {
            run_id,
            delta,
            fresh,
        })
    }

    /// Persists a run's step: its messages (with their reasoning) and the
    /// model it chose (a `model_change` entry when it changes).
    fn record_step(&mut self, event: &RunEvent) {
        match &event {
            RunEvent::Message {
                message,
                thinking,
                run_id,
            } => {
                let entry = transcript::build::step(message, thinking, run_id);
                if let Err(e) = self.append(entry, false) {
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
                    if self.transcript_model.as_deref() != Some(model.as_str()) {
                        let entry = transcript::build::model_change(&r.provider, &r.model);
                        if transcript::append(&self.deps.store, &self.entry.session_id, &[entry])
                            .is_ok()
                        {
                            self.transcript_model = Some(model.clone());
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
