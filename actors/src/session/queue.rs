//! The session queue (seed 002): what happens to a message that arrives
//! while the session is busy (a run is active or messages wait). Modes:
//! `steer` (inject into the running turn), `followup` (one queued turn per
//! message), `collect` (default: coalesce what is queued into one turn after
//! a debounce), `steer-backlog` (steer now and keep a copy for a later
//! turn), `interrupt` (abort the run; the newest message runs next). A cap
//! bounds the backlog; overflow drops the oldest, the newest, or summarises
//! what was dropped. Also parses `/queue <mode> [debounce:2s cap:25
//! drop:summarize]`.
//!
//! Invariant: messages run in the order they were placed. A message never
//! overtakes one that waits (a busy session queues whatever arrives, and a
//! steer is taken only while nothing waits); a turn is the run of
//! consecutive queued messages that share a run id, so every message runs
//! in the run its placement named. Pure state: the SessionActor stores what
//! `place` decides and starts the turns `next_turn` plans.

use crate::ids::RunId;
use std::collections::VecDeque;
use std::time::Duration;

use crate::settings::parse_duration;

use crate::provider::Image;
use crate::session::inbox::{InboxItem, RunOverrides};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueMode {
    Steer,
    Followup,
    Collect,
    SteerBacklog,
    Interrupt,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DropPolicy {
    Old,
    New,
    Summarize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueSettings {
    pub mode: QueueMode,
    pub debounce: Duration,
    pub cap: usize,
    pub drop: DropPolicy,
}

impl Default for QueueSettings {
    fn default() -> Self {
        QueueSettings {
            mode: QueueMode::Collect,
            debounce: Duration::from_millis(1000),
            cap: 20,
            drop: DropPolicy::Summarize,
        }
    }
}

/// A `/queue` argument that is not understood (the reply says which).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BadQueueArg {
    #[error("unknown queue mode {0:?} (steer, followup, collect, steer-backlog, interrupt)")]
    Mode(String),
    #[error("bad debounce {0:?} (e.g. 500ms, 2s)")]
    Debounce(String),
    #[error("bad cap {0:?} (a number >= 1)")]
    Cap(String),
    #[error("bad drop {0:?} (old, new, summarize)")]
    Drop(String),
    #[error("unknown queue option {0:?} (debounce, cap, drop)")]
    Option(String),
}

/// Parses the arguments of `/queue` over `base`: a mode and `key:value` options.
pub fn parse_queue_directive(
    args: &str,
    base: QueueSettings,
) -> Result<QueueSettings, BadQueueArg> {
    let mut s = base;
    for part in args.split_whitespace() {
        match part.split_once(':') {
            None => {
                s.mode = match part.to_ascii_lowercase().as_str() {
                    "steer" => QueueMode::Steer,
                    "followup" | "follow-up" => QueueMode::Followup,
                    "collect" => QueueMode::Collect,
                    "steer-backlog" | "steer+backlog" => QueueMode::SteerBacklog,
                    "interrupt" => QueueMode::Interrupt,
                    other => return Err(BadQueueArg::Mode(other.to_string())),
                }
            }
            Some(("debounce", v)) => {
                s.debounce = parse_duration(v).ok_or_else(|| BadQueueArg::Debounce(v.into()))?
            }
            Some(("cap", v)) => {
                s.cap = v
                    .parse()
                    .ok()
                    .filter(|c: &usize| *c >= 1)
                    .ok_or_else(|| BadQueueArg::Cap(v.into()))?
            }
            Some(("drop", v)) => {
                s.drop = match v {
                    "old" => DropPolicy::Old,
                    "new" => DropPolicy::New,
                    "summarize" | "summarise" => DropPolicy::Summarize,
                    _ => return Err(BadQueueArg::Drop(v.into())),
                }
            }
            Some((k, _)) => return Err(BadQueueArg::Option(k.into())),
        }
    }
    Ok(s)
}

/// Where the active run stands, as far as placing a message goes.
#[derive(Debug, Clone, Copy, Default)]
pub struct RunView<'a> {
    /// A run (or compaction) is in progress.
    pub active: bool,
    /// The active run's id when it can take a steer now (it runs and has
    /// not said it is closing).
    pub steerable: Option<&'a str>,
}

/// What happens to an incoming message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Placement {
    /// The session is idle: a run starts with it now (its own run id).
    Start,
    /// Injected into the active run `run_id` at its next step.
    Steer { run_id: RunId },
    /// Steered into `run_id`, and a copy waits for a later turn.
    SteerAndBacklog { run_id: RunId },
    /// Waits for the turn of `run_id` (its own id, or the collected run it
    /// joins). `interrupt`: the active run is aborted first.
    Queue {
        run_id: RunId,
        joinable: bool,
        interrupt: bool,
    },
    /// Refused by the cap (`drop: new`).
    Refused,
}

/// A queued message: its inbox key and item.
pub type Queued = (String, InboxItem);

/// A turn to start: the run id, its input and the messages it delivers.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnPlan {
    pub run_id: RunId,
    /// One message as it came, or several coalesced.
    pub text: String,
    pub images: Vec<Image>,
    pub items: Vec<Queued>,
    pub overrides: RunOverrides,
    pub timeout_ms: Option<u64>,
}

#[derive(Debug, Clone, Default)]
pub struct SessionQueue {
    pub settings: QueueSettings,
    pending: VecDeque<Queued>,
    dropped_summaries: Vec<String>,
}

fn summary(text: &str) -> String {
    let one_line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut s: String = one_line.chars().take(80).collect();
    if one_line.chars().count() > 80 {
        s.push('…');
    }
    s
}

impl SessionQueue {
    pub fn new(settings: QueueSettings) -> SessionQueue {
        SessionQueue {
            settings,
            ..Default::default()
        }
    }

    pub fn len(&self) -> usize {
        self.pending.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pending.is_empty()
    }

    /// The queued messages, in order.
    pub fn items(&self) -> impl Iterator<Item = &InboxItem> {
        self.pending.iter().map(|(_, i)| i)
    }

    /// The run ids of the queued messages, in order (repeats included).
    pub fn run_ids(&self) -> impl Iterator<Item = &str> {
        self.pending.iter().map(|(_, i)| i.run_id.as_str())
    }

    /// The run id a waiting message would join (collect), or its own.
    fn join_or_own(&self, message_id: &str) -> RunId {
        match self.pending.back() {
            Some((_, tail)) if tail.joinable => tail.run_id.clone(),
            _ => RunId::from(message_id),
        }
    }

    /// Decides what happens to message `message_id` (nothing changes yet).
    pub fn place(&self, message_id: &str, run: RunView) -> Placement {
        let busy = run.active || !self.pending.is_empty();
        if !busy {
            return Placement::Start;
        }
        let steer_now = self.pending.is_empty().then_some(run.steerable).flatten();
        match (self.settings.mode, steer_now) {
            (QueueMode::Steer, Some(id)) => return Placement::Steer { run_id: id.into() },
            (QueueMode::SteerBacklog, Some(id)) if !self.full() => {
                return Placement::SteerAndBacklog { run_id: id.into() }
            }
            _ => {}
        }
        if self.full() && self.settings.drop == DropPolicy::New {
            return Placement::Refused;
        }
        match self.settings.mode {
            // Steering unavailable: a turn of its own after what waits.
            QueueMode::Steer | QueueMode::SteerBacklog | QueueMode::Followup => Placement::Queue {
                run_id: message_id.into(),
                joinable: false,
                interrupt: false,
            },
            QueueMode::Collect => Placement::Queue {
                run_id: self.join_or_own(message_id),
                joinable: true,
                interrupt: false,
            },
            QueueMode::Interrupt => Placement::Queue {
                run_id: self.join_or_own(message_id),
                joinable: true,
                interrupt: run.active,
            },
        }
    }

    fn full(&self) -> bool {
        self.pending.len() >= self.settings.cap
    }

    /// The messages the cap will push out when one more is queued (`drop:
    /// old` and `summarize`), oldest first.
    pub fn overflow(&self) -> Vec<Queued> {
        if self.settings.drop == DropPolicy::New {
            return Vec::new();
        }
        let over = (self.pending.len() + 1).saturating_sub(self.settings.cap);
        self.pending.iter().take(over).cloned().collect()
    }

    /// Queues a message; returns the messages the cap pushed out (as
    /// `overflow` said; a summarised one is told to the next turn).
    pub fn push(&mut self, key: String, item: InboxItem) -> Vec<Queued> {
        let mut dropped = Vec::new();
        while self.full() && self.settings.drop != DropPolicy::New {
            let Some(old) = self.pending.pop_front() else {
                break;
            };
            if self.settings.drop == DropPolicy::Summarize {
                self.dropped_summaries.push(summary(&old.1.text));
            }
            dropped.push(old);
        }
        self.pending.push_back((key, item));
        dropped
    }

    /// Re-queues a message stored before a restart but never delivered.
    pub fn recover(&mut self, key: String, mut item: InboxItem) {
        item.at_ms = 0;
        self.pending.push_back((key, item));
    }

    /// Takes the messages of run `run_id` out of the queue (cancelled).
    pub fn remove_run(&mut self, run_id: &str) -> Vec<Queued> {
        let (gone, keep): (Vec<Queued>, Vec<Queued>) = self
            .pending
            .drain(..)
            .partition(|(_, i)| i.run_id == run_id);
        self.pending = keep.into();
        gone
    }

    /// Everything queued (a reset ends them all).
    pub fn take_all(&mut self) -> Vec<Queued> {
        self.dropped_summaries.clear();
        self.pending.drain(..).collect()
    }

    /// When the session is free: the next turn, or when to ask again
    /// (`Err(wait)`: a collected run waits out the debounce after its last
    /// message while more may still join it).
    pub fn next_turn(&mut self, now_ms: u64) -> Option<Result<TurnPlan, Duration>> {
        let run_id = self.pending.front()?.1.run_id.clone();
        let n = self
            .pending
            .iter()
            .take_while(|(_, i)| i.run_id == run_id)
            .count();
        let growing = n == self.pending.len()
            && self.settings.mode == QueueMode::Collect
            && self.pending.back().is_some_and(|(_, i)| i.joinable);
        if growing {
            let last = self.pending.back().map(|(_, i)| i.at_ms).unwrap_or(now_ms);
            let due = last + self.settings.debounce.as_millis() as u64;
            if now_ms < due {
                return Some(Err(Duration::from_millis(due - now_ms)));
            }
        }
        let mut items: Vec<Queued> = self.pending.drain(..n).collect();
        let dropped = std::mem::take(&mut self.dropped_summaries);
        // Moved, not cloned: an image may be megabytes of base64.
        let images: Vec<Image> = items
            .iter_mut()
            .flat_map(|(_, i)| std::mem::take(&mut i.images))
            .collect();
        let (overrides, timeout_ms) = joined_overrides(&items);
        let text = turn_text(&items, dropped);
        Some(Ok(TurnPlan {
            run_id,
            text,
            images,
            items,
            overrides,
            timeout_ms,
        }))
    }
}

impl TurnPlan {
    /// What people see of the turn's input: each message as typed, blank
    /// lines between.
    pub fn shown(&self) -> String {
        let typed: Vec<&str> = self
            .items
            .iter()
            .map(|(_, i)| match &i.shown {
                Some(s) => s.as_str(),
                None => crate::inbound::msg_context::strip_envelope(&i.text),
            })
            .collect();
        typed.join("\n\n")
    }
}

/// The overrides of a turn of several messages: the first's, made
/// untrusted by any untrusted one, its kind joined with theirs, and every
/// message's channel policy applying (and the first's time limit).
fn joined_overrides(items: &[Queued]) -> (RunOverrides, Option<u64>) {
    let first = &items[0].1;
    let (mut overrides, timeout_ms) = (first.overrides.clone(), first.timeout_ms);
    overrides.untrusted = items.iter().any(|(_, i)| i.overrides.untrusted);
    overrides.kind = items
        .iter()
        .fold(overrides.kind, |k, (_, i)| k.join(i.overrides.kind));
    for (_, i) in &items[1..] {
        for c in &i.overrides.channels {
            if !overrides.channels.contains(c) {
                overrides.channels.push(c.clone());
            }
        }
    }
    (overrides, timeout_ms)
}

/// What the model reads for a turn: the message, or the queued messages
/// numbered, after the summaries of those the cap dropped.
fn turn_text(items: &[Queued], dropped: Vec<String>) -> String {
    if items.len() == 1 && dropped.is_empty() {
        return items[0].1.text.clone();
    }
    let mut out = String::from("[Queued messages while the agent was busy]");
    if !dropped.is_empty() {
        out.push_str(&format!(
            "\n\n[{} earlier messages were dropped; summaries:]",
            dropped.len()
        ));
        for d in dropped {
            out.push_str(&format!("\n- {d}"));
        }
    }
    for (i, (_, p)) in items.iter().enumerate() {
        out.push_str(&format!("\n\n---\nQueued #{}\n{}", i + 1, p.text));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(mode: QueueMode) -> SessionQueue {
        SessionQueue::new(QueueSettings {
            mode,
            ..QueueSettings::default()
        })
    }

    fn busy() -> RunView<'static> {
        RunView {
            active: true,
            steerable: Some("r0"),
        }
    }

    /// A message arrives at `now`: placed and, when it waits, queued (as
    /// the session does). Returns the placement.
    fn offer(
        q: &mut SessionQueue,
        id: &str,
        text: &str,
        images: Vec<Image>,
        now: u64,
    ) -> Placement {
        let p = q.place(id, busy());
        let (run_id, joinable) = match &p {
            Placement::Queue {
                run_id, joinable, ..
            } => (run_id.clone(), *joinable),
            Placement::SteerAndBacklog { .. } => (format!("{id}-backlog").into(), false),
            _ => return p,
        };
        q.push(
            format!("k-{id}"),
            InboxItem {
                message_id: id.into(),
                run_id,
                assigned: false,
                text: text.into(),
                shown: None,
                images,
                at_ms: now,
                joinable,
                overrides: RunOverrides::default(),
                timeout_ms: None,
            },
        );
        p
    }

    fn text(turn: Option<Result<TurnPlan, Duration>>) -> Option<Result<String, Duration>> {
        turn.map(|t| t.map(|p| p.text))
    }

    #[test]
    fn idle_sessions_start_a_run_whatever_the_mode() {
        for mode in [
            QueueMode::Steer,
            QueueMode::Followup,
            QueueMode::Collect,
            QueueMode::SteerBacklog,
            QueueMode::Interrupt,
        ] {
            assert_eq!(q(mode).place("hi", RunView::default()), Placement::Start);
        }
    }

    #[test]
    fn each_mode_treats_a_busy_session_its_way() {
        assert_eq!(
            offer(&mut q(QueueMode::Steer), "a", "a", vec![], 0),
            Placement::Steer {
                run_id: "r0".into()
            }
        );
        let mut sb = q(QueueMode::SteerBacklog);
        assert_eq!(
            offer(&mut sb, "a", "a", vec![], 0),
            Placement::SteerAndBacklog {
                run_id: "r0".into()
            }
        );
        assert_eq!(sb.len(), 1);
        let mut i = q(QueueMode::Interrupt);
        assert!(matches!(
            offer(&mut i, "b", "b", vec![], 0),
            Placement::Queue {
                interrupt: true,
                ..
            }
        ));
        let mut f = q(QueueMode::Followup);
        assert!(matches!(
            offer(&mut f, "1", "1", vec![], 0),
            Placement::Queue { .. }
        ));
        assert!(matches!(
            offer(&mut f, "2", "2", vec![], 0),
            Placement::Queue { .. }
        ));
        assert_eq!(
            text(f.next_turn(0)),
            Some(Ok("1".into())),
            "one turn per queued message"
        );
        assert_eq!(text(f.next_turn(0)), Some(Ok("2".into())));
        assert_eq!(text(f.next_turn(0)), None);
    }

    #[test]
    fn collect_waits_for_the_debounce_then_coalesces() {
        let mut c = q(QueueMode::Collect);
        offer(&mut c, "k1", "first", vec![], 1000);
        offer(&mut c, "k2", "second", vec![], 1500);
        assert_eq!(
            text(c.next_turn(2000)),
            Some(Err(Duration::from_millis(500)))
        );
        let Some(Ok(plan)) = c.next_turn(2500) else {
            panic!("due")
        };
        assert_eq!(plan.run_id, "k1", "the run the first message named");
        assert_eq!(plan.items.len(), 2);
        let text_ = plan.text;
        assert!(
            text_.starts_with("[Queued messages while the agent was busy]"),
            "{text_}"
        );
        assert!(
            text_.contains("Queued #1\nfirst") && text_.contains("Queued #2\nsecond"),
            "{text_}"
        );
        assert_eq!(text(c.next_turn(3000)), None);
        offer(&mut c, "k3", "solo", vec![], 0);
        assert_eq!(
            text(c.next_turn(5000)),
            Some(Ok("solo".into())),
            "a single message is passed as is"
        );
    }

    #[test]
    fn a_new_message_never_overtakes_one_that_waits() {
        let mut c = q(QueueMode::Collect);
        // The run ended, the collected message waits out its debounce: the
        // session is still busy, so the next message joins it.
        offer(&mut c, "b", "B", vec![], 1000);
        let idle_run = RunView::default();
        assert_eq!(
            c.place("c", idle_run),
            Placement::Queue {
                run_id: "b".into(),
                joinable: true,
                interrupt: false
            }
        );
        // Steer mode steers only when nothing waits.
        let mut s = q(QueueMode::Steer);
        offer(&mut s, "x", "X", vec![], 0);
        assert!(s.is_empty(), "steered, not queued");
        s.settings.mode = QueueMode::Followup;
        offer(&mut s, "y", "Y", vec![], 0);
        s.settings.mode = QueueMode::Steer;
        assert_eq!(
            s.place("z", busy()),
            Placement::Queue {
                run_id: "z".into(),
                joinable: false,
                interrupt: false
            },
            "y waits, so z waits behind it"
        );
    }

    #[test]
    fn images_ride_with_their_message_into_the_turn_that_delivers_it() {
        let img = |d: &str| Image::inline("image/png", d.into());
        let mut c = q(QueueMode::Collect);
        offer(&mut c, "a", "a", vec![img("A")], 0);
        offer(&mut c, "b", "b", vec![], 0);
        offer(&mut c, "c", "c", vec![img("C1"), img("C2")], 0);
        let Some(Ok(turn)) = c.next_turn(10_000) else {
            panic!("due")
        };
        let data: Vec<&str> = turn.images.iter().map(|i| i.data.as_str()).collect();
        assert_eq!(data, ["A", "C1", "C2"], "in message order");
        let mut f = q(QueueMode::Followup);
        offer(&mut f, "x", "x", vec![img("X")], 0);
        offer(&mut f, "y", "y", vec![], 0);
        let Some(Ok(t)) = f.next_turn(0) else {
            panic!()
        };
        assert_eq!((t.text.as_str(), t.images), ("x", vec![img("X")]));
        assert_eq!(text(f.next_turn(0)), Some(Ok("y".into())));
        let mut r = q(QueueMode::Followup);
        r.recover(
            "k".into(),
            InboxItem {
                message_id: "m".into(),
                run_id: "m".into(),
                assigned: false,
                text: "after restart".into(),
                shown: None,
                images: vec![img("R")],
                at_ms: 99,
                joinable: true,
                overrides: RunOverrides::default(),
                timeout_ms: None,
            },
        );
        let Some(Ok(t)) = r.next_turn(0) else {
            panic!()
        };
        assert_eq!(
            (t.text.as_str(), t.images),
            ("after restart", vec![img("R")])
        );
    }

    #[test]
    fn the_cap_drops_by_policy() {
        let settings = |drop| QueueSettings {
            mode: QueueMode::Followup,
            cap: 2,
            drop,
            ..QueueSettings::default()
        };
        let mut new = SessionQueue::new(settings(DropPolicy::New));
        offer(&mut new, "1", "1", vec![], 0);
        offer(&mut new, "2", "2", vec![], 0);
        assert_eq!(offer(&mut new, "3", "3", vec![], 0), Placement::Refused);
        assert_eq!(text(new.next_turn(0)), Some(Ok("1".into())));
        let mut old = SessionQueue::new(settings(DropPolicy::Old));
        for t in ["1", "2", "3"] {
            offer(&mut old, t, t, vec![], 0);
        }
        assert_eq!(text(old.next_turn(0)), Some(Ok("2".into())));
        let mut sum = SessionQueue::new(QueueSettings {
            mode: QueueMode::Collect,
            cap: 2,
            debounce: Duration::ZERO,
            drop: DropPolicy::Summarize,
        });
        for (id, t) in [("a", "the very first"), ("b", "2"), ("c", "3")] {
            offer(&mut sum, id, t, vec![], 0);
        }
        let Some(Ok(TurnPlan { text, .. })) = sum.next_turn(0) else {
            panic!()
        };
        assert!(
            text.contains("1 earlier messages were dropped") && text.contains("- the very first"),
            "{text}"
        );
        assert!(
            text.contains("Queued #1\n2") && text.contains("Queued #2\n3"),
            "{text}"
        );
    }

    #[test]
    fn the_queue_directive_parses_modes_and_options() {
        let base = QueueSettings::default();
        let s = parse_queue_directive("collect debounce:2s cap:25 drop:summarize", base).unwrap();
        assert_eq!(
            s,
            QueueSettings {
                mode: QueueMode::Collect,
                debounce: Duration::from_secs(2),
                cap: 25,
                drop: DropPolicy::Summarize
            }
        );
        assert_eq!(
            parse_queue_directive("steer", base).unwrap().mode,
            QueueMode::Steer
        );
        assert_eq!(
            parse_queue_directive("debounce:500ms", base)
                .unwrap()
                .debounce,
            Duration::from_millis(500)
        );
        assert_eq!(
            parse_queue_directive("interrupt drop:old", base)
                .unwrap()
                .drop,
            DropPolicy::Old
        );
        for bad in [
            "sideways",
            "cap:0",
            "debounce:soon",
            "drop:all",
            "color:red",
        ] {
            assert!(parse_queue_directive(bad, base).is_err(), "{bad}");
        }
    }
}
