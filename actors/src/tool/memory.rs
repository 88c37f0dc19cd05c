//! `memory_search` and `memory_get`: the agent's markdown memory, in
//! OpenClaw's shapes. `MEMORY.md` is found and read only from private
//! chats; a turn holding a stranger's message finds and reads none of the
//! operator's notes (`MEMORY.md`, `USER.md`, `memory/**`), only `extraPaths`. `memory_get` reads only memory files (the ones the index would
//! take: `MEMORY.md`, `USER.md`, `memory/**/*.md`, `extraPaths`), a bounded
//! excerpt by lines with where to continue.

use serde_json::{json, Value};

use super::{error, ok, str_arg, uint_arg, ExecuteTool, ToolOutcome};
use crate::context::is_private;
use crate::memory::index::is_long_term;
use crate::memory::{files, results_json, AgentMemory, SearchMemory};

/// Lines `memory_get` returns when `lines` is not given.
pub const DEFAULT_LINES: u64 = 200;
/// Lines `memory_get` returns at most.
pub const MAX_LINES: u64 = 2000;

fn json_result(v: Value) -> ToolOutcome {
    ok(serde_json::to_string_pretty(&v).unwrap_or_default())
}

fn disabled() -> ToolOutcome {
    json_result(json!({
        "results": [], "disabled": true, "unavailable": true,
        "error": "memory search is disabled for this agent",
        "warning": "Memory search is off (agents.defaults.memorySearch.enabled is false).",
    }))
}

/// The operator's own notes, which a stranger's turn never sees.
fn operators(path: &str) -> bool {
    crate::trust::protected(std::path::Path::new(path)).is_some()
}

pub async fn search(mem: Option<AgentMemory>, call: &ExecuteTool, args: &Value) -> ToolOutcome {
    let session_key = call.session_key.as_str();
    let query = match str_arg("memory_search", args, "query") {
        Ok(q) => q.to_string(),
        Err(e) => return e,
    };
    let max = match uint_arg("memory_search", args, "maxResults") {
        Ok(m) => m.map(|m| m.max(1) as usize),
        Err(e) => return e,
    };
    let min_score = match args.get("minScore") {
        None | Some(Value::Null) => None,
        Some(v) => match v.as_f64() {
            Some(f) if (0.0..=1.0).contains(&f) => Some(f),
            _ => return error("memory_search: `minScore` must be a number from 0 to 1"),
        },
    };
    if let Some(c) = args.get("corpus").and_then(Value::as_str) {
        if c != "memory" && c != "all" {
            return json_result(json!({
                "results": [], "unavailable": true,
                "error": format!("corpus {c:?} is not indexed here; only memory files are"),
            }));
        }
    }
    let Some(mem) = mem else { return disabled() };
    let private = is_private(session_key);
    let asked = mem.addr.send(SearchMemory {
        query,
        max,
        min_score,
        private,
    });
    match asked.await {
        Ok(Ok(mut r)) => {
            if call.trust.untrusted {
                r.hits.retain(|h| !operators(&h.path));
            }
            json_result(results_json(&r, private))
        }
        Ok(Err(e)) => error(format!("memory_search: {e}")),
        Err(_) => error("memory_search: the memory index is unavailable"),
    }
}

pub async fn get(mem: Option<AgentMemory>, call: &ExecuteTool, args: &Value) -> ToolOutcome {
    let session_key = call.session_key.as_str();
    let path = match str_arg("memory_get", args, "path") {
        Ok(p) => p.trim().trim_start_matches("./").to_string(),
        Err(e) => return e,
    };
    let (from, lines) = match (
        uint_arg("memory_get", args, "from"),
        uint_arg("memory_get", args, "lines"),
    ) {
        (Ok(f), Ok(l)) => (
            f.unwrap_or(1).max(1),
            l.unwrap_or(DEFAULT_LINES).clamp(1, MAX_LINES),
        ),
        (Err(e), _) | (_, Err(e)) => return e,
    };
    let Some(mem) = mem else { return disabled() };
    let not_found = |why: &str| {
        json_result(json!({ "path": path, "text": "", "status": "not_found", "error": why }))
    };
    if is_long_term(&path) && !is_private(session_key) {
        return not_found("MEMORY.md is read only in private chats");
    }
    if call.trust.untrusted && operators(&path) {
        return not_found(
            "the operator's notes are not read for a message from someone who is not the operator",
        );
    }
    let (ws, extra) = (mem.workspace.clone(), mem.settings.extra_paths.clone());
    let want = path.clone();
    let read = tokio::task::spawn_blocking(move || {
        let (found, _) = files::collect(&ws, &extra);
        let f = found.into_iter().find(|f| f.rel == want)?;
        files::read_text(&f.abs)
    })
    .await
    .ok()
    .flatten();
    let Some(text) = read else {
        return not_found(
            "not a memory file (MEMORY.md, USER.md, memory/**/*.md or an extra path), or not text",
        );
    };
    let all: Vec<&str> = text.lines().collect();
    let start = usize::try_from(from - 1)
        .unwrap_or(usize::MAX)
        .min(all.len());
    let end = start.saturating_add(lines as usize).min(all.len());
    let mut out = json!({
        "path": path, "status": "ok", "from": start + 1, "lines": end - start,
        "totalLines": all.len(), "text": all[start..end].join("\n"),
    });
    if end < all.len() {
        out["truncated"] = true.into();
        out["nextFrom"] = (end + 1).into();
    }
    json_result(out)
}
