//! `system.info` (operator.read): the gateway host as OpenClaw's Control UI
//! shows it: names, OS, CPUs, load, memory, the process and its uptime.
//! Read from `/proc` on the blocking pool; fields a host does not have are
//! left out (they are optional in OpenClaw's schema). `diagnostics.lanes`:
//! each lane's slots from the lane actors.

use std::sync::OnceLock;

use serde_json::{json, Value};

use super::{empty_params, json, MethodResult};
use crate::protocol::errors::ErrorShape;
use crate::state::SharedState;

/// This process's identity (a restart changes it).
fn instance_id() -> &'static str {
    static ID: OnceLock<String> = OnceLock::new();
    ID.get_or_init(|| ulid::Ulid::generate().to_string())
}

fn read(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
}

/// A `/proc/meminfo` value in bytes.
fn meminfo(text: &str, key: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with(key))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Node's names for the architecture (the UI shows them).
fn arch() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "x64",
        "aarch64" => "arm64",
        "x86" => "ia32",
        other => other,
    }
}

/// Node's `process.platform` name of this OS.
fn node_platform() -> &'static str {
    match std::env::consts::OS {
        "macos" => "darwin",
        "windows" => "win32",
        other => other,
    }
}

/// `environments.list`: the machines sessions can run on: this gateway's
/// host (paired nodes and cloud workers join when they exist).
pub fn environments(p: &Value) -> MethodResult {
    if !(p.is_null() || p.is_object()) {
        return Err(ErrorShape::invalid(
            "invalid environments.list params: must be object",
        ));
    }
    json(json!({ "environments": [{
        "id": "gateway", "type": "local", "label": "Gateway local", "status": "available",
        "platform": node_platform(), "sessionHost": true, "trust": "persistent",
        "capabilities": ["agent.run", "sessions", "tools", "workspace"],
    }] }))
}

fn host_facts() -> Value {
    let hostname = read("/proc/sys/kernel/hostname").unwrap_or_else(|| "localhost".into());
    let release = read("/proc/sys/kernel/osrelease").unwrap_or_default();
    let os = std::env::consts::OS;
    let os_name = match os {
        "linux" => "Linux",
        "macos" => "macOS",
        other => other,
    };
    let mut v = json!({
        "machineName": hostname, "hostname": hostname, "platform": node_platform(), "release": release,
        "arch": arch(), "osLabel": format!("{os_name} {release}").trim().to_string(),
        "cpuCount": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
    });
    if let Some(model) = read("/proc/cpuinfo").and_then(|c| {
        c.lines()
            .find(|l| l.starts_with("model name"))
            .and_then(|l| l.split_once(':'))
            .map(|(_, m)| m.trim().to_string())
    }) {
        v["cpuModel"] = json!(model);
    }
    if let Some(load) = read("/proc/loadavg") {
        let l: Vec<f64> = load
            .split_whitespace()
            .take(3)
            .filter_map(|x| x.parse().ok())
            .collect();
        if l.len() == 3 {
            v["loadAverage"] = json!(l);
        }
    }
    let mem = read("/proc/meminfo").unwrap_or_default();
    v["memoryTotalBytes"] = json!(meminfo(&mem, "MemTotal:").unwrap_or(0));
    v["memoryFreeBytes"] = json!(meminfo(&mem, "MemAvailable:").unwrap_or(0));
    v
}

pub async fn info(state: &SharedState, p: &Value) -> MethodResult {
    empty_params("system.info", p)?;
    let mut v = actix_web::rt::task::spawn_blocking(host_facts)
        .await
        .map_err(|_| ErrorShape::unavailable("cannot read the host facts"))?;
    let settings = state.live.settings();
    v["port"] = json!(settings.gateway.port);
    v["nodeVersion"] = json!(format!("ferroclaw {}", state.server_version));
    v["pid"] = json!(std::process::id());
    v["processInstanceId"] = json!(instance_id());
    v["uptimeMs"] = json!(state.gateway.metrics.started.elapsed().as_millis() as u64);
    json(v)
}

/// `diagnostics.lanes`: `{ts, lanes: [{lane, queuedCount, activeCount,
/// maxConcurrent, draining, generation, blockedBy}], dynamic}`, lanes by name.
pub async fn lanes(state: &SharedState, p: &Value) -> MethodResult {
    empty_params("diagnostics.lanes", p)?;
    let l = &state.gateway.lanes;
    let mut rows = Vec::new();
    for (name, addr) in [
        ("cron", &l.cron),
        ("main", &l.main),
        ("nested", &l.nested),
        ("subagent", &l.subagent),
    ] {
        let st = addr
            .send(ferroclaw_actors::lane::GetLaneStatus)
            .await
            .map_err(|_| ErrorShape::unavailable("lanes unavailable").retry_after(1000))?;
        rows.push(json!({
            "lane": name, "queuedCount": st.queued, "activeCount": st.active,
            "maxConcurrent": st.max, "draining": false, "generation": 0, "blockedBy": null,
        }));
    }
    json(json!({ "ts": ferroclaw_actors::now_ms(), "lanes": rows, "dynamic": null }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meminfo_values_are_bytes() {
        let text = "MemTotal:       16318412 kB\nMemFree:  1 kB\nMemAvailable:    8000000 kB\n";
        assert_eq!(meminfo(text, "MemTotal:"), Some(16318412 * 1024));
        assert_eq!(meminfo(text, "MemAvailable:"), Some(8000000 * 1024));
        assert_eq!(meminfo(text, "Nope:"), None);
    }
}
