//! What arrived while the gateway was down, bounded
//! (`channels.<id>.catchUp`): a batch of messages taken together (a poll's
//! updates, a stream's backlog, the dispatch records resumed after a
//! restart) is answered back to `maxAgeMinutes` of age and, per chat, its
//! newest `maxMessages`; the rest are skipped. A skipped message stays in
//! the ledger as seen (never taken again) with no hand-over, and its chat
//! gets one note for all of them, not one reply each: only a direct chat
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
