//! Test support: start/stop/restart a real gateway, a WebSocket client that
//! speaks the protocol, and device identities that sign connects.

pub mod browser;
pub mod client;
pub mod device;
pub mod fake_discord;
pub mod fake_provider;
pub mod fake_search;
pub mod fake_server;
pub mod fake_signal;
pub mod fake_slack;
pub mod fake_telegram;
pub mod fake_whatsapp;
pub mod ledger;
pub mod node_host;
pub mod pdf;
pub mod process;
pub mod raw_ws;
pub mod synapse;
pub mod tmux;

use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::thread::JoinHandle;

use ferroclaw::config::{self, ConfigSources};
use ferroclaw::{start, StartOptions};
use serde_json::{json, Value};

pub use client::Client;
pub use device::Device;

pub const TOKEN: &str = "test-token-0123456789";

/// What a secret reads as outside the gateway (OpenClaw's sentinel).
pub const REDACTED_SENTINEL: &str = "__OPENCLAW_REDACTED__";

/// A gateway running in its own actix system thread.
pub struct TestGateway {
    pub addr: SocketAddr,
    pub dir: tempfile::TempDir,
    /// The running gateway's store (fault injection: `store().faults()`).
    store: Option<ferroclaw_actors::store::Store>,
    config: Value,
    /// The environment the gateway is handed (its `EnvReader`): none unless
    /// a test sets one with [`TestGateway::with_env`].
    env: Vec<(String, String)>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

/// Base config for tests: token auth, fast enough timers, and exec open
/// for the operator (tests of tools, steering and crashes run commands;
/// the shipped default, which asks an operator, has tests of its own that
/// remove these two keys).
pub fn base_config() -> Value {
    json!({
        "gateway": { "auth": { "mode": "token", "token": TOKEN } },
        "tools": { "exec": { "security": "full", "ask": "off" } },
    })
}

/// What `main.rs` does first: the process's environment (`PATH`, `HOME`,
/// `TZ`...) installed for the actors. Once per test process; the first
/// install stays.
pub fn install_host_env() {
    let vars: ferroclaw_actors::host::EnvReader =
        std::sync::Arc::new(|k: &str| std::env::var(k).ok());
    ferroclaw_actors::host::install(ferroclaw_actors::host::HostEnv::from_vars(vars));
}

fn merge(base: &mut Value, patch: &Value) {
    config::merge_patch(base, patch);
}

impl TestGateway {
    pub fn start() -> TestGateway {
        Self::with_config(json!({}))
    }

    /// Starts with `patch` merged over the base config.
    pub fn with_config(patch: Value) -> TestGateway {
        Self::with_files(patch, &[])
    }

    /// Like `with_config`, with files written into the state dir first
    /// (`(relative path, content)`, e.g. auth profiles).
    pub fn with_files(patch: Value, files: &[(&str, &str)]) -> TestGateway {
        Self::with_env(patch, files, &[])
    }

    /// Like `with_files`, the gateway handed `env` as its environment (what
    /// `main.rs` would read from the process).
    pub fn with_env(patch: Value, files: &[(&str, &str)], env: &[(&str, &str)]) -> TestGateway {
        let dir = tempfile::tempdir().unwrap();
        for (rel, content) in files {
            let path = dir.path().join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, content).unwrap();
        }
        let mut cfg = base_config();
        merge(&mut cfg, &patch);
        let mut gw = TestGateway {
            addr: "127.0.0.1:0".parse().unwrap(),
            dir,
            store: None,
            config: cfg,
            env: env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            stop: None,
            thread: None,
        };
        gw.boot();
        gw
    }

    pub fn config_path(&self) -> PathBuf {
        self.dir.path().join("ferroclaw.json")
    }

    pub fn state_dir(&self) -> &Path {
        self.dir.path()
    }

    fn boot(&mut self) {
        install_host_env();
        let path = self.config_path();
        if !path.exists() {
            std::fs::write(&path, serde_json::to_string_pretty(&self.config).unwrap()).unwrap();
        }
        let loaded = config::load(&ConfigSources {
            path,
            ..Default::default()
        })
        .unwrap();
        let state_dir = self.dir.path().to_path_buf();
        let log_file = state_dir.join("logs").join("ferroclaw.log");
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let env = std::sync::Arc::new(self.env.clone());
        let thread = std::thread::spawn(move || {
            actix_rt::System::new().block_on(async move {
                let listener = TcpListener::bind("127.0.0.1:0").unwrap();
                let opts = StartOptions {
                    config: loaded,
                    state_dir,
                    log_file,
                    workers: Some(1),
                    // Hermetic: a developer's OPENAI_API_KEY never reaches
                    // tests; only what the test set.
                    env: std::sync::Arc::new(move |name: &str| {
                        env.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
                    }),
                };
                let gw = start(opts, listener).await.unwrap();
                addr_tx.send((gw.addr, gw.store.clone())).unwrap();
                let _ = stop_rx.await;
                gw.shutdown("gateway stopping").await;
                let _ = gw.wait().await;
            });
        });
        let (addr, store) = addr_rx
            .recv_timeout(std::time::Duration::from_secs(20))
            .unwrap();
        self.addr = addr;
        self.store = Some(store);
        self.stop = Some(stop_tx);
        self.thread = Some(thread);
    }

    /// The running gateway's store.
    pub fn store(&self) -> &ferroclaw_actors::store::Store {
        self.store.as_ref().expect("the gateway runs")
    }

    /// Stops the gateway (shutdown event, close 1012) and waits for it.
    pub fn stop(&mut self) {
        self.store = None;
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.thread.take() {
            t.join().unwrap();
            self.wait_for_state_dir_release();
        }
    }

    /// HTTP worker threads can hold the store a moment after the server
    /// stopped; an in-process restart waits until the state-dir lock is free.
    fn wait_for_state_dir_release(&self) {
        let path = self.dir.path().join("ferroclaw.lock");
        for _ in 0..500 {
            let free = std::fs::OpenOptions::new()
                .write(true)
                .open(&path)
                .map(|f| f.try_lock().is_ok())
                .unwrap_or(true);
            if free {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        panic!("the stopped gateway never released {}", path.display());
    }

    /// Starts again after [`TestGateway::stop`] (a new port).
    pub fn resume(&mut self) {
        self.boot();
    }

    /// Stops and starts again on the same state dir (a new port).
    pub fn restart(&mut self) {
        self.stop();
        self.boot();
    }

    pub fn ws_url(&self) -> String {
        format!("ws://{}/", self.addr)
    }
}

impl Drop for TestGateway {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Standard connect params for a device-less client.
pub fn connect_params(client_id: &str, mode: &str, scopes: &[&str], token: Option<&str>) -> Value {
    let mut p = json!({
        "minProtocol": 4, "maxProtocol": 4,
        "client": { "id": client_id, "version": "2026.9.6", "platform": "linux", "mode": mode },
        "caps": [], "role": "operator", "scopes": scopes,
    });
    if let Some(t) = token {
        p["auth"] = json!({ "token": t });
    }
    p
}

/// Connects a `cli` client with the test token and only `scopes`.
pub async fn with_scopes(gw: &TestGateway, scopes: &[&str]) -> Client {
    let mut c = Client::connect(&gw.ws_url()).await;
    let hello = c
        .handshake(connect_params("cli", "cli", scopes, Some(TOKEN)))
        .await;
    assert_eq!(hello["ok"], true, "{hello}");
    c
}

/// Connects a `cli` client with the test token and admin scopes.
pub async fn admin(gw: &TestGateway) -> Client {
    admin_at(&gw.ws_url(), TOKEN).await
}

/// Connects a `cli` client with admin scopes to the gateway at `url`.
pub async fn admin_at(url: &str, token: &str) -> Client {
    let mut c = Client::connect(url).await;
    let res = c
        .handshake(connect_params(
            "cli",
            "cli",
            &[
                "operator.admin",
                "operator.read",
                "operator.write",
                "operator.approvals",
                "operator.pairing",
            ],
            Some(token),
        ))
        .await;
    assert_eq!(res["ok"], true, "{res}");
    c
}

/// `http`'s blocking sibling, for code that runs outside a runtime (a
/// fake's start, the crash tests' pushes and polls): one HTTP/1.0 request
/// to `base` (`http://host:port`), its status and body; None when nothing
/// answers there.
pub fn http_blocking(
    base: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Option<(u16, String)> {
    use std::io::{Read, Write};
    let addr = base.trim_start_matches("http://");
    let mut s = std::net::TcpStream::connect(addr).ok()?;
    let mut req = format!("{method} {path} HTTP/1.0\r\nHost: {addr}\r\n");
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
    s.write_all(req.as_bytes()).ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    let (head, rest) = out.split_once("\r\n\r\n")?;
    let status = head.split(' ').nth(1)?.parse().ok()?;
    Some((status, rest.to_string()))
}

/// A minimal HTTP/1.1 client over a raw TCP stream (loopback only).
pub async fn http(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
) -> (u16, Vec<(String, String)>, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut req = format!("{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n");
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    s.write_all(req.as_bytes()).await.unwrap();
    let mut buf = Vec::new();
    tokio::time::timeout(std::time::Duration::from_secs(10), s.read_to_end(&mut buf))
        .await
        .unwrap()
        .unwrap();
    let text = String::from_utf8_lossy(&buf).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let mut lines = head.lines();
    let status: u16 = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    (status, headers, body.to_string())
}

/// `chat.send` to `key` (must be accepted); returns the ack's payload.
pub async fn chat_send(c: &mut Client, key: &str, text: &str, id: &str) -> Value {
    let r = c
        .call(
            "chat.send",
            json!({"sessionKey": key, "message": text, "idempotencyKey": id}),
        )
        .await;
    assert_eq!(r["ok"], true, "{r}");
    r["payload"].clone()
}

/// `chat.send` to `key` (must be accepted), then the run's `chat` events
/// until its terminal state.
pub async fn say(c: &mut Client, key: &str, text: &str, id: &str) -> Vec<Value> {
    chat_send(c, key, text, id).await;
    chat_until_done(c, id).await
}

/// The text of a run's `final` event (the last of `events`), trailing
/// whitespace trimmed.
pub fn final_text(events: &[Value]) -> String {
    let p = &events.last().expect("events")["payload"];
    assert_eq!(p["state"], "final", "{p}");
    p["message"]["content"][0]["text"]
        .as_str()
        .unwrap_or("")
        .trim_end()
        .to_string()
}

/// `chat` events of `run_id` until its terminal state; returns them all.
pub async fn chat_until_done(c: &mut Client, run_id: &str) -> Vec<Value> {
    let mut out = Vec::new();
    loop {
        let ev = c.event("chat").await;
        if ev["payload"]["runId"] != run_id {
            continue;
        }
        let state = ev["payload"]["state"].as_str().unwrap_or("").to_string();
        out.push(ev);
        if matches!(state.as_str(), "final" | "error" | "aborted") {
            return out;
        }
    }
}

/// The seed of a randomized test: `FERROCLAW_TEST_SEED` replays one, else
/// a fresh one is drawn. Printed either way (cargo test shows a failing
/// test's output), so any run can be replayed exactly.
pub fn test_seed(test: &str) -> u64 {
    let seed = std::env::var("FERROCLAW_TEST_SEED")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or_else(|| {
            let mut b = [0u8; 8];
            getrandom::fill(&mut b).unwrap();
            u64::from_le_bytes(b)
        });
    println!("{test}: seed {seed} (replay with FERROCLAW_TEST_SEED={seed})");
    seed
}

/// A proptest runner that draws from `seed` (the same seed, the same draws).
pub fn seeded_runner(seed: u64, cases: u32) -> proptest::test_runner::TestRunner {
    use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    TestRunner::new_with_rng(
        Config {
            cases,
            ..Config::default()
        },
        TestRng::from_seed(RngAlgorithm::ChaCha, &bytes),
    )
}

/// Tests of the exec sandbox need bubblewrap (tests/run.sh installs it).
pub fn require_bwrap() {
    assert!(
        std::process::Command::new("bwrap")
            .arg("--version")
            .output()
            .is_ok(),
        "bubblewrap must be installed for this test (tests/run.sh installs it)"
    );
}

/// `dev` connecting with `token` and `scopes` on loopback (a first
/// connect with the shared token pairs at once): the client and its answer.
pub async fn device_connect(
    gw: &TestGateway,
    dev: &Device,
    scopes: &[&str],
    token: &str,
) -> (Client, serde_json::Value) {
    let mut c = Client::connect(&gw.ws_url()).await;
    let n = c.nonce();
    let res = c
        .handshake(dev.connect_params(
            "cli",
            "cli",
            "operator",
            scopes,
            Some(token),
            &n,
            device::now_ms(),
            false,
        ))
        .await;
    (c, res)
}

/// Waits until the async condition `f` holds (asked every 20 ms), at most
/// `limit`; whether it held.
pub async fn wait_for<F, Fut>(limit: std::time::Duration, mut f: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let end = std::time::Instant::now() + limit;
    while std::time::Instant::now() < end {
        if f().await {
            return true;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    f().await
}

/// Now, as Unix milliseconds. Fakes date what they deliver now: a reply to
/// a message older than `messages.lateReplyNoticeMinutes` says how late it is.
pub fn unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// Now, as Unix seconds (Telegram's `date`, WhatsApp's `timestamp`).
pub fn unix_s() -> i64 {
    (unix_ms() / 1000) as i64
}
