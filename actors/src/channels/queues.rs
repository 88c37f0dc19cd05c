//! An account's hand-over queues: one FIFO per chat (a chat's messages
//! reach its session in order, one at a time; chats do not wait for each
//! other), with the inbound debounce in front (`messages.inbound.debounceMs`:
//! rapid texts of one conversation become one message; media and commands
//! go at once, see `debounce.rs`). A merged message keeps the dedupe key of
//! its first part (its id for the session) and lists the others, whose
//! dispatch records go with it. Time is passed in.

use std::collections::{HashMap, HashSet, VecDeque};

use super::debounce::{self, Batch, Debouncer};
use super::dispatch::Incoming;

pub struct ChatQueues {
    queues: HashMap<String, VecDeque<Incoming>>,
    busy: HashSet<String>,
    debouncer: Option<Debouncer>,
    /// Messages waiting in the debouncer, by dedupe key.
    parked: HashMap<String, Incoming>,
}

fn conversation(inc: &Incoming) -> String {
    format!("{}/{}", inc.chat_id, inc.thread_id.as_deref().unwrap_or(""))
}

/// One message from a batch: the first part's identity, every text, the
/// latest message to reply to, all media.
fn merge(mut parts: Vec<Incoming>, batch: &Batch) -> Option<Incoming> {
    if parts.is_empty() {
        return None;
    }
    let rest: Vec<Incoming> = parts.drain(1..).collect();
    let mut first = parts.pop()?;
    if rest.is_empty() {
        return Some(first);
    }
    first.text = batch.text();
    if let Some(last) = rest.last() {
        first.message_id = last.message_id.clone();
        first.mentioned |= rest.iter().any(|r| r.mentioned);
    }
    for r in rest {
        first.merged.push(r.dedupe_key);
        first.media.extend(r.media);
    }
    Some(first)
}

impl ChatQueues {
    /// `debounce_ms`: 0 hands every message over as it comes.
    pub fn new(debounce_ms: u64) -> ChatQueues {
        ChatQueues {
            queues: HashMap::new(),
            busy: HashSet::new(),
            debouncer: (debounce_ms > 0).then(|| Debouncer::new(debounce_ms)),
            parked: HashMap::new(),
        }
    }

    /// Queues a ready message; returns its chat when that chat must start.
    fn ready(&mut self, inc: Incoming) -> Option<String> {
        let chat = inc.chat_id.clone();
        self.queues.entry(chat.clone()).or_default().push_back(inc);
        self.busy.insert(chat.clone()).then_some(chat)
    }

    fn flush(&mut self, batches: Vec<Batch>) -> Vec<String> {
        let mut start = Vec::new();
        for b in batches {
            let parts: Vec<Incoming> = b
                .messages
                .iter()
                .filter_map(|m| self.parked.remove(&m.message_id))
                .collect();
            if let Some(chat) = merge(parts, &b).and_then(|inc| self.ready(inc)) {
                start.push(chat);
            }
        }
        start
    }

    /// A message arrived at `now`: the chats that must start handing over.
    pub fn push(&mut self, inc: Incoming, now_ms: u64) -> Vec<String> {
        // A button press answers a question: never merged into a turn.
        let Some(d) = self.debouncer.as_mut().filter(|_| inc.question.is_none()) else {
            return self.ready(inc).into_iter().collect();
        };
        let msg = debounce::Incoming {
            message_id: inc.dedupe_key.clone(),
            text: inc.text.clone(),
            has_media: !inc.media.is_empty(),
        };
        let conv = conversation(&inc);
        self.parked.insert(inc.dedupe_key.clone(), inc);
        let batches = d.push(&conv, msg, now_ms);
        self.flush(batches)
    }

    /// Batches whose wait ended by `now`: the chats that must start.
    pub fn due(&mut self, now_ms: u64) -> Vec<String> {
        let batches = self
            .debouncer
            .as_mut()
            .map(|d| d.due(now_ms))
            .unwrap_or_default();
        self.flush(batches)
    }

    /// When the next debounce wait ends.
    pub fn next_due(&self) -> Option<u64> {
        self.debouncer.as_ref().and_then(Debouncer::next_due)
    }

    /// A chat's next message; None: the chat is idle (and no longer busy).
    pub fn pop(&mut self, chat: &str) -> Option<Incoming> {
        let next = self.queues.get_mut(chat).and_then(VecDeque::pop_front);
        if next.is_none() {
            self.queues.remove(chat);
            self.busy.remove(chat);
        }
        next
    }

    /// Messages held here (queued or in a debounce wait).
    pub fn len(&self) -> usize {
        self.parked.len() + self.queues.values().map(VecDeque::len).sum::<usize>()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn inc(chat: u8, n: u32, text: &str, media: bool) -> Incoming {
        Incoming {
            channel: "telegram".into(),
            account: "default".into(),
            dedupe_key: format!("telegram/default/{chat}/{n}"),
            chat_id: chat.to_string(),
            chat_type: "private".into(),
            thread_id: None,
            sender: chat.to_string(),
            sender_name: None,
            message_id: n.to_string(),
            text: text.into(),
            mentioned: false,
            media: if media {
                vec![super::super::dispatch::MediaRef {
                    id: format!("f{n}"),
                    mime_type: None,
                    name: None,
                    size: None,
                    url: None,
                }]
            } else {
                Vec::new()
            },
            merged: Vec::new(),
            ts_ms: 0,
            ..Incoming::default()
        }
    }

    #[test]
    fn rapid_texts_become_one_message_that_answers_the_latest() {
        let mut q = ChatQueues::new(500);
        assert!(q.push(inc(1, 1, "hello", false), 0).is_empty());
        assert!(q.push(inc(1, 2, "are you", false), 100).is_empty());
        assert!(q.push(inc(1, 3, "there?", false), 200).is_empty());
        assert_eq!(q.next_due(), Some(700));
        assert!(q.due(699).is_empty());
        assert_eq!(q.due(700), vec!["1".to_string()]);
        let m = q.pop("1").unwrap();
        assert_eq!(m.text, "hello\nare you\nthere?");
        assert_eq!(
            m.dedupe_key, "telegram/default/1/1",
            "the first part names it"
        );
        assert_eq!(m.message_id, "3", "the reply goes to the latest");
        assert_eq!(
            m.merged,
            vec!["telegram/default/1/2", "telegram/default/1/3"]
        );
        assert!(q.pop("1").is_none());
        assert!(q.is_empty());
    }

    #[test]
    fn without_a_window_every_message_goes_at_once_in_order_per_chat() {
        let mut q = ChatQueues::new(0);
        assert_eq!(q.push(inc(1, 1, "a", false), 0), vec!["1".to_string()]);
        assert!(
            q.push(inc(1, 2, "b", false), 0).is_empty(),
            "the chat is already busy"
        );
        assert_eq!(q.push(inc(2, 3, "c", false), 0), vec!["2".to_string()]);
        assert_eq!(q.pop("1").unwrap().text, "a");
        assert_eq!(q.pop("1").unwrap().text, "b");
        assert!(q.pop("1").is_none());
        assert_eq!(
            q.push(inc(1, 4, "d", false), 0),
            vec!["1".to_string()],
            "idle again: starts"
        );
    }

    proptest! {
        /// Every message is handed over exactly once (alone or merged), and
        /// a chat's messages keep their order.
        #[test]
        fn nothing_is_lost_or_repeated(
            msgs in prop::collection::vec((0u8..4, "[a-z/]{0,6}", prop::bool::weighted(0.2), 0u64..400), 1..60),
            window in 0u64..600,
        ) {
            let mut q = ChatQueues::new(window);
            let mut now = 0;
            let mut out: Vec<Incoming> = Vec::new();
            let mut running: Vec<String> = Vec::new();
            for (i, (chat, text, media, gap)) in msgs.iter().enumerate() {
                now += gap;
                running.extend(q.due(now));
                running.extend(q.push(inc(*chat, i as u32, text, *media), now));
                // Hand over some of what is queued.
                while let Some(chat) = running.pop() {
                    if let Some(m) = q.pop(&chat) {
                        out.push(m);
                        running.push(chat);
                    }
                }
            }
            running.extend(q.due(u64::MAX / 2));
            while let Some(chat) = running.pop() {
                if let Some(m) = q.pop(&chat) { out.push(m); running.push(chat); }
            }
            prop_assert!(q.is_empty());
            let mut keys: Vec<String> = out.iter().flat_map(|m| std::iter::once(m.dedupe_key.clone()).chain(m.merged.clone())).collect();
            let n = keys.len();
            keys.sort();
            keys.dedup();
            prop_assert_eq!(keys.len(), n, "no message twice");
            prop_assert_eq!(n, msgs.len(), "no message lost");
            for chat in 0u8..4 {
                let order: Vec<u32> = out
                    .iter()
                    .filter(|m| m.chat_id == chat.to_string())
                    .flat_map(|m| std::iter::once(m.dedupe_key.clone()).chain(m.merged.clone()))
                    .map(|k| k.rsplit('/').next().unwrap().parse().unwrap())
                    .collect();
                let mut sorted = order.clone();
                sorted.sort_unstable();
                prop_assert_eq!(order, sorted, "a chat's messages keep their order");
            }
        }
    }
}
