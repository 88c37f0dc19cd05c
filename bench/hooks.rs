//! Command hook benchmark. Prints numbers; asserts only that every call
//! and turn answered.
//!
//!     cargo bench --bench hooks
//!
//! (1) In process: the `HookHub` answering one `before_tool_call` event
//! with no hook (the cost every point pays: one atomic load), with one
//! no-op command hook in OpenClaw's dialect (`cat >/dev/null`: a process
//! per event), and with one in Claude's (`true`): p50/p99 per event.
//! (2) The release `ferroclaw` binary, offline model, `POST
//! /v1/chat/completions`: a turn with one tool call (`read` of a small
//! file), each in a fresh session, without and with a no-op
//! `before_tool_call` hook: p50/p99 per turn and the difference.
//! Knobs: `FERROCLAW_BENCH_EVENTS` (300), `FERROCLAW_BENCH_TURNS` (100).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "invoke.rs"]
#[allow(dead_code)]
mod invoke;
#[path = "proc_stats.rs"]
#[allow(dead_code)]
mod proc_stats;

use std::path::Path;
use std::time::{Duration, Instant};

use ferroclaw_actors::hooks::table::{CommandHook, Dialect, HookOwner, HookTable, Matcher};
use ferroclaw_actors::hooks::{HookClient, HookCtx, HookEvent, HookPoint};
use invoke::{percentile, spawn_gateway};
use proc_stats::env_usize;
use serde_json::{json, Value};

const BUILT: &str = env!("CARGO_BIN_EXE_ferroclaw");
const TOKEN: &str = "bench-token-0123456789";

fn hook(command: &str, dialect: Dialect) -> CommandHook {
    CommandHook {
        id: "bench#0".into(),
        owner: HookOwner::Config,
        point: HookPoint::BeforeToolCall,
        dialect,
        command: command.into(),
        matcher: Matcher::Any,
        timeout: Duration::from_secs(15),
        fail_closed: true,
        priority: 0,
        cwd: None,
        env: Vec::new(),
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// p50 and p99 of `n` events through a hub holding `hooks`.
async fn events(hooks: Vec<CommandHook>, n: usize, dir: &Path) -> (f64, f64) {
    let mut table = HookTable::default();
    for h in hooks {
        table.add(h, None);
    }
    let client = HookClient::start(table, dir.to_path_buf(), Default::default());
    let mut took = Vec::with_capacity(n);
    for i in 0..n {
        let event = HookEvent::ToolCall {
            tool: "read".into(),
            call_id: format!("c{i}"),
            params: json!({"path": "small.txt"}),
        };
        let t = Instant::now();
        let reply = client
            .decide(HookPoint::BeforeToolCall, event, HookCtx::default())
            .await;
        took.push(t.elapsed());
        assert!(reply.block.is_none(), "a no-op hook blocked: {reply:?}");
    }
    (
        ms(percentile(&mut took, 0.5)),
        ms(percentile(&mut took, 0.99)),
    )
}

/// One non-streamed completion; its body.
fn complete(conn: &mut std::net::TcpStream, addr: &str, prompt: &str) -> Value {
    let body = json!({"model": "ferroclaw", "messages": [{"role": "user", "content": prompt}]});
    invoke::post(conn, addr, TOKEN, "/v1/chat/completions", &body)
}

/// p50 and p99 of `n` one-tool-call turns on a gateway with `hooks`.
fn turns(hooks: Value, n: usize) -> (f64, f64) {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("workspace");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(ws.join("small.txt"), "a small file\n").unwrap();
    let cfg = dir.path().join("ferroclaw.json");
    let config = json!({
        "gateway": {"auth": {"mode": "token", "token": TOKEN}, "http": {"endpoints": {"chatCompletions": {"enabled": true}}}},
        "agents": {"defaults": {"workspace": ws}},
        "hooks": {"commands": hooks},
    });
    std::fs::write(&cfg, config.to_string()).unwrap();
    let (_gw, addr) = spawn_gateway(BUILT, dir.path(), &cfg);
    let mut conn = std::net::TcpStream::connect(&addr).unwrap();
    conn.set_nodelay(true).unwrap();
    let prompt = "@tool read {\"path\": \"small.txt\"}";
    for _ in 0..5 {
        complete(&mut conn, &addr, prompt);
    }
    let mut took = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        let answer = complete(&mut conn, &addr, prompt);
        took.push(t.elapsed());
        let text = answer["choices"][0]["message"]["content"]
            .as_str()
            .unwrap_or("");
        assert!(
            text.contains("a small file"),
            "the tool did not run: {answer}"
        );
    }
    (
        ms(percentile(&mut took, 0.5)),
        ms(percentile(&mut took, 0.99)),
    )
}

fn main() {
    let n = env_usize("FERROCLAW_BENCH_EVENTS", 300);
    let dir = tempfile::tempdir().unwrap();
    let sys = actix::System::new();
    let (none, openclaw, claude) = sys.block_on(async {
        (
            events(Vec::new(), n, dir.path()).await,
            events(
                vec![hook("cat >/dev/null", Dialect::OpenClaw)],
                n,
                dir.path(),
            )
            .await,
            events(
                vec![hook("true", Dialect::Claude("PreToolUse"))],
                n,
                dir.path(),
            )
            .await,
        )
    });
    println!("before_tool_call event through the hook hub, {n} events:");
    println!(
        "  no hook                      p50 {:.3} ms  p99 {:.3} ms",
        none.0, none.1
    );
    println!(
        "  no-op command (OpenClaw)     p50 {:.3} ms  p99 {:.3} ms",
        openclaw.0, openclaw.1
    );
    println!(
        "  no-op command (Claude true)  p50 {:.3} ms  p99 {:.3} ms",
        claude.0, claude.1
    );
    let t = env_usize("FERROCLAW_BENCH_TURNS", 100);
    let bare = turns(json!({}), t);
    let hooked = turns(
        json!({"before_tool_call": [{"command": "cat >/dev/null"}]}),
        t,
    );
    println!("turn with one tool call (read), offline model, /v1/chat/completions, {t} turns:");
    println!(
        "  no hook                      p50 {:.3} ms  p99 {:.3} ms",
        bare.0, bare.1
    );
    println!(
        "  a no-op before_tool_call     p50 {:.3} ms  p99 {:.3} ms  (+{:.3} ms p50)",
        hooked.0,
        hooked.1,
        hooked.0 - bare.0
    );
}
