//! Memory search quality on a fixture corpus (tests/fixtures/memory_corpus.json:
//! a personal assistant's MEMORY.md, USER.md and notes, and 30 queries of
//! three kinds with the file that answers each): recall@6 of the hybrid
//! search with the built-in local embedder against keyword search alone.
//! Printed for the record; the assertions are what the design promises.

use std::collections::BTreeMap;
use std::path::Path;

use ferroclaw_actors::memory::index::{MemoryIndex, Query, VectorLeg};
use serde_json::Value;

pub fn corpus() -> Value {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/memory_corpus.json"
    ))
    .unwrap();
    serde_json::from_str(&text).unwrap()
}

/// recall@6 per query kind (and "all"), for each leg.
pub fn recall(corpus: &Value, legs: &[(&str, VectorLeg)]) -> BTreeMap<(String, String), f64> {
    let mut idx = MemoryIndex::open(Path::new(":memory:")).unwrap();
    for (path, text) in corpus["files"].as_object().unwrap() {
        idx.sync_file(path, text.as_str().unwrap(), 1).unwrap();
    }
    // 2026-11-24 00:00 UTC: the dated notes are days old.
    let now = 1_795_478_400_000u64;
    let mut out = BTreeMap::new();
    for (name, leg) in legs {
        let mut per: BTreeMap<String, (usize, usize)> = BTreeMap::new();
        for q in corpus["queries"].as_array().unwrap() {
            let mut query = Query::new(q["query"].as_str().unwrap(), now);
            query.leg = leg.clone();
            let hits = idx.search(&query).unwrap();
            let found = hits
                .iter()
                .take(6)
                .any(|h| h.path == q["expect"].as_str().unwrap());
            for kind in [q["kind"].as_str().unwrap(), "all"] {
                let e = per.entry(kind.to_string()).or_default();
                e.0 += usize::from(found);
                e.1 += 1;
            }
        }
        for (kind, (hit, n)) in per {
            out.insert((name.to_string(), kind), hit as f64 / n as f64);
        }
    }
    out
}

#[test]
fn the_local_embedder_finds_what_keywords_alone_miss() {
    let c = corpus();
    let r = recall(
        &c,
        &[("hybrid", VectorLeg::Local), ("keyword", VectorLeg::None)],
    );
    for ((leg, kind), v) in &r {
        eprintln!("recall@6 {leg:8} {kind:10} {v:.2}");
    }
    let at = |leg: &str, kind: &str| r[&(leg.to_string(), kind.to_string())];
    assert!(at("hybrid", "all") > at("keyword", "all"));
    assert!(at("hybrid", "paraphrase") > at("keyword", "paraphrase"));
    assert!(
        at("hybrid", "keyword") >= 0.9,
        "exact identifiers are still found"
    );
    assert!(at("hybrid", "all") >= 0.8);
}
