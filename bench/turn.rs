//! What one chat turn costs the gateway, for two builds side by side in
//! one run: the release `ferroclaw` binary as a child process with a fake
//! OpenAI-style provider on loopback (0 ms per token) and one WebSocket
//! client. Prints numbers; asserts nothing but "every turn ended".
//!
//!     cargo bench --bench turn
//!     FERROCLAW_BENCH_BIN=/path/to/other/ferroclaw cargo bench --bench turn
//!
//! With `FERROCLAW_BENCH_BIN` both that build ("before") and this one
//! ("after") run, one after the other. Cases: 100 short turns (16 tokens),
//! each in a fresh session; 20 sequential turns with a 2,000-token reply
//! in one session. Per case: gateway CPU per turn (utime + stime from
//! `/proc/<pid>/stat`), context switches per turn (every thread's
//! voluntary + involuntary, from `/proc/<pid>/task/*/status`), heap
//! allocations per turn and per token (`bench/alloc_count.c`, built with
//! `cc` and preloaded; skipped without a C compiler), the store's writes,
//! flushes and bytes flushed per turn (its `/metrics` counters), and the chat.send ack,
//! send -> first `chat` delta and send -> final latencies at p50/p99. Knobs: `FERROCLAW_BENCH_LONG`
//! (2000), `FERROCLAW_BENCH_LONG_TURNS` (20), `FERROCLAW_BENCH_SHORT` (100),
//! `FERROCLAW_BENCH_PERF=<dir>` (a `perf record` of each build's cases;
//! `FERROCLAW_BENCH_PERF_EVENT=probe_libc:malloc` samples allocations instead),
//! `FERROCLAW_BENCH_ROUNDS` (1: both builds that many times, alternating), `FERROCLAW_BENCH_PERF_STAT=1`
//! (CPU per turn from `perf stat`'s task-clock, finer than `/proc`'s ticks).
//!
//! `FERROCLAW_BENCH_OPENCLAW=1` also runs OpenClaw's own gateway (`openclaw
//! gateway run` from the package `tests/interop/setup.sh` installs, with the
//! same fake provider as `fake/bench` and the same client) through the same
//! cases, and prints OpenClaw / ferroclaw ratios. CPU and context switches
//! count each gateway's whole process group (OpenClaw runs helper
//! processes); allocations are not counted for Node.
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

use gateways::{p, start, start_openclaw, turns, Latencies};
use group::{cpu_ticks, group};

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use proc_stats::{env_usize, metric, metric_in, metrics, status_kb};
use support::fake_provider::{FakeProvider, Script};
use support::{connect_params, Client};

const BUILT: &str = env!("CARGO_BIN_EXE_ferroclaw");

fn ticks_per_second() -> f64 {
    // Linux's USER_HZ is 100 everywhere this runs.
    100.0
}

/// Voluntary + involuntary context switches of every live thread of the
/// gateway's process group.
fn context_switches(pid: u32) -> u64 {
    group(pid).into_iter().map(switches_of).sum()
}

fn switches_of(pid: u32) -> u64 {
    threads(pid).values().map(|t| t.0).sum()
}

/// Per thread name (threads of one name summed): context switches
/// (voluntary + involuntary, from `status`) and time on a CPU in ns (the
/// first field of `schedstat`, which the scheduler keeps to the nanosecond).
fn threads(pid: u32) -> std::collections::BTreeMap<String, (u64, u64)> {
    let mut by_name = std::collections::BTreeMap::new();
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return by_name;
    };
    for t in tasks.flatten() {
        let status = std::fs::read_to_string(t.path().join("status")).unwrap_or_default();
        let name = std::fs::read_to_string(t.path().join("comm")).unwrap_or_default();
        let mut total = 0;
        for l in status.lines() {
            if l.starts_with("voluntary_ctxt_switches:")
                || l.starts_with("nonvoluntary_ctxt_switches:")
            {
                total += l
                    .split_whitespace()
                    .nth(1)
                    .and_then(|v| v.parse::<u64>().ok())
                    .unwrap_or(0);
            }
        }
        let on_cpu = std::fs::read_to_string(t.path().join("schedstat"))
            .unwrap_or_default()
            .split_whitespace()
            .next()
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0);
        let entry = by_name.entry(name.trim().to_string()).or_insert((0, 0));
        entry.0 += total;
        entry.1 += on_cpu;
    }
    by_name
}

/// `FERROCLAW_BENCH_THREADS=1`: each thread's share of a case's context
/// switches and CPU time, per turn (threads of one name summed; the main
/// thread, which runs the actor tree, carries the binary's name). A thread
/// that exited during the case takes its counts with it (so a name whose
/// threads come and go, Node's `WorkerThread`, can show 0): a lower bound.
fn thread_shares(build: &str, case: &str, n: usize, a: &Mark, b: &Mark) {
    if std::env::var_os("FERROCLAW_BENCH_THREADS").is_none() {
        return;
    }
    let shares: Vec<String> = b
        .threads
        .iter()
        .map(|(name, after)| {
            let before = a.threads.get(name).copied().unwrap_or((0, 0));
            (
                name,
                after.0.saturating_sub(before.0),
                after.1.saturating_sub(before.1),
            )
        })
        .filter(|(_, d, _)| *d > 0)
        .map(|(name, d, ns)| {
            format!(
                "{name} {:.1} ({:.3} ms)",
                d as f64 / n as f64,
                ns as f64 / n as f64 / 1e6
            )
        })
        .collect();
    println!(
        "{build:<7} {case:<18} switches (cpu) per turn by thread: {}",
        shares.join(", ")
    );
}

/// The allocation counter library, built once (None: no C compiler).
fn alloc_lib(dir: &Path) -> Option<PathBuf> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("bench/alloc_count.c");
    let out = dir.join("alloc_count.so");
    let ok = Command::new("cc")
        .args(["-shared", "-fPIC", "-O2", "-o"])
        .arg(&out)
        .arg(&src)
        .arg("-lpthread")
        .status()
        .is_ok_and(|s| s.success());
    ok.then_some(out)
}

fn allocations(file: &Path) -> Option<u64> {
    std::thread::sleep(Duration::from_millis(40));
    std::fs::read_to_string(file).ok()?.trim().parse().ok()
}

/// `perf stat` measuring the gateway's CPU time (`task-clock`, ns
/// resolution: `/proc` ticks are 10 ms) while a case runs
/// (`FERROCLAW_BENCH_PERF_STAT=1`; hardware counters are not there in VMs).
struct PerfStat {
    child: Child,
    out: PathBuf,
}

impl PerfStat {
    fn start(pid: u32, dir: &Path, case: &str) -> Option<PerfStat> {
        std::env::var_os("FERROCLAW_BENCH_PERF_STAT")?;
        let out = dir.join(format!("{case}.perfstat"));
        let child = Command::new("perf")
            .args([
                "stat",
                "-x",
                ",",
                "-e",
                "task-clock",
                "-p",
                &pid.to_string(),
                "-o",
            ])
            .arg(&out)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .ok()?;
        std::thread::sleep(Duration::from_millis(200));
        Some(PerfStat { child, out })
    }

    /// CPU milliseconds counted (None: perf gave none).
    fn stop(mut self) -> Option<f64> {
        let _ = Command::new("kill")
            .args(["-INT", &self.child.id().to_string()])
            .status();
        let _ = self.child.wait();
        let text = std::fs::read_to_string(&self.out).ok()?;
        text.lines()
            .find(|l| l.contains("task-clock"))?
            .split(',')
            .next()?
            .trim()
            .parse()
            .ok()
    }
}

/// Counters at one point.
#[derive(Clone)]
struct Mark {
    ticks: u64,
    switches: u64,
    allocs: Option<u64>,
    /// The store's writes, flushes and bytes flushed (ferroclaw's `/metrics`).
    store: Option<[i64; 3]>,
    /// Context switches and ns on a CPU per thread name (the gateway process only).
    threads: std::collections::BTreeMap<String, (u64, u64)>,
}

/// The store counters of ferroclaw's `/metrics`, in one request.
fn store_counters(addr: &str) -> Option<[i64; 3]> {
    let body = metrics(addr)?;
    Some([
        metric_in(&body, "ferroclaw_store_writes_total")?,
        metric_in(&body, "ferroclaw_store_flushes_total")?,
        metric_in(&body, "ferroclaw_store_bytes_flushed_total")?,
    ])
}

/// The counters before a case (`/metrics` read first) or after it (read
/// last), so its own request is never counted in the case.
fn mark(pid: u32, count_file: &Path, addr: &str, before: bool) -> Mark {
    let early = before.then(|| store_counters(addr)).flatten();
    let mut m = Mark {
        allocs: allocations(count_file),
        ticks: cpu_ticks(pid),
        switches: context_switches(pid),
        store: early,
        threads: threads(pid),
    };
    if !before {
        m.store = store_counters(addr);
    }
    m
}

/// One case's measurement: turns, tokens per turn, counters before and after.
struct Case<'a> {
    build: &'a str,
    name: &'a str,
    n: usize,
    toks: usize,
    a: Mark,
    b: Mark,
}

/// What a case measured, for the ratios: CPU ms per turn, context
/// switches per turn, final p50 ms.
type Figures = (f64, f64, f64);

fn line(c: Case, l: &Latencies) -> Figures {
    let Case {
        build,
        name: case,
        n,
        toks,
        a,
        b,
    } = c;
    thread_shares(build, case, n, &a, &b);
    let cpu_ms = (b.ticks - a.ticks) as f64 / ticks_per_second() * 1e3 / n as f64;
    let cs = (b.switches.saturating_sub(a.switches)) as f64 / n as f64;
    let allocs = match (a.allocs, b.allocs) {
        (Some(x), Some(y)) => {
            let per_turn = (y - x) as f64 / n as f64;
            format!(
                "{per_turn:>9.0} allocs/turn {:>6.2} allocs/token",
                per_turn / toks as f64
            )
        }
        _ => "allocs: n/a".into(),
    };
    let store = match (a.store, b.store) {
        (Some(x), Some(y)) => format!(
            "  store {:.1} writes {:.1} flushes {:.1} KB flushed /turn",
            (y[0] - x[0]) as f64 / n as f64,
            (y[1] - x[1]) as f64 / n as f64,
            (y[2] - x[2]) as f64 / 1024.0 / n as f64,
        ),
        _ => String::new(),
    };
    println!(
        "{build:<7} {case:<18} cpu {cpu_ms:>7.2} ms/turn  ctx-switches {cs:>7.1}/turn  {allocs}",
    );
    println!(
        "{build:<7} {case:<18} ack p50 {:.2} p99 {:.2} ms  first delta p50 {:.2} p99 {:.2} ms  final p50 {:.2} p99 {:.2} ms",
        p(&l.acks, 0.5),
        p(&l.acks, 0.99),
        p(&l.firsts, 0.5),
        p(&l.firsts, 0.99),
        p(&l.finals, 0.5),
        p(&l.finals, 0.99),
    );
    if !store.is_empty() {
        println!("{build:<7} {case:<18}{store}");
    }
    (cpu_ms, cs, p(&l.finals, 0.5))
}

async fn measure(build: &str, bin: &str, fake: &FakeProvider, lib: Option<&Path>) -> Vec<Figures> {
    let state = tempfile::tempdir().unwrap();
    let count = state.path().join("allocs");
    let (_gw, pid, addr) = start(bin, state.path(), &fake.base_url(), lib, &count);
    let figures = cases(build, pid, &addr, fake, &count, state.path()).await;
    stuck_socket(build, pid, &addr, fake).await;
    figures
}

/// One client that stops reading (a 4 KiB receive buffer, never read)
/// while another runs long turns whose events reach both: the gateway's
/// RSS before, at its highest and after, against `maxBufferedBytes`
/// (50 MiB by default), until the stuck client is closed as a slow
/// consumer (or `FERROCLAW_BENCH_STUCK_TURNS`, 150, turns).
async fn stuck_socket(build: &str, pid: u32, addr: &str, fake: &FakeProvider) {
    let mb = |kb: u64| kb as f64 / 1024.0;
    let url = format!("ws://{addr}/");
    let scopes = &["operator.read", "operator.write"];
    let token = Some("bench-token-0123456789");
    let mut stuck = Client::connect_small_rcvbuf(&url).await;
    let res = stuck
        .handshake(connect_params("cli", "cli", scopes, token))
        .await;
    assert_eq!(res["ok"], true, "{res}");
    let mut c = Client::connect(&url).await;
    let res = c
        .handshake(connect_params("cli", "cli", scopes, token))
        .await;
    assert_eq!(res["ok"], true, "{res}");
    fake.set_default(Script::words(2000));
    let closes = |addr: &str| metric(addr, "ferroclaw_slow_consumer_closes_total").unwrap_or(0);
    let closed_before = closes(addr);
    let before = status_kb(pid, "VmRSS:");
    let mut peak = before;
    let max = env_usize("FERROCLAW_BENCH_STUCK_TURNS", 150);
    let mut n = 0;
    while n < max {
        n += 1;
        turns(
            &mut c,
            1,
            |_| "stuck-load".to_string(),
            &format!("stuck-{n}"),
        )
        .await;
        peak = peak.max(status_kb(pid, "VmRSS:"));
        if closes(addr) > closed_before {
            break;
        }
    }
    let closed = closes(addr) > closed_before;
    println!(
        "{build:<7} one stuck socket   RSS {:.1} MB before, +{:.1} MB at most, +{:.1} MB after {n} long turns; closed as a slow consumer: {}",
        mb(before),
        mb(peak.saturating_sub(before)),
        mb(status_kb(pid, "VmRSS:").saturating_sub(before)),
        if closed { "yes" } else { "no" },
    );
    drop(stuck);
}

/// OpenClaw's own gateway (`openclaw gateway run` from the package the
/// interop setup installs) with the same provider, counted as one process
/// group; None when the package is not installed.
/// OpenClaw's gateway through the same cases (`FERROCLAW_BENCH_OPENCLAW=1`).
async fn measure_openclaw(fake: &FakeProvider) -> Option<Vec<Figures>> {
    let state = tempfile::tempdir().unwrap();
    let (_gw, pid, addr) = start_openclaw(state.path(), &fake.base_url())?;
    let none = state.path().join("no-allocation-count");
    Some(cases("openclaw", pid, &addr, fake, &none, state.path()).await)
}

/// FERROCLAW_BENCH_PERF=<dir>: a `perf record` of the gateway during a
/// case, to <dir>/<build>-<case>.data (`perf report -i ...` reads it).
fn perf_record(pid: u32, build: &str, case: &str) -> Option<std::process::Child> {
    let dir = std::env::var("FERROCLAW_BENCH_PERF").ok()?;
    let out = Path::new(&dir).join(format!("{build}-{case}.data"));
    // FERROCLAW_BENCH_PERF_EVENT: what to sample instead of the CPU (e.g.
    // `probe_libc:malloc` after `perf probe -x <libc> malloc`: who
    // allocates), with DWARF call graphs.
    let what: Vec<String> = match std::env::var("FERROCLAW_BENCH_PERF_EVENT") {
        Ok(event) => vec!["-e".into(), event, "--call-graph".into(), "dwarf".into()],
        Err(_) => vec!["-F".into(), "4000".into(), "-g".into()],
    };
    Command::new("perf")
        .args(["record", "-q"])
        .args(what)
        .args(["-p", &pid.to_string(), "-o"])
        .arg(out)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .ok()
}

fn perf_stop(perf: Option<std::process::Child>) {
    if let Some(mut p) = perf {
        let _ = Command::new("kill")
            .args(["-INT", &p.id().to_string()])
            .status();
        let _ = p.wait();
    }
}

/// The cases against a running gateway (process group `pid`).
async fn cases(
    build: &str,
    pid: u32,
    addr: &str,
    fake: &FakeProvider,
    count: &Path,
    dir: &Path,
) -> Vec<Figures> {
    let count = count.to_path_buf();
    let mut c = Client::connect(&format!("ws://{addr}/")).await;
    let res = c
        .handshake(connect_params(
            "cli",
            "cli",
            &["operator.read", "operator.write"],
            Some("bench-token-0123456789"),
        ))
        .await;
    assert_eq!(res["ok"], true, "{res}");
    // Warm up: first sessions, lanes, the provider's connection pool.
    fake.set_default(Script::words(16));
    turns(&mut c, 10, |i| format!("warm-{i}"), "warm").await;

    let short = env_usize("FERROCLAW_BENCH_SHORT", 100);
    let perf = perf_record(pid, build, "short");
    let ins = PerfStat::start(pid, dir, "short");
    let a = mark(pid, &count, addr, true);
    let lat = turns(&mut c, short, |i| format!("short-{i}"), "short").await;
    let b = mark(pid, &count, addr, false);
    perf_stop(perf);
    if let Some(n) = ins.and_then(PerfStat::stop) {
        println!(
            "{build:<7} 16 tokens, fresh   cpu (task-clock) {:.3} ms/turn",
            n / short as f64
        );
    }
    let case = Case {
        build,
        name: "16 tokens, fresh",
        n: short,
        toks: 16,
        a,
        b,
    };
    let short_figures = line(case, &lat);

    let long = env_usize("FERROCLAW_BENCH_LONG", 2000);
    let n = env_usize("FERROCLAW_BENCH_LONG_TURNS", 20);
    fake.set_default(Script::words(long));
    let perf = perf_record(pid, build, "long");
    let ins = PerfStat::start(pid, dir, "long");
    let a = mark(pid, &count, addr, true);
    let lat = turns(&mut c, n, |_| "long".to_string(), "long").await;
    let b = mark(pid, &count, addr, false);
    if let Some(i) = ins.and_then(PerfStat::stop) {
        println!(
            "{build:<7} {long} tokens x{n}    cpu (task-clock) {:.3} ms/turn",
            i / n as f64
        );
    }
    perf_stop(perf);
    let name = format!("{long} tokens x{n}");
    let case = Case {
        build,
        name: &name,
        n,
        toks: long,
        a,
        b,
    };
    vec![short_figures, line(case, &lat)]
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
        let tmp = tempfile::tempdir().unwrap();
        let lib = alloc_lib(tmp.path());
        if lib.is_none() {
            println!("(no C compiler: allocations not counted)");
        }
        let before = std::env::var("FERROCLAW_BENCH_BIN").ok();
        // FERROCLAW_BENCH_AFTER_FIRST=1: this build first (order effects
        // show). FERROCLAW_BENCH_ROUNDS=n: both builds n times, the order
        // swapped every round (the machine's drift falls on both alike).
        let mut after = Vec::new();
        let rounds = env_usize("FERROCLAW_BENCH_ROUNDS", 1).max(1);
        for round in 0..rounds {
            let after_first = std::env::var_os("FERROCLAW_BENCH_AFTER_FIRST").is_some()
                ^ (round % 2 == 1);
            if after_first {
                after = measure("after", BUILT, &fake, lib.as_deref()).await;
            }
            if let Some(before) = &before {
                let _ = measure("before", before, &fake, lib.as_deref()).await;
            }
            if !after_first {
                after = measure("after", BUILT, &fake, lib.as_deref()).await;
            }
        }
        if std::env::var_os("FERROCLAW_BENCH_OPENCLAW").is_some() {
            if let Some(openclaw) = measure_openclaw(&fake).await {
                for ((name, f), o) in ["16 tokens, fresh", "long"].iter().zip(&after).zip(&openclaw) {
                    println!(
                        "openclaw / after, {name:<16}: cpu {:.0}x  ctx-switches {:.1}x  final p50 {:.1}x",
                        o.0 / f.0.max(0.01),
                        o.1 / f.1.max(0.01),
                        o.2 / f.2.max(0.01),
                    );
                }
            }
        }
    });
}
