//! Usage in OpenClaw's shapes: `sessions.usage` (per session, per model,
//! provider and agent, and the daily series), `usage.cost` (daily totals
//! over a date range) and `usage.status` (per provider, today and the last
//! 30 days). Tokens come from what sessions keep per model and from the
//! per-run `usage` rows (`ferroclaw_actors::usage`); costs from the price
//! table in config, computed when asked. A model without a price is a
//! missing cost entry, never free. Dates are gateway-local days.

use std::collections::BTreeMap;

use chrono::{Local, NaiveDate, TimeZone};
use ferroclaw_actors::provider::hub::GetRateLimits;
use ferroclaw_actors::router::SessionRow;
use ferroclaw_actors::usage::activity::Summary;
use ferroclaw_actors::usage::{self, Activity, Costed, Prices, RunUsage};
use serde::Deserialize;
use serde_json::{json, Value};

use super::{json, params, MethodResult};
use crate::protocol::errors::ErrorShape;
use crate::protocol::session_rows::agent_of;
use crate::state::SharedState;
use ferroclaw_actors::context::channel_of_key;

const DAY_MS: u64 = 86_400_000;

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct UsageParams {
    #[serde(default)]
    start_date: Option<String>,
    #[serde(default)]
    end_date: Option<String>,
    #[serde(default)]
    days: Option<u64>,
    #[serde(default)]
    limit: Option<usize>,
    #[serde(default)]
    key: Option<String>,
    #[serde(default)]
    agent_id: Option<String>,
    #[serde(default)]
    agent_scope: Option<String>,
}

fn day_start(date: &str, field: &str, method: &str) -> Result<u64, ErrorShape> {
    let d = NaiveDate::parse_from_str(date, "%Y-%m-%d").map_err(|_| {
        ErrorShape::invalid(format!(
            "invalid {method} params: {field} must be YYYY-MM-DD"
        ))
    })?;
    let t = d
        .and_hms_opt(0, 0, 0)
        .and_then(|t| Local.from_local_datetime(&t).earliest())
        .map(|t| t.timestamp_millis())
        .unwrap_or(0);
    Ok(t.max(0) as u64)
}

/// The range asked for: `[start, end]` in ms (default: the last 30 days).
fn range(p: &UsageParams, method: &str) -> Result<(u64, u64), ErrorShape> {
    let now = ferroclaw_actors::now_ms();
    let end = match &p.end_date {
        Some(d) => day_start(d, "endDate", method)? + DAY_MS - 1,
        None => now,
    };
    let days = p.days.unwrap_or(30).clamp(1, 366);
    let start = match &p.start_date {
        Some(d) => day_start(d, "startDate", method)?,
        None => {
            day_start(&usage::day_of(end), "endDate", method)?.saturating_sub((days - 1) * DAY_MS)
        }
    };
    if start > end {
        return Err(ErrorShape::invalid(format!(
            "invalid {method} params: startDate is after endDate"
        )));
    }
    Ok((start, end))
}

fn read(p: &Value, method: &str) -> Result<UsageParams, ErrorShape> {
    if p.is_null() {
        Ok(UsageParams::default())
    } else {
        params(method, p)
    }
}

/// The per-run rows of the range (on the blocking pool).
async fn runs(state: &SharedState, start: u64, end: u64) -> Result<Vec<RunUsage>, ErrorShape> {
    let (from, to) = (usage::day_of(start), usage::day_of(end));
    let asked = ferroclaw_actors::gateway::UsageRows { from, to };
    state
        .gateway
        .root
        .send(asked)
        .await
        .map_err(|_| ErrorShape::unavailable("the usage reader stopped"))?
        .map_err(|e| ErrorShape::from_error(&e))
        .map(|rows| {
            rows.into_iter()
                .filter(|r| (start..=end).contains(&r.at_ms))
                .collect()
        })
}

fn prices(state: &SharedState) -> Prices {
    Prices::from_settings(&state.live.settings())
}

/// `[{date, ...totals}]`, oldest first.
fn cost_daily(rows: &[RunUsage], prices: &Prices) -> Vec<Value> {
    usage::daily(rows, prices)
        .into_iter()
        .map(|(date, c)| {
            let mut v = c.to_json();
            v["date"] = json!(date);
            v
        })
        .collect()
}

/// `usage.cost`: daily totals and the range's totals.
pub async fn cost(state: &SharedState, p: &Value) -> MethodResult {
    let p = read(p, "usage.cost")?;
    if p.agent_scope.as_deref() == Some("all") && p.agent_id.is_some() {
        return Err(ErrorShape::invalid(
            "agentScope=all cannot be combined with agentId",
        ));
    }
    let (start, end) = range(&p, "usage.cost")?;
    let mut rows = runs(state, start, end).await?;
    if let Some(a) = p.agent_id.as_deref().map(str::to_ascii_lowercase) {
        rows.retain(|r| r.agent_id == a);
    }
    let prices = prices(state);
    let mut totals = Costed::default();
    for r in rows.iter().filter(|r| r.has_tokens()) {
        totals.add(&r.model, &r.tokens, &prices);
    }
    let days = (day_start(&usage::day_of(end), "endDate", "usage.cost")?
        .saturating_sub(day_start(&usage::day_of(start), "startDate", "usage.cost")?))
        / DAY_MS
        + 1;
    json(json!({
        "updatedAt": ferroclaw_actors::now_ms(),
        "days": days,
        "daily": cost_daily(&rows, &prices),
        "totals": totals.to_json(),
        "cacheStatus": { "status": "fresh" },
    }))
}

/// `usage.status`: per provider, today and the last 30 days, and the
/// rate-limit windows the provider's last answer reported (`windows`,
/// with when they were reported: `windowsAt`); a provider that reported
/// none has none.
pub async fn status(state: &SharedState, _p: &Value) -> MethodResult {
    let now = ferroclaw_actors::now_ms();
    let today = usage::day_of(now);
    let rows = runs(state, now.saturating_sub(29 * DAY_MS), now).await?;
    let limits = state
        .gateway
        .hub
        .send(GetRateLimits)
        .await
        .map_err(|_| ErrorShape::unavailable("the provider hub stopped"))?;
    let prices = prices(state);
    let mut by: BTreeMap<String, (Costed, Costed)> = BTreeMap::new();
    for r in rows.iter().filter(|r| r.has_tokens()) {
        let provider = r.model.split('/').next().unwrap_or("unknown").to_string();
        let e = by.entry(provider).or_default();
        e.1.add(&r.model, &r.tokens, &prices);
        if usage::day_of(r.at_ms) == today {
            e.0.add(&r.model, &r.tokens, &prices);
        }
    }
    for p in limits.keys() {
        by.entry(p.clone()).or_default();
    }
    let providers: Vec<Value> = by
        .into_iter()
        .map(|(p, (day, month))| {
            let mut v = json!({ "provider": p, "displayName": p, "windows": [],
                                "today": day.to_json(), "last30Days": month.to_json() });
            if let Some(l) = limits.get(&p) {
                v["windows"] = json!(l.windows);
                v["windowsAt"] = json!(l.at_ms);
            }
            v
        })
        .collect();
    json(json!({ "updatedAt": now, "providers": providers }))
}

/// One session's usage: totals with costs, per model; what its runs in
/// the range did.
fn session_usage(r: &SessionRow, prices: &Prices, did: Option<&Activity>) -> (Value, Costed) {
    let e = &r.entry;
    let mut all = Costed::default();
    let mut models = Vec::new();
    for (m, t) in &e.usage_by_model {
        let mut one = Costed::default();
        one.add(m, t, prices);
        all.merge(&one);
        let (provider, model) = m.split_once('/').unwrap_or(("unknown", m));
        models.push(json!({ "provider": provider, "model": model, "count": t.runs, "totals": one.to_json() }));
    }
    let mut u = all.to_json();
    u["firstActivity"] = json!(e.created_at);
    u["lastActivity"] = json!(e.updated_at);
    u["durationMs"] = json!(e.updated_at.saturating_sub(e.created_at));
    u["modelUsage"] = json!(models);
    if let Some(a) = did {
        u["messageCounts"] = a.messages_json();
        u["toolUsage"] = a.tools_json();
        if let Some(l) = a.latency_json() {
            u["latency"] = l;
        }
    }
    (u, all)
}

fn grouped(map: BTreeMap<String, (Value, Costed)>) -> Vec<Value> {
    let mut v: Vec<(Value, Costed)> = map.into_values().collect();
    v.sort_by_key(|(_, c)| std::cmp::Reverse(c.tokens.tokens()));
    v.into_iter()
        .map(|(mut head, c)| {
            head["totals"] = c.to_json();
            head["count"] = json!(c.tokens.runs);
            head
        })
        .collect()
}

fn add_to(map: &mut Group, key: &str, head: Value, c: &Costed) {
    map.entry(key.to_string())
        .or_insert_with(|| (head, Costed::default()))
        .1
        .merge(c);
}

/// The daily series of the aggregates, from the per-run rows.
fn series(
    rows: &[RunUsage],
    prices: &Prices,
    acts: &Summary,
) -> (Vec<Value>, Vec<Value>, Vec<Value>) {
    let cost_daily = cost_daily(rows, prices);
    let mut days: BTreeMap<String, Value> = acts
        .by_day
        .iter()
        .map(|(date, a)| {
            let v = json!({ "date": date, "tokens": 0, "cost": 0.0, "messages": a.user + a.assistant,
                            "toolCalls": a.tool_calls, "errors": a.errors });
            (date.clone(), v)
        })
        .collect();
    for d in &cost_daily {
        let date = d["date"].as_str().unwrap_or_default().to_string();
        let day = days
            .entry(date.clone())
            .or_insert_with(|| json!({ "date": date, "messages": 0, "toolCalls": 0, "errors": 0 }));
        day["tokens"] = d["totalTokens"].clone();
        day["cost"] = d["totalCost"].clone();
    }
    let mut per: BTreeMap<(String, String), Costed> = BTreeMap::new();
    for r in rows.iter().filter(|r| r.has_tokens()) {
        per.entry((usage::day_of(r.at_ms), r.model.clone()))
            .or_default()
            .add(&r.model, &r.tokens, prices);
    }
    let model_daily = per
        .into_iter()
        .map(|((date, m), c)| {
            let (provider, model) = m.split_once('/').unwrap_or(("unknown", &m));
            json!({ "date": date, "provider": provider, "model": model,
                    "tokens": c.tokens.tokens(), "cost": c.to_json()["totalCost"], "count": c.tokens.runs })
        })
        .collect();
    (cost_daily, days.into_values().collect(), model_daily)
}

/// What the runs did, in all, per day and per session; and their tokens
/// per channel.
struct Acts {
    all: Summary,
    by_session: BTreeMap<String, Activity>,
    by_channel: Group,
}

fn acts(rows: &[RunUsage], prices: &Prices) -> Acts {
    let mut out = Acts {
        all: Summary::default(),
        by_session: BTreeMap::new(),
        by_channel: BTreeMap::new(),
    };
    for r in rows {
        let a = &r.activity;
        out.all.add(usage::day_of(r.at_ms), a);
        out.by_session
            .entry(r.session_key.as_str().to_string())
            .or_default()
            .merge(a);
        if a.channel.is_empty() {
            continue;
        }
        let mut c = Costed::default();
        if r.has_tokens() {
            c.add(&r.model, &r.tokens, prices);
        }
        add_to(
            &mut out.by_channel,
            &a.channel,
            json!({ "channel": a.channel }),
            &c,
        );
    }
    out
}

/// Totals by a key (a model, a provider, an agent): its head and cost.
type Group = BTreeMap<String, (Value, Costed)>;

/// A session's row in `sessions.usage`.
fn session_row(r: &SessionRow, usage: Value) -> Value {
    let e = &r.entry;
    json!({
        "key": r.key, "label": e.label, "sessionId": e.session_id, "scope": "instance",
        "updatedAt": e.updated_at, "agentId": agent_of(&r.key), "modelProvider": e.model_provider,
        "model": e.model, "modelOverride": e.model_override, "usage": usage,
        "channel": e.origin.as_ref().map_or_else(|| channel_of_key(&r.key), |o| o.channel.as_str()),
        "hasContextWeight": false,
    })
}

/// A session's usage added to the totals by model and by provider.
fn by_model(
    e: &ferroclaw_actors::session::SessionEntry,
    prices: &Prices,
    (models, providers): (&mut Group, &mut Group),
) {
    for (m, t) in &e.usage_by_model {
        let mut one = Costed::default();
        one.add(m, t, prices);
        let (provider, model) = m.split_once('/').unwrap_or(("unknown", m));
        add_to(
            models,
            m,
            json!({ "provider": provider, "model": model }),
            &one,
        );
        add_to(providers, provider, json!({ "provider": provider }), &one);
    }
}

/// `sessions.usage`.
pub async fn sessions_usage(state: &SharedState, p: &Value) -> MethodResult {
    let p = read(p, "sessions.usage")?;
    let (start, end) = range(&p, "sessions.usage")?;
    let rows = super::sessions::all_sessions(state).await?;
    let agent = p.agent_id.as_deref().map(str::to_ascii_lowercase);
    let in_scope = |key: &str| {
        p.key.as_ref().is_none_or(|k| key == k) && agent.as_ref().is_none_or(|a| agent_of(key) == a)
    };
    let mut matched: Vec<&SessionRow> = rows
        .iter()
        .filter(|r| (start..=end).contains(&r.entry.updated_at) && in_scope(&r.key))
        .collect();
    matched.sort_by_key(|r| std::cmp::Reverse(r.entry.updated_at));
    let prices = prices(state);
    let mut runs = runs(state, start, end).await?;
    runs.retain(|r| in_scope(&r.session_key));
    let acts = acts(&runs, &prices);
    let mut total = Costed::default();
    let (mut models, mut providers, mut agents) =
        (BTreeMap::new(), BTreeMap::new(), BTreeMap::new());
    let mut sessions = Vec::new();
    let limit = p.limit.unwrap_or(1000).clamp(1, 10_000);
    for r in &matched {
        let (usage, costed) = session_usage(r, &prices, acts.by_session.get(&r.key));
        total.merge(&costed);
        by_model(&r.entry, &prices, (&mut models, &mut providers));
        let a = agent_of(&r.key);
        add_to(&mut agents, a, json!({ "agentId": a }), &costed);
        if sessions.len() < limit {
            sessions.push(session_row(r, usage));
        }
    }
    let by_agent: Vec<Value> = grouped(agents)
        .into_iter()
        .map(|g| json!({ "agentId": g["agentId"], "totals": g["totals"] }))
        .collect();
    let mut aggregates = aggregates(&runs, &prices, acts);
    aggregates["sessionCount"] = json!(matched.len());
    aggregates["byModel"] = json!(grouped(models));
    aggregates["byProvider"] = json!(grouped(providers));
    aggregates["byAgent"] = json!(by_agent);
    json(json!({
        "updatedAt": ferroclaw_actors::now_ms(),
        "startDate": usage::day_of(start),
        "endDate": usage::day_of(end),
        "sessions": sessions,
        "totals": total.to_json(),
        "aggregates": aggregates,
        "creatorOptions": [],
        "cacheStatus": { "status": "fresh" },
    }))
}

/// The aggregates the runs of the range make: messages, tools, channels,
/// latency and the daily series.
fn aggregates(runs: &[RunUsage], prices: &Prices, acts: Acts) -> Value {
    let (cost_daily, daily, model_daily) = series(runs, prices, &acts.all);
    let by_channel: Vec<Value> = grouped(acts.by_channel)
        .into_iter()
        .map(|g| json!({ "channel": g["channel"], "totals": g["totals"] }))
        .collect();
    let all = &acts.all.all;
    let mut v = json!({
        "messages": all.messages_json(),
        "tools": all.tools_json(),
        "byChannel": by_channel, "byCreator": [], "costDaily": cost_daily,
        "dailyLatency": acts.all.daily_latency(),
        "modelDaily": model_daily, "daily": daily,
    });
    if let Some(l) = all.latency_json() {
        v["latency"] = l;
    }
    v
}
