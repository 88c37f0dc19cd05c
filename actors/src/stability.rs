//! The stability record `diagnostics.stability` (`openclaw gateway
//! stability`) reads: a bounded ring of what happened to the process, in
//! OpenClaw's record shape (`seq`, `ts`, `type`, and the fields its CLI
//! shows). Written rarely (never per token), so a mutex is enough:
//! - `diagnostic.memory.sample` every minute and at start: RSS, the heap
//!   in use, and the busiest singleton mailbox (`queueDepth`);
//! - `payload.large`: a frame over the size limit refused;
//! - `ws.slow_consumer`: a connection closed for not reading its events.
//!
//! Channel account restarts are counted per account in `channels.status`.
//!
//! Payload-free, as OpenClaw's: no message text, no ids of people.

use std::collections::VecDeque;
use std::sync::Mutex;

use serde_json::{json, Map, Value};

/// Records kept (the oldest go first, counted in `dropped`).
pub const CAPACITY: usize = 1000;

/// The most records one read returns.
pub const MAX_LIMIT: usize = 1000;

#[derive(Debug, Default)]
struct Ring {
    records: VecDeque<Value>,
    next_seq: u64,
    dropped: u64,
}

#[derive(Debug, Default)]
pub struct Stability {
    ring: Mutex<Ring>,
}

/// What a read asks for (OpenClaw's `diagnostics.stability` params).
#[derive(Debug, Clone, Default)]
pub struct Query {
    pub limit: Option<usize>,
    pub kind: Option<String>,
    pub since_seq: Option<u64>,
}

impl Stability {
    /// Appends a record of `kind` with `fields` (an object).
    pub fn record(&self, kind: &str, fields: Value) {
        let Ok(mut ring) = self.ring.lock() else {
            return;
        };
        ring.next_seq += 1;
        let mut r = Map::new();
        r.insert("seq".into(), json!(ring.next_seq));
        r.insert("ts".into(), json!(crate::now_ms()));
        r.insert("type".into(), json!(kind));
        if let Value::Object(f) = fields {
            r.extend(f);
        }
        if ring.records.len() == CAPACITY {
            ring.records.pop_front();
            ring.dropped += 1;
        }
        ring.records.push_back(Value::Object(r));
    }

    /// `ws.slow_consumer`: a connection closed for not reading.
    pub fn slow_consumer_closed(&self) {
        let fields = json!({"surface": "ws", "action": "closed", "reason": "slow consumer"});
        self.record("ws.slow_consumer", fields);
    }

    /// `diagnostic.memory.sample`: the process's memory, the deepest
    /// mailbox and the live sessions.
    pub fn memory_sample(&self, memory: Value, queue_depth: i64, queued: i64) {
        let fields = json!({ "memory": memory, "queueDepth": queue_depth, "queued": queued });
        self.record("diagnostic.memory.sample", fields);
    }

    /// OpenClaw's snapshot: the records the query selects (the newest
    /// `limit`), counts and a summary (records by type, memory).
    pub fn snapshot(&self, q: &Query) -> Value {
        let (records, dropped) = match self.ring.lock() {
            Ok(r) => (r.records.iter().cloned().collect::<Vec<_>>(), r.dropped),
            Err(_) => (Vec::new(), 0),
        };
        let filtered: Vec<Value> = records
            .into_iter()
            .filter(|r| q.kind.as_deref().is_none_or(|k| r["type"] == k))
            .filter(|r| q.since_seq.is_none_or(|s| r["seq"].as_u64() > Some(s)))
            .collect();
        let limit = q.limit.unwrap_or(25).min(MAX_LIMIT);
        let events = &filtered[filtered.len().saturating_sub(limit)..];
        let mut snap = json!({
            "generatedAt": iso_now(),
            "capacity": CAPACITY,
            "count": filtered.len(),
            "dropped": dropped,
            "events": events,
            "summary": summary(&filtered),
        });
        if let (Some(first), Some(last)) = (filtered.first(), filtered.last()) {
            snap["firstSeq"] = first["seq"].clone();
            snap["lastSeq"] = last["seq"].clone();
        }
        snap
    }
}

fn summary(records: &[Value]) -> Value {
    let mut by_type = Map::new();
    let (mut latest, mut max_rss, mut max_heap) = (None, 0u64, 0u64);
    let mut large = (0u64, 0u64, Map::new());
    for r in records {
        let kind = r["type"].as_str().unwrap_or("?").to_string();
        let n = by_type.get(&kind).and_then(Value::as_u64).unwrap_or(0);
        by_type.insert(kind.clone(), json!(n + 1));
        if let Some(m) = r.get("memory") {
            max_rss = max_rss.max(m["rssBytes"].as_u64().unwrap_or(0));
            max_heap = max_heap.max(m["heapUsedBytes"].as_u64().unwrap_or(0));
            latest = Some(m.clone());
        }
        if kind == "payload.large" {
            large.0 += 1;
            if r["action"] == "rejected" {
                large.1 += 1;
            }
            let surface = r["surface"].as_str().unwrap_or("unknown").to_string();
            let n = large.2.get(&surface).and_then(Value::as_u64).unwrap_or(0);
            large.2.insert(surface, json!(n + 1));
        }
    }
    let mut s = json!({ "byType": by_type });
    if let Some(latest) = latest {
        s["memory"] = json!({
            "latest": latest, "maxRssBytes": max_rss, "maxHeapUsedBytes": max_heap,
            "pressureCount": 0,
        });
    }
    if large.0 > 0 {
        s["payloadLarge"] = json!({
            "count": large.0, "rejected": large.1, "truncated": 0, "chunked": 0,
            "bySurface": large.2,
        });
    }
    s
}

/// Now as an RFC 3339 UTC time (OpenClaw's `generatedAt`).
fn iso_now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ring_keeps_the_newest_counts_what_it_dropped_and_filters() {
        let s = Stability::default();
        for i in 0..(CAPACITY + 5) {
            let kind = if i % 2 == 0 { "a" } else { "payload.large" };
            s.record(kind, json!({"surface": "ws", "action": "rejected"}));
        }
        s.record(
            "diagnostic.memory.sample",
            json!({"memory": {"rssBytes": 7, "heapUsedBytes": 3}}),
        );
        let all = s.snapshot(&Query {
            limit: Some(2),
            ..Default::default()
        });
        assert_eq!(all["dropped"], 6);
        assert_eq!(all["count"], CAPACITY);
        assert_eq!(all["events"].as_array().unwrap().len(), 2);
        assert_eq!(all["lastSeq"], (CAPACITY + 6) as u64);
        assert_eq!(all["summary"]["memory"]["maxRssBytes"], 7);
        assert_eq!(all["summary"]["payloadLarge"]["bySurface"]["ws"], 499);
        let only = s.snapshot(&Query {
            kind: Some("a".into()),
            since_seq: Some((CAPACITY) as u64),
            limit: Some(1000),
        });
        assert!(only["events"]
            .as_array()
            .unwrap()
            .iter()
            .all(|e| e["type"] == "a"));
        assert_eq!(only["count"], 3);
    }
}
