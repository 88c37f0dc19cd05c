//! Browser benchmark (issue 52). Prints numbers; asserts only that every
//! step answered.
//!
//!     cargo bench --bench browser
//!
//! The release `ferroclaw` binary as a child process, its `browser` tool
//! driven through `POST /tools/invoke` against pages served on loopback:
//! the browser's start (launch, DevTools connect, the proxy), a full
//! snapshot of a 2,000-element page, an `act` click round trip, a
//! screenshot (each the median of `FERROCLAW_BENCH_N` runs, default 20),
//! and the resident memory of the gateway before the browser and with one
//! idle browser, with Chromium's own (every process of its group) apart.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../tests/support/mod.rs"]
#[allow(dead_code, unused_imports)]
mod support;

#[path = "proc_stats.rs"]
#[allow(dead_code)]
mod proc_stats;

use std::time::Instant;

use proc_stats::{env_usize, status_kb};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A page of 1,000 buttons and 1,000 links (2,000 elements to snapshot).
fn big_page() -> String {
    let mut body = String::from("<!doctype html><html><body><h1>Big</h1><div id=out></div>");
    for i in 0..1000 {
        body.push_str(&format!(
            "<button onclick=\"document.getElementById('out').textContent='b{i}'\">Button {i}</button><a href=\"#l{i}\">Link {i}</a>"
        ));
    }
    body.push_str("</body></html>");
    body
}

async fn serve(page: String) -> u16 {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = l.accept().await {
            let page = page.clone();
            tokio::spawn(async move {
                let mut buf = vec![0u8; 8192];
                let _ = s.read(&mut buf).await;
                let head = format!("HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: {}\r\nconnection: close\r\n\r\n", page.len());
                let _ = s.write_all(head.as_bytes()).await;
                let _ = s.write_all(page.as_bytes()).await;
            });
        }
    });
    port
}

async fn browse(addr: &str, args: Value) -> String {
    let body = json!({ "tool": "browser", "args": args, "sessionKey": "agent:main:main" });
    let r = reqwest::Client::new()
        .post(format!("http://{addr}/tools/invoke"))
        .bearer_auth(support::TOKEN)
        .json(&body)
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success(), "{args}");
    let v: Value = r.json().await.unwrap();
    v["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// The median of `n` timed runs of `f`, in ms.
async fn median<F, Fut>(n: usize, mut f: F) -> f64
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let mut t = Vec::new();
    for _ in 0..n {
        let s = Instant::now();
        f().await;
        t.push(s.elapsed().as_secs_f64() * 1000.0);
    }
    t.sort_by(f64::total_cmp);
    t[n / 2]
}

/// The resident memory of every live process in the group `pid` leads (KB).
fn group_rss_kb(pid: u32) -> u64 {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|p| {
            let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).unwrap_or_default();
            let rest = stat.rsplit_once(") ").map_or("", |(_, r)| r);
            rest.split(' ').nth(2).and_then(|g| g.parse::<u32>().ok()) == Some(pid)
        })
        .map(|p| status_kb(p, "VmRSS:"))
        .sum()
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let n = env_usize("FERROCLAW_BENCH_N", 20);
    let port = serve(big_page()).await;
    let dir = tempfile::tempdir().unwrap();
    let cfg = json!({
        "gateway": { "auth": { "mode": "token", "token": support::TOKEN } },
        "browser": { "noSandbox": true, "headless": true, "ssrfPolicy": { "allowedHostnames": ["127.0.0.1"] } },
    });
    std::fs::write(dir.path().join("ferroclaw.json"), cfg.to_string()).unwrap();
    let (mut child, addr, _) = support::process::spawn_gateway(dir.path());
    let gw = child.id();
    // Sampled once the gateway listens, before any browser call.
    let rss_before = status_kb(gw, "VmRSS:");
    let s = Instant::now();
    let state: Value =
        serde_json::from_str(&browse(&addr, json!({ "action": "start" })).await).unwrap();
    let start_ms = s.elapsed().as_secs_f64() * 1000.0;
    state["pid"].as_u64().expect("the browser runs");
    // Sampled with the browser started and nothing done in it yet.
    let rss_started = status_kb(gw, "VmRSS:");
    // Started again on the same profile (the first start also makes it).
    let restart = median(5.min(n), || async {
        browse(&addr, json!({ "action": "stop" })).await;
        let r = browse(&addr, json!({ "action": "start" })).await;
        assert!(r.contains("\"running\":true"), "{r}");
    })
    .await;
    let state: Value =
        serde_json::from_str(&browse(&addr, json!({ "action": "status" })).await).unwrap();
    let pid = state["pid"].as_u64().expect("the browser runs") as u32;
    let url = format!("http://127.0.0.1:{port}/big");
    let opened = browse(&addr, json!({ "action": "open", "targetUrl": url })).await;
    assert!(
        opened.contains("Button 5"),
        "{}",
        &opened[..opened.len().min(400)]
    );
    let chars = browse(&addr, json!({ "action": "snapshot" })).await.len();
    let snapshot = median(n, || async {
        let r = browse(&addr, json!({ "action": "snapshot" })).await;
        assert!(r.contains("Link 999"), "the whole page");
    })
    .await;
    let click = median(n, || async {
        let r = browse(
            &addr,
            json!({ "action": "act", "kind": "click", "ref": "e5" }),
        )
        .await;
        assert!(r.contains("\"ok\":true"), "{r}");
    })
    .await;
    let screenshot = median(n, || async {
        let r = browse(&addr, json!({ "action": "screenshot" })).await;
        assert!(r.contains("image/png"), "{r}");
    })
    .await;
    // Sampled once the last call answered: the browser idles from here,
    // the gateway holding what the calls left (the allocator keeps freed
    // pages of the big answers: anonymous memory).
    let rss_idle = status_kb(gw, "VmRSS:");
    let anon_idle = status_kb(gw, "RssAnon:");
    // The gateway gives freed heap back on its own (a look every 5 s, when
    // the free heap grew by 32 MB): the RSS once it did, or after 8 s.
    let waited = Instant::now();
    let settled_kb = loop {
        let now = status_kb(gw, "VmRSS:");
        if now < rss_started + 20 * 1024 || waited.elapsed().as_secs() >= 8 {
            break now;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    let chromium = group_rss_kb(pid);
    println!("browser bench (median of {n}; release gateway, Chromium headless):");
    println!("  browser start (launch + DevTools + proxy), fresh profile: {start_ms:.0} ms; again on it (median of {}): {restart:.0} ms", 5.min(n));
    println!("  snapshot, 2,000-element page (full, {chars} chars answered): {snapshot:.1} ms");
    println!("  act click round trip: {click:.1} ms");
    println!("  screenshot (PNG, viewport): {screenshot:.1} ms");
    println!(
        "  gateway RSS: {:.1} MB before the browser, {:.1} MB with it started, {:.1} MB idle after the runs above ({:.1} MB of it anonymous)",
        rss_before as f64 / 1024.0,
        rss_started as f64 / 1024.0,
        rss_idle as f64 / 1024.0,
        anon_idle as f64 / 1024.0
    );
    let heap = proc_stats::metrics(&addr).unwrap_or_default();
    let mb = |state: &str| {
        let name = format!("ferroclaw_heap_bytes{{state=\"{state}\"}}");
        proc_stats::metric_in(&heap, &name).unwrap_or(0) as f64 / (1 << 20) as f64
    };
    println!(
        "  gateway RSS once its heap trim ran: {:.1} MB ({:.1} s after the runs); heap in use {:.1} MB, free {:.1} MB",
        settled_kb as f64 / 1024.0,
        waited.elapsed().as_secs_f64(),
        mb("in_use"),
        mb("free")
    );
    println!("  Chromium's own RSS (its process group, summed; shared pages counted per process): {:.1} MB", chromium as f64 / 1024.0);
    support::process::sigkill(&mut child);
}
