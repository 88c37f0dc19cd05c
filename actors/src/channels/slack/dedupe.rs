//! Events seen recently (Socket Mode `envelope_id`s and message
//! `channel/ts` keys): Slack retries an event it thinks was not
//! acknowledged, and a retry must be recognised, not run twice. Entries
//! live at least `ttl` (10 minutes by default, longer than Slack's retry
//! schedule) and the set is bounded: at `cap` the oldest goes first.

use std::collections::{HashMap, VecDeque};

pub const DEFAULT_TTL_MS: u64 = 10 * 60 * 1000;
pub const DEFAULT_CAP: usize = 50_000;

#[derive(Debug)]
pub struct Seen {
    ttl_ms: u64,
    cap: usize,
    expiry: HashMap<String, u64>,
    order: VecDeque<(u64, String)>,
}

impl Default for Seen {
    fn default() -> Self {
        Seen::new(DEFAULT_TTL_MS, DEFAULT_CAP)
    }
}

impl Seen {
    pub fn new(ttl_ms: u64, cap: usize) -> Seen {
        Seen {
            ttl_ms,
            cap: cap.max(1),
            expiry: HashMap::new(),
            order: VecDeque::new(),
        }
    }

    /// True the first time `key` is seen within the TTL (and remembers it).
    pub fn first(&mut self, key: &str, now_ms: u64) -> bool {
        self.expire(now_ms);
        if self.expiry.get(key).is_some_and(|e| *e > now_ms) {
            return false;
        }
        while self.expiry.len() >= self.cap {
            let Some((_, old)) = self.order.pop_front() else {
                break;
            };
            self.expiry.remove(&old);
        }
        let until = now_ms + self.ttl_ms;
        self.expiry.insert(key.to_string(), until);
        self.order.push_back((until, key.to_string()));
        true
    }

    /// Forgets `key` (its event could not be recorded: the retry must be
    /// worked on, not taken for one already done). Its place in the age
    /// order is dropped when it expires.
    pub fn forget(&mut self, key: &str) {
        self.expiry.remove(key);
    }

    pub fn len(&self) -> usize {
        self.expiry.len()
    }

    pub fn is_empty(&self) -> bool {
        self.expiry.is_empty()
    }

    fn expire(&mut self, now_ms: u64) {
        while let Some((until, key)) = self.order.front() {
            if *until > now_ms {
                break;
            }
            if self.expiry.get(key) == Some(until) {
                self.expiry.remove(key);
            }
            self.order.pop_front();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_retry_within_the_ttl_is_recognised_and_later_it_is_new() {
        let mut s = Seen::new(600_000, 10);
        assert!(s.first("env-1", 0));
        assert!(!s.first("env-1", 599_999));
        assert!(s.first("env-1", 600_000));
        assert_eq!(s.len(), 1);
    }

    #[test]
    fn the_set_is_bounded() {
        let mut s = Seen::new(600_000, 3);
        for i in 0..10 {
            assert!(s.first(&format!("k{i}"), i));
        }
        assert_eq!(s.len(), 3);
        assert!(!s.first("k9", 20));
        assert!(s.first("k0", 20), "the oldest went first");
    }

    proptest! {
        /// Within the TTL and under the cap, a key is first exactly once.
        #[test]
        fn each_key_is_first_once(keys in proptest::collection::vec(0u8..40, 1..200)) {
            let mut s = Seen::new(1_000_000, 1_000);
            let mut firsts = std::collections::HashSet::new();
            for (t, k) in keys.iter().enumerate() {
                let key = format!("e{k}");
                let first = s.first(&key, t as u64);
                prop_assert_eq!(first, firsts.insert(key));
            }
        }
    }
}
