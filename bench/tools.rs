//! The agent's tools: the overhead of one call per kind of tool, on the
//! release `ferroclaw` binary as a child process, through `POST
//! /tools/invoke` on a kept-alive loopback connection (sequential calls;
//! p50 and p99 in microseconds, and each kind over the built-in `read`).
//! Kinds: built-in on the executor (`read`), the session tools actor
//! (`agents_list`), the edge's gateway tools (`automations` status, a
//! `message` dry run, `gateway` update.status), the media tools actor
//! (`pdf` of a workspace PDF, `view_image` of a workspace PNG: a store
//! put each time), and `web_search` against a loopback SearXNG-shaped
//! responder, uncached and cached; and `ask_user`'s round trip: the call
//! opens a question, an operator's WebSocket client hears
//! `question.requested` and answers with `question.resolve`, and the call
//! returns the answer (the time from the call to its answer). Prints
//! numbers; asserts only that every call answered.
//!
//!     cargo bench --bench tools
//!
//! Knob: `FERROCLAW_BENCH_CALLS` (300).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "invoke.rs"]
mod invoke;
#[path = "proc_stats.rs"]
#[allow(dead_code)]
mod proc_stats;
#[path = "../tests/support/mod.rs"]
#[allow(dead_code, unused_imports)]
mod support;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::Path;

use std::time::{Duration, Instant};

use proc_stats::{env_usize, Gateway};
use serde_json::{json, Value};

const BUILT: &str = env!("CARGO_BIN_EXE_ferroclaw");
const TOKEN: &str = "bench-token-0123456789";

/// A loopback HTTP responder answering every request with SearXNG's JSON.
fn searxng() -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", l.local_addr().unwrap());
    let body = json!({"query": "q", "results": [
        {"url": "https://example.org/a", "title": "A", "content": "first"},
        {"url": "https://example.org/b", "title": "B", "content": "second"},
    ]})
    .to_string();
    std::thread::spawn(move || {
        for conn in l.incoming().map_while(Result::ok) {
            let body = body.clone();
            std::thread::spawn(move || {
                let mut r = BufReader::new(conn.try_clone().unwrap());
                let mut w = conn;
                // One write per answer: a head and body in separate small
                // segments would wait on the client's delayed ACK (Nagle).
                let _ = w.set_nodelay(true);
                let answer = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
                    body.len()
                );
                loop {
                    let mut line = String::new();
                    if r.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    if line.trim().is_empty() {
                        let _ = w.write_all(answer.as_bytes());
                    }
                }
            });
        }
    });
    base
}

fn start(state: &Path, search: &str) -> (Gateway, String) {
    let ws = state.join("workspace");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(ws.join("small.txt"), "a small file\n").unwrap();
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    png.extend_from_slice(&[7u8; 200]);
    std::fs::write(ws.join("photo.png"), png).unwrap();
    std::fs::write(
        ws.join("doc.pdf"),
        support::pdf::pdf(&["Quarterly revenue grew"]),
    )
    .unwrap();
    let cfg = state.join("ferroclaw.json");
    std::fs::write(
        &cfg,
        json!({
            "gateway": { "auth": { "mode": "token", "token": TOKEN }, "tickIntervalMs": 3_600_000 },
            "logging": { "level": "warn" },
            "plugins": { "entries": { "searxng": { "config": { "webSearch": { "baseUrl": search } } } } },
        })
        .to_string(),
    )
    .unwrap();
    let bin = std::env::var("FERROCLAW_BENCH_BIN").unwrap_or_else(|_| BUILT.into());
    let (gw, addr) = invoke::spawn_gateway(&bin, state, &cfg);
    (gw, addr)
}

fn pct(v: &mut [Duration], p: f64) -> f64 {
    invoke::percentile(v, p).as_secs_f64() * 1e6
}

fn main() {
    let n = env_usize("FERROCLAW_BENCH_CALLS", 300);
    let dir = tempfile::tempdir().unwrap();
    let search = searxng();
    let (_gw, addr) = start(dir.path(), &search);
    let mut conn = std::net::TcpStream::connect(&addr).unwrap();
    conn.set_nodelay(true).unwrap();
    let cases: Vec<(&str, Value, bool)> = vec![
        (
            "read (executor)",
            json!({"tool": "read", "args": {"path": "small.txt"}}),
            false,
        ),
        (
            "agents_list (session tools)",
            json!({"tool": "agents_list", "args": {}}),
            false,
        ),
        (
            "automations status (edge)",
            json!({"tool": "automations", "args": {"action": "status"}}),
            false,
        ),
        (
            "message dry run (edge)",
            json!({"tool": "message", "args": {"action": "send", "channel": "telegram", "target": "1", "message": "x", "dryRun": true}}),
            false,
        ),
        (
            "gateway update.status (edge)",
            json!({"tool": "gateway", "args": {"action": "update.status"}}),
            false,
        ),
        (
            "pdf (media tools)",
            json!({"tool": "pdf", "args": {"pdf": "doc.pdf"}}),
            false,
        ),
        (
            "view_image (media tools)",
            json!({"tool": "view_image", "args": {"path": "photo.png"}}),
            false,
        ),
        (
            "web_search uncached (loopback SearXNG)",
            json!({"tool": "web_search", "args": {"query": "q"}}),
            true,
        ),
        (
            "web_search cached",
            json!({"tool": "web_search", "args": {"query": "cached"}}),
            false,
        ),
    ];
    println!("tool call via /tools/invoke, {n} sequential calls each (µs):");
    let mut base = 0.0;
    for (name, body, fresh) in cases {
        // Warm up (and fill the cache for the cached case).
        let first = invoke::invoke(&mut conn, &addr, TOKEN, &body);
        assert_eq!(first["ok"], true, "{name}: {first}");
        let mut times = Vec::with_capacity(n);
        for i in 0..n {
            let mut b = body.clone();
            if fresh {
                b["args"]["query"] = json!(format!("q{i}"));
            }
            let t = Instant::now();
            let r = invoke::invoke(&mut conn, &addr, TOKEN, &b);
            times.push(t.elapsed());
            assert_eq!(r["ok"], true, "{name}: {r}");
        }
        let (p50, p99) = (pct(&mut times, 0.5), pct(&mut times, 0.99));
        if base == 0.0 {
            base = p50;
        }
        println!(
            "  {name:<40} p50 {p50:>8.0}  p99 {p99:>8.0}  over read {:>+8.0}",
            p50 - base
        );
    }
    let (p50, p99) = ask_user_round_trip(&addr, n);
    println!(
        "  {:<40} p50 {p50:>8.0}  p99 {p99:>8.0}  over read {:>+8.0}",
        "ask_user answered by an operator (WS)",
        p50 - base
    );
}

/// `ask_user` `n` times, each answered by an operator client as soon as it
/// hears the question: p50 and p99 of call-to-answer (µs).
fn ask_user_round_trip(addr: &str, n: usize) -> (f64, f64) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut times = rt.block_on(async {
        let mut op = support::Client::connect(&format!("ws://{addr}/")).await;
        let hello = op
            .handshake(support::connect_params(
                "cli",
                "cli",
                &["operator.admin"],
                Some(TOKEN),
            ))
            .await;
        assert_eq!(hello["ok"], true, "{hello}");
        let args = json!({"questions": [{"id": "pick", "header": "Pick", "question": "Which?",
            "options": [{"label": "A"}, {"label": "B"}]}]});
        let mut times = Vec::with_capacity(n);
        for _ in 0..n {
            let (a, args) = (addr.to_string(), args.clone());
            let t = Instant::now();
            let call = std::thread::spawn(move || {
                let mut conn = std::net::TcpStream::connect(&a).unwrap();
                conn.set_nodelay(true).unwrap();
                let body = json!({"tool": "ask_user", "args": args});
                invoke::invoke(&mut conn, &a, TOKEN, &body)
            });
            let asked = op.event("question.requested").await;
            let id = asked["payload"]["id"].clone();
            let r = op
                .call(
                    "question.resolve",
                    json!({"id": id, "answers": {"answers": {"pick": ["B"]}}}),
                )
                .await;
            assert_eq!(r["ok"], true, "{r}");
            let answer = call.join().unwrap();
            times.push(t.elapsed());
            assert_eq!(answer["ok"], true, "{answer}");
        }
        times
    });
    (pct(&mut times, 0.5), pct(&mut times, 0.99))
}
