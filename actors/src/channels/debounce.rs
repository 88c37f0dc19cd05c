//! Inbound debounce (seed 002): rapid text messages in one conversation
//! become one turn. A text waits `window_ms` for the next (each new text
//! restarts the wait); a message with media flushes what waits together
//! with itself at once; a control command (`/...`) flushes what waits, then
//! runs alone at once. The turn replies to its latest message. A batch is
//! also flushed when it holds `MAX_BATCH` messages. Time is passed in.

use std::collections::HashMap;

/// At most this many messages in one turn.
pub const MAX_BATCH: usize = 50;

/// One inbound message as the debouncer sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Incoming {
    pub message_id: String,
    pub text: String,
    pub has_media: bool,
}

impl Incoming {
    fn is_command(&self) -> bool {
        self.text.trim_start().starts_with('/')
    }
}

/// Messages that become one turn, in arrival order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Batch {
    pub conversation: String,
    pub messages: Vec<Incoming>,
}

impl Batch {
    /// The turn's text: the messages' texts, one per line.
    pub fn text(&self) -> String {
        self.messages
            .iter()
            .map(|m| m.text.as_str())
            .filter(|t| !t.is_empty())
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The message the reply threads to: the latest.
    pub fn reply_to(&self) -> Option<&str> {
        self.messages.last().map(|m| m.message_id.as_str())
    }
}

struct Waiting {
    batch: Batch,
    until_ms: u64,
}

pub struct Debouncer {
    window_ms: u64,
    waiting: HashMap<String, Waiting>,
}

impl Debouncer {
    pub fn new(window_ms: u64) -> Debouncer {
        Debouncer {
            window_ms,
            waiting: HashMap::new(),
        }
    }

    /// A message arrived at `now`: the batches to run now, in order.
    pub fn push(&mut self, conversation: &str, msg: Incoming, now_ms: u64) -> Vec<Batch> {
        let mut out = Vec::new();
        if msg.is_command() {
            out.extend(self.take(conversation));
            out.push(Batch {
                conversation: conversation.to_string(),
                messages: vec![msg],
            });
            return out;
        }
        let media = msg.has_media;
        let w = self
            .waiting
            .entry(conversation.to_string())
            .or_insert_with(|| Waiting {
                batch: Batch {
                    conversation: conversation.to_string(),
                    messages: Vec::new(),
                },
                until_ms: 0,
            });
        w.batch.messages.push(msg);
        w.until_ms = now_ms.saturating_add(self.window_ms);
        if media || self.window_ms == 0 || w.batch.messages.len() >= MAX_BATCH {
            out.extend(self.take(conversation));
        }
        out
    }

    fn take(&mut self, conversation: &str) -> Option<Batch> {
        self.waiting.remove(conversation).map(|w| w.batch)
    }

    /// The batches whose wait is over at `now`, oldest deadline first.
    pub fn due(&mut self, now_ms: u64) -> Vec<Batch> {
        let mut ready: Vec<(u64, String)> = self
            .waiting
            .iter()
            .filter(|(_, w)| w.until_ms <= now_ms)
            .map(|(k, w)| (w.until_ms, k.clone()))
            .collect();
        ready.sort();
        ready
            .into_iter()
            .filter_map(|(_, k)| self.take(&k))
            .collect()
    }

    /// When the next batch is due (for the adapter's timer).
    pub fn next_due(&self) -> Option<u64> {
        self.waiting.values().map(|w| w.until_ms).min()
    }

    /// Messages waiting, in all conversations.
    pub fn waiting(&self) -> usize {
        self.waiting.values().map(|w| w.batch.messages.len()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(id: &str, t: &str) -> Incoming {
        Incoming {
            message_id: id.into(),
            text: t.into(),
            has_media: false,
        }
    }

    #[test]
    fn rapid_texts_become_one_turn_that_replies_to_the_latest() {
        let mut d = Debouncer::new(1_000);
        assert!(d.push("c1", text("1", "hi"), 0).is_empty());
        assert!(d.push("c1", text("2", "are you there"), 600).is_empty());
        assert!(d.due(1_500).is_empty(), "each text restarts the wait");
        assert_eq!(d.next_due(), Some(1_600));
        let due = d.due(1_600);
        assert_eq!(due.len(), 1);
        assert_eq!(due[0].text(), "hi\nare you there");
        assert_eq!(due[0].reply_to(), Some("2"));
        assert_eq!(d.waiting(), 0);
    }

    #[test]
    fn media_flushes_at_once_and_commands_go_alone_after_what_waited() {
        let mut d = Debouncer::new(1_000);
        d.push("c1", text("1", "look"), 0);
        let photo = Incoming {
            has_media: true,
            ..text("2", "")
        };
        let out = d.push("c1", photo, 10);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].messages.len(), 2, "the text and the photo together");
        d.push("c1", text("3", "and"), 20);
        let out = d.push("c1", text("4", "/stop"), 30);
        let texts: Vec<String> = out.iter().map(Batch::text).collect();
        assert_eq!(texts, ["and", "/stop"]);
        assert_eq!(d.waiting(), 0);
    }

    #[test]
    fn conversations_wait_apart_and_batches_are_bounded() {
        let mut d = Debouncer::new(1_000);
        d.push("a", text("1", "x"), 0);
        d.push("b", text("2", "y"), 500);
        let due = d.due(1_000);
        assert_eq!(due.len(), 1);
        assert_eq!(due[0].conversation, "a");
        assert_eq!(d.due(1_500)[0].conversation, "b");
        let mut flushed = Vec::new();
        for i in 0..MAX_BATCH {
            flushed.extend(d.push("c", text(&i.to_string(), "m"), 0));
        }
        assert_eq!(flushed.len(), 1);
        assert_eq!(flushed[0].messages.len(), MAX_BATCH);
        let mut none = Debouncer::new(0);
        assert_eq!(
            none.push("a", text("1", "x"), 0).len(),
            1,
            "no window: at once"
        );
    }

    proptest::proptest! {
        /// Every message comes out exactly once, in its conversation's order.
        #[test]
        fn every_message_comes_out_once_in_order(
            msgs in proptest::collection::vec((0u8..3, 0u64..2_000, 0u8..10), 0..200),
        ) {
            let mut d = Debouncer::new(700);
            let mut now = 0;
            let mut out = Vec::new();
            for (i, (conv, step, kind)) in msgs.iter().enumerate() {
                now += step;
                out.extend(d.due(now));
                let m = Incoming {
                    message_id: i.to_string(),
                    text: if *kind == 0 { "/cmd".into() } else { format!("t{i}") },
                    has_media: *kind == 1,
                };
                out.extend(d.push(&format!("c{conv}"), m, now));
            }
            out.extend(d.due(u64::MAX));
            let mut seen: Vec<(String, usize)> = out
                .iter()
                .flat_map(|b| b.messages.iter().map(|m| (b.conversation.clone(), m.message_id.parse().unwrap())))
                .collect();
            proptest::prop_assert_eq!(seen.len(), msgs.len());
            for c in ["c0", "c1", "c2"] {
                let ids: Vec<usize> = seen.iter().filter(|(k, _)| k == c).map(|(_, i)| *i).collect();
                let mut sorted = ids.clone();
                sorted.sort();
                proptest::prop_assert_eq!(ids, sorted);
            }
            seen.sort();
            seen.dedup();
            proptest::prop_assert_eq!(seen.len(), msgs.len());
        }
    }
}
