//! IdempotencyActor: the `<method>:<idempotencyKey>` response cache. TTL 5
//! minutes, at most 1000 entries (oldest evicted). Entries are written to the
//! store and flushed before the reply, so a restarted gateway replays a
//! response instead of repeating its side effect.
//!
//! Files: `messages.rs` (its inbox), `actor.rs` (the actor and its
//! handlers); this file holds its pure state, with unit tests.

mod actor;
mod messages;

use std::collections::{HashMap, VecDeque};

use actix::prelude::*;
use serde::{Deserialize, Serialize};

use crate::metrics::Metrics;

pub use actor::*;
pub use messages::*;

pub const DEDUPE_TTL_MS: u64 = 5 * 60 * 1000;

pub const DEDUPE_MAX: usize = 1000;

/// A response as it went out: replayed verbatim to a duplicate request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CachedResponse {
    pub ts: u64,
    pub ok: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload: Option<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<serde_json::Value>,
}

/// Pure cache: TTL + cap, no actix, no store.
#[derive(Debug, Default)]
pub struct DedupeCache {
    map: HashMap<String, CachedResponse>,
    order: VecDeque<String>,
}

impl DedupeCache {
    pub fn get(&self, key: &str, now: u64) -> Option<&CachedResponse> {
        self.map
            .get(key)
            .filter(|e| now.saturating_sub(e.ts) < DEDUPE_TTL_MS)
    }

    /// Inserts; returns the keys evicted by the cap.
    pub fn insert(&mut self, key: String, value: CachedResponse) -> Vec<String> {
        if self.map.insert(key.clone(), value).is_none() {
            self.order.push_back(key);
        }
        let mut evicted = Vec::new();
        while self.map.len() > DEDUPE_MAX {
            match self.order.pop_front() {
                Some(k) => {
                    self.map.remove(&k);
                    evicted.push(k);
                }
                None => break,
            }
        }
        evicted
    }

    /// Removes expired entries; returns their keys.
    pub fn sweep(&mut self, now: u64) -> Vec<String> {
        let expired: Vec<String> = self
            .map
            .iter()
            .filter(|(_, e)| now.saturating_sub(e.ts) >= DEDUPE_TTL_MS)
            .map(|(k, _)| k.clone())
            .collect();
        for k in &expired {
            self.map.remove(k);
        }
        self.order.retain(|k| self.map.contains_key(k));
        expired
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

/// Sends to the cache and awaits the reply, counting the mailbox gauge.
pub async fn ask_idempotency<M>(
    addr: &Addr<IdempotencyActor>,
    metrics: &Metrics,
    msg: M,
) -> Result<M::Result, MailboxError>
where
    M: Message + Send + 'static,
    M::Result: Send,
    IdempotencyActor: Handler<M>,
{
    crate::metrics::counted_send(addr, &metrics.idempotency_mailbox, msg).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;
    use crate::store::Tree;
    use std::sync::Arc;

    fn resp(ts: u64) -> CachedResponse {
        CachedResponse {
            ts,
            ok: true,
            payload: Some(serde_json::json!({ "ts": ts })),
            error: None,
        }
    }

    #[test]
    fn entries_expire_after_ttl() {
        let mut c = DedupeCache::default();
        c.insert("a".into(), resp(0));
        assert!(c.get("a", DEDUPE_TTL_MS - 1).is_some());
        assert!(c.get("a", DEDUPE_TTL_MS).is_none());
        assert_eq!(c.sweep(DEDUPE_TTL_MS), ["a"]);
        assert!(c.is_empty());
    }

    #[test]
    fn cap_evicts_oldest_first() {
        let mut c = DedupeCache::default();
        for i in 0..(DEDUPE_MAX as u64 + 2) {
            c.insert(format!("k{i}"), resp(i));
        }
        assert_eq!(c.len(), DEDUPE_MAX);
        assert!(c.get("k0", 10).is_none());
        assert!(c.get("k1", 10).is_none());
        assert!(c.get("k2", 10).is_some());
    }

    #[test]
    fn persisted_entries_survive_reload() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let now = crate::now_ms();
        store.put(Tree::Idempotency, "agent:k", &resp(now)).unwrap();
        store.put(Tree::Idempotency, "agent:old", &resp(0)).unwrap();
        let actor = IdempotencyActor::load(store.clone(), Arc::default()).unwrap();
        let reader = actor.reader();
        assert_eq!(reader.get("agent:k"), Some(resp(now)));
        assert!(reader.get("agent:old").is_none());
        assert!(store
            .get::<CachedResponse>(Tree::Idempotency, "agent:old")
            .unwrap()
            .is_none());
    }
}
