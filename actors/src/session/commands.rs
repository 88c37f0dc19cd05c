//! Directives in chat (`/think`, `/model`, `/new`, `/queue`, `/status`,
//! `/context`, `/compact`...): applied to the session and answered as the
//! message's run final without a model call. What a directive does is a
//! pure function of the session's `View` (`decide`: an answer, the entry
//! it leaves, or an act only the actor can do: reset, stop); the actor
//! applies it (`SessionActor::commands`).

use crate::ids::RunId;

use actix::prelude::*;

use super::view::View;
use super::*;
use crate::compaction::job::Keep;
use crate::context::ContextFiles;
use crate::session::autocompact::{Refused, Then};
use crate::session::directives::{Directive, DirectiveError};
use crate::session::history::History;
use crate::session::queue::{parse_queue_directive, QueueSettings};

/// `/status` and `/context` when the workspace files could not be read.
pub(super) const UNREADABLE: &str = "Cannot read the workspace files right now; try again.";

/// What a directive comes to.
#[derive(Debug)]
pub(super) enum Decision {
    /// An answer; nothing changes.
    Say(String),
    /// The entry becomes this one (stored), and the answer.
    Set(String, Box<SessionEntry>),
    /// `/queue`: the session's queue settings and the entry that keeps them.
    Queue(String, QueueSettings, Box<SessionEntry>),
    /// `/reset`.
    Reset,
    /// `/new [model]` (the model checked): a reset, then the model.
    New(Option<String>),
    /// `/stop`.
    Stop,
}

/// What a directive reads besides the view.
pub(super) struct Facts<'a> {
    /// The context files (`/status`, `/context`; None: unreadable).
    pub files: Option<&'a ContextFiles>,
    pub history: &'a History,
    pub queue: &'a QueueSettings,
}

/// `/help` (OpenClaw's layout), naming only what a session here accepts.
const HELP: &str = "\u{2139}\u{fe0f} Help

Session
  /new [model]  |  /reset  |  /compact [instructions]  |  /stop

Options
  /think <level>  |  /model <id>  |  /verbose on|off|full  |  /reasoning on|off|stream  |  /usage off|tokens|full  |  /send on|off|inherit  |  /queue <mode>  |  /agent <id>

Status
  /status  |  /context [list|detail]

More
  /btw <question>  (a side question, not kept)  |  /tts on|off|status|audio <text>  (spoken replies)";

/// What directive `d` does to a session seen as `v`.
pub(super) fn decide(d: Directive, v: &View, f: &Facts) -> Decision {
    let say = Decision::Say;
    match d {
        Directive::Model(m) => model(v, m),
        Directive::New(Some(m)) => match v.check_model(&m) {
            Ok(()) => Decision::New(Some(m)),
            Err(e) => say(e.to_string()),
        },
        Directive::New(None) => Decision::New(None),
        Directive::Agent(id) => agent(v, id),
        Directive::Reset => Decision::Reset,
        Directive::Stop => Decision::Stop,
        Directive::Compact(_) => say("/compact must be sent on its own.".to_string()),
        Directive::Btw(_) => say("/btw must be sent on its own.".to_string()),
        Directive::Tts(_) => say("/tts must be sent on its own.".to_string()),
        Directive::Help => say(HELP.to_string()),
        Directive::Queue(args) => queue(v, &args, f.queue),
        Directive::Status => say(match f.files {
            Some(files) => status(v, files, f.history, f.queue),
            None => UNREADABLE.to_string(),
        }),
        Directive::Context(arg) => say(match f.files {
            Some(files) => context(v, files, f.history, arg.as_deref()),
            None => UNREADABLE.to_string(),
        }),
        Directive::Usage(None) => say(usage(v)),
        level => self::level(v, level),
    }
}

/// Inline directives: they set `o` for this message's run only.
pub(super) fn inline(
    v: &View,
    list: Vec<Directive>,
    o: &mut RunOverrides,
) -> Result<(), DirectiveError> {
    for d in list {
        match d {
            Directive::Think(Some(l)) => o.thinking = Some(l),
            Directive::Verbose(Some(l)) => o.verbose = Some(l),
            Directive::Reasoning(Some(l)) => o.reasoning = Some(l),
            Directive::Model(Some(m)) => {
                v.check_model(&m)?;
                o.model = Some(m);
            }
            _ => {}
        }
    }
    Ok(())
}

/// `/queue [mode] [options]`: the session's queue settings, said or set.
fn queue(v: &View, args: &str, current: &QueueSettings) -> Decision {
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
    let args = args.trim();
    if args.is_empty() {
        return Decision::Say(describe(current));
    }
    let mut entry = v.entry.clone();
    let settings = if args == "reset" || args == "default" {
        entry.queue = None;
        v.deps.queue
    } else {
        match parse_queue_directive(args, *current) {
            Ok(s) => {
                entry.queue = Some(match &v.entry.queue {
                    Some(old) => format!("{old} {args}"),
                    None => args.to_string(),
                });
                s
            }
            Err(e) => return Decision::Say(e.to_string()),
        }
    };
    Decision::Queue(describe(&settings), settings, Box::new(entry))
}

/// `/think`, `/verbose`, `/reasoning`, `/usage <mode>`, `/send`: set the
/// level, or say the current one.
fn level(v: &View, d: Directive) -> Decision {
    let mut e = v.entry.clone();
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
        current => return Decision::Say(current_level(v, current)),
    };
    Decision::Set(set, Box::new(e))
}

/// What a level directive without an argument answers.
fn current_level(v: &View, d: Directive) -> String {
    match d {
        Directive::Think(_) => format!(
            "Current thinking level: {}. Options: {}.",
            v.thinking_level(None),
            THINKING_LEVELS.join(", ")
        ),
        Directive::Verbose(_) => format!(
            "Current verbose level: {}. Options: off, on, full.",
            v.verbose()
        ),
        Directive::Reasoning(_) => format!(
            "Current reasoning visibility: {}. Options: off, on, stream.",
            v.reasoning()
        ),
        _ => format!(
            "Send policy: {}.",
            match v.entry.send_policy.as_deref() {
                Some("allow") => "on",
                Some("deny") => "off",
                _ => "inherit",
            }
        ),
    }
}

/// `/model [ref|default]`.
fn model(v: &View, m: Option<String>) -> Decision {
    let mut e = v.entry.clone();
    match m {
        Some(m) if m == "default" || m == "reset" => {
            e.model_override = None;
            e.auth_profile_override = None;
            let said = "Model reset to the agent's default.".to_string();
            Decision::Set(said, Box::new(e))
        }
        Some(m) => match v.check_model(&m) {
            Ok(()) => {
                if e.model_override.as_deref() != Some(m.as_str()) {
                    e.auth_profile_override = None;
                }
                e.model_override = Some(m.clone());
                Decision::Set(format!("Model set to {m}."), Box::new(e))
            }
            Err(e) => Decision::Say(e.to_string()),
        },
        None => {
            let current = v.model().unwrap_or_else(|| "unknown".into());
            let note = match e.model_override {
                Some(_) => " (session override; /model default to clear)",
                None => "",
            };
            Decision::Say(format!("Current model: {current}{note}."))
        }
    }
}

/// `/agent [id]`.
fn agent(v: &View, id: Option<String>) -> Decision {
    let agents = v.deps.context.agents.join(", ");
    let Some(id) = id.map(|i| i.to_ascii_lowercase()) else {
        let said = format!("Current agent: {}. Agents: {agents}.", v.agent());
        return Decision::Say(said);
    };
    if !v.deps.context.agents.contains(&id) {
        return Decision::Say(format!("Unknown agent {id:?}. Agents: {agents}."));
    }
    let mut e = v.entry.clone();
    e.agent_override = (id != v.own_agent()).then(|| id.clone());
    e.auth_profile_override = None;
    Decision::Set(format!("Agent set to {id}."), Box::new(e))
}

/// `/context [list|detail]`: what the next run's prompt is made of.
fn context(v: &View, files: &ContextFiles, history: &History, arg: Option<&str>) -> String {
    let report = v.next_prompt(files).report.clone();
    let (n, chars) = (history.len(), history.chars());
    match arg {
        None | Some("list") => crate::context::prompt::context_list(&report, n, chars),
        Some("detail") => crate::context::prompt::context_detail(&report, n, chars),
        Some(other) => {
            format!("Unknown /context option {other:?}: use /context list or /context detail.")
        }
    }
}

/// `/status`: the session, its model and how full its context is.
pub(super) fn status(
    v: &View,
    files: &ContextFiles,
    history: &History,
    queue: &QueueSettings,
) -> String {
    let e = v.entry;
    let model = v.model().unwrap_or_else(|| "unknown".into());
    let last = match (&e.model_provider, &e.model) {
        (Some(p), Some(m)) if format!("{p}/{m}") != model => format!(" · last reply: {p}/{m}"),
        _ => String::new(),
    };
    let used = history.tokens(v.next_prompt(files).report.total_chars);
    let window = v
        .models(None)
        .map(|m| v.window(&m))
        .unwrap_or(crate::compaction::tokens::DEFAULT_WINDOW);
    format!(
        "Session {} ({})\nAgent: {} · Model: {model}{}{last}\nThinking: {} · Verbose: {} · Reasoning: {}\nTokens: {} in, {} out, {} total\nContext: ~{used} of {window} tokens ({:.0}% full) · {} messages · {} compactions\nQueue: {}\nRun: {}",
        v.key,
        e.session_id,
        v.agent(),
        e.model_override.as_ref().map(|_| " (session override)").unwrap_or(""),
        v.thinking_level(None),
        v.verbose(),
        v.reasoning(),
        e.input_tokens,
        e.output_tokens,
        e.total_tokens,
        used as f64 * 100.0 / window.max(1) as f64,
        history.len(),
        e.compaction_count,
        format!("{:?}", queue.mode).to_lowercase(),
        match v.active {
            Some(super::state::ActiveRun {
                awaiting: Some(w), ..
            }) => w.as_str(),
            Some(_) => "active",
            None => "idle",
        },
    )
}

/// `/usage`: this session's tokens, cost and footer mode.
fn usage(v: &View) -> String {
    let e = v.entry;
    let mut cost = crate::usage::Costed::default();
    for (m, t) in &e.usage_by_model {
        cost.add(m, t, &v.deps.prices);
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

/// The final of a run answered without a model call (a directive's,
/// `/compact`'s, `/btw`'s).
pub(super) fn answer(run_id: RunId, text: String) -> RunEvent {
    RunEvent::Final {
        run_id,
        outcome: crate::run::Outcome::Text(text),
        stop_reason: crate::provider::StopReason::Stop,
        usage: Default::default(),
    }
}

/// `ack`, once the store is flushed (None: nothing was written).
pub(super) fn acked(
    store: Option<crate::store::Store>,
    ack: SendAck,
) -> ResponseFuture<Result<SendAck, TranscriptError>> {
    Box::pin(async move {
        if let Some(store) = store {
            store.flush().await?;
        }
        Ok(ack)
    })
}

impl SessionActor {
    /// Answers a directive: the answer is the "run"'s final (no model call,
    /// nothing stored in the transcript); acked once session changes are durable.
    pub(super) fn directive_reply(
        &mut self,
        run_id: RunId,
        text: String,
    ) -> ResponseFuture<Result<SendAck, TranscriptError>> {
        self.forward(RunEvent::Started {
            run_id: run_id.clone(),
        });
        self.forward(answer(run_id.clone(), text));
        let store = Some(self.deps.store.clone());
        acked(
            store,
            SendAck::of(&self.entry, run_id, SendStatus::Directive),
        )
    }

    /// A message of directives: `/compact` and `/btw` on their own start
    /// their work; others are applied in order (the workspace files read
    /// first when one needs them) and answered together.
    pub(super) fn commands(
        &mut self,
        run_id: RunId,
        list: Vec<Directive>,
        ctx: &mut Context<Self>,
    ) -> ResponseFuture<Result<SendAck, TranscriptError>> {
        match list.as_slice() {
            [Directive::Compact(instructions)] => {
                let (keep, then) = (Keep::LastTwoTurns, Then::Reply);
                let n = self.history.len();
                let started =
                    self.compact_now(run_id.clone(), keep, instructions.clone(), then, ctx);
                let refused = match started {
                    Ok(()) => {
                        self.forward(RunEvent::Started {
                            run_id: run_id.clone(),
                        });
                        let store = Some(self.deps.store.clone());
                        let ack = SendAck::of(&self.entry, run_id, SendStatus::Directive);
                        return acked(store, ack);
                    }
                    Err(Refused::Active) => {
                        "A run is active: send /compact when it has ended (or /stop it first)."
                            .to_string()
                    }
                    Err(Refused::Nothing) => {
                        format!("Nothing to compact yet: the context holds {n} messages.")
                    }
                    Err(why) => format!("Could not compact: {why}."),
                };
                return self.directive_reply(run_id, refused);
            }
            [Directive::Btw(q)] => {
                let aside = super::btw::side_question(self, run_id.clone(), q.clone());
                return self.aside(run_id, aside, ctx);
            }
            [Directive::Tts(args)] => {
                let aside = super::btw::tts_command(self, run_id.clone(), args.clone());
                return self.aside(run_id, aside, ctx);
            }
            _ => {}
        }
        if !list.iter().any(Directive::reads_files) {
            let answer = self.apply_commands(list, None);
            return self.directive_reply(run_id, answer);
        }
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

    /// Applies a message of directives in order; returns the confirmation.
    fn apply_commands(&mut self, list: Vec<Directive>, files: Option<&ContextFiles>) -> String {
        let mut answers = Vec::new();
        let mut changed = false;
        for d in list {
            let facts = Facts {
                files,
                history: &self.history,
                queue: &self.state.queue.settings,
            };
            let answer = match decide(d, &self.view(), &facts) {
                Decision::Say(answer) => answer,
                Decision::Set(answer, entry) => {
                    (self.entry, changed) = (*entry, true);
                    answer
                }
                Decision::Queue(answer, settings, entry) => {
                    self.state.queue.settings = settings;
                    (self.entry, changed) = (*entry, true);
                    answer
                }
                Decision::Reset => match self.reset() {
                    Ok(()) => "Session reset.".to_string(),
                    Err(e) => format!("Could not reset the session: {e}"),
                },
                Decision::New(model) => match (self.reset(), model) {
                    (Err(e), _) => format!("Could not start a new session: {e}"),
                    (Ok(()), None) => "New session started.".to_string(),
                    (Ok(()), Some(m)) => {
                        self.entry.model_override = Some(m.clone());
                        self.entry.auth_profile_override = None;
                        changed = true;
                        format!("New session started with model {m}.")
                    }
                },
                Decision::Stop => match self.abort_active().is_empty() {
                    true => "No run is active.".to_string(),
                    false => "Stopped the current run.".to_string(),
                },
            };
            answers.push(answer);
        }
        if changed {
            if let Err(e) = self.save_entry() {
                answers.push(format!("(not saved: {e})"));
            }
        }
        answers.join("\n")
    }

    /// A new transcript (new sessionId), settings kept; any run aborted and
    /// what waited ended as aborted.
    pub(super) fn reset(&mut self) -> Result<(), SessionError> {
        let hooks = &self.deps.tool_policy.lifecycle;
        hooks.session(crate::hooks::HookPoint::SessionEnd, &self.key, "reset");
        hooks.session(crate::hooks::HookPoint::SessionStart, &self.key, "clear");
        self.abort_active();
        let why = "the session was reset before this message ran";
        let (writes, events) = self.state.end_queued(why, false, crate::now_ms());
        // The aborted run's late events are no longer ours: not written.
        self.running.clear();
        self.state.end();
        self.entry = self.entry.renewed(crate::now_ms());
        self.history.clear();
        let header = transcript::session_header(&self.entry.session_id, &self.deps.workspace);
        self.commit(vec![header], writes)?;
        for e in events {
            self.forward(e);
        }
        Ok(self.save_entry()?)
    }
}
