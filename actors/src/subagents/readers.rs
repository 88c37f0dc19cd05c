//! The tools that read sessions and agents without touching them:
//! `sessions_history`, `sessions_search` and `agents_list`. Transcripts are
//! read from the store (the session stays asleep; its committed lines are
//! what it would answer). A turn holding a stranger's message reads only
//! its own session (`tool::untrusted`).

use serde_json::{json, Value};

use super::tools::Cx;
use crate::inbound::SessionKey;
use crate::router::{ListSessions, LookupSession};
use crate::tool::{error, ok, str_arg, uint_arg, ToolOutcome};
use crate::transcript::{self, Entry, Role};

/// An agent as `agents_list` shows it.
#[derive(Debug, Clone)]
pub struct AgentRow {
    pub id: String,
    pub name: Option<String>,
    pub model: String,
    pub default: bool,
}

/// `agents_list`: the configured agents.
pub(super) fn agents_list(agents: &[AgentRow]) -> ToolOutcome {
    let rows: Vec<Value> = agents
        .iter()
        .map(|a| json!({ "id": a.id, "name": a.name, "model": a.model, "default": a.default, "runtime": "ferroclaw" }))
        .collect();
    ok(json!({ "count": rows.len(), "agents": rows }).to_string())
}

/// The canonical key of `raw` as the caller's agent reads it.
fn key_of(cx: &Cx, raw: &str) -> Result<SessionKey, ToolOutcome> {
    SessionKey::canonical(raw, &cx.agent, &cx.main_key)
        .map_err(|e| error(format!("invalid sessionKey {raw:?}: {e}")))
}

/// A stranger's turn reads only its own session.
fn own_only(cx: &Cx, tool: &str, caller: &str, key: &SessionKey) -> Result<(), ToolOutcome> {
    if cx.trust.untrusted && key.as_str() != caller {
        return Err(error(format!(
            "{tool}: this turn holds a message from outside; it may read only its own session"
        )));
    }
    Ok(())
}

/// One message line as the tools show it (None: not shown).
fn shown(entry: &Value, tools: bool) -> Option<Value> {
    let Entry::Message { role, message, .. } = Entry::of(entry) else {
        return None;
    };
    let role_name = match role {
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::ToolResult if tools => "toolResult",
        _ => return None,
    };
    let text = transcript::message_text(entry).unwrap_or_default();
    let calls: Vec<Value> = message
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|b| b.get("type").and_then(Value::as_str) == Some("toolCall"))
        .map(|b| json!({ "name": b.get("name"), "arguments": b.get("arguments") }))
        .collect();
    if text.trim().is_empty() && (calls.is_empty() || !tools) {
        return None;
    }
    let mut out = json!({
        "role": role_name,
        "text": text,
        "timestamp": message.get("timestamp"),
    });
    if let Some(id) = transcript::id_of(entry) {
        out["id"] = json!(id);
    }
    if tools && !calls.is_empty() {
        out["toolCalls"] = json!(calls);
    }
    if role == Role::ToolResult {
        out["toolName"] = message.get("toolName").cloned().unwrap_or(Value::Null);
    }
    Some(out)
}

/// `sessions_history`: the newest `limit` messages after skipping `offset`
/// from the end, oldest first.
pub(super) async fn history(cx: &Cx, caller: &str, args: &Value) -> ToolOutcome {
    let name = "sessions_history";
    let raw = match str_arg(name, args, "sessionKey") {
        Ok(k) => k,
        Err(e) => return e,
    };
    let (limit, offset) = match (
        uint_arg(name, args, "limit"),
        uint_arg(name, args, "offset"),
    ) {
        (Ok(l), Ok(o)) => (
            l.unwrap_or(20).clamp(1, 1000) as usize,
            o.unwrap_or(0) as usize,
        ),
        (Err(e), _) | (_, Err(e)) => return e,
    };
    let tools = args.get("includeTools").and_then(Value::as_bool) == Some(true);
    let key = match key_of(cx, raw) {
        Ok(k) => k,
        Err(e) => return e,
    };
    if let Err(e) = own_only(cx, name, caller, &key) {
        return e;
    }
    let entry = match cx.router.send(LookupSession { key: key.clone() }).await {
        Ok(Ok(Some(e))) => e,
        Ok(Ok(None)) => return error(format!("{name}: no session {}", key.as_str())),
        _ => return error(format!("{name}: the session store is unavailable")),
    };
    let lines = match transcript::entries(&cx.store, &entry.session_id) {
        Ok(l) => l,
        Err(e) => return error(format!("{name}: {e}")),
    };
    let all: Vec<Value> = lines.iter().filter_map(|l| shown(l, tools)).collect();
    let end = all.len().saturating_sub(offset);
    let start = end.saturating_sub(limit);
    ok(json!({
        "sessionKey": key.as_str(),
        "total": all.len(),
        "offset": offset,
        "hasMore": start > 0,
        "messages": &all[start..end],
    })
    .to_string())
}

/// A transcript line as a search hit: (words it holds, when, the row),
/// None when it is not shown or holds none of `words`.
fn hit(key: &str, line: &Value, words: &[&str]) -> Option<(usize, u64, Value)> {
    let m = shown(line, false)?;
    let text = m["text"].as_str().unwrap_or_default();
    let lower = text.to_lowercase();
    let score = words.iter().filter(|w| lower.contains(*w)).count();
    if score == 0 {
        return None;
    }
    let at = m["timestamp"].as_u64().unwrap_or(0);
    let snippet: String = text.chars().take(300).collect();
    Some((
        score,
        at,
        json!({ "sessionKey": key, "role": m["role"], "messageId": m.get("id"), "timestamp": at, "snippet": snippet }),
    ))
}

/// `sessions_search`: messages holding the query's words, most words first,
/// then newest.
pub(super) async fn search(cx: &Cx, caller: &str, args: &Value) -> ToolOutcome {
    let name = "sessions_search";
    let query = match str_arg(name, args, "query") {
        Ok(q) if q.len() <= 4096 => q.to_lowercase(),
        Ok(_) => return error(format!("{name}: `query` is longer than 4096 characters")),
        Err(e) => return e,
    };
    let limit = match uint_arg(name, args, "limit") {
        Ok(l) => l.unwrap_or(10).clamp(1, 25) as usize,
        Err(e) => return e,
    };
    let words: Vec<&str> = query.split_whitespace().collect();
    let only = match args.get("sessionKey").and_then(Value::as_str) {
        Some(raw) => match key_of(cx, raw) {
            Ok(k) => Some(k),
            Err(e) => return e,
        },
        None if cx.trust.untrusted => key_of(cx, caller).ok(),
        None => None,
    };
    if let Some(k) = &only {
        if let Err(e) = own_only(cx, name, caller, k) {
            return e;
        }
    }
    let rows = match cx.router.send(ListSessions).await {
        Ok(Ok(r)) => r,
        _ => return error(format!("{name}: the session store is unavailable")),
    };
    let mut hits: Vec<(usize, u64, Value)> = Vec::new();
    for row in rows
        .iter()
        .filter(|r| only.as_ref().is_none_or(|k| k.as_str() == r.key))
    {
        let Ok(lines) = transcript::entries(&cx.store, &row.entry.session_id) else {
            continue;
        };
        hits.extend(lines.iter().filter_map(|l| hit(&row.key, l, &words)));
    }
    hits.sort_by(|a, b| b.0.cmp(&a.0).then(b.1.cmp(&a.1)));
    let total = hits.len();
    let results: Vec<Value> = hits.into_iter().take(limit).map(|h| h.2).collect();
    ok(json!({ "query": query, "total": total, "results": results }).to_string())
}
