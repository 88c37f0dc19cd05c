//! Directives in chat (`/think`, `/model`, `/new`, `/queue`, `/status`,
//! `/context`, `/compact`...): applied to the session and answered as the
//! message's run final without a model call.

use crate::ids::RunId;
use std::sync::Arc;

use actix::prelude::*;

use super::*;
use crate::compaction::job::Keep;
use crate::context::ContextFiles;
use crate::session::autocompact::Then;
use crate::session::directives::Directive;
use crate::session::queue::{parse_queue_directive, QueueSettings};

/// `/status` and `/context` when the workspace files could not be read.
pub(super) const UNREADABLE: &str = "Cannot read the workspace files right now; try again.";

impl SessionActor {
    /// `/queue [mode] [options]`: applies and stores the session's queue
    /// settings. Returns the answer text.
    pub(super) fn queue_directive(&mut self, args: &str) -> Result<String, String> {
        let args = args.trim();
        let describe = |s: &QueueSettings| {
            format!(
                "Queue mode: {:?} (debounce {} ms, cap {}, drop {:?}).",
                s.mode,
                s.debounce.as_millis(),
                s.cap,
                s.drop
            )
            .to_lowercase()
        };
        if args.is_empty() {
            return Ok(describe(&self.state.queue.settings));
        }
        if args == "reset" || args == "default" {
            self.state.queue.settings = self.deps.queue;
            self.entry.queue = None;
        } else {
            let s = parse_queue_directive(args, self.state.queue.settings)?;
            self.state.queue.settings = s;
            let merged = match &self.entry.queue {
                Some(old) => format!("{old} {args}"),
                None => args.to_string(),
            };
            self.entry.queue = Some(merged);
        }
        self.save_entry().map_err(|e| e.to_string())?;
        Ok(describe(&self.state.queue.settings))
    }

    /// Answers a directive: the answer is the "run"'s final (no model call,
    /// nothing stored in the transcript); acked once session changes are durable.
    pub(super) fn directive_reply(
        &mut self,
        run_id: RunId,
        answer: String,
    ) -> ResponseFuture<Result<SendAck, TranscriptError>> {
        self.forward(RunEvent::Started {
            run_id: run_id.clone(),
        });
        self.forward_answer(run_id.clone(), answer);
        self.directive_ack(run_id)
    }

    /// A directive's acknowledgement: after the store's flush, the run that
    /// answers it (its answer follows as that run's events).
    pub(super) fn directive_ack(
        &self,
        run_id: RunId,
    ) -> ResponseFuture<Result<SendAck, TranscriptError>> {
        let store = self.deps.store.clone();
        Box::pin(async move {
            store.flush().await?;
            Ok(SendAck {
                run_id,
                status: SendStatus::Directive,
            })
        })
    }

    /// Directives of which one reads the workspace files (`/status`,
    /// `/context`): the files are read on the blocking pool first.
    pub(super) fn commands_with_files(
        &mut self,
        run_id: RunId,
        list: Vec<Directive>,
        ctx: &mut Context<Self>,
    ) -> ResponseFuture<Result<SendAck, TranscriptError>> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.with_context_files(ctx, move |act, files, _| {
            let answer = act.apply_commands(list, files.as_deref());
            let _ = tx.send(act.directive_reply(run_id, answer));
        });
        Box::pin(async move {
            match rx.await {
                Ok(reply) => reply.await,
                Err(_) => Err(TranscriptError::Stopped),
            }
        })
    }

    /// `/compact [instructions]`: summarises the older context (the last
    /// two user turns kept) with the session's model, or deterministically
    /// when the model's summary cannot be had; the session is busy
    /// meanwhile (messages queue). A `compaction` entry is stored and the
    /// conversation continues from the summary.
    pub(super) fn compact(
        &mut self,
        run_id: RunId,
        instructions: Option<String>,
        ctx: &mut Context<Self>,
    ) -> ResponseFuture<Result<SendAck, TranscriptError>> {
        if self.state.active().is_some() {
            return self.directive_reply(
                run_id,
                "A run is active: send /compact when it has ended (or /stop it first).".into(),
            );
        }
        if crate::compaction::stored::cut_point(&self.history).is_none() {
            let n = self.history.len();
            return self.directive_reply(
                run_id,
                format!("Nothing to compact yet: the context holds {n} messages."),
            );
        }
        self.forward(RunEvent::Started {
            run_id: run_id.clone(),
        });
        let keep = Keep::LastTwoTurns;
        if let Err(why) = self.compact_now(run_id.clone(), keep, instructions, Then::Reply, ctx) {
            self.forward_answer(run_id.clone(), format!("Could not compact: {why}."));
        }
        self.directive_ack(run_id)
    }

    /// Starts a compaction (keeping what `keep` says) as the session's
    /// busy state under `run_id`.
    pub(super) fn compact_now(
        &mut self,
        run_id: RunId,
        keep: Keep,
        instructions: Option<String>,
        then: Then,
        ctx: &mut Context<Self>,
    ) -> Result<(), String> {
        let models = self
            .deps
            .models
            .candidates(self.agent(), self.entry.model_override.as_deref())
            .map_err(|e| e.to_string())?;
        self.state.start_compaction(run_id, crate::now_ms());
        let window = self.window_of(&models);
        let keep = Some(keep);
        let started = self.start_compaction(
            false,
            keep,
            models,
            Arc::from(""),
            window,
            instructions,
            then,
            ctx,
        );
        if started.is_err() {
            self.end_active();
            return Err("the transcript does not match the context".into());
        }
        Ok(())
    }

    /// Checks a model ref and that this session's agent can run it.
    pub(super) fn check_model(&self, model: &str) -> Result<(), String> {
        ModelRef::parse(model).map_err(|e| format!("Invalid model {model:?}: {e}"))?;
        self.deps
            .models
            .candidates(self.agent(), Some(model))
            .map(|_| ())
            .map_err(|e| format!("Invalid model {model:?}: {e}"))
    }

    /// Inline directives: they set `overrides` for this message's run.
    pub(super) fn inline_overrides(
        &self,
        list: Vec<Directive>,
        o: &mut RunOverrides,
    ) -> Result<(), String> {
        for d in list {
            match d {
                Directive::Think(Some(l)) => o.thinking = Some(l),
                Directive::Verbose(Some(l)) => o.verbose = Some(l),
                Directive::Reasoning(Some(l)) => o.reasoning = Some(l),
                Directive::Model(Some(m)) => {
                    self.check_model(&m)?;
                    o.model = Some(m);
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// A new transcript (new sessionId), settings kept; any run aborted and
    /// what waited ended as aborted.
    pub(super) fn reset(&mut self) -> Result<(), SessionError> {
        self.abort_active();
        let why = "the session was reset before this message ran";
        let (writes, events) = self.state.end_queued(why, false, crate::now_ms());
        // The aborted run's late events are no longer ours: not written.
        self.end_active();
        self.entry = self.entry.renewed(crate::now_ms());
        self.set_history(Vec::new());
        self.transcript_model = None;
        let header = transcript::session_header(&self.entry.session_id, &self.deps.workspace);
        self.commit(vec![header], writes)?;
        for e in events {
            self.forward(e);
        }
        Ok(self.save_entry()?)
    }

    pub(super) fn history_chars(&self) -> usize {
        self.history
            .iter()
            .map(|m| {
                m.text.len()
                    + m.tool_calls
                        .iter()
                        .map(|c| c.arguments.to_string().len())
                        .sum::<usize>()
            })
            .sum()
    }

    /// The prompt the next run would get (for `/context`), from the
    /// session's context files.
    pub(super) fn next_prompt(
        &self,
        files: &ContextFiles,
    ) -> Arc<crate::context::prompt::BuiltPrompt> {
        let model = self
            .deps
            .models
            .candidates(self.agent(), self.entry.model_override.as_deref())
            .ok()
            .and_then(|m| m.first().map(|m| m.to_string()))
            .unwrap_or_default();
        let level = self.thinking_level(None);
        self.build_context(files, &model, &level, &self.offered_tools())
            .prompt
    }

    /// `/context [list|detail]`: what the next run's prompt is made of.
    fn context_text(&self, files: &ContextFiles, arg: Option<&str>) -> String {
        let report = self.next_prompt(files).report.clone();
        let (n, chars) = (self.history.len(), self.history_chars());
        match arg {
            None | Some("list") => crate::context::prompt::context_list(&report, n, chars),
            Some("detail") => crate::context::prompt::context_detail(&report, n, chars),
            Some(other) => {
                format!("Unknown /context option {other:?}: use /context list or /context detail.")
            }
        }
    }

    /// `/status`: the session, its model and how full its context is.
    pub(super) fn status_text(&self, files: &ContextFiles) -> String {
        let e = &self.entry;
        let model = self
            .deps
            .models
            .candidates(self.agent(), e.model_override.as_deref())
            .ok()
            .and_then(|m| m.first().map(|m| m.to_string()))
            .unwrap_or_else(|| "unknown".into());
        let last = match (&e.model_provider, &e.model) {
            (Some(p), Some(m)) if format!("{p}/{m}") != model => format!(" · last reply: {p}/{m}"),
            _ => String::new(),
        };
        let prompt_chars = self.next_prompt(files).report.total_chars;
        let used = self.context_tokens(prompt_chars);
        let window = self
            .deps
            .models
            .candidates(self.agent(), e.model_override.as_deref())
            .map(|m| self.window_of(&m))
            .unwrap_or(crate::compaction::tokens::DEFAULT_WINDOW);
        format!(
            "Session {} ({})\nAgent: {} · Model: {model}{}{last}\nThinking: {} · Verbose: {} · Reasoning: {}\nTokens: {} in, {} out, {} total\nContext: ~{used} of {window} tokens ({:.0}% full) · {} messages · {} compactions\nQueue: {}\nRun: {}",
            self.key,
            e.session_id,
            self.agent(),
            e.model_override.as_ref().map(|_| " (session override)").unwrap_or(""),
            self.thinking_level(None),
            self.verbose(),
            self.reasoning(),
            e.input_tokens,
            e.output_tokens,
            e.total_tokens,
            used as f64 * 100.0 / window.max(1) as f64,
            self.history.len(),
            e.compaction_count,
            format!("{:?}", self.state.queue.settings.mode).to_lowercase(),
            if self.state.active().is_some() { "active" } else { "idle" },
        )
    }

    /// Applies a message of directives; returns the confirmation.
    pub(super) fn apply_commands(
        &mut self,
        list: Vec<Directive>,
        files: Option<&ContextFiles>,
    ) -> String {
        let mut answers = Vec::new();
        let mut entry_changed = false;
        for d in list {
            let (answer, changed) = self.command(d, files);
            entry_changed |= changed;
            answers.push(answer);
        }
        if entry_changed {
            if let Err(e) = self.save_entry() {
                answers.push(format!("(not saved: {e})"));
            }
        }
        answers.join("\n")
    }

    /// One directive: its answer, and whether it changed the entry.
    fn command(&mut self, d: Directive, files: Option<&ContextFiles>) -> (String, bool) {
        let unchanged = |answer: String| (answer, false);
        match d {
            Directive::Model(m) => self.model_command(m),
            Directive::New(model) => self.new_command(model),
            Directive::Agent(id) => self.agent_command(id),
            Directive::Reset => unchanged(match self.reset() {
                Ok(()) => "Session reset.".to_string(),
                Err(e) => format!("Could not reset the session: {e}"),
            }),
            Directive::Compact(_) => unchanged("/compact must be sent on its own.".to_string()),
            Directive::Btw(_) => unchanged("/btw must be sent on its own.".to_string()),
            Directive::Queue(args) => unchanged(self.queue_directive(&args).unwrap_or_else(|e| e)),
            Directive::Status => unchanged(match files {
                Some(f) => self.status_text(f),
                None => UNREADABLE.to_string(),
            }),
            Directive::Context(arg) => unchanged(match files {
                Some(f) => self.context_text(f, arg.as_deref()),
                None => UNREADABLE.to_string(),
            }),
            Directive::Usage(None) => unchanged(self.usage_text()),
            Directive::Stop => unchanged(match self.abort_active().is_empty() {
                true => "No run is active.".to_string(),
                false => "Stopped the current run.".to_string(),
            }),
            level => self.level_command(level),
        }
    }

    /// `/think`, `/verbose`, `/reasoning`, `/usage <mode>`, `/send`: set
    /// the level (the entry changed) or say the current one.
    fn level_command(&mut self, d: Directive) -> (String, bool) {
        let e = &mut self.entry;
        let set = match d {
            Directive::Think(Some(l)) => {
                e.thinking_level = Some(l.clone());
                format!("Thinking level set to {l}.")
            }
            Directive::Verbose(Some(l)) => {
                e.verbose_level = Some(l.clone());
                format!("Verbose set to {l}.")
            }
            Directive::Reasoning(Some(l)) => {
                e.reasoning_level = Some(l.clone());
                format!("Reasoning visibility set to {l}.")
            }
            Directive::Usage(Some(l)) => {
                e.response_usage = (l != "off").then(|| l.clone());
                format!("Usage footer set to {l}.")
            }
            Directive::Send(Some(l)) => {
                e.send_policy = match l.as_str() {
                    "on" => Some("allow".into()),
                    "off" => Some("deny".into()),
                    _ => None,
                };
                format!("Send policy set to {l}.")
            }
            current => return (self.current_level(current), false),
        };
        (set, true)
    }

    /// What a level directive without an argument answers.
    fn current_level(&self, d: Directive) -> String {
        match d {
            Directive::Think(_) => format!(
                "Current thinking level: {}. Options: {}.",
                self.thinking_level(None),
                THINKING_LEVELS.join(", ")
            ),
            Directive::Verbose(_) => format!(
                "Current verbose level: {}. Options: off, on, full.",
                self.verbose()
            ),
            Directive::Reasoning(_) => format!(
                "Current reasoning visibility: {}. Options: off, on, stream.",
                self.reasoning()
            ),
            _ => format!(
                "Send policy: {}.",
                match self.entry.send_policy.as_deref() {
                    Some("allow") => "on",
                    Some("deny") => "off",
                    _ => "inherit",
                }
            ),
        }
    }

    /// `/model [ref|default]`.
    fn model_command(&mut self, m: Option<String>) -> (String, bool) {
        match m {
            Some(m) if m == "default" || m == "reset" => {
                self.entry.model_override = None;
                self.entry.auth_profile_override = None;
                ("Model reset to the agent's default.".to_string(), true)
            }
            Some(m) => match self.check_model(&m) {
                Ok(()) => {
                    if self.entry.model_override.as_deref() != Some(m.as_str()) {
                        self.entry.auth_profile_override = None;
                    }
                    self.entry.model_override = Some(m.clone());
                    (format!("Model set to {m}."), true)
                }
                Err(e) => (e, false),
            },
            None => {
                let current = self
                    .deps
                    .models
                    .candidates(self.agent(), self.entry.model_override.as_deref())
                    .ok()
                    .and_then(|m| m.first().map(|m| m.to_string()))
                    .unwrap_or_else(|| "unknown".into());
                let note = match self.entry.model_override {
                    Some(_) => " (session override; /model default to clear)",
                    None => "",
                };
                (format!("Current model: {current}{note}."), false)
            }
        }
    }

    /// `/new [model]`: a reset, then the model for the new session.
    fn new_command(&mut self, model: Option<String>) -> (String, bool) {
        if let Some(Err(e)) = model.as_deref().map(|m| self.check_model(m)) {
            return (e, false);
        }
        if let Err(e) = self.reset() {
            return (format!("Could not start a new session: {e}"), false);
        }
        match model {
            Some(m) => {
                self.entry.model_override = Some(m.clone());
                self.entry.auth_profile_override = None;
                (format!("New session started with model {m}."), true)
            }
            None => ("New session started.".to_string(), false),
        }
    }

    /// `/agent [id]`.
    fn agent_command(&mut self, id: Option<String>) -> (String, bool) {
        let agents = self.deps.context.agents.join(", ");
        let Some(id) = id.map(|i| i.to_ascii_lowercase()) else {
            return (
                format!("Current agent: {}. Agents: {agents}.", self.agent()),
                false,
            );
        };
        if !self.deps.context.agents.contains(&id) {
            return (format!("Unknown agent {id:?}. Agents: {agents}."), false);
        }
        self.entry.agent_override = (id != self.agent_id).then(|| id.clone());
        self.entry.auth_profile_override = None;
        (format!("Agent set to {id}."), true)
    }

    /// `/usage`: this session's tokens, cost and footer mode.
    fn usage_text(&self) -> String {
        let e = &self.entry;
        let mut cost = crate::usage::Costed::default();
        for (m, t) in &e.usage_by_model {
            cost.add(m, t, &self.deps.prices);
        }
        let priced = match cost.missing {
            0 if cost.tokens.runs > 0 => format!(", ${:.4}", cost.total_cost()),
            _ => String::new(),
        };
        format!(
            "Usage this session: {} in, {} out, {} cache read, {} cache write tokens{priced}. Context: {} tokens. Footer: {}.",
            e.input_tokens,
            e.output_tokens,
            e.cache_read,
            e.cache_write,
            e.total_tokens,
            e.response_usage.as_deref().unwrap_or("off")
        )
    }
}
