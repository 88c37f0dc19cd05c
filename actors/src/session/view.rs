//! What the session's settings come to, read without changing anything:
//! the entry over the configured defaults and the active run's own
//! overrides (agent, model, levels, exec policy, trust, tools, route, the
//! prompt it is built with), and the texts and events derived from them
//! (the usage footer, a sub-agent's report). Pure: the actor builds a
//! `View` of itself (`SessionActor::view`) and acts on what it says.

use std::sync::Arc;
use std::time::Instant;

use super::directives::DirectiveError;
use super::history::History;
use super::state::ActiveRun;
use super::{RunOverrides, SessionDeps, SessionEntry, SubagentDone};
use crate::context::{ContextFiles, RunContext, RunInputs};
use crate::ids::{RunId, SessionKey};
use crate::provider::selection::{ModelRef, ModelRefError};
use crate::provider::ToolSpec;
use crate::run::{Outcome, RunEvent};

pub(super) struct View<'a> {
    pub key: &'a SessionKey,
    pub deps: &'a SessionDeps,
    pub entry: &'a SessionEntry,
    /// The active run, when there is one.
    pub active: Option<&'a ActiveRun>,
}

/// A run's inputs, gathered before it starts (`View::prepare`).
pub(super) struct Prepared {
    pub run_id: RunId,
    pub models: Vec<ModelRef>,
    pub level: String,
    pub timeout: std::time::Duration,
    pub tools: Arc<[ToolSpec]>,
    pub trust: crate::trust::Trust,
    pub context: RunContext,
}

impl<'a> View<'a> {
    fn overrides(&self) -> Option<&'a RunOverrides> {
        self.active.map(|a| &a.overrides)
    }

    /// The agent answering this session (`/agent` override, else the key's).
    pub fn agent(&self) -> &'a str {
        self.entry
            .agent_override
            .as_deref()
            .unwrap_or_else(|| crate::ids::key::agent(self.key))
    }

    /// The agent the session's key names.
    pub fn own_agent(&self) -> &'a str {
        crate::ids::key::agent(self.key)
    }

    pub fn verbose(&self) -> String {
        self.overrides()
            .and_then(|o| o.verbose.clone())
            .or_else(|| self.entry.verbose_level.clone())
            .unwrap_or_else(|| self.deps.verbose_default.clone())
    }

    pub fn reasoning(&self) -> &'a str {
        self.overrides()
            .and_then(|o| o.reasoning.as_deref())
            .or(self.entry.reasoning_level.as_deref())
            .unwrap_or("stream")
    }

    /// The thinking level of a run asking for `run` (else the session's).
    pub fn thinking_level(&self, run: Option<&str>) -> String {
        run.map(str::to_string)
            .or_else(|| self.entry.thinking_level.clone())
            .unwrap_or_else(|| self.deps.thinking_default.clone())
    }

    /// The models a run tries, first to last (`choice`: a run's or the
    /// session's override).
    pub fn models(&self, choice: Option<&str>) -> Result<Vec<ModelRef>, ModelRefError> {
        let choice = choice.or(self.entry.model_override.as_deref());
        self.deps.models.candidates(self.agent(), choice)
    }

    /// The model the session's next run starts with.
    pub fn model(&self) -> Option<String> {
        self.models(None)
            .ok()
            .and_then(|m| m.first().map(|m| m.to_string()))
    }

    /// Checks a model ref and that this session's agent can run it.
    pub fn check_model(&self, model: &str) -> Result<(), DirectiveError> {
        let invalid =
            |e: ModelRefError| DirectiveError::from(format!("Invalid model {model:?}: {e}"));
        ModelRef::parse(model).map_err(invalid)?;
        let candidates = self.deps.models.candidates(self.agent(), Some(model));
        candidates.map(|_| ()).map_err(invalid)
    }

    /// The context window of the first of `models`.
    pub fn window(&self, models: &[ModelRef]) -> u64 {
        models
            .first()
            .map_or(crate::compaction::tokens::DEFAULT_WINDOW, |m| {
                self.deps.windows.of(&m.to_string())
            })
    }

    /// Whether this run prunes old tool results: `sliding` always,
    /// `cache-ttl` once the TTL since the last model call has passed (the
    /// provider's prompt cache is cold then anyway).
    pub fn prune(&self, models: &[ModelRef], history: &History) -> Option<crate::run::Prune> {
        use crate::compaction::PruneMode;
        let s = &self.deps.pruning;
        let on = match s.mode {
            PruneMode::None => false,
            PruneMode::Sliding => true,
            PruneMode::CacheTtl => history.cold(s.ttl, Instant::now()),
        };
        on.then(|| crate::run::Prune {
            settings: s.clone(),
            window: self.window(models),
        })
    }

    /// A memory flush is due. Never for a turn holding a stranger's
    /// message: what it causes does not write the notes trusted turns read.
    pub fn flush_due(&self) -> bool {
        let f = &self.deps.compaction.memory_flush;
        f.enabled
            && self.deps.memory_writable
            && !self.trust().untrusted
            && self.entry.memory_flush_compaction_count != Some(self.entry.compaction_count)
    }

    /// The session's exec settings over the configured defaults. A turn
    /// with a message from an untrusted sender runs its commands in the
    /// sandbox when there is one, else not at all: never on the host.
    pub fn exec_policy(&self, untrusted: bool) -> crate::approvals::ExecPolicy {
        use crate::approvals::{Ask, Host, Security};
        let d = &self.deps.tool_policy.exec;
        let e = self.entry;
        let mut p = crate::approvals::ExecPolicy {
            host: e
                .exec_host
                .as_deref()
                .and_then(|h| Host::parse(h).ok())
                .or(d.host)
                .unwrap_or_else(|| d.sandbox.host_for(self.key)),
            security: e
                .exec_security
                .as_deref()
                .and_then(|s| Security::parse(s).ok())
                .unwrap_or(d.security),
            ask: e
                .exec_ask
                .as_deref()
                .and_then(|a| Ask::parse(a).ok())
                .unwrap_or(d.ask),
            node: e.exec_node.as_deref().or(d.node.as_deref()).map(Arc::from),
        };
        if untrusted {
            match d.sandbox.mode != crate::tool::sandbox::Mode::Off {
                true => p.host = Host::Sandbox,
                false => p.security = Security::Deny,
            }
        }
        p
    }

    /// What the active run acts with (an idle session: its key's channel,
    /// trusted).
    pub fn trust(&self) -> crate::trust::Trust {
        match self.overrides() {
            Some(o) => o.trust(self.key),
            None => RunOverrides::default().trust(self.key),
        }
    }

    /// The tools the active run is offered: its channels' layers and, when
    /// it holds a stranger's message, the untrusted profile.
    pub fn offered_tools(&self) -> Arc<[ToolSpec]> {
        (self.tool_offer())(&self.deps.tools.all())
    }

    /// The policy of the active run, as a function of the bench (applied
    /// again when an MCP server's tools change during the run).
    pub fn tool_offer(&self) -> crate::mcp::Offer {
        let d = self.deps;
        let run = self
            .overrides()
            .and_then(|o| o.tools_allow.clone())
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
            .overrides()
            .is_some_and(|o| matches!(o.kind, crate::run::RunKind::Heartbeat { .. }));
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
    pub fn build_context(
        &self,
        files: &ContextFiles,
        model: &str,
        level: &str,
        tools: &[ToolSpec],
    ) -> RunContext {
        let inputs = RunInputs {
            agent_id: self.agent(),
            model,
            thinking: level,
            tools,
            skill_filter: self.entry.skill_filter.as_deref(),
            channel: self.overrides().and_then(|o| o.channel.as_deref()),
        };
        self.deps.context.build_run(files, self.key, &inputs)
    }

    /// The prompt the next run would get (for `/status`, `/context`).
    pub fn next_prompt(&self, files: &ContextFiles) -> Arc<crate::context::prompt::BuiltPrompt> {
        let model = self.model().unwrap_or_default();
        let level = self.thinking_level(None);
        self.build_context(files, &model, &level, &self.offered_tools())
            .prompt
    }

    /// What the active run is started with: its models, thinking level,
    /// time limit, tools, trust and context. Err: it has no model (None:
    /// nothing is active).
    pub fn prepare(&self, files: &ContextFiles) -> Option<Result<Prepared, ModelRefError>> {
        let a = self.active?;
        let models = match self.models(a.overrides.model.as_deref()) {
            Ok(m) => m,
            Err(e) => return Some(Err(e)),
        };
        let level = self.thinking_level(a.overrides.thinking.as_deref());
        let timeout = a
            .timeout
            .map_or(self.deps.timeout, |t| t.min(self.deps.timeout));
        let model = models.first().map(|m| m.to_string()).unwrap_or_default();
        let tools = self.offered_tools();
        let trust = self.trust();
        let context = match trust.untrusted {
            // The operator's private notes stay out of a stranger's turn.
            true => self.build_context(&files.for_stranger(), &model, &level, &tools),
            false => self.build_context(files, &model, &level, &tools),
        };
        Some(Ok(Prepared {
            run_id: a.run_id.clone(),
            models,
            level,
            timeout,
            tools,
            trust,
            context,
        }))
    }

    /// The chat the active run's turn came from; else (a WebSocket turn, a
    /// queued system event) the operator's last route, never for a
    /// stranger's turn.
    pub fn route(&self, untrusted: bool) -> Option<crate::tool::Route> {
        self.overrides()
            .and_then(|o| o.route.clone())
            .or_else(|| (!untrusted).then(|| self.entry.origin.clone()).flatten())
            .map(|o| crate::tool::Route {
                channel: o.channel,
                account_id: o.account_id,
                to: o.to,
                thread_id: o.thread_id,
            })
    }

    /// Where a message came from, as its untrusted-content block names it.
    pub fn source_of(&self, origin: Option<&crate::session::Origin>) -> String {
        match origin {
            Some(o) => format!("{} {} chat {}", o.channel, o.chat_type, o.to),
            None => format!(
                "{} ({})",
                crate::context::channel_of_key(self.key),
                self.key
            ),
        }
    }

    /// A sub-agent's run ended: what goes to the session that spawned it.
    pub fn subagent_done(&self, event: &RunEvent) -> Option<SubagentDone> {
        let parent = self.entry.spawned_by.as_ref()?;
        let (run_id, status, text) = match event {
            RunEvent::Final {
                run_id, outcome, ..
            } => (run_id, "ok", outcome.text().to_string()),
            RunEvent::Failed { run_id, error, .. } => (run_id, "error", error.clone()),
            RunEvent::Aborted { run_id, text } => (run_id, "aborted", text.clone()),
            _ => return None,
        };
        Some(SubagentDone {
            child_key: self.key.to_string(),
            parent_key: parent.clone(),
            label: self.entry.label.clone(),
            run_id: run_id.clone(),
            status: status.to_string(),
            text,
            trust: self.trust(),
        })
    }

    /// `/usage tokens|full`: a usage line under the reply (wire only; the
    /// transcript keeps the model's text).
    pub fn with_usage_footer(&self, event: RunEvent) -> RunEvent {
        let mode = self.entry.response_usage.as_deref().unwrap_or("off");
        let RunEvent::Final {
            run_id,
            outcome: Outcome::Text(text),
            stop_reason,
            usage,
        } = event
        else {
            return event;
        };
        if mode == "off" {
            return RunEvent::Final {
                run_id,
                outcome: Outcome::Text(text),
                stop_reason,
                usage,
            };
        }
        let e = self.entry;
        let mut footer = format!("Usage: {} in · {} out", usage.input, usage.output);
        let model = match (&e.model_provider, &e.model) {
            (Some(p), Some(m)) => Some(format!("{p}/{m}")),
            _ => None,
        };
        if mode == "full" {
            let session = e.input_tokens + e.output_tokens + e.cache_read + e.cache_write;
            footer.push_str(&format!(
                " · cache {} read, {} write · session {session} total",
                usage.cache_read, usage.cache_write
            ));
            if let Some(m) = &model {
                footer.push_str(&format!(" · {m}"));
            }
        }
        if let Some(p) = model.as_deref().and_then(|m| self.deps.prices.of(m)) {
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
}
