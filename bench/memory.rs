//! Memory and long-session benchmark. Prints numbers; asserts nothing.
//!
//!     cargo bench --bench memory
//!     FERROCLAW_BENCH_CHUNKS=10000,100000 FERROCLAW_BENCH_TURNS=60 cargo bench --bench memory
//!
//! 1. The memory index on a generated corpus (markdown files of lines of
//!    words drawn from a 6,000-word vocabulary with a Zipf-like spread), at
//!    each size in `FERROCLAW_BENCH_CHUNKS` (10,000 and 100,000 chunks):
//!    full build time and CPU seconds per MB of markdown, the RSS the index
//!    adds, `memory_search` p50/p99 over 300 queries (hybrid with the local
//!    embedder, and keyword-only), and the time to re-index one edited file.
//! 2. Recall@6 on the fixture corpus (tests/fixtures/memory_corpus.json).
//! 3. What a compaction adds to a turn: the release binary against a fake
//!    provider answering at once, a small context window so turns compact
//!    every few messages; send-to-final time of plain turns, of turns that
//!    compacted with the model's summary, and with the deterministic one.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../tests/support/mod.rs"]
#[allow(dead_code, unused_imports)]
mod support;

#[path = "../tests/actors/memory_recall.rs"]
#[allow(dead_code)]
mod memory_recall;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use ferroclaw_actors::memory::index::{MemoryIndex, Query, VectorLeg};
use serde_json::{json, Value};
use support::fake_provider::{last_text, FakeProvider, Script};
use support::{connect_params, Client};

const BIN: &str = env!("CARGO_BIN_EXE_ferroclaw");

fn env_list(name: &str, default: &str) -> Vec<usize> {
    std::env::var(name)
        .unwrap_or_else(|_| default.to_string())
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect()
}

#[path = "proc_stats.rs"]
#[allow(dead_code)]
mod proc_stats;

fn self_status_kb(field: &str) -> u64 {
    proc_stats::status_kb(std::process::id(), field)
}

fn cpu_seconds() -> f64 {
    // utime + stime of this process, in clock ticks (100 per second).
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit(')').next().unwrap_or("");
    let f: Vec<&str> = after.split_whitespace().collect();
    let ticks: u64 = f.get(11).and_then(|v| v.parse().ok()).unwrap_or(0)
        + f.get(12).and_then(|v| v.parse().ok()).unwrap_or(0);
    ticks as f64 / 100.0
}

/// A deterministic pseudo-random stream.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    /// Zipf-like: small indices far more often.
    fn word(&mut self, vocab: &[String]) -> String {
        let u = (self.next() % 1_000_000) as f64 / 1_000_000.0;
        let i = ((vocab.len() as f64).powf(u) as usize).saturating_sub(1);
        vocab[i.min(vocab.len() - 1)].clone()
    }
}

fn vocabulary() -> Vec<String> {
    let syl = [
        "ka", "lo", "mi", "ren", "to", "sa", "vel", "dor", "an", "qui", "be", "zu", "fen", "ol",
        "tri",
    ];
    let mut out = Vec::new();
    'a: for a in syl {
        for b in syl {
            for c in syl {
                out.push(format!("{a}{b}{c}"));
                if out.len() >= 6_000 {
                    break 'a;
                }
            }
        }
    }
    out
}

/// A markdown file of `lines` lines.
fn file(rng: &mut Rng, vocab: &[String], lines: usize) -> String {
    let mut s = String::from("# Notes\n\n");
    for _ in 0..lines {
        let n = 8 + (rng.next() % 10) as usize;
        let words: Vec<String> = (0..n).map(|_| rng.word(vocab)).collect();
        s.push_str(&format!("- {}\n", words.join(" ")));
    }
    s
}

fn pct(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn index_bench(chunks: usize) {
    let vocab = vocabulary();
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ chunks as u64);
    let dir = tempfile::tempdir().unwrap();
    let rss0 = self_status_kb("VmRSS:");
    let mut idx = MemoryIndex::open(&dir.path().join("bench.sqlite")).unwrap();
    // 200 lines (about 15 KB, 15.5 chunks with their overlap) per file.
    let files = (chunks * 2).div_ceil(31);
    // Generated file by file (as a sweep reads them), so the corpus is
    // never all in memory; only the indexing is timed.
    let mut bytes = 0usize;
    let mut build = 0f64;
    let c0 = cpu_seconds();
    for i in 0..files {
        let text = file(&mut rng, &vocab, 200);
        bytes += text.len();
        let t0 = Instant::now();
        idx.sync_file(&format!("memory/notes-{i:06}.md"), &text, 1)
            .unwrap();
        build += t0.elapsed().as_secs_f64();
    }
    let cpu = cpu_seconds() - c0;
    let mb = bytes as f64 / 1_048_576.0;
    println!(
        "index {:>7} chunks ({} files, {mb:.1} MB of markdown): build {build:.1} s, {:.2} CPU s per MB (generation included)",
        idx.len(),
        files,
        cpu / mb
    );
    println!(
        "index {:>7} chunks: RSS added {:.1} MB (process {:.1} MB), file {:.1} MB",
        idx.len(),
        (self_status_kb("VmRSS:").saturating_sub(rss0)) as f64 / 1024.0,
        self_status_kb("VmRSS:") as f64 / 1024.0,
        std::fs::metadata(dir.path().join("bench.sqlite")).map_or(0, |m| m.len()) as f64
            / 1_048_576.0
    );
    for (name, leg) in [("hybrid", VectorLeg::Local), ("keyword", VectorLeg::None)] {
        let mut times = Vec::new();
        let mut found = 0;
        for _ in 0..300 {
            let n = 2 + (rng.next() % 3) as usize;
            let q: Vec<String> = (0..n).map(|_| rng.word(&vocab)).collect();
            let q = q.join(" ");
            let mut query = Query::new(&q, 1_795_478_400_000);
            query.leg = leg.clone();
            let t = Instant::now();
            let hits = idx.search(&query).unwrap();
            times.push(t.elapsed().as_secs_f64() * 1000.0);
            found += usize::from(!hits.is_empty());
        }
        times.sort_by(f64::total_cmp);
        println!(
            "memory_search {name:7} at {:>7} chunks: p50 {:.2} ms, p99 {:.2} ms ({found}/300 with hits)",
            idx.len(),
            pct(&times, 0.5),
            pct(&times, 0.99)
        );
    }
    let edited = file(&mut rng, &vocab, 200);
    let t = Instant::now();
    idx.sync_file("memory/notes-000007.md", &edited, 2).unwrap();
    println!(
        "incremental update of one edited file at {:>7} chunks: {:.1} ms",
        idx.len(),
        t.elapsed().as_secs_f64() * 1000.0
    );
}

struct Gateway(Child);

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn spawn(state: &Path) -> (Gateway, String, String) {
    let mut child = Command::new(BIN)
        .env("HOME", state)
        .arg("--state-dir")
        .arg(state)
        .args(["gateway", "--port", "0"])
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let addr = loop {
        let line = lines.next().expect("address").unwrap();
        if let Some(rest) = line.split("listening on ws://").nth(1) {
            break rest.trim().to_string();
        }
    };
    std::thread::spawn(move || for _ in lines {});
    let token = std::fs::read_to_string(state.join("gateway.token")).unwrap_or_default();
    (Gateway(child), addr, token.trim().to_string())
}

fn answer(body: &Value, text: &str) -> Script {
    let prompt = body["messages"].to_string().len() / 4;
    Script::Stream {
        chunks: vec![
            json!({"choices":[{"index":0,"delta":{"content":text}}]}).to_string(),
            json!({"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}).to_string(),
            json!({"choices":[],"usage":{"prompt_tokens":prompt,"completion_tokens":4}})
                .to_string(),
        ],
        first_delay: Duration::ZERO,
        delay: Duration::ZERO,
        cut_after: None,
    }
}

async fn compaction_bench(turns: usize, model_summary: bool) {
    let fake = FakeProvider::start().await;
    fake.record
        .store(false, std::sync::atomic::Ordering::Relaxed);
    fake.respond_with(move |body: &Value| {
        let last = last_text(body);
        if last.contains("Write the summary of the conversation above now.") {
            if model_summary {
                let s = "## Decisions\n- go on\n## Open TODOs\n- None.\n## Constraints/Rules\n- None.\n## Pending user asks\n- None.\n## Exact identifiers\n- None.\n";
                return answer(body, s);
            }
            return Script::status(400, r#"{"error":{"message":"summaries disabled"}}"#);
        }
        if last.contains("Session nearing compaction.") {
            return answer(body, "NO_REPLY");
        }
        answer(body, "ok")
    });
    let dir = tempfile::tempdir().unwrap();
    let cfg = json!({
        "models": { "providers": { "fake": { "baseUrl": fake.base_url(), "api": "openai-completions",
            "apiKey": "k", "models": [{ "id": "m", "contextWindow": 12000 }] } } },
        "agents": { "defaults": { "model": { "primary": "fake/m", "fallbacks": [] } } },
    });
    std::fs::write(dir.path().join("ferroclaw.json"), cfg.to_string()).unwrap();
    let (_gw, addr, token) = spawn(dir.path());
    let mut c = Client::connect(&format!("ws://{addr}/")).await;
    let scopes = ["operator.admin", "operator.read", "operator.write"];
    c.handshake(connect_params("cli", "cli", &scopes, Some(&token)))
        .await;
    let (mut plain, mut compacted) = (Vec::new(), Vec::new());
    let mut count = 0u64;
    let pad = "lorem ipsum dolor sit amet ".repeat(45);
    for n in 0..turns {
        let id = format!("t{n}");
        let t = Instant::now();
        c.call("chat.send", json!({"sessionKey": "main", "message": format!("turn {n} {pad}"), "idempotencyKey": id})).await;
        loop {
            let e = c.event("chat").await;
            if e["payload"]["runId"] == id.as_str() && e["payload"]["state"] != "delta" {
                break;
            }
        }
        let ms = t.elapsed().as_secs_f64() * 1000.0;
        let list = c.call("sessions.list", json!({})).await;
        let now = list["payload"]["sessions"][0]["compactionCount"]
            .as_u64()
            .unwrap_or(0);
        if now > count {
            compacted.push(ms);
        } else {
            plain.push(ms);
        }
        count = now;
    }
    plain.sort_by(f64::total_cmp);
    compacted.sort_by(f64::total_cmp);
    let kind = if model_summary {
        "model summary"
    } else {
        "deterministic summary"
    };
    println!(
        "turn send->final with a fake provider: plain p50 {:.1} ms ({} turns); with a compaction ({kind}) p50 {:.1} ms ({} turns)",
        pct(&plain, 0.5),
        plain.len(),
        if compacted.is_empty() { f64::NAN } else { pct(&compacted, 0.5) },
        compacted.len()
    );
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    for n in env_list("FERROCLAW_BENCH_CHUNKS", "10000,100000") {
        index_bench(n);
    }
    let c = memory_recall::corpus();
    let r = memory_recall::recall(
        &c,
        &[("hybrid", VectorLeg::Local), ("keyword", VectorLeg::None)],
    );
    for ((leg, kind), v) in &r {
        println!("recall@6 on the fixture corpus, {leg:8} {kind:10} {v:.2}");
    }
    let turns = env_list("FERROCLAW_BENCH_TURNS", "60")
        .first()
        .copied()
        .unwrap_or(60);
    compaction_bench(turns, true).await;
    compaction_bench(turns, false).await;
}
