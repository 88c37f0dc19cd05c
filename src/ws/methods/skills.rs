//! skills.status, skills.library.list, skills.search (the skills ferroclaw
//! has: it reaches no registry), tools.catalog, commands.list.

use ferroclaw_actors::context::skills::SkillStatus;
use serde::Deserialize;
use serde_json::{json, Value};

use super::{json, params, MethodResult};
use crate::protocol::errors::ErrorShape;
use crate::state::SharedState;

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct StatusParams {
    #[serde(default)]
    agent_id: Option<String>,
    #[serde(default)]
    channel: Option<String>,
}

/// The skills an agent has for a channel, handed to `then`, both on the
/// blocking pool (the skill folders and files are read there, never on
/// this worker).
async fn read_skills<T: Send + 'static>(
    state: &SharedState,
    agent: &str,
    channel: &str,
    then: impl FnOnce(Vec<SkillStatus>) -> T + Send + 'static,
) -> Result<T, ErrorShape> {
    let (cx, a, c) = (
        state.gateway.context.clone(),
        agent.to_string(),
        channel.to_string(),
    );
    actix_web::rt::task::spawn_blocking(move || then(cx.skill_status(&a, &c, None)))
        .await
        .map_err(|_| ErrorShape::unavailable("cannot read the skill folders"))
}

/// Every discovered skill with its eligibility (requirements, config,
/// filters) for an agent and channel. Env overrides are never listed.
pub async fn status(state: &SharedState, p: &Value) -> MethodResult {
    let p: StatusParams = if p.is_null() {
        StatusParams::default()
    } else {
        params("skills.status", p)?
    };
    let cx = &state.gateway.context;
    let agent = p.agent_id.as_deref().unwrap_or("main").to_ascii_lowercase();
    let channel = p.channel.as_deref().unwrap_or("webchat");
    let skills: Vec<Value> = read_skills(state, &agent, channel, |found| {
        found.iter().map(SkillStatus::to_json).collect()
    })
    .await?;
    let dirs: Vec<Value> = cx
        .all_skill_dirs()
        .iter()
        .map(|(d, src)| json!({ "path": d.display().to_string(), "source": src.as_str() }))
        .collect();
    json(
        json!({ "agentId": agent, "channel": channel, "workspaceDir": cx.workspace.display().to_string(),
                 "skillDirs": dirs, "skills": skills }),
    )
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct LibraryParams {
    #[serde(default)]
    agent_id: Option<String>,
    #[serde(default)]
    scope: Option<String>,
    #[serde(default)]
    session_key: Option<String>,
}

/// `skills.library.list`: the skills ferroclaw discovers (workspace,
/// managed and bundled folders), as OpenClaw's library entries: team-owned,
/// read-only, enabled when eligible. `scope: "mine"` is empty (no personal
/// skills here).
pub async fn library_list(state: &SharedState, p: &Value) -> MethodResult {
    let p: LibraryParams = if p.is_null() {
        LibraryParams::default()
    } else {
        params("skills.library.list", p)?
    };
    let _ = p.session_key;
    let agent = p.agent_id.as_deref().unwrap_or("main").to_ascii_lowercase();
    let entries: Vec<Value> = if p.scope.as_deref() == Some("mine") {
        Vec::new()
    } else {
        read_skills(state, &agent, "webchat", |found| {
            found.iter().map(library_entry).collect()
        })
        .await?
    };
    json(json!({ "entries": entries, "profileId": null, "defaultSelectionLimit": 64 }))
}

/// A skill as OpenClaw's library entry, with its file's times and revision.
fn library_entry(s: &SkillStatus) -> Value {
    let v = s.to_json();
    let (created, modified) = file_times(&s.skill.path);
    json!({
        "skillId": format!("{}:{}", v["source"].as_str().unwrap_or("workspace"), v["name"].as_str().unwrap_or("")),
        "slug": v["name"], "name": v["name"], "description": v["description"],
        "ownerLabel": "Team", "ownerProfileId": null, "authorProfileId": null,
        "shared": true, "enabled": v["eligible"], "removed": false,
        "revision": revision(&s.skill.path),
        "createdAt": created, "updatedAt": modified, "canEdit": false,
    })
}

/// A skill file's creation and last change, in ms (its change time where
/// the file system records no creation).
fn file_times(path: &std::path::Path) -> (u64, u64) {
    let ms = |t: std::io::Result<std::time::SystemTime>| {
        t.ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_millis() as u64)
    };
    match std::fs::metadata(path) {
        Ok(m) => {
            let modified = ms(m.modified());
            let created = ms(m.created());
            (if created == 0 { modified } else { created }, modified)
        }
        Err(_) => (0, 0),
    }
}

/// A skill's revision: a number from its file's content, so it changes
/// when the skill does (1 and up; 1 when the file cannot be read).
fn revision(path: &std::path::Path) -> u64 {
    use sha2::Digest;
    let Ok(bytes) = std::fs::read(path) else {
        return 1;
    };
    let digest = sha2::Sha256::digest(&bytes);
    let mut n = [0u8; 4];
    n.copy_from_slice(&digest[..4]);
    u64::from(u32::from_be_bytes(n)) + 1
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct SearchParams {
    #[serde(default)]
    query: Option<String>,
    #[serde(default)]
    limit: Option<usize>,
}

/// `skills.search`: ferroclaw reaches no registry (ClawHub), so it
/// searches the skills it has (name and description, every word of the
/// query), best match first; no query finds nothing.
pub async fn search(state: &SharedState, p: &Value) -> MethodResult {
    let p: SearchParams = if p.is_null() {
        SearchParams::default()
    } else {
        params("skills.search", p)?
    };
    let words: Vec<String> = p
        .query
        .as_deref()
        .unwrap_or_default()
        .split_whitespace()
        .map(str::to_lowercase)
        .collect();
    if words.is_empty() {
        return json(json!({ "results": [] }));
    }
    let mut hits = read_skills(state, "main", "webchat", move |found| hits(&found, &words)).await?;
    hits.sort_by(|a, b| b.0.total_cmp(&a.0));
    let limit = p.limit.unwrap_or(20).clamp(1, 100);
    let results: Vec<Value> = hits.into_iter().take(limit).map(|(_, v)| v).collect();
    json(json!({ "results": results }))
}

/// The skills every word of a query is in (name or description), scored
/// by how many are in the name.
fn hits(found: &[SkillStatus], words: &[String]) -> Vec<(f64, Value)> {
    found
        .iter()
        .filter_map(|s| {
            let (name, about) = (
                s.skill.name.to_lowercase(),
                s.skill.description.to_lowercase(),
            );
            if !words.iter().all(|w| name.contains(w) || about.contains(w)) {
                return None;
            }
            let in_name = words.iter().filter(|w| name.contains(w.as_str())).count();
            let score = (1 + in_name) as f64 / (1 + words.len()) as f64;
            let (_, modified) = file_times(&s.skill.path);
            Some((
                score,
                json!({
                    "score": score, "slug": s.skill.name, "registry": "local",
                    "installRef": format!("local:{}", s.skill.name), "displayName": s.skill.name,
                    "summary": s.skill.description, "updatedAt": modified,
                }),
            ))
        })
        .collect()
}

/// The tools runs are offered, with their JSON schemas.
pub fn tools_catalog(state: &SharedState) -> MethodResult {
    let bench = &state.gateway.tools;
    let tools: Vec<Value> = bench
        .all()
        .iter()
        .map(|t| {
            let mut v =
                json!({ "name": t.name, "description": t.description, "parameters": t.parameters });
            if let Some(route) = bench.mcp().route(&t.name) {
                v["source"] = json!("mcp");
                v["mcpServer"] = json!(route.server);
                v["mcpTool"] = json!(route.tool);
            }
            v
        })
        .collect();
    let unavailable: Vec<Value> = state
        .gateway
        .unavailable_tools
        .iter()
        .map(|(name, why)| json!({ "name": name, "available": false, "reason": why }))
        .collect();
    json(json!({ "tools": tools, "unavailable": unavailable }))
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct EffectiveParams {
    session_key: String,
    #[serde(default)]
    agent_id: Option<String>,
}

/// `tools.effective`: the tools a session offers now (the active run's,
/// else its next operator turn's), as its session computes them for a
/// run: the agent's profile and allow/deny, the channel's layer; grouped
/// as OpenClaw's (built-in, MCP).
pub async fn tools_effective(state: &SharedState, p: &Value) -> MethodResult {
    let p: EffectiveParams = super::params("tools.effective", p)?;
    let key = super::agent_session_key(state, &p.session_key, p.agent_id.as_deref())?;
    let agent = crate::protocol::session_rows::agent_of(key.as_str()).to_string();
    let session = super::session_for(state, key).await?;
    let offered = session
        .send(ferroclaw_actors::session::GetEffectiveTools)
        .await
        .map_err(super::down)?;
    let bench = &state.gateway.tools;
    let (mut core, mut mcp) = (Vec::new(), Vec::new());
    for t in offered.iter() {
        let summary = t.description.lines().next().unwrap_or_default();
        let mut v = json!({ "id": t.name, "label": t.name, "description": summary,
                            "rawDescription": t.description, "source": "core" });
        match bench.mcp().route(&t.name) {
            Some(route) => {
                v["source"] = json!("mcp");
                v["mcpServer"] = json!(route.server);
                v["mcpToolName"] = json!(route.tool);
                mcp.push(v);
            }
            None => core.push(v),
        }
    }
    let mut groups = Vec::new();
    for (id, label, tools) in [
        ("core", "Built-in tools", core),
        ("mcp", "MCP servers", mcp),
    ] {
        if !tools.is_empty() {
            groups.push(json!({ "id": id, "label": label, "source": id, "tools": tools }));
        }
    }
    let profile = state.live.settings().tools.profile.clone();
    json(
        json!({ "agentId": agent, "profile": profile.unwrap_or_else(|| "full".into()),
                 "groups": groups }),
    )
}

/// The chat directives (handled by the gateway before the model).
/// `commands.list` in OpenClaw's shape: the chat directives ferroclaw
/// reads as text on every surface (`source` native, `scope` text), with
/// their usage in the description.
pub fn commands_list() -> MethodResult {
    const COMMANDS: &[(&str, &str, &str, &str)] = &[
        ("think", "options", "/think <off|minimal|low|medium|high|xhigh>", "Thinking level: alone sets the session default, before text applies to that message (also /t, /think:x, /thinking)."),
        ("model", "options", "/model [provider/model|default]", "Show or set the session's model."),
        ("new", "session", "/new [provider/model]", "Start a new session (optionally with a model)."),
        ("reset", "session", "/reset", "Start a new transcript; settings are kept."),
        ("compact", "session", "/compact [instructions]", "Summarise older context."),
        ("queue", "options", "/queue [mode] [debounce:<d>] [cap:<n>] [drop:<old|new|summarize>]", "How messages sent during a run are handled."),
        ("status", "status", "/status", "Model, tokens and context fullness."),
        ("context", "status", "/context [list|detail]", "Size of each part of the system prompt and history."),
        ("usage", "options", "/usage [off|tokens|full]", "Session token usage; a usage line under each reply."),
        ("verbose", "options", "/verbose <on|full|off>", "Tool events shown to clients."),
        ("reasoning", "options", "/reasoning <on|off|stream>", "Whether and how model reasoning is shown."),
        ("send", "options", "/send <on|off|inherit>", "Delivery policy of this session."),
        ("agent", "session", "/agent [id]", "Show or switch the agent answering this session."),
        ("stop", "session", "/stop", "Abort the current run."),
    ];
    let commands: Vec<Value> = COMMANDS
        .iter()
        .map(|(name, category, usage, description)| {
            json!({
                "name": name, "description": format!("{description} Usage: {usage}"),
                "category": category, "source": "native", "scope": "text",
                "acceptsArgs": usage.contains(' '),
            })
        })
        .collect();
    json(json!({ "commands": commands }))
}
