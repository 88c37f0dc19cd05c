//! What arrived while the gateway was down, bounded
//! (`channels.<id>.catchUp`): a batch of messages taken together (a poll's
//! updates, a stream's backlog, the dispatch records resumed after a
//! restart) is answered back to `maxAgeMinutes` of age and, per chat, its
//! newest `maxMessages`; the rest are skipped. A skipped message stays in
//! the ledger as seen (never taken again) with no hand-over, and its chat
//! gets one note for all of them, not one reply each (`Notes`: sent once
//! the backlog's batches stop coming, and no second within
//! `NOTE_WINDOW_MS`): only a direct chat
//! whose sender would be answered (a stranger, or a group where the bot
//! only speaks when asked, gets nothing the access rules would not give).

use std::collections::BTreeMap;

use super::dispatch::Incoming;
use crate::settings::CatchUp;

/// What a batch skipped in one chat.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    pub count: usize,
    pub oldest_ms: u64,
    /// The dedupe keys of the skipped messages (their hand-over records go).
    pub keys: Vec<String>,
    /// One of them came from someone the chat's note may go to.
    pub noted: bool,
}

/// Splits a batch: the messages to answer, in order, and per chat what is
/// skipped. `may_note`: whether a skipped message's sender may be told.
pub fn admit(
    batch: Vec<Incoming>,
    bound: CatchUp,
    now_ms: u64,
    may_note: impl Fn(&Incoming) -> bool,
) -> (Vec<Incoming>, BTreeMap<String, Skipped>) {
    let max_age = bound.max_age_minutes.saturating_mul(60_000);
    let mut per_chat: BTreeMap<&str, usize> = BTreeMap::new();
    for inc in &batch {
        *per_chat.entry(inc.chat_id.as_str()).or_default() += 1;
    }
    // The first `over` of a chat's messages in the batch are beyond its newest `maxMessages`.
    let mut over: BTreeMap<String, usize> = per_chat
        .into_iter()
        .map(|(c, n)| (c.to_string(), n.saturating_sub(bound.max_messages)))
        .collect();
    let mut kept = Vec::new();
    let mut skipped: BTreeMap<String, Skipped> = BTreeMap::new();
    for inc in batch {
        let old = inc.ts_ms > 0 && now_ms.saturating_sub(inc.ts_ms) > max_age;
        let extra = over.get_mut(&inc.chat_id).filter(|n| **n > 0);
        let beyond = extra.is_some();
        if let Some(n) = extra {
            *n -= 1;
        }
        if !(old || beyond) {
            kept.push(inc);
            continue;
        }
        let s = skipped.entry(inc.chat_id.clone()).or_insert(Skipped {
            count: 0,
            oldest_ms: u64::MAX,
            keys: Vec::new(),
            noted: false,
        });
        s.noted |= may_note(&inc);
        s.count += 1;
        s.oldest_ms = s
            .oldest_ms
            .min(if inc.ts_ms > 0 { inc.ts_ms } else { now_ms });
        s.keys.push(inc.dedupe_key);
    }
    (kept, skipped)
}

/// How long a desk waits after the last skip before it sends the notes (a
/// batch with nothing skipped sends them at once, before its answers): a
/// platform that redelivers one message per request (webhooks, a stream's
/// backlog) brings a backlog as many batches, and each chat gets one note
/// that counts them all.
pub const NOTE_QUIET_MS: u64 = 2_000;

/// How long after a chat's catch-up note another is not sent (what is
/// skipped meanwhile is logged only).
pub const NOTE_WINDOW_MS: u64 = 10 * 60_000;

/// The catch-up notes a desk owes: what each chat had skipped since the
/// last notes went, and when each chat last got one.
#[derive(Debug, Default)]
pub struct Notes {
    pending: BTreeMap<String, Skipped>,
    sent: BTreeMap<String, u64>,
}

impl Notes {
    /// A batch's skips in `chat` (a chat nobody may be told of is not kept).
    pub fn add(&mut self, chat: &str, s: Skipped) {
        if !s.noted {
            return;
        }
        match self.pending.get_mut(chat) {
            Some(p) => {
                p.count += s.count;
                p.oldest_ms = p.oldest_ms.min(s.oldest_ms);
            }
            None => {
                let mut s = s;
                // The first key names the note; the rest are not needed.
                s.keys.truncate(1);
                self.pending.insert(chat.to_string(), s);
            }
        }
    }

    /// The notes to send now: each chat's skips, unless it got a note
    /// within `NOTE_WINDOW_MS`.
    pub fn due(&mut self, now_ms: u64) -> Vec<(String, Skipped)> {
        self.sent
            .retain(|_, t| now_ms.saturating_sub(*t) < NOTE_WINDOW_MS);
        let pending = std::mem::take(&mut self.pending);
        let mut out = Vec::new();
        for (chat, s) in pending {
            if self.sent.contains_key(&chat) {
                continue;
            }
            self.sent.insert(chat.clone(), now_ms);
            out.push((chat, s));
        }
        out
    }
}

/// The one note a chat gets for what was skipped.
pub fn note(s: &Skipped, now_ms: u64) -> String {
    let age = super::late::age_words(now_ms.saturating_sub(s.oldest_ms));
    let what = match s.count {
        1 => "1 message".to_string(),
        n => format!("{n} messages"),
    };
    format!("(While I was away, {what} reached me, the oldest from {age} ago; too old or too many to answer one by one. Send again what still matters.)")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(chat: &str, id: u64, ts_ms: u64) -> Incoming {
        Incoming {
            chat_id: chat.into(),
            dedupe_key: format!("{chat}/{id}"),
            ts_ms,
            ..Incoming::default()
        }
    }

    #[test]
    fn batches_make_one_note_per_chat_and_window() {
        let skip = |count, oldest_ms, key: &str, noted| Skipped {
            count,
            oldest_ms,
            keys: vec![key.to_string(), "more".into()],
            noted,
        };
        let mut n = Notes::default();
        n.add("a", skip(1, 500, "a1", true));
        n.add("a", skip(2, 300, "a2", true));
        n.add("b", skip(1, 900, "b1", false));
        let due = n.due(1_000);
        assert_eq!(due.len(), 1);
        assert_eq!(due[0].0, "a");
        assert_eq!((due[0].1.count, due[0].1.oldest_ms), (3, 300));
        assert_eq!(due[0].1.keys, ["a1"]);
        assert!(n.due(1_001).is_empty());
        n.add("a", skip(1, 900, "a3", true));
        assert!(
            n.due(1_000 + NOTE_WINDOW_MS - 1).is_empty(),
            "within the window"
        );
        n.add("a", skip(1, 900, "a4", true));
        assert_eq!(n.due(1_000 + NOTE_WINDOW_MS).len(), 1);
    }

    #[test]
    fn old_messages_and_a_chats_overflow_are_skipped_and_the_rest_kept_in_order() {
        let bound = CatchUp {
            max_age_minutes: 60,
            max_messages: 2,
        };
        let now = 10 * 3_600_000;
        let batch = vec![
            msg("a", 1, now - 3 * 3_600_000),
            msg("a", 2, now - 60_000),
            msg("b", 3, now - 50_000),
            msg("a", 4, now - 40_000),
            msg("a", 5, now - 30_000),
        ];
        let (kept, skipped) = admit(batch, bound, now, |i| i.chat_id == "a");
        let ids: Vec<&str> = kept.iter().map(|i| i.dedupe_key.as_str()).collect();
        assert_eq!(ids, ["b/3", "a/4", "a/5"]);
        let a = &skipped["a"];
        assert_eq!(
            (a.count, a.oldest_ms, a.keys.clone()),
            (
                2,
                now - 3 * 3_600_000,
                vec!["a/1".to_string(), "a/2".to_string()]
            )
        );
        assert!(a.noted);
        assert!(!skipped.contains_key("b"));
        assert_eq!(
            note(a, now),
            "(While I was away, 2 messages reached me, the oldest from 3 h ago; too old or too many to answer one by one. Send again what still matters.)"
        );
    }

    #[test]
    fn a_batch_within_the_bounds_is_kept_whole() {
        let bound = CatchUp {
            max_age_minutes: 1440,
            max_messages: 20,
        };
        let batch = vec![msg("a", 1, 5), msg("a", 2, 0)];
        let (kept, skipped) = admit(batch.clone(), bound, 60_000, |_| true);
        assert_eq!(kept, batch);
        assert!(skipped.is_empty());
    }
}
