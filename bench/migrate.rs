//! Import/export benchmark with the release `ferroclaw` binary: a generated
//! OpenClaw state dir of N sessions x L transcript lines (user, assistant,
//! tool call and tool result lines of chat-like sizes) moved in with
//! `ferroclaw import`, then exported back from a running gateway with
//! `ferroclaw export`. Prints wall time, lines/s, MB/s and peak RSS (the
//! import process from wait4; the gateway's RSS around each of two exports,
//! and 6 s later, once it gave back the heap the export freed).
//! Asserts only that every line came back.
//!
//!     cargo bench --bench migrate
//!     FERROCLAW_BENCH_MIGRATE_SESSIONS=500 FERROCLAW_BENCH_MIGRATE_LINES=1000 cargo bench --bench migrate
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use serde_json::json;

#[path = "proc_stats.rs"]
#[allow(dead_code)]
mod proc_stats;
use proc_stats::{metric, status_kb};

const BIN: &str = env!("CARGO_BIN_EXE_ferroclaw");
const TOKEN: &str = "bench-token-0123456789";

fn knob(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn words(seed: usize, n: usize) -> String {
    const W: &[&str] = &[
        "the", "gateway", "session", "agent", "runs", "a", "tool", "and", "streams", "its",
        "reply", "back", "with", "markdown", "code", "file", "notes", "today", "check", "list",
    ];
    (0..n)
        .map(|i| W[(seed * 31 + i * 7) % W.len()])
        .collect::<Vec<_>>()
        .join(" ")
}

/// Writes the OpenClaw state dir; returns (lines, bytes of transcripts).
fn generate(dir: &Path, sessions: usize, lines: usize) -> (usize, u64) {
    let sdir = dir.join("agents/main/sessions");
    std::fs::create_dir_all(&sdir).unwrap();
    std::fs::write(
        dir.join("openclaw.json"),
        format!("{{ gateway: {{ auth: {{ mode: \"token\", token: \"{TOKEN}\" }} }} }}"),
    )
    .unwrap();
    std::fs::create_dir_all(dir.join("workspace")).unwrap();
    std::fs::write(dir.join("workspace/AGENTS.md"), "# Agents\n").unwrap();
    let mut rows = serde_json::Map::new();
    let (mut total, mut bytes) = (0, 0u64);
    for s in 0..sessions {
        let id = format!("00000000-0000-4000-8000-{s:012}");
        let mut f = std::io::BufWriter::new(
            std::fs::File::create(sdir.join(format!("{id}.jsonl"))).unwrap(),
        );
        let header = json!({"type": "session", "version": 3, "id": id, "timestamp": "2026-11-01T00:00:00.000Z", "cwd": "/w"});
        let mut out = vec![header];
        for i in 1..lines {
            let ts = 1_761_955_200_000u64 + (s * lines + i) as u64;
            let message = match i % 4 {
                1 => {
                    json!({"role": "user", "content": [{"type": "text", "text": words(i, 40)}], "timestamp": ts})
                }
                2 => {
                    json!({"role": "assistant", "content": [{"type": "text", "text": words(i, 30)},
                    {"type": "toolCall", "id": format!("c{i}"), "name": "exec", "arguments": {"command": "ls notes"}}],
                    "provider": "openai", "model": "gpt-5", "usage": {"input": 900, "output": 40}, "stopReason": "toolUse", "timestamp": ts})
                }
                3 => {
                    json!({"role": "toolResult", "toolCallId": format!("c{}", i - 1), "toolName": "exec",
                    "content": [{"type": "text", "text": words(i, 25)}], "isError": false, "timestamp": ts})
                }
                _ => {
                    json!({"role": "assistant", "content": [{"type": "text", "text": words(i, 60)}],
                    "provider": "openai", "model": "gpt-5", "stopReason": "stop", "timestamp": ts})
                }
            };
            out.push(json!({"type": "message", "id": format!("{i:08x}"), "parentId": null, "timestamp": "2026-11-01T00:00:01.000Z", "message": message}));
        }
        for l in &out {
            let text = serde_json::to_string(l).unwrap();
            bytes += text.len() as u64 + 1;
            writeln!(f, "{text}").unwrap();
        }
        total += out.len();
        rows.insert(
            format!("agent:main:s{s}"),
            json!({"sessionId": id, "updatedAt": 1_761_955_200_000u64 + s as u64}),
        );
    }
    std::fs::write(
        sdir.join("sessions.json"),
        serde_json::to_string(&rows).unwrap(),
    )
    .unwrap();
    (total, bytes)
}

/// Runs a command to its end; returns (seconds, peak RSS in KB from wait4).
// The child is reaped by wait4 (for its rusage), not by `Child::wait`.
#[allow(clippy::zombie_processes)]
fn timed(cmd: &mut Command) -> (f64, u64) {
    let started = Instant::now();
    let child = cmd.stdout(Stdio::null()).spawn().unwrap();
    let mut status = 0;
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = child.id() as libc::pid_t;
    // SAFETY: wait4 on our own child, with valid pointers to locals.
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(r, pid);
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "{cmd:?} failed"
    );
    (started.elapsed().as_secs_f64(), usage.ru_maxrss as u64)
}

fn main() {
    let sessions = knob("FERROCLAW_BENCH_MIGRATE_SESSIONS", 200);
    let lines = knob("FERROCLAW_BENCH_MIGRATE_LINES", 500);
    let tmp = tempfile::tempdir().unwrap();
    let (from, state, out) = (
        tmp.path().join("openclaw"),
        tmp.path().join("ferroclaw"),
        tmp.path().join("export"),
    );
    let (total, bytes) = generate(&from, sessions, lines);
    let mb = bytes as f64 / (1024.0 * 1024.0);
    println!("OpenClaw state dir: {sessions} sessions x {lines} lines = {total} lines, {mb:.1} MB of JSONL");

    let (secs, peak) = timed(
        Command::new(BIN)
            .args(["import", "--from"])
            .arg(&from)
            .arg("--state-dir")
            .arg(&state)
            .env("HOME", tmp.path()),
    );
    println!(
        "import: {secs:.2} s, {:.0} lines/s, {:.1} MB/s, peak RSS {:.1} MB",
        total as f64 / secs,
        mb / secs,
        peak as f64 / 1024.0
    );

    let mut gw = Command::new(BIN)
        .args(["gateway", "--port", "0", "--state-dir"])
        .arg(&state)
        .env("HOME", tmp.path())
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(gw.stderr.take().unwrap()).lines();
    let addr = loop {
        let l = err.next().expect("gateway output").unwrap();
        if let Some(a) = l.split("listening on ws://").nth(1) {
            break a.trim().to_string();
        }
    };
    std::thread::spawn(move || for _ in err {});
    let heap = |state: &str| {
        metric(&addr, &format!("ferroclaw_heap_bytes{{state=\"{state}\"}}"))
            .map(|b| format!("{:.1} MB", b as f64 / 1048576.0))
            .unwrap_or_else(|| "?".into())
    };
    // Twice: the second shows whether what an export leaves grows.
    for round in 1..=2 {
        let before = status_kb(gw.id(), "VmRSS:");
        let dest = out.join(format!("round{round}"));
        let (secs, _) = timed(
            Command::new(BIN)
                .args(["export", "--out"])
                .arg(&dest)
                .args(["--url", &format!("ws://{addr}/"), "--token", TOKEN]),
        );
        let hwm = status_kb(gw.id(), "VmHWM:");
        let after = status_kb(gw.id(), "VmRSS:");
        let exported: usize = std::fs::read_dir(dest.join("agents/main/sessions"))
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.path().extension().is_some_and(|x| x == "jsonl"))
            .map(|e| std::fs::read_to_string(e.path()).unwrap().lines().count())
            .sum();
        assert_eq!(exported, total, "every line came back");
        // The gateway looks at its free heap every 5 s and trims it.
        std::thread::sleep(std::time::Duration::from_secs(6));
        let settled = status_kb(gw.id(), "VmRSS:");
        println!(
            "export {round}: {secs:.2} s, {:.0} lines/s, {:.1} MB/s; gateway RSS {:.1} MB before, {:.1} MB right after, {:.1} MB 6 s later, peak {:.1} MB; heap {} in use, {} free",
            total as f64 / secs,
            mb / secs,
            before as f64 / 1024.0,
            after as f64 / 1024.0,
            settled as f64 / 1024.0,
            hwm as f64 / 1024.0,
            heap("in_use"),
            heap("free"),
        );
    }
    let _ = gw.kill();
    let _ = gw.wait();
}
