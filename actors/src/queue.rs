//! The session queue (seed 002): what happens to a message that arrives
//! while a run is active. Modes: `steer` (inject into the running turn),
//! `followup` (one queued turn at a time after the run), `collect` (default:
//! coalesce everything queued into one follow-up after a debounce),
//! `steer-backlog` (steer now and keep it for a later turn), `interrupt`
//! (abort the run, start the newest message). A cap bounds the backlog;
//! overflow drops the oldest, the newest, or summarises what was dropped.
//! Pure state: the SessionActor maps `Action`s to `Steer`/`FollowUp`/
//! `AbortRun` messages and new runs. Also parses `/queue <mode> [debounce:2s
//! cap:25 drop:summarize]`.

use std::collections::VecDeque;
use std::time::Duration;

use crate::provider::Image;

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

fn parse_duration(s: &str) -> Option<Duration> {
    let s = s.trim();
    let (num, unit) = s.split_at(
        s.find(|c: char| !c.is_ascii_digit() && c != '.')
            .unwrap_or(s.len()),
    );
    let n: f64 = num.parse().ok()?;
    let ms = match unit {
        "" | "ms" => n,
        "s" => n * 1000.0,
        "m" => n * 60_000.0,
        _ => return None,
    };
    (ms >= 0.0).then(|| Duration::from_millis(ms as u64))
}

/// Parses the arguments of `/queue` over `base`: a mode and `key:value` options.
pub fn parse_queue_directive(args: &str, base: QueueSettings) -> Result<QueueSettings, String> {
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
                    other => return Err(format!("unknown queue mode {other:?} (steer, followup, collect, steer-backlog, interrupt)")),
                }
            }
            Some(("debounce", v)) => s.debounce = parse_duration(v).ok_or_else(|| format!("bad debounce {v:?} (e.g. 500ms, 2s)"))?,
            Some(("cap", v)) => {
                s.cap = v.parse().ok().filter(|c: &usize| *c >= 1).ok_or_else(|| format!("bad cap {v:?} (a number >= 1)"))?
            }
            Some(("drop", v)) => {
                s.drop = match v {
                    "old" => DropPolicy::Old,
                    "new" => DropPolicy::New,
                    "summarize" | "summarise" => DropPolicy::Summarize,
                    _ => return Err(format!("bad drop {v:?} (old, new, summarize)")),
                }
            }
            Some((k, _)) => return Err(format!("unknown queue option {k:?} (debounce, cap, drop)")),
        }
    }
    Ok(s)
}

/// What the session should do with an incoming message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// No run is active: start one with this text.
    StartRun(String),
    /// Inject into the active run now.
    Steer(String),
    /// Inject now and also keep it queued for a later turn.
    SteerAndQueue(String),
    /// Abort the active run, then start one with this text.
    Interrupt(String),
    /// Kept in the backlog.
    Queued,
    /// Refused by the cap (`drop: new`).
    Dropped,
}

#[derive(Debug, Clone)]
struct Pending {
    text: String,
    images: Vec<Image>,
    at_ms: u64,
}

/// The input of a queued turn: the (coalesced) text and every image that
/// came with the messages it carries.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Turn {
    pub text: String,
    pub images: Vec<Image>,
}

impl Turn {
    pub fn new(text: String, images: Vec<Image>) -> Turn {
        Turn { text, images }
    }
}

impl From<&str> for Turn {
    fn from(text: &str) -> Turn {
        Turn::new(text.to_string(), Vec::new())
    }
}

#[derive(Debug, Clone, Default)]
pub struct SessionQueue {
    pub settings: QueueSettings,
    pending: VecDeque<Pending>,
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

    fn enqueue(&mut self, text: String, now_ms: u64) -> Action {
        if self.pending.len() >= self.settings.cap {
            match self.settings.drop {
                DropPolicy::New => return Action::Dropped,
                DropPolicy::Old => {
                    self.pending.pop_front();
                }
                DropPolicy::Summarize => {
                    if let Some(old) = self.pending.pop_front() {
                        self.dropped_summaries.push(summary(&old.text));
                    }
                }
            }
        }
        self.pending.push_back(Pending {
            text,
            images: Vec::new(),
            at_ms: now_ms,
        });
        Action::Queued
    }

    /// Gives the images of the message just queued to its queue entry (they
    /// reach the model with the turn that delivers it).
    pub fn attach(&mut self, images: Vec<Image>) {
        if let Some(last) = self.pending.back_mut() {
            last.images.extend(images);
        }
    }

    /// Re-queues a message stored before a restart but never delivered.
    pub fn recover(&mut self, turn: Turn) {
        self.pending.push_back(Pending {
            text: turn.text,
            images: turn.images,
            at_ms: 0,
        });
    }

    /// A message arrived.
    pub fn on_message(&mut self, text: String, run_active: bool, now_ms: u64) -> Action {
        if !run_active {
            return Action::StartRun(text);
        }
        match self.settings.mode {
            QueueMode::Steer => Action::Steer(text),
            QueueMode::SteerBacklog => {
                self.enqueue(text.clone(), now_ms);
                Action::SteerAndQueue(text)
            }
            QueueMode::Interrupt => {
                self.pending.clear();
                Action::Interrupt(text)
            }
            QueueMode::Followup | QueueMode::Collect => self.enqueue(text, now_ms),
        }
    }

    /// After a run ended: the next turn's text, or when to ask again
    /// (`Err(wait)`: collect waits out the debounce after the last message).
    pub fn next_turn(&mut self, now_ms: u64) -> Option<Result<Turn, Duration>> {
        if self.pending.is_empty() {
            return None;
        }
        match self.settings.mode {
            QueueMode::Collect => {
                let last = self.pending.back().map(|p| p.at_ms).unwrap_or(now_ms);
                let due = last + self.settings.debounce.as_millis() as u64;
                if now_ms < due {
                    return Some(Err(Duration::from_millis(due - now_ms)));
                }
                Some(Ok(self.take_all()))
            }
            _ => self
                .pending
                .pop_front()
                .map(|p| Ok(Turn::new(p.text, p.images))),
        }
    }

    /// Everything queued, coalesced into one message with all its images.
    fn take_all(&mut self) -> Turn {
        let mut items: Vec<Pending> = self.pending.drain(..).collect();
        let dropped = std::mem::take(&mut self.dropped_summaries);
        // Moved, not cloned: an image may be megabytes of base64.
        let images: Vec<Image> = items
            .iter_mut()
            .flat_map(|p| std::mem::take(&mut p.images))
            .collect();
        if items.len() == 1 && dropped.is_empty() {
            let text = items.into_iter().map(|p| p.text).collect();
            return Turn::new(text, images);
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
        for (i, p) in items.iter().enumerate() {
            out.push_str(&format!("\n\n---\nQueued #{}\n{}", i + 1, p.text));
        }
        Turn::new(out, images)
    }
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

    #[test]
    fn idle_sessions_start_a_run_whatever_the_mode() {
        for mode in [
            QueueMode::Steer,
            QueueMode::Followup,
            QueueMode::Collect,
            QueueMode::SteerBacklog,
            QueueMode::Interrupt,
        ] {
            assert_eq!(
                q(mode).on_message("hi".into(), false, 0),
                Action::StartRun("hi".into())
            );
        }
    }

    #[test]
    fn each_mode_treats_a_busy_session_its_way() {
        assert_eq!(
            q(QueueMode::Steer).on_message("a".into(), true, 0),
            Action::Steer("a".into())
        );
        let mut sb = q(QueueMode::SteerBacklog);
        assert_eq!(
            sb.on_message("a".into(), true, 0),
            Action::SteerAndQueue("a".into())
        );
        assert_eq!(sb.len(), 1);
        let mut i = q(QueueMode::Interrupt);
        assert_eq!(
            i.on_message("b".into(), true, 0),
            Action::Interrupt("b".into())
        );
        let mut f = q(QueueMode::Followup);
        assert_eq!(f.on_message("1".into(), true, 0), Action::Queued);
        assert_eq!(f.on_message("2".into(), true, 0), Action::Queued);
        assert_eq!(
            f.next_turn(0),
            Some(Ok("1".into())),
            "one turn per queued message"
        );
        assert_eq!(f.next_turn(0), Some(Ok("2".into())));
        assert_eq!(f.next_turn(0), None);
    }

    #[test]
    fn collect_waits_for_the_debounce_then_coalesces() {
        let mut c = q(QueueMode::Collect);
        c.on_message("first".into(), true, 1000);
        c.on_message("second".into(), true, 1500);
        assert_eq!(c.next_turn(2000), Some(Err(Duration::from_millis(500))));
        let Some(Ok(Turn { text, .. })) = c.next_turn(2500) else {
            panic!("due")
        };
        assert!(
            text.starts_with("[Queued messages while the agent was busy]"),
            "{text}"
        );
        assert!(
            text.contains("Queued #1\nfirst") && text.contains("Queued #2\nsecond"),
            "{text}"
        );
        assert_eq!(c.next_turn(3000), None);
        c.on_message("solo".into(), true, 0);
        assert_eq!(
            c.next_turn(5000),
            Some(Ok("solo".into())),
            "a single message is passed as is"
        );
    }

    #[test]
    fn images_ride_with_their_message_into_the_turn_that_delivers_it() {
        let img = |d: &str| Image {
            mime_type: "image/png".into(),
            data: d.into(),
        };
        let mut c = q(QueueMode::Collect);
        c.attach(vec![img("lost")]); // nothing queued: nothing to attach to
        c.on_message("a".into(), true, 0);
        c.attach(vec![img("A")]);
        c.on_message("b".into(), true, 0);
        c.on_message("c".into(), true, 0);
        c.attach(vec![img("C1"), img("C2")]);
        let Some(Ok(turn)) = c.next_turn(10_000) else {
            panic!("due")
        };
        let data: Vec<&str> = turn.images.iter().map(|i| i.data.as_str()).collect();
        assert_eq!(data, ["A", "C1", "C2"], "in message order");
        let mut f = q(QueueMode::Followup);
        f.on_message("x".into(), true, 0);
        f.attach(vec![img("X")]);
        f.on_message("y".into(), true, 0);
        assert_eq!(
            f.next_turn(0),
            Some(Ok(Turn::new("x".into(), vec![img("X")])))
        );
        assert_eq!(f.next_turn(0), Some(Ok("y".into())));
        let mut r = q(QueueMode::Followup);
        r.recover(Turn::new("after restart".into(), vec![img("R")]));
        assert_eq!(
            r.next_turn(0),
            Some(Ok(Turn::new("after restart".into(), vec![img("R")])))
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
        new.on_message("1".into(), true, 0);
        new.on_message("2".into(), true, 0);
        assert_eq!(new.on_message("3".into(), true, 0), Action::Dropped);
        assert_eq!(new.next_turn(0), Some(Ok("1".into())));
        let mut old = SessionQueue::new(settings(DropPolicy::Old));
        for t in ["1", "2", "3"] {
            old.on_message(t.into(), true, 0);
        }
        assert_eq!(old.next_turn(0), Some(Ok("2".into())));
        let mut sum = SessionQueue::new(QueueSettings {
            mode: QueueMode::Collect,
            cap: 2,
            debounce: Duration::ZERO,
            drop: DropPolicy::Summarize,
        });
        for t in ["the very first", "2", "3"] {
            sum.on_message(t.into(), true, 0);
        }
        let Some(Ok(Turn { text, .. })) = sum.next_turn(0) else {
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
