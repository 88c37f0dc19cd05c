//! health, status, system-presence, system-event, models.list, logs.tail.

use std::io::{Read, Seek, SeekFrom};

use ferroclaw_actors::channels::health::summary_lines;
use ferroclaw_actors::gateway::GetHealth;
use ferroclaw_actors::ids::key;
use ferroclaw_actors::presence::{send_to_presence, ListPresence, PresenceEntry, UpsertPresence};
use ferroclaw_actors::router::{queue_system_event, ListSessions, SessionRow};
use serde::Deserialize;
use serde_json::{json, Value};

use super::{json, params, Caller, MethodResult, Payload};
use crate::protocol::errors::ErrorShape;
use crate::state::SharedState;

pub async fn health(state: &SharedState) -> MethodResult {
    let snap = state
        .gateway
        .root
        .send(GetHealth)
        .await
        .map_err(|_| ErrorShape::unavailable("health unavailable"))?;
    // With MCP servers, plugins, command hooks or language servers
    // configured, their states ride along (`mcp.servers`, `plugins`,
    // `hooks`, `lsp`); without, the cached summary goes out as it is.
    let settings = state.live.settings();
    let extended = settings
        .plugins
        .entries
        .as_ref()
        .is_some_and(|e| !e.is_empty())
        || !settings.hooks.commands.is_empty()
        || !settings.tools.lsp.servers.is_empty();
    if settings.mcp.servers.is_empty() && !extended {
        return Ok(Payload::Raw(snap.summary));
    }
    let servers = state
        .gateway
        .mcp
        .send(ferroclaw_actors::mcp::McpStatus)
        .await
        .map_err(|_| ErrorShape::unavailable("mcp hub unavailable"))?;
    let mut summary: Value = serde_json::from_str(snap.summary.get()).unwrap_or(Value::Null);
    let ext = super::plugins::extensions(state).await;
    if let Some(o) = summary.as_object_mut() {
        o.insert("mcp".into(), json!({ "servers": servers }));
        for k in ["plugins", "hooks", "lsp"] {
            o.insert(k.into(), ext[k].clone());
        }
    }
    json(summary)
}

pub async fn status(state: &SharedState) -> MethodResult {
    let settings = state.live.settings();
    let main = super::session_key(state, "main")?;
    let asked = ferroclaw_actors::router::QueuedSystemEvents { key: main };
    let queued = (state.gateway.router.send(asked).await)
        .map_err(|_| ErrorShape::unavailable("the session router is unavailable"))?;
    let default_id = settings.default_agent_id().to_string();
    let path = state.state_dir.join("store").display().to_string();
    let agents: Vec<String> = if settings.agents.list.is_empty() {
        vec![default_id.clone()]
    } else {
        settings.agents.list.iter().map(|a| a.id.clone()).collect()
    };
    let rows = state
        .gateway
        .router
        .send(ListSessions)
        .await
        .map_err(|_| ErrorShape::unavailable("sessions unavailable"))?
        .map_err(|e| ErrorShape::from_error(&e))?;
    let now = ferroclaw_actors::now_ms();
    let beat = state
        .gateway
        .heartbeat
        .send(ferroclaw_actors::cron::beat::HeartbeatStatus)
        .await
        .map_err(|_| ErrorShape::unavailable("heartbeat unavailable"))?;
    let mcp = state.gateway.mcp.send(ferroclaw_actors::mcp::McpStatus);
    let mcp = mcp
        .await
        .map_err(|_| ErrorShape::unavailable("mcp hub unavailable"))?;
    let browser = super::browser::states(state).await;
    let ext = super::plugins::extensions(state).await;
    let durable = super::durable::summary(state).await;
    json(json!({
        "runtimeVersion": state.server_version,
        "durable": durable,
        "mcp": { "servers": mcp },
        "plugins": ext["plugins"], "hooks": ext["hooks"], "lsp": ext["lsp"],
        "browser": browser.map(|profiles| json!({ "profiles": profiles })),
        "heartbeat": heartbeats(&default_id, &agents, &beat),
        "channelSummary": summary_lines(&state.gateway.channel_health.snapshot(now)),
        "queuedSystemEvents": queued,
        "sessions": {
            "paths": [path],
            "count": rows.len(),
            "defaults": { "model": settings.agents.defaults.model.primary(), "contextTokens": settings.agents.defaults.context_tokens },
            "recent": rows.iter().take(RECENT).map(|r| status_row(r, now)).collect::<Vec<_>>(),
            "byAgent": agents.iter().map(|id| {
                let mine: Vec<&SessionRow> = rows.iter().filter(|r| key::agent(&r.key) == id).collect();
                json!({"agentId": id, "path": path, "count": mine.len(),
                    "recent": mine.iter().take(RECENT).map(|r| status_row(r, now)).collect::<Vec<_>>()})
            }).collect::<Vec<_>>(),
        },
    }))
}

/// `status`'s heartbeat: the default agent's, and the others' (off).
fn heartbeats(
    default_id: &str,
    agents: &[String],
    beat: &ferroclaw_actors::cron::beat::HeartbeatView,
) -> Value {
    json!({
        "defaultAgentId": default_id,
        "agents": agents.iter().map(|id| match id == default_id {
            true => crate::protocol::cron::heartbeat_status(beat),
            false => json!({"agentId": id, "enabled": false, "every": "disabled", "everyMs": null}),
        }).collect::<Vec<_>>(),
    })
}

/// Sessions listed as `recent` by `status` (OpenClaw lists 10).
const RECENT: usize = 10;

/// One of `status`'s recent sessions (OpenClaw's SessionStatus fields
/// that ferroclaw keeps).
fn status_row(r: &SessionRow, now: u64) -> Value {
    let e = &r.entry;
    let at = (e.updated_at > 0).then_some(e.updated_at);
    let total = e.input_tokens + e.output_tokens + e.cache_read + e.cache_write;
    let used = e.context_tokens.filter(|c| *c > 0 && e.total_tokens_fresh);
    json!({
        "agentId": key::agent(&r.key), "key": r.key, "kind": crate::protocol::session_rows::kind(&r.key),
        "sessionId": e.session_id, "updatedAt": at, "age": at.map(|a| now.saturating_sub(a)),
        "thinkingLevel": e.thinking_level, "verboseLevel": e.verbose_level,
        "abortedLastRun": e.aborted_last_run, "inputTokens": e.input_tokens,
        "outputTokens": e.output_tokens, "cacheRead": e.cache_read, "cacheWrite": e.cache_write,
        "totalTokens": total, "totalTokensFresh": e.total_tokens_fresh,
        "percentUsed": used.map(|c| (e.total_tokens * 100 / c).min(999)),
        "model": e.model, "contextTokens": e.context_tokens, "flags": [],
    })
}

pub async fn presence(state: &SharedState) -> MethodResult {
    let list = state
        .gateway
        .presence
        .send(ListPresence)
        .await
        .map_err(|_| ErrorShape::unavailable("presence unavailable"))?;
    json(serde_json::to_value(list).unwrap_or(Value::Array(vec![])))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SystemEventParams {
    text: String,
    #[serde(default)]
    device_id: Option<String>,
    #[serde(default)]
    instance_id: Option<String>,
    #[serde(default)]
    host: Option<String>,
    #[serde(default)]
    ip: Option<String>,
    #[serde(default)]
    mode: Option<String>,
    #[serde(default)]
    version: Option<String>,
    #[serde(default)]
    platform: Option<String>,
    #[serde(default)]
    device_family: Option<String>,
    #[serde(default)]
    model_identifier: Option<String>,
    #[serde(default)]
    last_input_seconds: Option<u64>,
    #[serde(default)]
    reason: Option<String>,
    #[serde(default)]
    roles: Option<Vec<String>>,
    #[serde(default)]
    scopes: Option<Vec<String>>,
    #[serde(default)]
    tags: Option<Vec<String>>,
    #[serde(default, rename = "idempotencyKey")]
    _idempotency_key: Option<String>,
}

/// A presence beacon plus, when it has text, a queued system event for the
/// main session's next turn.
pub async fn system_event(state: &SharedState, caller: &Caller, p: &Value) -> MethodResult {
    let p: SystemEventParams = params("system-event", p)?;
    let key = p
        .instance_id
        .clone()
        .or_else(|| p.device_id.clone())
        .or_else(|| p.host.clone())
        .or_else(|| caller.instance_id.clone())
        .unwrap_or_else(|| caller.conn_id.to_string());
    let entry = PresenceEntry {
        ts: ferroclaw_actors::now_ms(),
        host: p.host,
        ip: p.ip.or_else(|| caller.ip.map(|i| i.to_string())),
        version: p.version,
        platform: p.platform,
        device_family: p.device_family,
        model_identifier: p.model_identifier,
        mode: p.mode,
        last_input_seconds: p.last_input_seconds,
        reason: p.reason.or_else(|| Some("beacon".into())),
        tags: p.tags,
        text: (!p.text.is_empty()).then(|| p.text.clone()),
        device_id: p.device_id,
        roles: p.roles,
        scopes: p.scopes,
        instance_id: p.instance_id,
    };
    let gw = &state.gateway;
    send_to_presence(
        &gw.presence,
        &gw.metrics,
        UpsertPresence {
            key,
            entry,
            pinned: false,
        },
    );
    if !p.text.trim().is_empty() {
        let main = super::session_key(state, "main")?;
        queue_system_event(&gw.router, main, p.text, false)
            .await
            .map_err(|e| ErrorShape::unavailable(e.to_string()))?;
    }
    json(json!({ "ok": true }))
}

/// `models.list` params (OpenClaw's `ModelsListParams`; ferroclaw's
/// catalog is the configured one, so the view flags change nothing but
/// `provider`).
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[allow(dead_code)] // read by serde: OpenClaw's keys, accepted as such
struct ModelsListParams {
    agent_id: Option<String>,
    session_key: Option<String>,
    auth_profile_id: Option<String>,
    provider: Option<String>,
    include_details: Option<bool>,
    include_provider_capabilities: Option<bool>,
    include_default_models: Option<bool>,
    prepared_only: Option<bool>,
    refresh: Option<bool>,
    view: Option<String>,
}

/// Whether a provider's base URL is this machine.
fn local_url(url: &str) -> bool {
    let rest = url.split("://").nth(1).unwrap_or(url);
    if rest.starts_with("[::1]") {
        return true;
    }
    let host = rest.split(['/', ':']).next().unwrap_or_default();
    host == "localhost" || host.starts_with("127.")
}

/// The published model catalog (OpenClaw's `published-model-catalog`): the
/// built-in offline model and every configured provider's models, each with
/// whether it runs on this machine.
pub fn models_list(state: &SharedState, p: &Value) -> MethodResult {
    let p: ModelsListParams = match p {
        Value::Null => ModelsListParams::default(),
        p => params("models.list", p)?,
    };
    let settings = state.live.settings();
    let mut models = vec![json!({
        "id": "echo", "name": "Offline echo (built in, no network)", "provider": "offline",
        "contextWindow": 128000, "reasoning": false, "input": ["text"], "local": true,
        "available": true,
    })];
    for (provider, spec) in &settings.models.providers {
        let local = spec.base_url.as_deref().is_some_and(local_url);
        for m in &spec.models {
            let mut row = json!({ "id": m.id, "name": m.name.clone().unwrap_or_else(|| m.id.clone()), "provider": provider, "local": local });
            if let Some(c) = m.context_window {
                row["contextWindow"] = json!(c);
            }
            if let Some(r) = m.reasoning {
                row["reasoning"] = json!(r);
            }
            if let Some(i) = &m.input {
                row["input"] = json!(i);
            }
            models.push(row);
        }
    }
    if let Some(want) = p.provider.as_deref() {
        models.retain(|m| m["provider"] == want);
    }
    json(json!({ "models": models }))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct LogsTailParams {
    #[serde(default)]
    cursor: Option<u64>,
    #[serde(default)]
    limit: Option<usize>,
    #[serde(default)]
    max_bytes: Option<u64>,
}

pub const LOGS_DEFAULT_LIMIT: usize = 500;
pub const LOGS_DEFAULT_MAX_BYTES: u64 = 250_000;

/// Lines of the gateway log file: the tail, or what was appended since `cursor`.
pub async fn logs_tail(state: &SharedState, p: &Value) -> MethodResult {
    let p: LogsTailParams = params("logs.tail", p)?;
    let limit = p.limit.unwrap_or(LOGS_DEFAULT_LIMIT);
    let max_bytes = p.max_bytes.unwrap_or(LOGS_DEFAULT_MAX_BYTES);
    if !(1..=5000).contains(&limit) {
        return Err(ErrorShape::invalid(
            "invalid logs.tail params: at /limit: must be 1..5000",
        ));
    }
    if !(1..=1_000_000).contains(&max_bytes) {
        return Err(ErrorShape::invalid(
            "invalid logs.tail params: at /maxBytes: must be 1..1000000",
        ));
    }
    let path = state.log_file.clone();
    // No configured secret leaves in a log line (a command line, a URL).
    let secrets = {
        let live = state.live.get();
        let mut s = ferroclaw_actors::secrets::values(&live.effective);
        let auth = &live.settings.gateway.auth;
        s.extend(auth.token.iter().chain(&auth.password).cloned());
        s
    };
    let out =
        tokio::task::spawn_blocking(move || tail(&path, p.cursor, limit, max_bytes, &secrets))
            .await
            .map_err(|_| ErrorShape::unavailable("logs unavailable"))?
            .map_err(|e| ErrorShape::unavailable(format!("logs unavailable: {e}")))?;
    json(out)
}

/// A line of ferroclaw's log (tracing's JSON: `timestamp`, `level`,
/// `fields.message`, `target`, `span(s)`) in the shape OpenClaw's log
/// viewers read (`time`, `level`, `subsystem`, `message`, then the other
/// fields); any other line as it is.
fn openclaw_line(line: &str) -> String {
    let Ok(Value::Object(mut v)) = serde_json::from_str::<Value>(line) else {
        return line.to_string();
    };
    let (Some(Value::String(time)), Some(Value::Object(mut fields))) =
        (v.remove("timestamp"), v.remove("fields"))
    else {
        return line.to_string();
    };
    let mut out = serde_json::Map::new();
    out.insert("time".into(), json!(time));
    if let Some(Value::String(level)) = v.remove("level") {
        out.insert("level".into(), json!(level.to_ascii_lowercase()));
    }
    if let Some(target) = v.remove("target") {
        out.insert("subsystem".into(), target);
    }
    let message = fields.remove("message").unwrap_or(json!(""));
    out.insert("message".into(), message);
    out.extend(fields);
    out.extend(v);
    Value::Object(out).to_string()
}

fn tail(
    path: &std::path::Path,
    cursor: Option<u64>,
    limit: usize,
    max_bytes: u64,
    secrets: &[String],
) -> std::io::Result<Value> {
    let file_name = path.display().to_string();
    let mut f = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(json!({ "file": file_name, "cursor": 0, "size": 0, "lines": [] }))
        }
        Err(e) => return Err(e),
    };
    let size = f.metadata()?.len();
    let reset = cursor.is_some_and(|c| c > size);
    let start = match cursor {
        Some(c) if c <= size => c,
        _ => size.saturating_sub(max_bytes),
    };
    let end = size.min(start + max_bytes);
    f.seek(SeekFrom::Start(start))?;
    let mut buf = vec![0u8; (end - start) as usize];
    f.read_exact(&mut buf)?;
    let mut text = String::from_utf8_lossy(&buf).into_owned();
    // A read that starts mid-line (tail without cursor) drops the partial first line.
    if cursor.is_none() && start > 0 {
        if let Some(i) = text.find('\n') {
            text.drain(..=i);
        }
    }
    // Only complete lines advance the cursor.
    let complete = text.rfind('\n').map(|i| i + 1).unwrap_or(0);
    let consumed_tail = text.len() - complete;
    text.truncate(complete);
    let mut lines: Vec<&str> = text.lines().collect();
    let mut truncated = end < size;
    if lines.len() > limit {
        lines.drain(..lines.len() - limit);
        truncated = true;
    }
    let lines: Vec<String> = lines
        .into_iter()
        .map(|l| ferroclaw_actors::secrets::scrub(&openclaw_line(l), secrets))
        .collect();
    let mut out = json!({
        "file": file_name,
        "cursor": end - consumed_tail as u64,
        "size": size,
        "lines": lines,
    });
    if truncated {
        out["truncated"] = json!(true);
    }
    if reset {
        out["reset"] = json!(true);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_lines_get_the_shape_openclaws_viewers_read() {
        let line = r#"{"timestamp":"2026-11-24T07:05:31.97Z","level":"INFO","fields":{"message":"gateway listening","addr":"127.0.0.1:1"},"target":"ferroclaw","span":{"conn_id":"c1","name":"conn"}}"#;
        let v: Value = serde_json::from_str(&openclaw_line(line)).unwrap();
        assert_eq!(v["time"], "2026-11-24T07:05:31.97Z");
        assert_eq!(v["level"], "info");
        assert_eq!(v["subsystem"], "ferroclaw");
        assert_eq!(v["message"], "gateway listening");
        assert_eq!(v["addr"], "127.0.0.1:1");
        assert_eq!(v["span"]["conn_id"], "c1");
        for other in ["{\"msg\":\"one\"}", "not json", "[1]"] {
            assert_eq!(openclaw_line(other), other);
        }
    }

    #[test]
    fn tail_reads_complete_lines_and_follows_a_cursor() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        std::fs::write(&path, "a\nb\nc\npartial").unwrap();
        let out = tail(&path, None, 2, 1000, &[]).unwrap();
        assert_eq!(out["lines"], json!(["b", "c"]));
        assert_eq!(out["truncated"], json!(true));
        let cursor = out["cursor"].as_u64().unwrap();
        assert_eq!(cursor, 6);
        std::fs::write(&path, "a\nb\nc\npartial line\nnext\n").unwrap();
        let out = tail(&path, Some(cursor), 10, 1000, &[]).unwrap();
        assert_eq!(out["lines"], json!(["partial line", "next"]));
        let out = tail(&path, Some(9999), 10, 1000, &[]).unwrap();
        assert_eq!(out["reset"], json!(true));
        let missing = tail(&dir.path().join("none"), None, 10, 10, &[]).unwrap();
        assert_eq!(missing["lines"], json!([]));
    }
}
