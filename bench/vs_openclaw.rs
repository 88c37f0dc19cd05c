//! ferroclaw and OpenClaw side by side, one run, the same everything:
//! each gateway on loopback (the release `ferroclaw` binary; OpenClaw's
//! `openclaw gateway run` from the package `tests/interop/setup.sh`
//! installs), both on one fake OpenAI-style provider (0 ms per token, no
//! Nagle), both driven by the same client written in Rust, one gateway at
//! a time. Measured per gateway: connect -> hello-ok, `health` round
//! trip, `chat.send` ack, first delta and final with 1 client and with 8
//! concurrent clients, a 2,000-token reply, gateway CPU per turn (its
//! whole process group, from `/proc`), RSS idle and after 1,000 turns.
//! Prints medians, p99s and OpenClaw / ferroclaw ratios; asserts nothing
//! but that every turn ended.
//!
//!     bash tests/interop/setup.sh      # OpenClaw, once
//!     cargo bench --bench vs_openclaw
//!     FERROCLAW_BENCH_SOAK_MINUTES=30 cargo bench --bench vs_openclaw
//!
//! The soak (`FERROCLAW_BENCH_SOAK_MINUTES`, 0 by default) runs both
//! gateways at once for that long with mixed traffic: a chat turn every
//! 2 s over 20 sessions, a cron job every minute, and for ferroclaw a
//! Telegram DM every 5 s through the fake Telegram (OpenClaw's Telegram is
//! not pointed at a fake); RSS is sampled every 10 s and the slope after
//! the first two minutes printed in MB per hour.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../tests/support/mod.rs"]
#[allow(dead_code, unused_imports)]
mod support;

#[path = "proc_stats.rs"]
#[allow(dead_code)]
mod proc_stats;

#[path = "group.rs"]
#[allow(dead_code)]
mod group;

#[path = "gateways.rs"]
#[allow(dead_code)]
mod gateways;

use std::path::Path;
use std::time::{Duration, Instant};

use gateways::{p, start_openclaw, start_with, turns, Latencies, TOKEN};
use proc_stats::{env_usize, Gateway};
use serde_json::{json, Value};
use support::fake_provider::{FakeProvider, Script};
use support::{connect_params, Client};

const BUILT: &str = env!("CARGO_BIN_EXE_ferroclaw");

async fn client(addr: &str) -> Client {
    let mut c = Client::connect(&format!("ws://{addr}/")).await;
    let res = c
        .handshake(connect_params(
            "cli",
            "cli",
            &["operator.read", "operator.write", "operator.admin"],
            Some(TOKEN),
        ))
        .await;
    assert_eq!(res["ok"], true, "{res}");
    c
}

fn cpu_ms(pid: u32) -> f64 {
    group::cpu_ticks(pid) as f64 * 10.0
}

fn mb(kb: u64) -> f64 {
    kb as f64 / 1024.0
}

/// One gateway's figures.
#[derive(Default, Clone)]
struct Figures {
    connect: (f64, f64),
    health: (f64, f64),
    one: Phase,
    eight: Phase,
    long: Phase,
    rss_idle_mb: f64,
    rss_1000_mb: f64,
    turns: usize,
}

#[derive(Default, Clone)]
struct Phase {
    ack: (f64, f64),
    first: (f64, f64),
    last: (f64, f64),
    cpu_per_turn_ms: f64,
    turns_per_s: f64,
}

fn phase(l: &Latencies, cpu: f64, n: usize, wall: Duration) -> Phase {
    let q = |v: &[Duration]| (p(v, 0.5), p(v, 0.99));
    Phase {
        ack: q(&l.acks),
        first: q(&l.firsts),
        last: q(&l.finals),
        cpu_per_turn_ms: cpu / n as f64,
        turns_per_s: n as f64 / wall.as_secs_f64(),
    }
}

fn merged(all: Vec<Latencies>) -> Latencies {
    let mut out = Latencies {
        acks: vec![],
        firsts: vec![],
        finals: vec![],
    };
    for l in all {
        out.acks.extend(l.acks);
        out.firsts.extend(l.firsts);
        out.finals.extend(l.finals);
    }
    out.acks.sort();
    out.firsts.sort();
    out.finals.sort();
    out
}

async fn measure(pid: u32, addr: &str, fake: &FakeProvider) -> Figures {
    let mut f = Figures::default();
    let mut c = client(addr).await;
    fake.set_default(Script::words(16));
    turns(&mut c, 10, |i| format!("warm-{i}"), "warm").await;
    f.turns += 10;
    tokio::time::sleep(Duration::from_secs(5)).await;
    f.rss_idle_mb = mb(group::rss_kb(pid));

    let mut connects = Vec::new();
    for _ in 0..50 {
        let t0 = Instant::now();
        let _c = client(addr).await;
        connects.push(t0.elapsed());
    }
    connects.sort();
    f.connect = (p(&connects, 0.5), p(&connects, 0.99));
    let mut health = Vec::new();
    for _ in 0..200 {
        let t0 = Instant::now();
        let r = c.call("health", json!({})).await;
        assert_eq!(r["ok"], true, "{r}");
        health.push(t0.elapsed());
    }
    health.sort();
    f.health = (p(&health, 0.5), p(&health, 0.99));

    eprintln!("phase FERROCLAW_BENCH_TURNS");
    let n = env_usize("FERROCLAW_BENCH_TURNS", 100);
    let (cpu, t0) = (cpu_ms(pid), Instant::now());
    let l = turns(&mut c, n, |i| format!("one-{i}"), "one").await;
    f.one = phase(&l, cpu_ms(pid) - cpu, n, t0.elapsed());
    f.turns += n;

    eprintln!("phase FERROCLAW_BENCH_TURNS_PER_CLIENT");
    let per = env_usize("FERROCLAW_BENCH_TURNS_PER_CLIENT", 25);
    let mut clients = Vec::new();
    for _ in 0..8 {
        clients.push(client(addr).await);
    }
    let (cpu, t0) = (cpu_ms(pid), Instant::now());
    let tags: Vec<String> = (0..8).map(|k| format!("c{k}")).collect();
    let runs = clients
        .iter_mut()
        .zip(&tags)
        .enumerate()
        .map(|(k, (c, tag))| turns(c, per, move |i| format!("eight-{k}-{i}"), tag));
    let all = futures_util::future::join_all(runs).await;
    f.eight = phase(&merged(all), cpu_ms(pid) - cpu, 8 * per, t0.elapsed());
    f.turns += 8 * per;

    // A fresh connection: the first sat unread while the 8 clients ran,
    // and a gateway may close a socket that answered no ping meanwhile
    // (OpenClaw does).
    let mut c = client(addr).await;
    eprintln!("phase FERROCLAW_BENCH_LONG");
    let long = env_usize("FERROCLAW_BENCH_LONG", 2000);
    let ln = env_usize("FERROCLAW_BENCH_LONG_TURNS", 20);
    fake.set_default(Script::words(long));
    let (cpu, t0) = (cpu_ms(pid), Instant::now());
    let l = turns(&mut c, ln, |_| "long".into(), "long").await;
    f.long = phase(&l, cpu_ms(pid) - cpu, ln, t0.elapsed());
    f.turns += ln;

    fake.set_default(Script::words(16));
    eprintln!("phase FERROCLAW_BENCH_RSS_TURNS");
    let total = env_usize("FERROCLAW_BENCH_RSS_TURNS", 1000);
    let rest = total.saturating_sub(f.turns);
    turns(&mut c, rest, |i| format!("fill-{}", i % 200), "fill").await;
    f.turns += rest;
    tokio::time::sleep(Duration::from_secs(2)).await;
    f.rss_1000_mb = mb(group::rss_kb(pid));
    f
}

fn print(name: &str, f: &Figures) {
    let pair = |(a, b): (f64, f64)| format!("{a:.2} / {b:.2}");
    println!("{name}");
    println!("  connect -> hello-ok p50/p99 ms     {}", pair(f.connect));
    println!("  health round trip p50/p99 ms       {}", pair(f.health));
    for (label, ph) in [
        ("1 client, 16 tokens", &f.one),
        ("8 clients, 16 tokens", &f.eight),
        ("2,000-token reply", &f.long),
    ] {
        println!(
            "  {label:<22} ack {}  first delta {}  final {} ms (p50/p99)  cpu {:.2} ms/turn  {:.1} turns/s",
            pair(ph.ack),
            pair(ph.first),
            pair(ph.last),
            ph.cpu_per_turn_ms,
            ph.turns_per_s
        );
    }
    println!(
        "  RSS idle {:.1} MB, after {} turns {:.1} MB",
        f.rss_idle_mb, f.turns, f.rss_1000_mb
    );
}

fn ratios(fc: &Figures, oc: &Figures) {
    let r = |o: f64, f: f64| o / f.max(0.001);
    println!("OpenClaw / ferroclaw (medians; higher: ferroclaw better)");
    println!(
        "  connect -> hello-ok        {:>7.1}x",
        r(oc.connect.0, fc.connect.0)
    );
    println!(
        "  health                     {:>7.1}x",
        r(oc.health.0, fc.health.0)
    );
    for (label, o, f) in [
        ("1 client", &oc.one, &fc.one),
        ("8 clients", &oc.eight, &fc.eight),
        ("2,000 tokens", &oc.long, &fc.long),
    ] {
        println!(
            "  {label:<12} ack {:>6.1}x  first delta {:>6.1}x  final {:>6.1}x  cpu/turn {:>6.1}x",
            r(o.ack.0, f.ack.0),
            r(o.first.0, f.first.0),
            r(o.last.0, f.last.0),
            r(o.cpu_per_turn_ms, f.cpu_per_turn_ms)
        );
    }
    println!(
        "  RSS idle                   {:>7.1}x",
        r(oc.rss_idle_mb, fc.rss_idle_mb)
    );
    let label = format!("RSS after {} turns", fc.turns.min(oc.turns));
    println!("  {label:<26} {:>7.1}x", r(oc.rss_1000_mb, fc.rss_1000_mb));
}

/// Least-squares slope of (seconds, MB) samples, in MB per hour.
fn slope(samples: &[(f64, f64)]) -> f64 {
    let n = samples.len() as f64;
    if n < 2.0 {
        return 0.0;
    }
    let (sx, sy) = samples
        .iter()
        .fold((0.0, 0.0), |(a, b), (x, y)| (a + x, b + y));
    let (mx, my) = (sx / n, sy / n);
    let (num, den) = samples.iter().fold((0.0, 0.0), |(a, b), (x, y)| {
        (a + (x - mx) * (y - my), b + (x - mx) * (x - mx))
    });
    if den == 0.0 {
        0.0
    } else {
        num / den * 3600.0
    }
}

/// Mixed traffic against one gateway for `minutes`; RSS every 10 s.
async fn soak(
    name: &str,
    pid: u32,
    addr: &str,
    minutes: u64,
    telegram: Option<&support::fake_telegram::FakeTelegram>,
) -> Vec<(f64, f64)> {
    let mut c = client(addr).await;
    let cron = c
        .call(
            "cron.add",
            json!({
                "name": "soak", "schedule": { "kind": "every", "everyMs": 60_000 },
                "sessionTarget": "isolated", "wakeMode": "now",
                "payload": { "kind": "agentTurn", "message": "soak tick" },
            }),
        )
        .await;
    println!(
        "{name}: cron.add {}",
        if cron["ok"] == true {
            "ok".to_string()
        } else {
            cron.to_string()
        }
    );
    let t0 = Instant::now();
    let end = t0 + Duration::from_secs(minutes * 60);
    let (mut samples, mut n, mut dm) = (Vec::new(), 0usize, 0i64);
    let mut next_sample = t0;
    while Instant::now() < end {
        turns(
            &mut c,
            1,
            |_| format!("soak-{}", n % 20),
            &format!("soak{n}"),
        )
        .await;
        n += 1;
        if let Some(tg) = telegram {
            if n % 3 == 0 {
                dm += 1;
                tg.dm(42, dm, &format!("soak dm {dm}"));
            }
        }
        if Instant::now() >= next_sample {
            let rss = mb(group::rss_kb(pid));
            samples.push((t0.elapsed().as_secs_f64(), rss));
            next_sample += Duration::from_secs(10);
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
    println!("{name}: {n} chat turns, {dm} Telegram DMs in {minutes} min");
    samples
}

fn report_soak(name: &str, samples: &[(f64, f64)]) {
    let after: Vec<(f64, f64)> = samples
        .iter()
        .copied()
        .filter(|(t, _)| *t >= 120.0)
        .collect();
    let (first, last) = (
        samples.first().map_or(0.0, |s| s.1),
        samples.last().map_or(0.0, |s| s.1),
    );
    println!(
        "soak {name:<9}: RSS {first:.1} -> {last:.1} MB over {} samples; slope after 2 min {:+.2} MB/hour",
        samples.len(),
        slope(&after)
    );
}

fn start_ferroclaw(dir: &Path, fake: &FakeProvider, extra: Value) -> (Gateway, u32, String) {
    start_with(
        BUILT,
        dir,
        &fake.base_url(),
        None,
        &dir.join("no-count"),
        extra,
    )
}

fn main() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let fake = FakeProvider::start().await;
        fake.record
            .store(false, std::sync::atomic::Ordering::Relaxed);
        println!(
            "machine: {} cores; {}",
            std::thread::available_parallelism().map_or(0, |n| n.get()),
            std::fs::read_to_string("/proc/cpuinfo")
                .unwrap_or_default()
                .lines()
                .find(|l| l.starts_with("model name"))
                .unwrap_or("")
                .trim()
        );
        let dir = tempfile::tempdir().unwrap();
        let (gw, pid, addr) = start_ferroclaw(dir.path(), &fake, Value::Null);
        let fc = measure(pid, &addr, &fake).await;
        drop(gw);
        print("ferroclaw", &fc);
        let odir = tempfile::tempdir().unwrap();
        // FERROCLAW_BENCH_KEEP=1: OpenClaw's state dir (its log) is kept.
        let odir = match std::env::var_os("FERROCLAW_BENCH_KEEP") {
            Some(_) => {
                let kept = odir.keep();
                println!("OpenClaw's state dir and log: {}", kept.display());
                kept
            }
            None => odir.path().to_path_buf(),
        };
        let oc = match start_openclaw(&odir, &fake.base_url()) {
            Some((gw, pid, addr)) => {
                let f = measure(pid, &addr, &fake).await;
                drop(gw);
                print("openclaw", &f);
                Some(f)
            }
            None => None,
        };
        if let Some(oc) = &oc {
            ratios(&fc, oc);
        }
        let minutes = env_usize("FERROCLAW_BENCH_SOAK_MINUTES", 0) as u64;
        if minutes == 0 {
            return;
        }
        fake.set_default(Script::words(16));
        let tg = support::fake_telegram::FakeTelegram::start("123:soak");
        let sdir = tempfile::tempdir().unwrap();
        let extra = json!({ "channels": { "telegram": {
            "botToken": "123:soak", "apiBaseUrl": tg.base, "dmPolicy": "allowlist",
            "allowFrom": [42], "pollTimeoutSeconds": 1,
        } } });
        let (_fgw, fpid, faddr) = start_ferroclaw(sdir.path(), &fake, extra);
        let sodir = tempfile::tempdir().unwrap();
        let opened = start_openclaw(sodir.path(), &fake.base_url());
        let ferro = soak("ferroclaw", fpid, &faddr, minutes, Some(&tg));
        let (f, o) = match &opened {
            Some((_, opid, oaddr)) => {
                let open = soak("openclaw", *opid, oaddr, minutes, None);
                let (f, o) = futures_util::future::join(ferro, open).await;
                (f, Some(o))
            }
            None => (ferro.await, None),
        };
        println!("ferroclaw answered {} Telegram messages", tg.sent().len());
        report_soak("ferroclaw", &f);
        if let Some(o) = o {
            report_soak("openclaw", &o);
        }
    });
}
