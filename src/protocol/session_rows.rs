//! Sessions as OpenClaw's clients see them: the `GatewaySessionRow` of
//! `sessions.list`, `sessions.describe` and `chat.startup`, and the
//! payloads of `session.message` and `sessions.changed` that watching
//! dashboards get (a row snapshot merged at the top level and under
//! `session`, as OpenClaw's `buildGatewaySessionSnapshot` does). Pure
//! functions.

use ferroclaw_actors::session::{SessionChange, SessionEntry, SessionNews};
use serde_json::{json, Map, Value};

/// The agent a session key names (`agent:<id>:...`), else `main`.
pub fn agent_of(key: &str) -> &str {
    ferroclaw_actors::ids::key::agent(key)
}

pub fn kind(key: &str) -> &'static str {
    use ferroclaw_actors::ids::key;
    if key::rest(key) == "global" {
        "global"
    } else if key::is_group(key) {
        "group"
    } else {
        "direct"
    }
}

/// OpenClaw's last route: where the session's channel replies go.
fn last_route(r: &mut Map<String, Value>, o: &ferroclaw_actors::session::Origin) {
    r.insert("lastChannel".into(), json!(o.channel));
    r.insert("lastTo".into(), json!(o.to));
    r.insert("lastAccountId".into(), json!(o.account_id));
    if let Some(t) = &o.thread_id {
        r.insert("lastThreadId".into(), json!(t));
    }
    r.insert("channel".into(), json!(o.channel));
    r.insert("chatType".into(), json!(o.chat_type));
}

/// Whether a run is live, and how the last one went.
fn run_state(r: &mut Map<String, Value>, e: &SessionEntry, live_run: bool) {
    r.insert("hasActiveRun".into(), json!(live_run));
    if let Some(last) = &e.last_run {
        r.insert("lastRunId".into(), json!(last.run_id));
        r.insert("lastRunError".into(), json!(last.error));
        if !live_run {
            r.insert("status".into(), json!(last.status));
            r.insert("startedAt".into(), json!(last.started_at));
            r.insert("endedAt".into(), json!(last.ended_at));
            let ms = last.ended_at.saturating_sub(last.started_at);
            r.insert("runtimeMs".into(), json!(ms));
        }
    }
    if live_run {
        r.insert("status".into(), json!("running"));
    }
}

/// A session row in OpenClaw's `GatewaySessionRow` shape.
pub fn row(key: &str, e: &SessionEntry, live_run: bool, with_preview: bool) -> Value {
    let mut r = Map::new();
    r.insert("key".into(), json!(key));
    r.insert("agentId".into(), json!(agent_of(key)));
    r.insert("kind".into(), json!(kind(key)));
    r.insert("updatedAt".into(), json!(e.updated_at));
    r.insert("sessionId".into(), json!(e.session_id));
    let mut opt = |name: &str, v: &Option<String>| {
        if let Some(v) = v {
            r.insert(name.into(), json!(v));
        }
    };
    opt("label", &e.label);
    opt("displayName", &e.label);
    opt("thinkingLevel", &e.thinking_level);
    opt("verboseLevel", &e.verbose_level);
    opt("sendPolicy", &e.send_policy);
    opt("reasoningLevel", &e.reasoning_level);
    opt("responseUsage", &e.response_usage);
    opt("execHost", &e.exec_host);
    opt("execNode", &e.exec_node);
    opt("execSecurity", &e.exec_security);
    opt("execAsk", &e.exec_ask);
    opt("spawnedBy", &e.spawned_by);
    opt("modelProvider", &e.model_provider);
    opt("model", &e.model);
    // The model chosen for this session (`sessions.patch model`, `/model`).
    opt("modelOverride", &e.model_override);
    if with_preview {
        opt("lastMessagePreview", &e.last_message_preview);
    }
    if let Some(o) = &e.origin {
        last_route(&mut r, o);
    }
    r.insert("inputTokens".into(), json!(e.input_tokens));
    r.insert("outputTokens".into(), json!(e.output_tokens));
    r.insert("totalTokens".into(), json!(e.total_tokens));
    r.insert("totalTokensFresh".into(), json!(e.total_tokens_fresh));
    r.insert("cacheRead".into(), json!(e.cache_read));
    r.insert("cacheWrite".into(), json!(e.cache_write));
    if let Some(w) = e.context_tokens {
        r.insert("contextTokens".into(), json!(w));
    }
    if e.compaction_count > 0 {
        r.insert("compactionCount".into(), json!(e.compaction_count));
    }
    r.insert("abortedLastRun".into(), json!(e.aborted_last_run));
    run_state(&mut r, e, live_run);
    Value::Object(r)
}

/// A row snapshot as events carry it: the row's fields at the top level
/// and the whole row under `session`, with the run state given.
fn snapshot(key: &str, entry: &SessionEntry, running: bool, run: Value) -> Map<String, Value> {
    let mut session = row(key, entry, running, false);
    if let (Some(s), Some(extra)) = (session.as_object_mut(), run.as_object()) {
        for (k, v) in extra {
            s.insert(k.clone(), v.clone());
        }
    }
    let mut out = session.as_object().cloned().unwrap_or_default();
    out.insert("session".into(), session);
    out
}

/// The wire event for a session's news: `session.message` for a stored
/// message (`displayed`: the message as `chat.history` shows it), else
/// `sessions.changed` (a run started or settled, a patch or reset).
pub fn news_event(news: &SessionNews, displayed: Option<Value>, ts: u64) -> (&'static str, Value) {
    let key = news.session_key.as_str();
    let agent = agent_of(key);
    let entry = &news.entry;
    match &news.change {
        SessionChange::Message { entry: stored } => message_event(news, stored, displayed),
        SessionChange::RunStarted { run_id, started_at } => {
            let run = json!({
                "status": "running",
                "hasActiveRun": true,
                "activeRunIds": [run_id],
                "startedAt": started_at,
                "endedAt": null,
                "runtimeMs": null,
                "lastRunId": run_id,
            });
            let mut p = snapshot(key, entry, true, run);
            p.insert("phase".into(), json!("start"));
            p.insert("runId".into(), json!(run_id));
            changed(p, key, agent, ts)
        }
        SessionChange::RunSettled {
            run_id,
            status,
            started_at,
            ended_at,
            error,
        } => {
            let run = json!({
                "status": status.as_str(),
                "hasActiveRun": news.running,
                "activeRunIds": [],
                "startedAt": started_at,
                "endedAt": ended_at,
                "runtimeMs": ended_at.saturating_sub(*started_at),
                "lastRunId": run_id,
                "lastRunError": error,
            });
            let mut p = snapshot(key, entry, news.running, run);
            let phase = if error.is_some() { "error" } else { "end" };
            p.insert("phase".into(), json!(phase));
            p.insert("runId".into(), json!(run_id));
            changed(p, key, agent, ts)
        }
        SessionChange::Lifecycle { reason } => {
            let mut p = snapshot(key, entry, news.running, json!({}));
            p.insert("reason".into(), json!(reason));
            changed(p, key, agent, ts)
        }
    }
}

/// `session.message`: a stored message as the client displays it, with
/// the ids it was stored under.
fn message_event(
    news: &SessionNews,
    stored: &Value,
    displayed: Option<Value>,
) -> (&'static str, Value) {
    let key = news.session_key.as_str();
    let mut p = snapshot(key, &news.entry, news.running, json!({}));
    p.insert("sessionKey".into(), json!(key));
    p.insert("agentId".into(), json!(agent_of(key)));
    p.insert("message".into(), displayed.unwrap_or(Value::Null));
    for (from, to) in [("id", "messageId"), ("runId", "runId")] {
        if let Some(v) = stored.get(from).filter(|v| v.is_string()) {
            p.insert(to.into(), v.clone());
        }
    }
    ("session.message", Value::Object(p))
}

fn changed(mut p: Map<String, Value>, key: &str, agent: &str, ts: u64) -> (&'static str, Value) {
    p.insert("sessionKey".into(), json!(key));
    p.insert("agentId".into(), json!(agent));
    p.insert("ts".into(), json!(ts));
    ("sessions.changed", Value::Object(p))
}
