//! What a run's reply is, decided once: the run classifies its final
//! text by its [`RunKind`] where it ends ([`Outcome::of_final`]), and the
//! session gates its streamed deltas with a [`StreamGate`]. Every consumer
//! (web chat, Control UI, channels, cron announce, heartbeat, `agent.wait`,
//! `/v1`) reads the typed [`Outcome`]; none looks at the silent tokens.
//!
//! Rules, as OpenClaw applies them: a reply that is empty or exactly
//! `NO_REPLY` is silent for every kind; a chat turn's bare `HEARTBEAT_OK`
//! is silent too; a heartbeat's (and a cron job's) reply that is the
//! acknowledgement with at most `ack_max_chars` beside it is silent, and
//! a heartbeat's longer text is an alert with the token taken out.

use serde::{Deserialize, Serialize};

use crate::context::prompt::{is_silent, may_become_silent};

/// The heartbeat acknowledgement a reply may carry.
pub const HEARTBEAT_TOKEN: &str = "HEARTBEAT_OK";
/// What may remain next to the acknowledgement and still be one.
pub const ACK_MAX_CHARS: usize = 300;

/// Why a run runs: how its reply is judged and whether its stream shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "kind")]
pub enum RunKind {
    /// A message from a person (WebSocket, HTTP, a channel).
    #[default]
    Chat,
    /// A heartbeat turn: its stream is hidden; its reply is an alert or nothing.
    Heartbeat {
        #[serde(rename = "ackMaxChars")]
        ack_max_chars: usize,
    },
    /// A cron job's turn.
    Cron,
    /// A sub-agent's turn (`sessions_spawn`, `sessions_send`).
    Subagent,
    /// A webhook's turn.
    Hook,
}

impl RunKind {
    pub fn is_default(&self) -> bool {
        *self == RunKind::Chat
    }

    /// Background work a client may list and cancel (`tasks.list`): a
    /// cron job's run, a sub-agent's.
    pub fn is_task(&self) -> bool {
        matches!(self, RunKind::Cron | RunKind::Subagent)
    }

    /// The kind of a run that answers several messages: a heartbeat only
    /// when every message is one (a person's message makes it a chat).
    pub fn join(self, other: RunKind) -> RunKind {
        match (self, other) {
            (a, b) if a == b => a,
            (RunKind::Chat, _) | (_, RunKind::Chat) => RunKind::Chat,
            (RunKind::Heartbeat { .. }, b) => b,
            (a, _) => a,
        }
    }
}

/// How a run's status reads in records and on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunStatus {
    Ok,
    Error,
    Aborted,
}

impl RunStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Ok => "ok",
            RunStatus::Error => "error",
            RunStatus::Aborted => "aborted",
        }
    }

    /// A stored record's status word (anything unknown is an error).
    pub fn parse(s: &str) -> RunStatus {
        match s {
            "ok" => RunStatus::Ok,
            "aborted" => RunStatus::Aborted,
            _ => RunStatus::Error,
        }
    }
}

/// How a run ended, as every consumer reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Nothing to say (`NO_REPLY`, an empty reply, the heartbeat
    /// acknowledgement). `empty`: the model said nothing at all.
    Silent { empty: bool },
    /// A reply to deliver.
    Text(String),
    /// A heartbeat's alert (the acknowledgement token taken out).
    Alert(String),
    /// The run failed.
    Error(String),
    /// The run was aborted; what it had said so far.
    Aborted(String),
    /// It ended `ok` before this process saw it end: its reply is in its
    /// session's transcript (ask the session).
    Recorded,
}

impl Outcome {
    /// A run's final text, judged by its kind.
    pub fn of_final(kind: RunKind, text: &str) -> Outcome {
        let t = text.trim();
        if t.is_empty() || is_silent(t) {
            return Outcome::Silent {
                empty: t.is_empty(),
            };
        }
        match kind {
            RunKind::Heartbeat { ack_max_chars } => match heartbeat_ack(t, ack_max_chars) {
                Ack::Skip => Outcome::Silent { empty: false },
                Ack::Deliver(alert) => Outcome::Alert(alert),
            },
            RunKind::Cron => match heartbeat_ack(t, ACK_MAX_CHARS) {
                Ack::Skip => Outcome::Silent { empty: false },
                Ack::Deliver(_) => Outcome::Text(text.to_string()),
            },
            RunKind::Chat | RunKind::Subagent | RunKind::Hook if t == HEARTBEAT_TOKEN => {
                Outcome::Silent { empty: false }
            }
            RunKind::Chat | RunKind::Subagent | RunKind::Hook => Outcome::Text(text.to_string()),
        }
    }

    pub fn status(&self) -> RunStatus {
        match self {
            Outcome::Error(_) => RunStatus::Error,
            Outcome::Aborted(_) => RunStatus::Aborted,
            _ => RunStatus::Ok,
        }
    }

    /// The text to show: the reply, the alert, or an aborted run's partial
    /// text; empty for silent, failed and recorded runs.
    pub fn text(&self) -> &str {
        match self {
            Outcome::Text(t) | Outcome::Alert(t) | Outcome::Aborted(t) => t,
            _ => "",
        }
    }

    /// What an announcement sends (None: nothing): the reply, the alert or
    /// an aborted run's partial text, when there is any.
    pub fn to_announce(&self) -> Option<&str> {
        Some(self.text()).filter(|t| !t.trim().is_empty())
    }

    pub fn error(&self) -> Option<&str> {
        match self {
            Outcome::Error(e) => Some(e),
            _ => None,
        }
    }

    pub fn is_silent(&self) -> bool {
        matches!(self, Outcome::Silent { .. })
    }

    /// What a chat surface says for it (None: nothing): the reply or the
    /// alert, a warning for a failure; nothing for silent or aborted runs.
    pub fn for_chat(&self) -> Option<String> {
        match self {
            Outcome::Text(t) | Outcome::Alert(t) => Some(t.trim().to_string()),
            Outcome::Error(e) => Some(format!("⚠️ {e}")),
            Outcome::Silent { .. } | Outcome::Aborted(_) | Outcome::Recorded => None,
        }
    }
}

/// Which streamed text reaches watchers: text that may still become the
/// silent token is held back until it cannot; a heartbeat's stream never
/// shows (only its outcome does). One per run, in its session.
#[derive(Debug, Default)]
pub struct StreamGate {
    hidden: bool,
    held: String,
    open: bool,
}

impl StreamGate {
    pub fn new(kind: RunKind) -> StreamGate {
        StreamGate {
            hidden: matches!(kind, RunKind::Heartbeat { .. }),
            ..StreamGate::default()
        }
    }

    /// A delta of the current assistant message (`fresh`: the first of a
    /// new message). Returns what to pass on now, and whether it starts
    /// the message's shown text.
    pub fn pass(&mut self, delta: String, fresh: bool) -> Option<(String, bool)> {
        if self.hidden {
            return None;
        }
        if fresh {
            self.held.clear();
            self.open = false;
        }
        if self.open {
            return Some((delta, false));
        }
        self.held.push_str(&delta);
        if may_become_silent(&self.held) || self.held.trim().is_empty() {
            return None;
        }
        self.open = true;
        Some((std::mem::take(&mut self.held), true))
    }
}

/// What becomes of a reply that may carry the acknowledgement.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Ack {
    Skip,
    Deliver(String),
}

/// Takes the token off the start and the end (with up to four trailing
/// non-word characters), as often as it is there.
fn strip_edges(raw: &str) -> Option<String> {
    let mut text = raw.trim().to_string();
    let mut stripped = false;
    loop {
        let t = text.trim().to_string();
        if let Some(rest) = t.strip_prefix(HEARTBEAT_TOKEN) {
            text = rest.trim_start().to_string();
            stripped = true;
            continue;
        }
        let at = t.rfind(HEARTBEAT_TOKEN);
        let tail_ok = at.is_some_and(|i| {
            let tail = &t[i + HEARTBEAT_TOKEN.len()..];
            tail.chars().count() <= 4 && tail.chars().all(|c| !c.is_alphanumeric() && c != '_')
        });
        match at.filter(|_| tail_ok) {
            Some(i) => {
                text = t[..i].trim_end().to_string();
                stripped = true;
            }
            None => break,
        }
    }
    stripped.then(|| text.split_whitespace().collect::<Vec<_>>().join(" "))
}

/// The acknowledgement with at most `max_ack` characters beside it is
/// skipped; anything else is delivered without the token.
fn heartbeat_ack(trimmed: &str, max_ack: usize) -> Ack {
    if !trimmed.contains(HEARTBEAT_TOKEN) {
        return Ack::Deliver(trimmed.to_string());
    }
    let unmarked = trimmed
        .trim_start_matches(['*', '`', '~', '_'])
        .trim_end_matches(['*', '`', '~', '_']);
    let picked = strip_edges(trimmed)
        .filter(|t| !t.is_empty())
        .or_else(|| strip_edges(unmarked));
    match picked {
        None => Ack::Deliver(trimmed.to_string()),
        Some(rest) if rest.chars().count() <= max_ack => Ack::Skip,
        Some(rest) => Ack::Deliver(rest),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BEAT: RunKind = RunKind::Heartbeat {
        ack_max_chars: ACK_MAX_CHARS,
    };

    #[test]
    fn the_tools_that_end_a_turn_use_the_same_tokens() {
        use crate::tool::turn_end;
        assert_eq!(turn_end::HEARTBEAT_TOKEN, HEARTBEAT_TOKEN);
        assert_eq!(
            turn_end::SILENT_REPLY,
            crate::context::prompt::SILENT_REPLY_TOKEN
        );
    }

    #[test]
    fn an_announcement_sends_only_text_there_is() {
        let cron = |t: &str| Outcome::of_final(RunKind::Cron, t);
        assert_eq!(
            cron("Water the plants.").to_announce(),
            Some("Water the plants.")
        );
        for quiet in ["", "   ", "NO_REPLY", "HEARTBEAT_OK"] {
            assert_eq!(cron(quiet).to_announce(), None, "{quiet:?}");
        }
        assert_eq!(Outcome::Aborted("half".into()).to_announce(), Some("half"));
        assert_eq!(Outcome::Aborted("  ".into()).to_announce(), None);
        assert_eq!(Outcome::Error("boom".into()).to_announce(), None);
        assert_eq!(Outcome::Recorded.to_announce(), None);
    }

    #[test]
    fn the_acknowledgement_is_never_delivered() {
        for reply in [
            "HEARTBEAT_OK",
            "  HEARTBEAT_OK.  ",
            "**HEARTBEAT_OK**",
            "`HEARTBEAT_OK`",
            "HEARTBEAT_OK All quiet, nothing to report.",
            "Nothing needs attention. HEARTBEAT_OK",
            "HEARTBEAT_OK HEARTBEAT_OK",
            "",
            "NO_REPLY",
        ] {
            assert!(Outcome::of_final(BEAT, reply).is_silent(), "{reply:?}");
            assert!(
                Outcome::of_final(RunKind::Cron, reply).is_silent(),
                "{reply:?}"
            );
        }
        let long = format!(
            "HEARTBEAT_OK {}",
            "The disk is 95% full; clean /var/log. ".repeat(10)
        );
        match Outcome::of_final(BEAT, &long) {
            Outcome::Alert(t) => {
                assert!(t.starts_with("The disk is 95% full") && !t.contains(HEARTBEAT_TOKEN))
            }
            other => panic!("a real alert beside the token is delivered: {other:?}"),
        }
        assert_eq!(
            Outcome::of_final(BEAT, "Your flight leaves at 9."),
            Outcome::Alert("Your flight leaves at 9.".into())
        );
        // The token in the middle of a sentence is not an acknowledgement.
        let mid = "Reply HEARTBEAT_OK means fine; the backup failed tonight.";
        assert_eq!(Outcome::of_final(BEAT, mid), Outcome::Alert(mid.into()));
        // A tighter limit makes the same reply an alert.
        let tight = RunKind::Heartbeat { ack_max_chars: 5 };
        assert!(matches!(
            Outcome::of_final(tight, "HEARTBEAT_OK All quiet, nothing to report."),
            Outcome::Alert(_)
        ));
    }

    #[test]
    fn chat_replies_are_silent_only_for_the_tokens_alone() {
        assert_eq!(
            Outcome::of_final(RunKind::Chat, "  "),
            Outcome::Silent { empty: true }
        );
        for t in [" NO_REPLY ", "HEARTBEAT_OK", "NO_REPLY\n"] {
            assert_eq!(
                Outcome::of_final(RunKind::Chat, t),
                Outcome::Silent { empty: false }
            );
        }
        for t in [
            "NO_REPLY, but also this",
            "no_reply",
            "HEARTBEAT_OK all fine",
        ] {
            assert_eq!(Outcome::of_final(RunKind::Chat, t), Outcome::Text(t.into()));
        }
        assert_eq!(
            Outcome::Error("x".into()).for_chat().as_deref(),
            Some("⚠️ x")
        );
        assert_eq!(Outcome::Aborted("partial".into()).for_chat(), None);
        assert_eq!(Outcome::Aborted("partial".into()).text(), "partial");
    }

    #[test]
    fn the_gate_holds_back_what_may_become_silent_and_hides_heartbeats() {
        let mut g = StreamGate::new(RunKind::Chat);
        assert_eq!(g.pass("NO_".into(), true), None);
        assert_eq!(g.pass("REP".into(), false), None);
        assert_eq!(
            g.pass("LY".into(), false),
            None,
            "the silent token never shows"
        );
        let mut g = StreamGate::new(RunKind::Chat);
        assert_eq!(g.pass("NO".into(), true), None);
        assert_eq!(g.pass("PE, ".into(), false), Some(("NOPE, ".into(), true)));
        assert_eq!(g.pass("fine".into(), false), Some(("fine".into(), false)));
        // A new assistant message starts over.
        assert_eq!(g.pass("Hi".into(), true), Some(("Hi".into(), true)));
        let mut beat = StreamGate::new(RunKind::Heartbeat { ack_max_chars: 300 });
        assert_eq!(beat.pass("Disk full".into(), true), None);
    }

    #[test]
    fn kinds_join_to_chat_when_a_person_is_in_the_run() {
        let beat = RunKind::Heartbeat { ack_max_chars: 1 };
        assert_eq!(beat.join(beat), beat);
        assert_eq!(beat.join(RunKind::Chat), RunKind::Chat);
        assert_eq!(RunKind::Cron.join(beat), RunKind::Cron);
        let json = serde_json::to_value(beat).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"kind": "heartbeat", "ackMaxChars": 1})
        );
        assert_eq!(serde_json::from_value::<RunKind>(json).unwrap(), beat);
    }
}
