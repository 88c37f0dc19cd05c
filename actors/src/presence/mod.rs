//! PresenceActor: the best-effort list of who is connected. Holds the gateway
//! self-entry, one entry per WebSocket client (not `cli` mode, handled by the
//! caller) and `system-event` beacons. Keys are case-insensitive; beacons
//! expire after 5 minutes; at most 200 entries, oldest dropped first.
//! Every change bumps `stateVersion.presence` and tells the edge (`PresenceChanged`), which broadcasts `presence`.
//!
//! Files: `messages.rs` (its inbox), `actor.rs` (the actor and its
//! handlers); this file holds its pure state, with unit tests.

mod actor;
mod messages;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

use actix::prelude::*;
use serde::{Deserialize, Serialize};

use crate::bus::StateVersion;
use crate::metrics::Metrics;

pub use actor::*;
pub use messages::*;

pub const PRESENCE_TTL_MS: u64 = 5 * 60 * 1000;

pub const PRESENCE_MAX: usize = 200;

/// One presence row. Field names follow OpenClaw's PresenceEntry.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PresenceEntry {
    pub ts: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ip: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub platform: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device_family: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_identifier: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_input_seconds: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tags: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub roles: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scopes: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instance_id: Option<String>,
}

/// Shared `stateVersion` counters; presence is bumped here, health by the gateway.
#[derive(Debug, Default)]
pub struct StateVersions {
    pub presence: AtomicU64,
    pub health: AtomicU64,
}

impl StateVersions {
    pub fn current(&self) -> StateVersion {
        StateVersion {
            presence: self.presence.load(Ordering::Relaxed),
            health: self.health.load(Ordering::Relaxed),
        }
    }
}

/// Pure presence table: the rules, no actix.
#[derive(Debug, Default)]
pub struct PresenceTable {
    entries: HashMap<String, Row>,
}

#[derive(Debug)]
struct Row {
    entry: PresenceEntry,
    /// Pinned rows (self, live connections) never expire by TTL.
    pinned: bool,
    updated_ms: u64,
}

impl PresenceTable {
    /// Inserts or replaces; returns true when the table changed.
    pub fn upsert(&mut self, key: &str, entry: PresenceEntry, pinned: bool, now: u64) -> bool {
        let key = key.to_lowercase();
        self.entries.insert(
            key,
            Row {
                entry,
                pinned,
                updated_ms: now,
            },
        );
        self.enforce_cap();
        true
    }

    pub fn remove(&mut self, key: &str) -> bool {
        self.entries.remove(&key.to_lowercase()).is_some()
    }

    /// Drops expired unpinned rows; true when anything went.
    pub fn expire(&mut self, now: u64) -> bool {
        let before = self.entries.len();
        self.entries
            .retain(|_, r| r.pinned || now.saturating_sub(r.updated_ms) < PRESENCE_TTL_MS);
        before != self.entries.len()
    }

    /// Over the cap, the oldest row goes; unpinned rows (beacons) go before
    /// live connections and the self entry.
    fn enforce_cap(&mut self) {
        while self.entries.len() > PRESENCE_MAX {
            let oldest = self
                .entries
                .iter()
                .min_by_key(|(_, r)| (r.pinned, r.updated_ms))
                .map(|(k, _)| k.clone());
            match oldest {
                Some(k) => {
                    self.entries.remove(&k);
                }
                None => break,
            }
        }
    }

    /// Entries, newest first.
    pub fn list(&self) -> Vec<PresenceEntry> {
        let mut rows: Vec<&Row> = self.entries.values().collect();
        rows.sort_by_key(|r| std::cmp::Reverse(r.updated_ms));
        rows.into_iter().map(|r| r.entry.clone()).collect()
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// Sends a message to the presence actor and counts it into its mailbox gauge.
pub fn send_to_presence<M>(addr: &Addr<PresenceActor>, metrics: &Metrics, msg: M)
where
    M: Message + Send + 'static,
    M::Result: Send,
    PresenceActor: Handler<M>,
{
    crate::metrics::counted_do_send(addr, &metrics.presence_mailbox, msg);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(ts: u64) -> PresenceEntry {
        PresenceEntry {
            ts,
            ..Default::default()
        }
    }

    #[test]
    fn keys_are_case_insensitive() {
        let mut t = PresenceTable::default();
        t.upsert("Mac-Studio", entry(1), false, 1);
        t.upsert("mac-studio", entry(2), false, 2);
        assert_eq!(t.len(), 1);
        assert!(t.remove("MAC-STUDIO"));
        assert!(t.is_empty());
    }

    #[test]
    fn beacons_expire_after_ttl_but_pinned_rows_stay() {
        let mut t = PresenceTable::default();
        t.upsert("beacon", entry(0), false, 0);
        t.upsert("self", entry(0), true, 0);
        assert!(!t.expire(PRESENCE_TTL_MS - 1));
        assert!(t.expire(PRESENCE_TTL_MS));
        assert_eq!(t.len(), 1);
    }

    #[test]
    fn over_the_cap_beacons_go_before_live_connections() {
        let mut t = PresenceTable::default();
        t.upsert("live", entry(0), true, 0);
        for i in 1..=(PRESENCE_MAX as u64) {
            t.upsert(&format!("b{i}"), entry(i), false, i);
        }
        assert_eq!(t.len(), PRESENCE_MAX);
        assert!(
            t.list().iter().any(|e| e.ts == 0),
            "the older live row stays"
        );
        assert!(t.list().iter().all(|e| e.ts != 1), "the oldest beacon went");
    }

    #[test]
    fn cap_drops_oldest_first() {
        let mut t = PresenceTable::default();
        for i in 0..(PRESENCE_MAX as u64 + 5) {
            t.upsert(&format!("k{i}"), entry(i), false, i);
        }
        assert_eq!(t.len(), PRESENCE_MAX);
        let list = t.list();
        assert_eq!(list.first().map(|e| e.ts), Some(PRESENCE_MAX as u64 + 4));
        assert!(list.iter().all(|e| e.ts >= 5));
    }
}
