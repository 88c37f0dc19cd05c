//! ferroclaw beside the Rust peers a user compares it with, one run, the
//! same everything: each gateway on loopback, one at a time, on one fake
//! OpenAI-style provider (0 ms per token), driven through its own HTTP
//! entry point (`POST /v1/chat/completions`, non-streaming answers to the
//! client) by the same client. Prints the table of issue 57; asserts
//! nothing but that every turn got its answer.
//!
//!     cargo bench --bench vs_peers
//!     FERROCLAW_BENCH_BIN=/path/to/other/ferroclaw cargo bench --bench vs_peers
//!     bash bench/vs_peers.sh     # installs the peers first (not CI: ~35 min)
//!
//! Gateways: this build's release `ferroclaw`; `FERROCLAW_BENCH_BIN` as
//! "before"; ZeptoClaw from `$FERROCLAW_PEERS_DIR/bin` (default
//! `~/.cache/ferroclaw-peers`, where `bench/vs_peers.sh` installs it).
//! Rows: the binary stripped (a stripped copy's size); cold start, spawn
//! to the first HTTP 200 (median of 5 restarts on the same state dir, the
//! binary in the page cache); idle RSS, anonymous and file-backed, and
//! threads, 2 s after the first answer; gateway CPU per turn (utime +
//! stime of its process group from `/proc`, dead threads included) over `FERROCLAW_BENCH_TURNS`
//! (300) turns of one session with a 16-token answer, and over 100 turns
//! after 1,000 in that session; anonymous RSS then. `FERROCLAW_BENCH_ROUNDS`
//! (1) runs every gateway that many times, alternating the order, and
//! prints each field's median.
//!
//! What a turn includes differs, and the table says it: ferroclaw keeps
//! the session (the client sends only the new message), streams from the
//! provider, and answers only after the turn is durable (fsync'd) and its
//! reply is in the outbox. ZeptoClaw's `serve` is a stateless pass-through
//! (the client sends the whole history, as OpenAI's API expects; nothing
//! is stored, the provider is asked without streaming).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

// Only the fake provider and `/proc` readers: this bench links neither
// ferroclaw's library nor the other fakes (a fat-LTO link of its own
// stays short).
#[path = "../tests/support/fake_provider.rs"]
#[allow(dead_code)]
mod fake_provider;

#[path = "proc_stats.rs"]
#[allow(dead_code)]
mod proc_stats;

#[path = "group.rs"]
#[allow(dead_code)]
mod group;

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use fake_provider::{FakeProvider, Script};
use group::cpu_ticks;
use proc_stats::{env_usize, status_kb, Gateway};
use serde_json::{json, Value};

const BUILT: &str = env!("CARGO_BIN_EXE_ferroclaw");
const TOKEN: &str = "bench-token-0123456789";
const TICK_MS: f64 = 10.0;

/// How one gateway is started and spoken to.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    /// Keeps the session: the client sends the new message only.
    Ferroclaw,
    /// Stateless: the client sends the history.
    Zeptoclaw,
}

struct Entry {
    name: String,
    bin: PathBuf,
    kind: Kind,
}

/// One gateway's row values.
#[derive(Default, Clone)]
struct Row {
    stripped_mb: f64,
    cold_ms: f64,
    rss_kb: (u64, u64),
    threads: u64,
    cpu_short: f64,
    cpu_long: f64,
    anon_after_kb: u64,
}

fn entries() -> Vec<Entry> {
    let mut all = vec![];
    if let Ok(before) = std::env::var("FERROCLAW_BENCH_BIN") {
        all.push(Entry {
            name: "ferroclaw before".into(),
            bin: before.into(),
            kind: Kind::Ferroclaw,
        });
    }
    all.push(Entry {
        name: "ferroclaw".into(),
        bin: BUILT.into(),
        kind: Kind::Ferroclaw,
    });
    let dir = std::env::var("FERROCLAW_PEERS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| {
            PathBuf::from(std::env::var("HOME").unwrap_or_default()).join(".cache/ferroclaw-peers")
        });
    let zepto = dir.join("bin/zeptoclaw");
    if zepto.exists() {
        all.push(Entry {
            name: "ZeptoClaw".into(),
            bin: zepto,
            kind: Kind::Zeptoclaw,
        });
    } else {
        println!(
            "(ZeptoClaw is not installed in {}: bash bench/vs_peers.sh)",
            dir.display()
        );
    }
    all
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Writes the gateway's config under `state`.
fn configure(e: &Entry, state: &Path, fake_url: &str) {
    if e.kind == Kind::Ferroclaw {
        let home = state.join(".ferroclaw");
        std::fs::create_dir_all(&home).unwrap();
        let config = json!({
            "gateway": { "auth": { "mode": "token", "token": TOKEN },
                         "http": { "endpoints": { "chatCompletions": { "enabled": true } } },
                         "tickIntervalMs": 3_600_000, "healthRefreshIntervalMs": 3_600_000 },
            "models": { "providers": { "fake": { "baseUrl": fake_url, "api": "openai-completions", "apiKey": "k" } } },
            "agents": { "defaults": { "model": "fake/bench", "heartbeat": { "every": "0m" } } },
            "logging": { "level": "warn" },
        });
        std::fs::write(home.join("ferroclaw.json"), config.to_string()).unwrap();
    }
}

fn spawn(e: &Entry, state: &Path, port: u16, fake_url: &str) -> Gateway {
    let mut cmd = Command::new(&e.bin);
    cmd.env_clear()
        .env("HOME", state)
        .env("PATH", "/usr/bin:/bin")
        .env("RUST_LOG", "warn")
        .process_group(0)
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    match e.kind {
        Kind::Ferroclaw => {
            cmd.arg("--state-dir").arg(state).arg("--config");
            cmd.arg(state.join(".ferroclaw/ferroclaw.json"));
            cmd.args(["gateway", "--port", &port.to_string()]);
        }
        Kind::Zeptoclaw => {
            cmd.env("ZEPTOCLAW_PROVIDERS_OPENAI_API_KEY", "k")
                .env("ZEPTOCLAW_PROVIDERS_OPENAI_API_BASE", fake_url)
                .env("ZEPTOCLAW_AGENTS_DEFAULTS_MODEL", "bench");
            cmd.args(["serve", "--bind", "127.0.0.1", "--port", &port.to_string()]);
        }
    }
    Gateway(cmd.spawn().unwrap())
}

/// The path whose 200 means "serving".
fn ready_path(kind: Kind) -> &'static str {
    match kind {
        Kind::Ferroclaw => "/health",
        Kind::Zeptoclaw => "/v1/models",
    }
}

/// Polls `GET path` until a 200; the time from `t0`.
fn first_200(port: u16, path: &str, t0: Instant) -> Duration {
    use std::io::{Read, Write};
    let deadline = t0 + Duration::from_secs(30);
    loop {
        if let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", port)) {
            let req = format!("GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n");
            let mut head = [0u8; 12];
            if s.write_all(req.as_bytes()).is_ok()
                && s.read_exact(&mut head).is_ok()
                && head.ends_with(b"200")
            {
                return t0.elapsed();
            }
        }
        assert!(Instant::now() < deadline, "no HTTP 200 on {path} in 30 s");
        std::thread::sleep(Duration::from_micros(200));
    }
}

fn stripped_mb(bin: &Path, tmp: &Path) -> f64 {
    let out = tmp.join("stripped");
    let ok = Command::new("strip").arg("-o").arg(&out).arg(bin).status();
    let path = if ok.is_ok_and(|s| s.success()) {
        out.as_path()
    } else {
        bin
    };
    std::fs::metadata(path).unwrap().len() as f64 / 1e6
}

/// One session's client: what it sends for a turn.
struct Chat {
    http: reqwest::Client,
    url: String,
    kind: Kind,
    history: Vec<Value>,
}

impl Chat {
    async fn turn(&mut self, i: usize) {
        let msg = json!({ "role": "user", "content": format!("go {i}") });
        let messages = match self.kind {
            Kind::Ferroclaw => vec![msg],
            Kind::Zeptoclaw => {
                self.history.push(msg);
                self.history.clone()
            }
        };
        let body = json!({ "model": "bench", "messages": messages, "stream": false });
        let res = self
            .http
            .post(&self.url)
            .bearer_auth(TOKEN)
            .header("x-openclaw-session-key", "bench-vs-peers")
            .json(&body)
            .send()
            .await
            .unwrap();
        assert!(res.status().is_success(), "turn {i}: HTTP {}", res.status());
        let answer: Value = res.json().await.unwrap();
        let text = answer["choices"][0]["message"]["content"]
            .as_str()
            .unwrap_or("");
        assert!(text.starts_with("w0"), "turn {i}: {answer}");
        if self.kind == Kind::Zeptoclaw {
            self.history
                .push(json!({ "role": "assistant", "content": text }));
        }
    }

    /// CPU ms per turn over `n` turns numbered from `from`.
    async fn cpu_per_turn(&mut self, pid: u32, from: usize, n: usize) -> f64 {
        let before = cpu_ticks(pid);
        for i in from..from + n {
            self.turn(i).await;
        }
        (cpu_ticks(pid) - before) as f64 * TICK_MS / n as f64
    }
}

async fn measure(e: &Entry, fake: &FakeProvider) -> Row {
    let tmp = tempfile::tempdir().unwrap();
    let state = tmp.path().join("state");
    std::fs::create_dir_all(&state).unwrap();
    let fake_url = fake.base_url();
    configure(e, &state, &fake_url);
    let port = free_port();
    let path = ready_path(e.kind);
    // The first start creates the state; the restarts after it are timed.
    let mut colds = vec![];
    let mut gw = spawn(e, &state, port, &fake_url);
    first_200(port, path, Instant::now());
    for _ in 0..5 {
        drop(gw);
        let t0 = Instant::now();
        gw = spawn(e, &state, port, &fake_url);
        colds.push(first_200(port, path, t0));
    }
    colds.sort();
    let pid = gw.0.id();
    // Not a wait for an event: "idle" is defined as the state 2 s after the
    // first answer, the same window for every gateway.
    std::thread::sleep(Duration::from_secs(2));
    let mut row = Row {
        stripped_mb: stripped_mb(&e.bin, tmp.path()),
        cold_ms: colds[colds.len() / 2].as_secs_f64() * 1e3,
        rss_kb: (status_kb(pid, "RssAnon:"), status_kb(pid, "RssFile:")),
        threads: status_kb(pid, "Threads:"),
        ..Row::default()
    };
    let mut chat = Chat {
        http: reqwest::Client::new(),
        url: format!("http://127.0.0.1:{port}/v1/chat/completions"),
        kind: e.kind,
        history: vec![],
    };
    let n = env_usize("FERROCLAW_BENCH_TURNS", 300);
    for i in 0..20 {
        chat.turn(i).await;
    }
    row.cpu_short = chat.cpu_per_turn(pid, 20, n).await;
    for i in 20 + n..1_000 {
        chat.turn(i).await;
    }
    row.cpu_long = chat.cpu_per_turn(pid, 1_000.max(20 + n), 100).await;
    row.anon_after_kb = status_kb(pid, "RssAnon:");
    row
}

fn print_table(names: &[String], rows: &[Row]) {
    let mb = |kb: u64| kb as f64 / 1024.0;
    let line = |label: &str, cell: &dyn Fn(&Row) -> String| {
        let cells: Vec<String> = rows.iter().map(cell).collect();
        println!("| {label} | {} |", cells.join(" | "));
    };
    println!("| | {} |", names.join(" | "));
    println!("|---|{}", "---|".repeat(names.len()));
    line("binary, stripped", &|r| format!("{:.1} MB", r.stripped_mb));
    line("idle RSS (anonymous / file-backed)", &|r| {
        let (a, f) = r.rss_kb;
        format!("{:.1} MB ({:.1} / {:.1})", mb(a + f), mb(a), mb(f))
    });
    line("threads at idle", &|r| r.threads.to_string());
    line("cold start to first HTTP 200", &|r| {
        format!("{:.1} ms", r.cold_ms)
    });
    line("CPU per turn, one session, 16 tokens", &|r| {
        format!("{:.2} ms", r.cpu_short)
    });
    line("CPU per turn after 1,000 turns", &|r| {
        format!("{:.2} ms", r.cpu_long)
    });
    line("anonymous RSS after 1,100 turns", &|r| {
        format!("{:.1} MB", mb(r.anon_after_kb))
    });
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let fake = FakeProvider::start().await;
        fake.record
            .store(false, std::sync::atomic::Ordering::Relaxed);
        // Streamed when asked (ferroclaw), one JSON body when not (ZeptoClaw).
        fake.respond_with(|body| {
            if body["stream"] == true {
                Script::words(16)
            } else {
                let words: Vec<String> = (0..16).map(|i| format!("w{i}")).collect();
                Script::json_answer(&words.join(" "))
            }
        });
        let all = entries();
        let names: Vec<String> = all.iter().map(|e| e.name.clone()).collect();
        // Every gateway once per round, the order reversed every other
        // round (the machine's drift falls on all alike); medians at the end.
        let rounds = env_usize("FERROCLAW_BENCH_ROUNDS", 1).max(1);
        let mut runs: Vec<Vec<Row>> = vec![vec![]; all.len()];
        for round in 0..rounds {
            let mut order: Vec<usize> = (0..all.len()).collect();
            if round % 2 == 1 {
                order.reverse();
            }
            for i in order {
                println!(
                    "round {}: {}: {}",
                    round + 1,
                    all[i].name,
                    all[i].bin.display()
                );
                runs[i].push(measure(&all[i], &fake).await);
            }
        }
        if rounds > 1 {
            println!("medians of {rounds} rounds:");
        }
        let rows: Vec<Row> = runs.iter().map(|r| median_row(r)).collect();
        print_table(&names, &rows);
    });
}

/// Each field's median over the rounds.
fn median_row(rows: &[Row]) -> Row {
    fn med<T: Copy + PartialOrd>(mut v: Vec<T>) -> T {
        v.sort_by(|a, b| a.partial_cmp(b).unwrap());
        v[v.len() / 2]
    }
    let f = |get: fn(&Row) -> f64| med(rows.iter().map(get).collect());
    let u = |get: fn(&Row) -> u64| med(rows.iter().map(get).collect());
    Row {
        stripped_mb: f(|r| r.stripped_mb),
        cold_ms: f(|r| r.cold_ms),
        rss_kb: (u(|r| r.rss_kb.0), u(|r| r.rss_kb.1)),
        threads: u(|r| r.threads),
        cpu_short: f(|r| r.cpu_short),
        cpu_long: f(|r| r.cpu_long),
        anon_after_kb: u(|r| r.anon_after_kb),
    }
}
