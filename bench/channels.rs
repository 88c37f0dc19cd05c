//! Channel benchmark: the release `ferroclaw` binary as a child process,
//! polling the fake Telegram Bot API (`tests/support/fake_telegram.rs`,
//! in this process, answering at once) with the built-in offline model.
//! Prints numbers; asserts only that every update was answered once.
//!
//!     cargo bench --bench channels
//!
//! Phases: RSS with the channel connected and idle; 200 sequential
//! messages in one chat, time from the update's arrival at the fake to the
//! bot's first `sendMessage` (stream mode `off`: the whole reply; `partial`:
//! the first preview), p50/p99; a burst of 1,000 updates across 200 chats
//! (one session per chat), time until all are answered, each exactly once,
//! and RSS after it; then Telegram, Slack (Socket Mode, the fake Slack)
//! Discord (the fake gateway), WhatsApp (the fake Graph API, webhooks
//! signed as Meta signs them), Signal (the fake signal-cli daemon) and
//! Matrix (a real Synapse: `bash tests/matrix/setup.sh` first) connected
//! together: idle RSS, and for Slack, Discord, Signal, Matrix and WhatsApp
//! the event -> first post p50/p99. Knobs: `FERROCLAW_BENCH_SEQ` (200), `_BURST` (1000),
//! `_CHATS` (200), `_DIR` (where the state dir goes: `/dev/shm` takes the
//! disk's fsync out of the numbers).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../tests/support/mod.rs"]
#[allow(dead_code, unused_imports)]
mod support;

#[path = "proc_stats.rs"]
#[allow(dead_code)]
mod proc_stats;
use proc_stats::{env_usize, Gateway};

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;
use support::fake_discord::{self, FakeDiscord};
use support::fake_signal::{self, Drive, FakeSignal};
use support::fake_slack::{self, FakeSlack};
use support::fake_telegram::FakeTelegram;
use support::fake_whatsapp::{self, FakeWhatsApp};
use support::synapse::{synapse, unique, Human};

const BUILT: &str = env!("CARGO_BIN_EXE_ferroclaw");

/// The gateway binary: `FERROCLAW_BENCH_BIN` (another build, to compare
/// in one run), else this one.
fn bin() -> String {
    std::env::var("FERROCLAW_BENCH_BIN").unwrap_or_else(|_| BUILT.to_string())
}
const TOKEN: &str = "4242:bench";
const MATRIX_PASSWORD: &str = "bench-bot-0123456789";

fn pct(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// The channels connected beside Telegram.
#[derive(Default)]
struct Others<'a> {
    slack: Option<&'a FakeSlack>,
    discord: Option<&'a FakeDiscord>,
    whatsapp: Option<&'a FakeWhatsApp>,
    signal: Option<&'a FakeSignal>,
    /// The homeserver, the bot's user id and password.
    matrix: Option<(&'a str, &'a str)>,
}

fn start(
    fake: &FakeTelegram,
    stream: &str,
    spacing_ms: u64,
    state: &std::path::Path,
    others: Others<'_>,
) -> (Gateway, u32, String) {
    let mut cfg = json!({
        "gateway": { "auth": { "mode": "token", "token": "bench-token-0123456789" }, "tickIntervalMs": 3_600_000 },
        "logging": { "level": "warn" },
        "session": { "dmScope": "per-peer" },
        "messages": { "queue": { "mode": "followup", "debounceMs": 0 } },
        "channels": { "telegram": {
            "botToken": TOKEN, "apiBaseUrl": fake.base, "dmPolicy": "open", "allowFrom": ["*"],
            "streamMode": stream, "typingMode": "never", "sendIntervalMs": spacing_ms, "pollTimeoutSeconds": 30, "editIntervalMs": 1000,
        } },
    });
    if let Some(f) = others.slack {
        cfg["channels"]["slack"] = json!({
            "botToken": fake_slack::BOT_TOKEN, "appToken": fake_slack::APP_TOKEN, "apiBaseUrl": f.api,
            "dmPolicy": "open", "allowFrom": ["*"], "streamMode": stream, "editIntervalMs": 1000,
        });
    }
    if let Some(f) = others.discord {
        cfg["channels"]["discord"] = json!({
            "token": fake_discord::TOKEN, "apiBaseUrl": f.api, "gatewayUrl": f.gateway,
            "dmPolicy": "open", "allowFrom": ["*"], "streamMode": stream, "editIntervalMs": 1000,
        });
    }
    if let Some(f) = others.whatsapp {
        let open = json!({ "dmPolicy": "open", "allowFrom": ["*"], "streamMode": stream });
        cfg["channels"]["whatsapp"] =
            fake_whatsapp::config(f, open)["channels"]["whatsapp"].clone();
    }
    if let Some((hs, bot)) = others.matrix {
        cfg["channels"]["matrix"] = json!({ "homeserver": hs, "userId": bot, "password": MATRIX_PASSWORD,
            "dmPolicy": "open", "allowFrom": ["*"], "autoJoin": "always", "streamMode": stream });
    }
    if let Some(f) = others.signal {
        let open = json!({ "dmPolicy": "open", "allowFrom": ["*"], "streamMode": stream });
        cfg["channels"]["signal"] = fake_signal::config(&f.url, open)["channels"]["signal"].clone();
    }
    std::fs::write(state.join("ferroclaw.json"), cfg.to_string()).unwrap();
    let mut child = Command::new(bin())
        .env("HOME", state)
        .env_remove("OPENCLAW_GATEWAY_TOKEN")
        .arg("--state-dir")
        .arg(state)
        .args(["gateway", "--port", "0"])
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
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

/// Sequential messages in one chat: update -> first sendMessage.
async fn sequential(fake: &FakeTelegram, chat: i64, n: usize) -> Vec<Duration> {
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let before = fake.calls("sendMessage").len();
        let t0 = Instant::now();
        fake.dm(chat, i as i64 + 1, &format!("sequential message {i}"));
        let sent = fake
            .until(Duration::from_secs(30), |f| {
                f.calls("sendMessage").len() > before
            })
            .await;
        assert!(sent, "message {i} not answered");
        let first = fake.calls("sendMessage")[before];
        out.push(first.duration_since(t0));
        // Let the reply finish (previews end with an edit) before the next.
        fake.until(Duration::from_secs(30), |f| {
            f.sent_to(chat)
                .iter()
                .any(|s| s.text == format!("You said: sequential message {i}"))
        })
        .await;
    }
    out.sort();
    out
}

/// Sequential Slack DMs over Socket Mode: event sent -> first chat.postMessage.
async fn slack_sequential(fake: &FakeSlack, n: usize) -> Vec<Duration> {
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let before = fake.calls("chat.postMessage").len();
        let t0 = Instant::now();
        fake.message("D9", "im", "U9", &format!("sequential message {i}"), None);
        let sent = fake
            .until(Duration::from_secs(30), |f| {
                f.calls("chat.postMessage").len() > before
            })
            .await;
        assert!(sent, "slack message {i} not answered");
        out.push(fake.calls("chat.postMessage")[before].duration_since(t0));
        fake.until(Duration::from_secs(30), |f| {
            f.posted_in("D9")
                .iter()
                .any(|p| p.text == format!("You said: sequential message {i}"))
        })
        .await;
    }
    out.sort();
    out
}

/// Sequential Discord DMs over the gateway: event -> first message create.
async fn discord_sequential(fake: &FakeDiscord, n: usize) -> Vec<Duration> {
    let route = "POST /channels/D9/messages";
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let before = fake.calls(route).len();
        let t0 = Instant::now();
        fake.message("D9", None, "9", &[], &format!("sequential message {i}"));
        let sent = fake
            .until(Duration::from_secs(30), |f| f.calls(route).len() > before)
            .await;
        assert!(sent, "discord message {i} not answered");
        out.push(fake.calls(route)[before].duration_since(t0));
        fake.until(Duration::from_secs(30), |f| {
            f.created_in("D9")
                .iter()
                .any(|c| c.content == format!("You said: sequential message {i}"))
        })
        .await;
    }
    out.sort();
    out
}

/// Sequential WhatsApp messages from one customer, each a signed webhook
/// POST: the POST's start -> the first text sent to the customer.
async fn whatsapp_sequential(fake: &FakeWhatsApp, gateway: &str, n: usize) -> Vec<Duration> {
    let to = "15550009999";
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let before = fake.sent_to(to, "text").len();
        let body =
            fake_whatsapp::text_body(to, &format!("B{i}"), &format!("sequential message {i}"));
        let t0 = Instant::now();
        let statuses = fake_whatsapp::deliver(gateway, &body, 50).await;
        assert_eq!(statuses.last(), Some(&200), "webhook {i}: {statuses:?}");
        let sent = fake
            .until(Duration::from_secs(30), |f| {
                f.sent_to(to, "text").len() > before
            })
            .await;
        assert!(sent, "whatsapp message {i} not answered");
        out.push(fake.sent_to(to, "text")[before].at.duration_since(t0));
    }
    out.sort();
    out
}

/// Sequential Signal messages from one sender, each a `receive` event on
/// the daemon's stream: the event's push -> the first `send` (both times
/// on the fake daemon's clock).
async fn signal_sequential(fake: &FakeSignal, n: usize) -> Vec<Duration> {
    let from = "+15550001234";
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let before = fake.sent_to(from).await.len();
        let body = fake_signal::text(
            from,
            1_700_000_000_000 + i as u64,
            &format!("sequential message {i}"),
        );
        let at = fake.inject(body).await.at;
        assert!(
            fake.until_sent(Duration::from_secs(30), from, "", before + 1)
                .await,
            "signal message {i} not answered"
        );
        let sent = fake.sent_to(from).await[before]["at"].as_f64().unwrap();
        out.push(Duration::from_secs_f64((sent - at).max(0.0)));
    }
    out.sort();
    out
}

/// Sequential Matrix messages in a direct chat on a real Synapse: the
/// person's event -> the bot's first reply event, by the homeserver's own
/// timestamps (`origin_server_ts`, ms).
async fn matrix_sequential(h: &Human, room: &str, bot: &str, n: usize) -> Vec<Duration> {
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let before = h.messages_from(room, bot).await.len();
        h.say(room, &format!("b{i}"), &format!("sequential message {i}"))
            .await;
        let mut reply = None;
        for _ in 0..3000 {
            let mine = h.messages_from(room, bot).await;
            if mine.len() > before {
                reply = Some(mine[before].clone());
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let reply = reply.unwrap_or_else(|| panic!("matrix message {i} not answered"));
        let asked = h.messages_from(room, &h.user_id).await.pop().unwrap();
        let (a, r) = (
            asked["origin_server_ts"].as_u64().unwrap(),
            reply["origin_server_ts"].as_u64().unwrap(),
        );
        out.push(Duration::from_millis(r.saturating_sub(a)));
    }
    out.sort();
    out
}

fn main() {
    let seq = env_usize("FERROCLAW_BENCH_SEQ", 200);
    let burst = env_usize("FERROCLAW_BENCH_BURST", 1000);
    let chats = env_usize("FERROCLAW_BENCH_CHATS", 200).max(1);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        // The gateway's own overhead without the send spacing, then the
        // default spacing (Telegram's ~30 messages a second) for the burst.
        for (stream, spacing) in [("off", 0u64), ("partial", 0), ("off", 35)] {
            let fake = FakeTelegram::start(TOKEN);
            // FERROCLAW_BENCH_DIR=/dev/shm puts the store on tmpfs (fsync free).
            let state = match std::env::var("FERROCLAW_BENCH_DIR") {
                Ok(d) => tempfile::tempdir_in(d).unwrap(),
                Err(_) => tempfile::tempdir().unwrap(),
            };
            let (_gw, pid, _) = start(&fake, stream, spacing, state.path(), Others::default());
            assert!(fake.until(Duration::from_secs(20), |f| !f.calls("getUpdates").is_empty()).await);
            tokio::time::sleep(Duration::from_secs(1)).await;
            if stream == "off" && spacing == 0 {
                println!("rss idle, telegram connected: {} KB", proc_stats::status_kb(pid, "VmRSS:"));
            }
            let lat = sequential(&fake, 9_000_000, seq).await;
            println!(
                "streamMode {stream}, sendIntervalMs {spacing}: update -> first sendMessage over {} messages: p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
                lat.len(),
                ms(pct(&lat, 0.5)),
                ms(pct(&lat, 0.99)),
                ms(pct(&lat, 1.0))
            );
            if stream != "off" {
                continue;
            }
            println!("burst with sendIntervalMs {spacing}:");
            let t0 = Instant::now();
            let mut want = HashMap::new();
            for i in 0..burst {
                let chat = 1 + (i % chats) as i64;
                let text = format!("burst {i}");
                fake.dm(chat, 100_000 + i as i64, &text);
                want.insert(format!("You said: {text}"), chat);
            }
            let done = fake
                .until(Duration::from_secs(300), |f| {
                    let sent = f.sent();
                    want.keys().all(|w| sent.iter().any(|s| s.text == *w))
                })
                .await;
            let took = t0.elapsed();
            let sent = fake.sent();
            let mut counts: HashMap<&str, usize> = HashMap::new();
            for s in &sent {
                *counts.entry(s.text.as_str()).or_default() += 1;
            }
            let answered = want.keys().filter(|w| counts.get(w.as_str()) == Some(&1)).count();
            let twice = want.keys().filter(|w| counts.get(w.as_str()).is_some_and(|n| *n > 1)).count();
            println!(
                "burst: {burst} updates across {chats} chats: {answered} answered once, {twice} more than once, all done: {done}, in {:.2} s ({:.0} updates/s)",
                took.as_secs_f64(),
                burst as f64 / took.as_secs_f64()
            );
            assert!(done && answered == burst && twice == 0, "every update answered exactly once");
            tokio::time::sleep(Duration::from_secs(2)).await;
            println!("rss after the burst ({chats} sessions live): {} KB", proc_stats::status_kb(pid, "VmRSS:"));
        }
        // Telegram, Slack and Discord connected together: idle RSS, then
        // each one's event -> first post.
        let fake = FakeTelegram::start(TOKEN);
        let slack = FakeSlack::start();
        let discord = FakeDiscord::start(41_250);
        let state = match std::env::var("FERROCLAW_BENCH_DIR") {
            Ok(d) => tempfile::tempdir_in(d).unwrap(),
            Err(_) => tempfile::tempdir().unwrap(),
        };
        let whatsapp = FakeWhatsApp::start();
        let signal = FakeSignal::start();
        // A real Synapse (tests/matrix/setup.sh installs it): the bot, and a
        // person who opens a direct chat with it.
        let hs = synapse();
        let bot = hs.register(&unique("benchbot"), MATRIX_PASSWORD);
        let person = hs.human(&unique("benchuser")).await;
        let dm = person.dm(&bot).await;
        let others = Others {
            slack: Some(&slack),
            discord: Some(&discord),
            whatsapp: Some(&whatsapp),
            signal: Some(&signal),
            matrix: Some((&hs.url, &bot)),
        };
        let (_gw, pid, addr) = start(&fake, "off", 0, state.path(), others);
        assert!(fake.until(Duration::from_secs(20), |f| !f.calls("getUpdates").is_empty()).await);
        assert!(slack.until(Duration::from_secs(20), |f| f.sockets().0 == 1).await);
        assert!(discord.until(Duration::from_secs(20), |f| f.gateway_stats().0 == 1 && f.gateway_stats().4).await);
        for _ in 0..400 {
            if signal.stats().await.is_some_and(|s| s["streams"] == 1) && person.joined(&dm, &bot).await {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
        println!(
            "rss idle, telegram + slack + discord + whatsapp + signal + matrix connected: {} KB (anonymous {} KB, file-backed {} KB: the binary's code pages)",
            proc_stats::status_kb(pid, "VmRSS:"),
            proc_stats::status_kb(pid, "RssAnon:"),
            proc_stats::status_kb(pid, "RssFile:")
        );
        let lat = discord_sequential(&discord, seq).await;
        println!(
            "discord (gateway), streamMode off: MESSAGE_CREATE -> first message create over {} messages: p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
            lat.len(),
            ms(pct(&lat, 0.5)),
            ms(pct(&lat, 0.99)),
            ms(pct(&lat, 1.0))
        );
        let lat = slack_sequential(&slack, seq).await;
        println!(
            "slack (Socket Mode), streamMode off: event -> first chat.postMessage over {} messages: p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
            lat.len(),
            ms(pct(&lat, 0.5)),
            ms(pct(&lat, 0.99)),
            ms(pct(&lat, 1.0))
        );
        let lat = signal_sequential(&signal, seq).await;
        println!(
            "signal (signal-cli daemon, SSE + JSON-RPC; the fake is Python), streamMode off: receive event -> first send over {} messages: p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
            lat.len(),
            ms(pct(&lat, 0.5)),
            ms(pct(&lat, 0.99)),
            ms(pct(&lat, 1.0))
        );
        let lat = matrix_sequential(&person, &dm, &bot, seq).await;
        println!(
            "matrix (a real Synapse, /sync long poll), streamMode off: event -> first reply event by the homeserver's clock over {} messages: p50 {:.0} ms, p99 {:.0} ms, max {:.0} ms",
            lat.len(),
            ms(pct(&lat, 0.5)),
            ms(pct(&lat, 0.99)),
            ms(pct(&lat, 1.0))
        );
        let lat = whatsapp_sequential(&whatsapp, &format!("http://{addr}"), seq).await;
        println!(
            "whatsapp (Cloud API webhook), streamMode off: signed POST -> first text sent over {} messages: p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
            lat.len(),
            ms(pct(&lat, 0.5)),
            ms(pct(&lat, 0.99)),
            ms(pct(&lat, 1.0))
        );
    });
}
