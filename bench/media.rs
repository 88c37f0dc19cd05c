//! Media benchmark (issue 32). Prints numbers; asserts only that every
//! step answered.
//!
//!     cargo bench --bench media
//!
//! Cases: (1) the media store in process: keeping a 1 MB attachment
//! (`PutMedia`: hash, write, fsync, sidecar) and downloading one from a
//! loopback server first (`FetchMedia`); (2) transcription overhead: a CLI
//! entry (`sh -c 'echo ...'`) through `media::transcribe` against the same
//! process spawned bare, and a provider entry (OpenAI-compatible
//! multipart to a loopback server) against the same POST sent bare;
//! (3) the release `ferroclaw` binary as a child process with a fake
//! provider: `chat.send` -> final, p50/p99, without an attachment and with
//! a 1 MB image (a different one each turn, to a model that takes images),
//! then the gateway's RSS, its store's size and the bytes the provider was
//! sent over those turns. Knob: `FERROCLAW_BENCH_N` (50).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../tests/support/mod.rs"]
#[allow(dead_code, unused_imports)]
mod support;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::Actor;
use base64::Engine;
use ferroclaw_actors::media::{FetchMedia, MediaConfig, MediaStore, PutMedia};
use serde_json::json;
use support::fake_provider::{FakeProvider, Script};
use support::{connect_params, Client};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const BUILT: &str = env!("CARGO_BIN_EXE_ferroclaw");
const MB: usize = 1 << 20;

/// `tools.media` as a config file with `media` in it reads.
fn media(media: serde_json::Value) -> MediaConfig {
    let raw = json!({ "tools": { "media": media } }).to_string();
    let (_, settings, _) = ferroclaw::config::check_user_raw(&raw, "bench").unwrap();
    MediaConfig::from_tools(&settings.tools)
}

fn n() -> usize {
    std::env::var("FERROCLAW_BENCH_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(50)
}

fn pct(v: &mut [Duration], p: f64) -> Duration {
    v.sort();
    v[((v.len() as f64 - 1.0) * p).round() as usize]
}

fn line(label: &str, v: &mut [Duration]) {
    let (p50, p99) = (pct(v, 0.5), pct(v, 0.99));
    println!(
        "{label:<56} p50 {:>8.2} ms  p99 {:>8.2} ms",
        p50.as_secs_f64() * 1e3,
        p99.as_secs_f64() * 1e3
    );
}

/// A 1 MB "image": PNG magic, then bytes that differ per `i`.
fn image(i: usize) -> Vec<u8> {
    let mut v = b"\x89PNG\r\n\x1a\n".to_vec();
    v.extend((0..MB - 8).map(|k| ((k * 31 + i * 7) % 251) as u8));
    v
}

/// A loopback server answering every request with `body` (JSON), after
/// reading the request whole.
async fn answering(body: &'static str, payload: Option<Vec<u8>>) -> String {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    let payload = Arc::new(payload);
    tokio::spawn(async move {
        while let Ok((mut s, _)) = l.accept().await {
            let payload = payload.clone();
            tokio::spawn(async move {
                loop {
                    let mut buf = Vec::new();
                    let mut chunk = [0u8; 65536];
                    let head_end = loop {
                        let Ok(k) = s.read(&mut chunk).await else {
                            return;
                        };
                        if k == 0 {
                            return;
                        }
                        buf.extend_from_slice(&chunk[..k]);
                        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                            break i + 4;
                        }
                    };
                    let head = String::from_utf8_lossy(&buf[..head_end]).to_ascii_lowercase();
                    let len: usize = head
                        .lines()
                        .find_map(|l| {
                            l.strip_prefix("content-length:")
                                .map(|v| v.trim().parse().unwrap_or(0))
                        })
                        .unwrap_or(0);
                    while buf.len() < head_end + len {
                        let Ok(k) = s.read(&mut chunk).await else {
                            return;
                        };
                        if k == 0 {
                            return;
                        }
                        buf.extend_from_slice(&chunk[..k]);
                    }
                    let out = match payload.as_ref() {
                        Some(bytes) => {
                            let mut r = format!("HTTP/1.1 200 OK\r\nContent-Type: image/png\r\nContent-Length: {}\r\n\r\n", bytes.len()).into_bytes();
                            r.extend_from_slice(bytes);
                            r
                        }
                        None => format!("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}", body.len()).into_bytes(),
                    };
                    if s.write_all(&out).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    url
}

async fn store_cases(dir: &std::path::Path) {
    let store = MediaStore::new(dir.join("media"), Duration::from_secs(3600), u64::MAX).start();
    let mut put = Vec::new();
    for i in 0..n() {
        let bytes = bytes::Bytes::from(image(1000 + i));
        let t = Instant::now();
        store
            .send(PutMedia {
                bytes,
                content_type: Some("image/png".into()),
                file_name: None,
            })
            .await
            .unwrap()
            .unwrap();
        put.push(t.elapsed());
    }
    line("store: keep a 1 MB attachment (PutMedia)", &mut put);
    let url = answering("", Some(image(7))).await;
    let client = reqwest::Client::new();
    let (mut bare, mut fetched) = (Vec::new(), Vec::new());
    for _ in 0..n() {
        let t = Instant::now();
        client
            .get(&url)
            .send()
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap();
        bare.push(t.elapsed());
        let t = Instant::now();
        let msg = FetchMedia {
            url: url.clone(),
            headers: vec![],
            max_bytes: 20 * MB as u64,
            content_type: None,
            file_name: None,
        };
        store.send(msg).await.unwrap().unwrap();
        fetched.push(t.elapsed());
    }
    line("fetch: 1 MB GET over loopback, bare", &mut bare);
    line("fetch: the same through FetchMedia (+ keep)", &mut fetched);
}

async fn transcription_cases(dir: &std::path::Path) {
    let store = ferroclaw_actors::media::MediaStore::new(
        dir.join("t"),
        Duration::from_secs(3600),
        u64::MAX,
    )
    .start();
    let wav = store
        .send(PutMedia {
            bytes: bytes::Bytes::from(image(3)),
            content_type: Some("audio/wav".into()),
            file_name: None,
        })
        .await
        .unwrap()
        .unwrap();
    let cli = media(json!({"audio": {"models": [
        {"type": "cli", "command": "sh", "args": ["-c", "echo remind me to buy milk", "sh", "{{MediaPath}}"]}]}}));
    let (mut raw, mut via) = (Vec::new(), Vec::new());
    for _ in 0..n() {
        let t = Instant::now();
        let out = tokio::process::Command::new("sh")
            .args(["-c", "echo remind me to buy milk", "sh"])
            .arg(&wav.path)
            .output()
            .await
            .unwrap();
        assert!(out.status.success());
        raw.push(t.elapsed());
        let t = Instant::now();
        let u = ferroclaw_actors::media::transcribe(&cli, &wav).await;
        assert!(u.text.is_some(), "{u:?}");
        via.push(t.elapsed());
    }
    line("transcribe: the CLI spawned bare", &mut raw);
    line(
        "transcribe: the same CLI entry through tools.media",
        &mut via,
    );
    let base = answering(r#"{"text":"remind me to buy milk"}"#, None).await;
    let mut provider = media(json!({"audio": {"models": [
        {"provider": "local", "model": "whisper-1"}]}}));
    provider.providers.insert(
        "local".into(),
        serde_json::from_value(json!({"baseUrl": format!("{base}/v1"), "apiKey": "k"})).unwrap(),
    );
    let client = reqwest::Client::new();
    let (mut raw, mut via) = (Vec::new(), Vec::new());
    let bytes = std::fs::read(&wav.path).unwrap();
    for _ in 0..n() {
        let t = Instant::now();
        let part = reqwest::multipart::Part::bytes(bytes.clone())
            .file_name("a.wav")
            .mime_str("audio/wav")
            .unwrap();
        let form = reqwest::multipart::Form::new()
            .part("file", part)
            .text("model", "whisper-1");
        let r = client
            .post(format!("{base}/v1/audio/transcriptions"))
            .bearer_auth("k")
            .multipart(form)
            .send()
            .await
            .unwrap();
        r.bytes().await.unwrap();
        raw.push(t.elapsed());
        let t = Instant::now();
        let u = ferroclaw_actors::media::transcribe(&provider, &wav).await;
        assert!(u.text.is_some(), "{u:?}");
        via.push(t.elapsed());
    }
    line("transcribe: 1 MB multipart POST, bare", &mut raw);
    line(
        "transcribe: the same provider entry through tools.media",
        &mut via,
    );
}

async fn turn_cases(dir: &std::path::Path) {
    std::fs::create_dir_all(dir).unwrap();
    let fake = FakeProvider::start().await;
    fake.record
        .store(false, std::sync::atomic::Ordering::Relaxed);
    fake.set_default(Script::words(20));
    let cfg = dir.join("ferroclaw.json");
    std::fs::write(
        &cfg,
        json!({
            "gateway": { "auth": { "mode": "token", "token": "bench-token-0123456789" } },
            // A reply model that takes images: each turn's image reaches it.
            "models": { "providers": { "fake": { "baseUrl": fake.base_url(), "api": "openai-completions", "apiKey": "k",
                "models": [{ "id": "bench", "input": ["text", "image"] }] } } },
            "agents": { "defaults": { "model": "fake/bench" } },
            "logging": { "level": "warn" },
        })
        .to_string(),
    )
    .unwrap();
    let mut child = Command::new(BUILT)
        .env("HOME", dir)
        .env_remove("OPENCLAW_GATEWAY_TOKEN")
        .arg("--state-dir")
        .arg(dir)
        .arg("--config")
        .arg(&cfg)
        .args(["gateway", "--port", "0"])
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let addr = loop {
        let l = lines
            .next()
            .expect("the gateway printed its address")
            .unwrap();
        if let Some(rest) = l.split("listening on ws://").nth(1) {
            break rest.trim().to_string();
        }
    };
    std::thread::spawn(move || {
        for l in lines.map_while(Result::ok) {
            eprintln!("gw: {l}")
        }
    });
    let pid = child.id();
    let _gw = support::process::Gateway(child, String::new());
    let mut c = Client::connect(&format!("ws://{addr}/")).await;
    let scopes = ["operator.read", "operator.write"];
    let res = c
        .handshake(connect_params(
            "cli",
            "cli",
            &scopes,
            Some("bench-token-0123456789"),
        ))
        .await;
    assert_eq!(res["ok"], true, "{res}");
    for with_image in [false, true] {
        let (mut took, mut acked) = (Vec::new(), Vec::new());
        for i in 0..n() {
            let id = format!("t-{with_image}-{i}");
            let mut p = json!({"sessionKey": format!("bench-{with_image}"), "message": "look", "idempotencyKey": id});
            if with_image {
                let data = base64::engine::general_purpose::STANDARD.encode(image(i));
                p["attachments"] =
                    json!([{"type": "image", "mimeType": "image/png", "content": data}]);
            }
            let t = Instant::now();
            c.send_req("chat.send", p).await;
            loop {
                let f = c.recv().await.expect("the gateway closed the socket");
                if f["type"] == "res" {
                    assert_eq!(f["ok"], true, "{f}");
                    acked.push(t.elapsed());
                }
                if f["event"] == "chat"
                    && f["payload"]["runId"] == id.as_str()
                    && f["payload"]["state"] == "final"
                {
                    break;
                }
            }
            took.push(t.elapsed());
        }
        let (label, ack) = match with_image {
            false => (
                "turn: chat.send -> final, text only",
                "turn: chat.send -> ack, text only",
            ),
            true => (
                "turn: chat.send -> final, with a 1 MB image",
                "turn: chat.send -> ack, with a 1 MB image",
            ),
        };
        line(ack, &mut acked);
        line(label, &mut took);
    }
    // What n turns with a different 1 MB image each left behind.
    let requested = fake
        .request_bytes
        .load(std::sync::atomic::Ordering::Relaxed);
    println!(
        "after {} image turns: gateway RSS {:.1} MB, store (sled) {:.1} MB, provider requests {:.1} MB in all",
        n(),
        rss_kb(pid) as f64 / 1024.0,
        dir_bytes(&dir.join("store")) as f64 / MB as f64,
        requested as f64 / MB as f64,
    );
}

/// A process's resident set (kB, from /proc).
fn rss_kb(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// Bytes under a folder.
fn dir_bytes(dir: &std::path::Path) -> u64 {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_map(Result::ok)
        .filter_map(|e| e.metadata().ok())
        .filter(|m| m.is_file())
        .map(|m| m.len())
        .sum()
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    println!("media benchmark: n = {} per case", n());
    actix::System::new().block_on(async {
        store_cases(dir.path()).await;
        transcription_cases(dir.path()).await;
        turn_cases(&dir.path().join("gw")).await;
    });
}
