//! `migrations.memory.plan` / `migrations.memory.apply`: the Control UI's
//! memory import. ferroclaw has one provider, `openclaw`: the memory of the
//! OpenClaw install found where OpenClaw keeps it (`OPENCLAW_STATE_DIR`,
//! else `~/.openclaw`), for the same agent id, copied under the agent's
//! workspace `memory/imports/openclaw/` (`ferroclaw_actors::openclaw::memory`)
//! where the memory watcher indexes it. `ferroclaw import` moves a whole
//! install (config, sessions, workspace); this moves only its memory into a
//! gateway already running. Both are admin-scoped; the plan's fingerprint
//! makes `apply` copy exactly what the operator saw, and the dispatcher's
//! idempotency cache answers a repeated `idempotencyKey` with the first
//! answer.

use std::path::PathBuf;

use ferroclaw_actors::openclaw::memory::{self, Item, ItemStatus, Plan, PROVIDER_ID};
use serde::Deserialize;
use serde_json::{json, Value};

use super::agents::{is_known_agent, valid_agent_id, workspace_of};
use super::{json, params, MethodResult};
use crate::protocol::errors::ErrorShape;
use crate::state::SharedState;

const LABEL: &str = "OpenClaw";
const DESCRIPTION: &str =
    "Import an OpenClaw agent's memory (MEMORY.md and memory/*.md) into this agent's memory index.";

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct PlanParams {
    agent_id: String,
    #[serde(default)]
    overwrite: bool,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ApplyParams {
    /// The dispatcher's idempotency cache keys on it; logged here.
    idempotency_key: String,
    agent_id: String,
    provider_id: String,
    plan_fingerprint: String,
    item_ids: Vec<String>,
    #[serde(default)]
    overwrite: bool,
}

/// The agent a call names, if the gateway runs it.
fn known_agent(state: &SharedState, raw: &str) -> Result<String, ErrorShape> {
    let agent = raw.trim().to_ascii_lowercase();
    if !valid_agent_id(&agent) {
        return Err(ErrorShape::invalid("invalid agent id"));
    }
    match is_known_agent(state, &agent) {
        true => Ok(agent),
        false => Err(ErrorShape::invalid("unknown agent id")),
    }
}

/// Where the memory would come from: the OpenClaw agent workspace, or why
/// there is none (`found: false` with its message).
enum Source {
    Found {
        root: PathBuf,
        from: PathBuf,
    },
    NotFound {
        root: Option<PathBuf>,
        message: String,
    },
}

fn find_source(state: &SharedState, agent: &str) -> Result<Source, memory::MemoryImportError> {
    let var = &state.gateway.env;
    let home = var("HOME").filter(|h| !h.is_empty()).map(PathBuf::from);
    let env = var("OPENCLAW_STATE_DIR");
    let Some(root) = memory::state_dir(env.as_deref(), home.as_deref()) else {
        return Ok(Source::NotFound {
            root: None,
            message: "No home directory: no OpenClaw install to look for.".into(),
        });
    };
    let ours = std::fs::canonicalize(&state.state_dir).ok();
    if !root.is_dir() || std::fs::canonicalize(&root).ok() == ours {
        let message = format!("No OpenClaw install at {}.", root.display());
        return Ok(Source::NotFound {
            root: Some(root),
            message,
        });
    }
    let from = memory::agent_workspace(&root, home.as_deref(), agent)?;
    Ok(Source::Found { root, from })
}

fn summary(items: &[Item]) -> Value {
    let count = |s: ItemStatus| items.iter().filter(|i| i.status == s).count();
    json!({
        "total": items.len(), "planned": count(ItemStatus::Planned),
        "migrated": count(ItemStatus::Migrated), "skipped": count(ItemStatus::Skipped),
        "conflicts": count(ItemStatus::Conflict), "errors": count(ItemStatus::Error),
        "sensitive": 0,
    })
}

/// An item as OpenClaw's `MemoryMigrationItem`.
fn wire_item(i: &Item) -> Value {
    let mut details = json!({
        "sourceType": "openclaw-memory", "sourceLabel": format!("OpenClaw {}", i.relative),
        "collectionId": PROVIDER_ID, "collectionLabel": LABEL,
        "relativePath": i.relative, "sizeBytes": i.size,
    });
    if let Some(b) = &i.backup {
        details["backupPath"] = json!(b.display().to_string());
    }
    let mut v = json!({
        "id": i.id, "status": i.status,
        "source": i.source.display().to_string(), "target": i.target.display().to_string(),
        "message": "Copy OpenClaw memory into this agent's memory index.",
        "details": details,
    });
    if let Some(r) = &i.reason {
        v["reason"] = json!(r);
    }
    v
}

fn conflict_warning(items: &[Item]) -> Option<Value> {
    items.iter().any(|i| i.status == ItemStatus::Conflict).then(|| {
        json!(["Conflicts were found. Enable replacement to overwrite them; each replaced file is kept as <name>.bak-<time>."])
    })
}

/// The provider's plan as OpenClaw's `MemoryMigrationProviderPlan`.
fn provider_plan(state: &SharedState, agent: &str, overwrite: bool) -> Value {
    let mut base = json!({ "providerId": PROVIDER_ID, "label": LABEL, "description": DESCRIPTION,
        "found": false, "summary": summary(&[]), "items": [] });
    let planned = find_source(state, agent).and_then(|s| match s {
        Source::NotFound { root, message } => Ok((root, None, message)),
        Source::Found { root, from } => {
            let plan = memory::plan(&from, &workspace_of(state, agent), overwrite)?;
            Ok((Some(root), Some(plan), String::new()))
        }
    });
    match planned {
        Err(e) => base["error"] = json!(e.to_string()),
        Ok((root, None, message)) => {
            if let Some(r) = root {
                base["source"] = json!(r.display().to_string());
            }
            base["message"] = json!(message);
        }
        Ok((_, Some(plan), _)) => {
            let found = !plan.items.is_empty();
            base["found"] = json!(found);
            base["source"] = json!(plan.from.display().to_string());
            base["target"] = json!(plan.target.display().to_string());
            base["confidence"] = json!("high");
            base["message"] = json!(match found {
                true => "OpenClaw memory found.",
                false => "The OpenClaw workspace holds no memory files.",
            });
            base["planFingerprint"] = json!(plan.fingerprint(agent, overwrite));
            base["summary"] = summary(&plan.items);
            base["items"] = plan.items.iter().map(wire_item).collect();
            if let Some(w) = conflict_warning(&plan.items) {
                base["warnings"] = w;
            }
        }
    }
    base
}

pub async fn plan(state: &SharedState, p: &Value) -> MethodResult {
    let p: PlanParams = params("migrations.memory.plan", p)?;
    let agent = known_agent(state, &p.agent_id)?;
    let workspace = workspace_of(state, &agent).display().to_string();
    let s = state.clone();
    let a = agent.clone();
    let provider = actix_web::rt::task::spawn_blocking(move || provider_plan(&s, &a, p.overwrite))
        .await
        .map_err(|_| ErrorShape::unavailable("memory import planning failed"))?;
    json(json!({ "agentId": agent, "workspace": workspace, "providers": [provider] }))
}

/// The plan `apply` runs: the same as the operator saw, or why not.
fn checked_plan(state: &SharedState, agent: &str, p: &ApplyParams) -> Result<Plan, ErrorShape> {
    let unavailable = |e: memory::MemoryImportError| ErrorShape::unavailable(e.to_string());
    let Source::Found { from, .. } = find_source(state, agent).map_err(unavailable)? else {
        return Err(ErrorShape::invalid(
            "memory migration plan changed; refresh the plan before importing",
        ));
    };
    let plan =
        memory::plan(&from, &workspace_of(state, agent), p.overwrite).map_err(unavailable)?;
    if plan.fingerprint(agent, p.overwrite) != p.plan_fingerprint {
        return Err(ErrorShape::invalid(
            "memory migration plan changed; refresh the plan before importing",
        ));
    }
    let selectable = |id: &String| {
        plan.items
            .iter()
            .any(|i| &i.id == id && matches!(i.status, ItemStatus::Planned | ItemStatus::Conflict))
    };
    let gone: Vec<&str> = p
        .item_ids
        .iter()
        .filter(|id| !selectable(id))
        .map(String::as_str)
        .collect();
    if !gone.is_empty() {
        return Err(ErrorShape::invalid(format!(
            "memory migration items changed; refresh the plan ({})",
            gone.join(", ")
        )));
    }
    let conflict = |id: &String| {
        plan.items
            .iter()
            .any(|i| &i.id == id && i.status == ItemStatus::Conflict)
    };
    if !p.overwrite && p.item_ids.iter().any(conflict) {
        return Err(ErrorShape::invalid(
            "selected memory was already imported; enable replacement and refresh the plan",
        ));
    }
    Ok(plan)
}

fn valid_apply(p: &ApplyParams) -> Result<(), ErrorShape> {
    let fp = &p.plan_fingerprint;
    let hex = fp.len() == 64 && fp.chars().all(|c| matches!(c, '0'..='9' | 'a'..='f'));
    let mut ids = p.item_ids.clone();
    ids.sort();
    ids.dedup();
    let why = match () {
        _ if !hex => "at /planFingerprint: must be 64 lowercase hex digits",
        _ if p.item_ids.is_empty() => "at /itemIds: must NOT have fewer than 1 items",
        _ if p.item_ids.len() > memory::MAX_ITEMS => {
            "at /itemIds: must NOT have more than 2000 items"
        }
        _ if ids.len() != p.item_ids.len() => "at /itemIds: must NOT have duplicate items",
        _ => return Ok(()),
    };
    Err(ErrorShape::invalid(format!(
        "invalid migrations.memory.apply params: {why}"
    )))
}

pub async fn apply(state: &SharedState, p: &Value) -> MethodResult {
    let p: ApplyParams = params("migrations.memory.apply", p)?;
    valid_apply(&p)?;
    let agent = known_agent(state, &p.agent_id)?;
    if p.provider_id != PROVIDER_ID {
        return Err(ErrorShape::invalid("unknown memory migration provider"));
    }
    let Ok(_one) = state.memory_import.try_lock() else {
        return Err(ErrorShape::unavailable("memory import already running").retry_after(1000));
    };
    let key = p.idempotency_key.clone();
    let s = state.clone();
    let done = actix_web::rt::task::spawn_blocking(move || {
        let plan = checked_plan(&s, &agent, &p)?;
        let items = memory::apply(&plan, &p.item_ids, ferroclaw_actors::now_ms());
        Ok::<_, ErrorShape>((plan, items))
    })
    .await
    .map_err(|_| ErrorShape::unavailable("memory import failed"))?;
    let (plan, items) = done?;
    tracing::info!(idempotency_key = %key, migrated = items.iter().filter(|i| i.status == ItemStatus::Migrated).count(),
        errors = items.iter().filter(|i| i.status == ItemStatus::Error).count(), "memory import applied");
    json(json!({
        "providerId": PROVIDER_ID, "source": plan.from.display().to_string(),
        "target": plan.target.display().to_string(), "summary": summary(&items),
        "items": items.iter().map(wire_item).collect::<Vec<_>>(),
    }))
}
