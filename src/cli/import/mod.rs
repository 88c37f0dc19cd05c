//! `ferroclaw import --from <OpenClaw state dir>`: an OpenClaw install moved
//! into a ferroclaw state dir, with the gateway stopped (the import holds the
//! state dir's lock). What moves:
//! - `openclaw.json` -> the ferroclaw config: settings ferroclaw takes are
//!   kept as they are (same key names); those it cannot take are left out
//!   and listed; the result is checked as the gateway checks it at start;
//! - `agents/<id>/sessions/` -> the store (rows and JSONL transcripts);
//! - workspaces under the OpenClaw state dir, `skills/`,
//!   `agents/<id>/agent/auth-profiles.json` and `exec-approvals.json` ->
//!   copies in the ferroclaw state dir (workspaces elsewhere stay in place).
//!
//! All or nothing: everything is read and checked first, copies are staged
//! in the state dir, then moved into place and the sessions committed in
//! one store transaction; a failure undoes the moves. What exists already
//! is a conflict unless `--force`, which keeps the old files as
//! `<name>.bak-<time>` and the replaced sessions as an export under
//! `<state dir>/backup-<time>/`.

use std::path::{Path, PathBuf};

use ferroclaw::config;
use ferroclaw_actors::openclaw::{self, ImportedSession};
use ferroclaw_actors::store::{Store, StoreError};
use serde_json::{json, Value};

use super::{print_json, Failure};

mod apply;
mod convert;
mod cron;

use apply::*;
use convert::*;

/// What `import` is told.
pub struct ImportArgs {
    pub from: PathBuf,
    /// The ferroclaw state dir.
    pub state: PathBuf,
    /// Where the converted config goes.
    pub config_path: PathBuf,
    /// The home directory (`~` in OpenClaw paths).
    pub home: Option<PathBuf>,
    pub force: bool,
    pub json: bool,
}

/// One file or folder to copy into the state dir.
struct Copy {
    label: &'static str,
    src: PathBuf,
    dest: PathBuf,
    /// Keys or an allowlist: made private (0600) in the state dir.
    secret: bool,
}

/// Everything an import will do, worked out before anything is written.
#[derive(Default)]
struct Plan {
    config_text: Option<String>,
    kept_keys: usize,
    copies: Vec<Copy>,
    sessions: Vec<ImportedSession>,
    notes: Vec<String>,
}

fn read_json(path: &Path) -> Result<Value, Failure> {
    let raw = std::fs::read_to_string(path).map_err(|e| bad(format!("{}: {e}", path.display())))?;
    serde_json::from_str(&raw).map_err(|e| bad(format!("{}: not valid JSON: {e}", path.display())))
}

fn plan_import(a: &ImportArgs, from: &Path, state: &Path) -> Result<Plan, Failure> {
    let mut plan = Plan::default();
    let home = a.home.as_deref();
    let cfg_path = from.join("openclaw.json");
    let mut main_key = "main".to_string();
    if cfg_path.is_file() {
        let raw = std::fs::read_to_string(&cfg_path)
            .map_err(|e| bad(format!("{}: {e}", cfg_path.display())))?;
        let parsed = config::parse_json5(&raw, &cfg_path.display().to_string())
            .map_err(|e| bad(e.to_string()))?;
        if !parsed.is_object() {
            return Err(bad(format!(
                "{}: expected a JSON5 object at the top level",
                cfg_path.display()
            )));
        }
        if let Some(k) = parsed.pointer("/session/mainKey").and_then(Value::as_str) {
            main_key = k.to_string();
        }
        let cfg = convert_config(parsed, from, state, home, &mut plan)?;
        let text = serde_json::to_string_pretty(&cfg).map_err(|e| bad(e.to_string()))?;
        plan.config_text = Some(format!(
            "// Imported from {} by `ferroclaw import`.\n{text}\n",
            cfg_path.display()
        ));
    } else {
        plan.notes
            .push("no openclaw.json: the config was not changed".into());
        let ws = from.join("workspace");
        if ws.is_dir() {
            plan.copies.push(Copy {
                label: "workspace",
                src: ws,
                dest: state.join("workspace"),
                secret: false,
            });
        }
    }
    let now = ferroclaw_actors::now_ms();
    let agents_dir = from.join("agents");
    if agents_dir.is_dir() {
        let mut agents: Vec<PathBuf> = std::fs::read_dir(&agents_dir)
            .map_err(|e| bad(format!("{}: {e}", agents_dir.display())))?
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.is_dir())
            .collect();
        agents.sort();
        for dir in agents {
            let Some(agent) = dir.file_name().and_then(|n| n.to_str()) else {
                continue;
            };
            let agent = agent.to_ascii_lowercase();
            let sessions = dir.join("sessions");
            if sessions.join("sessions.json").is_file() {
                let read = openclaw::read_sessions_dir(&sessions, &agent, &main_key, now)
                    .map_err(|e| bad(e.to_string()))?;
                plan.sessions.extend(read.sessions);
                plan.notes.extend(read.notes);
            }
            let profiles = dir.join("agent").join("auth-profiles.json");
            if profiles.is_file() {
                read_json(&profiles)?;
                plan.copies.push(Copy {
                    label: "auth profiles",
                    src: profiles,
                    dest: state
                        .join("agents")
                        .join(&agent)
                        .join("agent")
                        .join("auth-profiles.json"),
                    secret: true,
                });
            }
        }
    }
    let skills = from.join("skills");
    if skills.is_dir() {
        plan.copies.push(Copy {
            label: "skills",
            src: skills,
            dest: state.join("skills"),
            secret: false,
        });
    }
    let approvals = from.join("exec-approvals.json");
    if approvals.is_file() {
        ferroclaw_actors::approvals::validate_file(&read_json(&approvals)?)
            .map_err(|e| bad(format!("{}: {e}", approvals.display())))?;
        plan.copies.push(Copy {
            label: "exec approvals",
            src: approvals,
            dest: state.join("exec-approvals.json"),
            secret: true,
        });
    }
    // What stays behind, by top-level name.
    let taken: Vec<&Path> = plan.copies.iter().map(|c| c.src.as_path()).collect();
    let mut left: Vec<String> = std::fs::read_dir(from)
        .map(|rd| {
            rd.filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| {
                    let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
                    !matches!(name, "openclaw.json" | "agents")
                        && !taken.iter().any(|t| t.starts_with(p))
                })
                .filter_map(|p| p.file_name().and_then(|n| n.to_str()).map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    left.sort();
    if !left.is_empty() {
        plan.notes.push(format!(
            "not imported (no ferroclaw counterpart yet, or rebuilt by ferroclaw): {}",
            left.join(", ")
        ));
    }
    Ok(plan)
}

// ---- writing --------------------------------------------------------------

/// `import`.
pub async fn import(a: ImportArgs) -> Result<(), Failure> {
    let from = a
        .from
        .canonicalize()
        .map_err(|e| Failure::new(2, format!("--from {}: {e}", a.from.display())))?;
    if !from.is_dir() {
        return Err(Failure::new(
            2,
            format!("--from {}: not a folder", from.display()),
        ));
    }
    if !["openclaw.json", "agents", "workspace"]
        .iter()
        .any(|n| from.join(n).exists())
    {
        return Err(Failure::new(
            2,
            format!(
                "{} does not look like an OpenClaw state dir (no openclaw.json, agents/ or workspace/); pass the folder OpenClaw keeps its state in, usually ~/.openclaw",
                from.display()
            ),
        ));
    }
    let created_state = !a.state.exists();
    let state = if created_state {
        a.state.clone()
    } else {
        a.state.canonicalize().unwrap_or_else(|_| a.state.clone())
    };
    if state == from || state.starts_with(&from) {
        return Err(Failure::new(
            2,
            format!(
                "the ferroclaw state dir {} is inside the OpenClaw one; choose another --state-dir",
                state.display()
            ),
        ));
    }
    let plan = plan_import(&a, &from, &state)?;
    // The state dir's lock is held from here to the end: no gateway can
    // start on it meanwhile.
    let store = match Store::open(&state) {
        Ok(s) => s,
        Err(StoreError::AlreadyInUse { dir }) => {
            return Err(Failure::new(
                1,
                format!(
                    "the state dir {} is in use by a running gateway; stop it, then run the import again",
                    dir.display()
                ),
            ))
        }
        Err(e) => return Err(Failure::new(1, format!("{e}; nothing was imported"))),
    };
    let result = async {
        let keys = openclaw::conflicting_keys(&store, &plan.sessions)
            .map_err(|e| Failure::new(1, format!("{e}; nothing was imported")))?;
        let mut conflicts: Vec<String> = Vec::new();
        if plan.config_text.is_some() && a.config_path.exists() {
            conflicts.push(a.config_path.display().to_string());
        }
        for c in &plan.copies {
            if !replaceable(&c.dest) {
                conflicts.push(c.dest.display().to_string());
            }
        }
        conflicts.extend(keys.iter().map(|k| format!("session {k}")));
        if !conflicts.is_empty() && !a.force {
            let shown: Vec<&str> = conflicts.iter().take(3).map(String::as_str).collect();
            return Err(Failure::new(
                1,
                format!(
                    "{} thing(s) already exist in {}: {}{}; nothing was imported (pass --force to replace them; the old ones are kept as backups)",
                    conflicts.len(),
                    state.display(),
                    shown.join(", "),
                    if conflicts.len() > 3 { ", ..." } else { "" }
                ),
            ));
        }
        let mut plan = plan;
        let notes = std::mem::take(&mut plan.notes);
        let kept = plan.kept_keys;
        let had_config = plan.config_text.is_some();
        let done = apply(&a, plan, &store, keys).await?;
        // The agents the import brings (their folders), besides the default.
        let agents: Vec<String> = std::fs::read_dir(from.join("agents"))
            .map(|d| {
                d.flatten()
                    .filter_map(|e| e.file_name().to_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        let (_, cron_notes) = cron::import_jobs(&from, &store, a.force, &agents)?;
        store
            .flush()
            .await
            .map_err(|e| Failure::new(1, e.to_string()))?;
        let mut notes = notes;
        notes.extend(cron_notes);
        Ok((done, notes, kept, had_config))
    }
    .await;
    drop(store);
    let (done, notes, kept, had_config) = match result {
        Ok(r) => r,
        Err(e) => {
            if created_state {
                let _ = std::fs::remove_dir_all(&state);
            }
            return Err(e);
        }
    };
    if a.json {
        print_json(&json!({
            "from": from.display().to_string(),
            "stateDir": state.display().to_string(),
            "config": had_config.then(|| a.config_path.display().to_string()),
            "configKeys": kept,
            "sessions": done.sessions,
            "transcriptLines": done.lines,
            "copied": done.copied.iter().map(|(label, src, dest, files)| json!({
                "what": label, "from": src.display().to_string(), "to": dest.display().to_string(), "files": files,
            })).collect::<Vec<_>>(),
            "backups": done.backups.iter().map(|b| b.display().to_string()).collect::<Vec<_>>(),
            "notes": notes,
        }));
        return Ok(());
    }
    println!("imported {} into {}:", from.display(), state.display());
    if had_config {
        println!("  config: {} ({kept} settings)", a.config_path.display());
    }
    println!(
        "  sessions: {} ({} transcript lines)",
        done.sessions, done.lines
    );
    for (label, src, dest, files) in &done.copied {
        println!(
            "  {label}: {} -> {} ({files} file{})",
            src.display(),
            dest.display(),
            if *files == 1 { "" } else { "s" }
        );
    }
    for b in &done.backups {
        println!("  kept the replaced data in {}", b.display());
    }
    if !notes.is_empty() {
        println!("notes:");
        for n in &notes {
            println!("  - {n}");
        }
    }
    println!(
        "start the gateway with: ferroclaw gateway --state-dir {}",
        state.display()
    );
    Ok(())
}
