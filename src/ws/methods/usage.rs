//! `sessions.usage`: token usage per session and in total, in OpenClaw's
//! shape, from the counters every session entry keeps (input, output and
//! total tokens of its runs, the last provider and model). ferroclaw has
//! no price table, so costs are 0 and every session counts as a missing
//! cost entry; it keeps no per-day breakdown, so the daily series are empty.
//! A session is in the range when it was active in it (last update).

use chrono::{NaiveDate, TimeZone, Utc};
use ferroclaw_actors::router::SessionRow;
use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::{json, params, MethodResult};
use crate::protocol::errors::ErrorShape;
use crate::protocol::session_rows::agent_of;
use crate::state::SharedState;

const DAY_MS: u64 = 86_400_000;

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct UsageParams {
    #[serde(default)]
    start_date: Option<String>,
    #[serde(default)]
    end_date: Option<String>,
    #[serde(default)]
    limit: Option<usize>,
    #[serde(default)]
    key: Option<String>,
    #[serde(default)]
    agent_id: Option<String>,
}

fn day_start(date: &str, field: &str) -> Result<u64, ErrorShape> {
    let d = NaiveDate::parse_from_str(date, "%Y-%m-%d").map_err(|_| {
        ErrorShape::invalid(format!(
            "invalid sessions.usage params: {field} must be YYYY-MM-DD"
        ))
    })?;
    let t = d
        .and_hms_opt(0, 0, 0)
        .map(|t| Utc.from_utc_datetime(&t).timestamp_millis())
        .unwrap_or(0);
    Ok(t.max(0) as u64)
}

fn date_label(ms: u64) -> String {
    Utc.timestamp_millis_opt(ms as i64)
        .single()
        .map(|t| t.format("%Y-%m-%d").to_string())
        .unwrap_or_default()
}

/// OpenClaw's cost-usage totals for token counts with no known price.
fn totals(input: u64, output: u64, total: u64, missing: u64) -> Value {
    json!({
        "input": input, "output": output, "cacheRead": 0, "cacheWrite": 0,
        "totalTokens": total, "totalCost": 0, "inputCost": 0, "outputCost": 0,
        "cacheReadCost": 0, "cacheWriteCost": 0, "missingCostEntries": missing,
    })
}

fn add(into: &mut Value, from: &Value) {
    for k in ["input", "output", "totalTokens", "missingCostEntries"] {
        let sum = into[k].as_u64().unwrap_or(0) + from[k].as_u64().unwrap_or(0);
        into[k] = json!(sum);
    }
}

/// One session's usage summary.
fn session_usage(r: &SessionRow) -> Value {
    let e = &r.entry;
    let sum = e.input_tokens + e.output_tokens + e.cache_read + e.cache_write;
    let mut u = totals(e.input_tokens, e.output_tokens, sum, 1);
    u["firstActivity"] = json!(e.created_at);
    u["lastActivity"] = json!(e.updated_at);
    u["durationMs"] = json!(e.updated_at.saturating_sub(e.created_at));
    if let (Some(provider), Some(model)) = (&e.model_provider, &e.model) {
        let t = totals(e.input_tokens, e.output_tokens, sum, 1);
        u["modelUsage"] =
            json!([{ "provider": provider, "model": model, "count": 1, "totals": t }]);
    }
    u
}

/// Sums `usage` into the group `key` of `map` (a by-model, by-provider or by-agent table).
fn group(map: &mut Map<String, Value>, key: &str, usage: &Value, head: Value) {
    let entry = map.entry(key.to_string()).or_insert_with(|| {
        let mut h = head;
        h["count"] = json!(0);
        h["totals"] = totals(0, 0, 0, 0);
        h
    });
    entry["count"] = json!(entry["count"].as_u64().unwrap_or(0) + 1);
    add(&mut entry["totals"], usage);
}

fn sorted(map: Map<String, Value>) -> Vec<Value> {
    let mut v: Vec<Value> = map.into_iter().map(|(_, v)| v).collect();
    v.sort_by_key(|g| std::cmp::Reverse(g["totals"]["totalTokens"].as_u64().unwrap_or(0)));
    v
}

pub async fn sessions_usage(state: &SharedState, p: &Value) -> MethodResult {
    let p: UsageParams = if p.is_null() {
        UsageParams::default()
    } else {
        params("sessions.usage", p)?
    };
    let now = ferroclaw_actors::now_ms();
    let end = match &p.end_date {
        Some(d) => day_start(d, "endDate")? + DAY_MS - 1,
        None => now,
    };
    let start = match &p.start_date {
        Some(d) => day_start(d, "startDate")?,
        None => end.saturating_sub(30 * DAY_MS),
    };
    let rows = super::sessions::all_sessions(state).await?;
    let agent = p.agent_id.as_deref().map(str::to_ascii_lowercase);
    let mut matched: Vec<&SessionRow> = rows
        .iter()
        .filter(|r| (start..=end).contains(&r.entry.updated_at))
        .filter(|r| p.key.as_ref().is_none_or(|k| r.key == *k))
        .filter(|r| agent.as_ref().is_none_or(|a| agent_of(&r.key) == a))
        .collect();
    matched.sort_by_key(|r| std::cmp::Reverse(r.entry.updated_at));
    let mut total = totals(0, 0, 0, 0);
    let (mut models, mut providers, mut agents) = (Map::new(), Map::new(), Map::new());
    let mut sessions = Vec::new();
    let limit = p.limit.unwrap_or(1000).clamp(1, 10_000);
    for r in &matched {
        let usage = session_usage(r);
        add(&mut total, &usage);
        let e = &r.entry;
        let provider = e.model_provider.as_deref().unwrap_or("unknown");
        if let Some(model) = &e.model {
            let head = json!({ "provider": provider, "model": model });
            group(&mut models, &format!("{provider}/{model}"), &usage, head);
        }
        group(
            &mut providers,
            provider,
            &usage,
            json!({ "provider": provider }),
        );
        let a = agent_of(&r.key);
        group(&mut agents, a, &usage, json!({ "agentId": a }));
        if sessions.len() < limit {
            sessions.push(json!({
                "key": r.key, "label": e.label, "sessionId": e.session_id, "scope": "instance",
                "updatedAt": e.updated_at, "agentId": a, "modelProvider": e.model_provider,
                "model": e.model, "modelOverride": e.model_override, "usage": usage,
                "hasContextWeight": false,
            }));
        }
    }
    let by_agent: Vec<Value> = sorted(agents)
        .into_iter()
        .map(|g| json!({ "agentId": g["agentId"], "totals": g["totals"] }))
        .collect();
    json(json!({
        "updatedAt": now,
        "startDate": date_label(start),
        "endDate": date_label(end),
        "sessions": sessions,
        "totals": total,
        "aggregates": {
            "sessionCount": matched.len(),
            "messages": { "total": 0, "user": 0, "assistant": 0, "toolCalls": 0, "toolResults": 0, "errors": 0 },
            "tools": { "totalCalls": 0, "uniqueTools": 0, "tools": [] },
            "byModel": sorted(models),
            "byProvider": sorted(providers),
            "byAgent": by_agent,
            "byChannel": [], "byCreator": [], "costDaily": [], "dailyLatency": [],
            "modelDaily": [], "daily": [],
        },
        "creatorOptions": [],
        "cacheStatus": { "status": "fresh" },
    }))
}
