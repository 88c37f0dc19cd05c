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
/// host, then every paired node (`node:<id>`, available while connected,
/// with what it declared and may be invoked with), by id.
pub async fn environments(state: &SharedState, p: &Value) -> MethodResult {
    if !(p.is_null() || p.is_object()) {
        return Err(ErrorShape::invalid(
            "invalid environments.list params: must be object",
        ));
    }
    let nodes = super::nodes::nodes(state).await?;
    let mut envs = vec![json!({
        "id": "gateway", "type": "local", "label": "Gateway local", "status": "available",
        "platform": node_platform(), "sessionHost": true, "trust": "persistent",
        "capabilities": ["agent.run", "sessions", "tools", "workspace"],
    })];
    envs.extend(nodes.iter().filter(|n| n.paired).map(node_environment));
    json(json!({ "environments": envs }))
}

/// A paired node as an environment (OpenClaw's `summarizeNodeEnvironment`).
fn node_environment(n: &ferroclaw_actors::nodes::NodeView) -> Value {
    let d = &n.declared;
    let mut caps: Vec<&str> = d
        .caps
        .iter()
        .chain(&d.commands)
        .map(String::as_str)
        .collect();
    caps.retain(|c| !c.trim().is_empty());
    caps.sort_unstable();
    caps.dedup();
    let mut v = json!({
        "id": format!("node:{}", n.node_id), "type": "node",
        "label": d.display_name.clone().unwrap_or_else(|| n.node_id.clone()),
        "status": if n.connected { "available" } else { "unavailable" },
        "sessionHost": false, "trust": "persistent",
    });
    if let Some(p) = d
        .platform
        .as_deref()
        .map(str::trim)
        .filter(|p| !p.is_empty())
    {
        v["platform"] = json!(p);
    }
    if !caps.is_empty() {
        v["capabilities"] = json!(caps);
    }
    if n.connected {
        let mut invocable: Vec<&str> = d
            .commands
            .iter()
            .map(String::as_str)
            .filter(|c| c.len() <= 128)
            .collect();
        invocable.sort_unstable();
        invocable.dedup();
        invocable.truncate(128);
        if !invocable.is_empty() {
            v["invocableCommands"] = json!(invocable);
        }
    }
    let times = [
        ("lastConnectedAtMs", n.last_connected_at_ms),
        ("lastDisconnectedAtMs", n.last_disconnected_at_ms),
        ("lastSeenAtMs", n.last_seen_at_ms),
    ];
    for (k, t) in times {
        if let Some(t) = t {
            v[k] = json!(t);
        }
    }
    if let Some(r) = n.last_seen_reason {
        v["lastSeenReason"] = json!(r);
    }
    v
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
/// maxConcurrent, draining, generation, blockedBy}], dynamic}`, lanes by
/// name. `blockedBy` is `lane` while every slot is taken (as OpenClaw's);
/// ferroclaw's lanes are never drained or reset (a run's slot comes back
/// when its actor stops), so `draining` is false and `generation` 0.
/// `dynamic` sums the sessions' own queues (OpenClaw's per-session lanes):
/// null when no session has a run.
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
        let blocked = (st.active >= st.max).then_some("lane");
        rows.push(json!({
            "lane": name, "queuedCount": st.queued, "activeCount": st.active,
            "maxConcurrent": st.max, "draining": false, "generation": 0, "blockedBy": blocked,
        }));
    }
    let s = state
        .gateway
        .runs
        .send(ferroclaw_actors::runs::GetSessionLanes)
        .await
        .map_err(|_| ErrorShape::unavailable("the run registry stopped"))?;
    let dynamic = (s.lanes > 0).then(|| {
        json!({ "laneCount": s.lanes, "activeCount": s.running, "queuedCount": s.queued,
                "queuedLaneCount": s.queued_lanes })
    });
    json(json!({ "ts": ferroclaw_actors::now_ms(), "lanes": rows, "dynamic": dynamic }))
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
