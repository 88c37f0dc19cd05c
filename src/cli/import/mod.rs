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

impl Plan {
    /// `<from>/<name>` copied to `<state>/<name>` when it is a folder.
    fn copy_folder(&mut self, name: &'static str, from: &Path, state: &Path) {
        let src = from.join(name);
        if src.is_dir() {
            self.copies.push(Copy {
                label: name,
                src,
                dest: state.join(name),
                secret: false,
            });
        }
    }
}

fn read_json(path: &Path) -> Result<Value, Failure> {
    let raw = std::fs::read_to_string(path).map_err(|e| bad(format!("{}: {e}", path.display())))?;
    serde_json::from_str(&raw).map_err(|e| bad(format!("{}: not valid JSON: {e}", path.display())))
}

fn plan_import(a: &ImportArgs, from: &Path, state: &Path) -> Result<Plan, Failure> {
    let mut plan = Plan::default();
    let main_key = plan_config(a, from, state, &mut plan)?;
    plan_agents(from, state, &main_key, &mut plan)?;
    plan.copy_folder("skills", from, state);
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
    let left = left_behind(from, &plan);
    if !left.is_empty() {
        plan.notes.push(format!(
            "not imported (no ferroclaw counterpart yet, or rebuilt by ferroclaw): {}",
            left.join(", ")
        ));
    }
    Ok(plan)
}

/// `openclaw.json` converted (the workspace copied when there is none);
/// returns the main session key it names.
fn plan_config(
    a: &ImportArgs,
    from: &Path,
    state: &Path,
    plan: &mut Plan,
) -> Result<String, Failure> {
    let cfg_path = from.join("openclaw.json");
    if !cfg_path.is_file() {
        plan.notes
            .push("no openclaw.json: the config was not changed".into());
        plan.copy_folder("workspace", from, state);
        return Ok("main".into());
    }
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
    let main_key = parsed
        .pointer("/session/mainKey")
        .and_then(Value::as_str)
        .unwrap_or("main")
        .to_string();
    let cfg = convert_config(parsed, from, state, a.home.as_deref(), plan)?;
    let text = serde_json::to_string_pretty(&cfg).map_err(|e| bad(e.to_string()))?;
    plan.config_text = Some(format!(
        "// Imported from {} by `ferroclaw import`.\n{text}\n",
        cfg_path.display()
    ));
    Ok(main_key)
}

/// Each `agents/<id>/`: its sessions, its auth profiles.
fn plan_agents(from: &Path, state: &Path, main_key: &str, plan: &mut Plan) -> Result<(), Failure> {
    let agents_dir = from.join("agents");
    if !agents_dir.is_dir() {
        return Ok(());
    }
    let now = ferroclaw_actors::now_ms();
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
            let read = openclaw::read_sessions_dir(&sessions, &agent, main_key, now)
                .map_err(|e| bad(e.to_string()))?;
            plan.sessions.extend(read.sessions);
            plan.notes.extend(read.notes);
        }
        let profiles = dir.join("agent").join("auth-profiles.json");
        if profiles.is_file() {
            read_json(&profiles)?;
            let dest = state.join("agents").join(&agent).join("agent");
            plan.copies.push(Copy {
                label: "auth profiles",
                src: profiles,
                dest: dest.join("auth-profiles.json"),
                secret: true,
            });
        }
    }
    Ok(())
}

/// What stays behind, by top-level name.
fn left_behind(from: &Path, plan: &Plan) -> Vec<String> {
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
    left
}

// ---- writing --------------------------------------------------------------

/// `import`.
pub async fn import(a: ImportArgs) -> Result<(), Failure> {
    let from = source_dir(&a)?;
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
    let store = open_store(&state)?;
    let result = import_into(&a, &from, &state, plan, &store).await;
    drop(store);
    match result {
        Ok(imported) => {
            imported.print(&a, &from, &state);
            Ok(())
        }
        Err(e) => {
            if created_state {
                let _ = std::fs::remove_dir_all(&state);
            }
            Err(e)
        }
    }
}

/// `--from`, checked: a folder that looks like OpenClaw's state dir.
fn source_dir(a: &ImportArgs) -> Result<PathBuf, Failure> {
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
    Ok(from)
}

/// The ferroclaw store, its lock held (a running gateway is named).
fn open_store(state: &Path) -> Result<Store, Failure> {
    match Store::open(state) {
        Ok(s) => Ok(s),
        Err(StoreError::AlreadyInUse { dir }) => Err(Failure::new(
            1,
            format!(
                "the state dir {} is in use by a running gateway; stop it, then run the import again",
                dir.display()
            ),
        )),
        Err(e) => Err(Failure::new(1, format!("{e}; nothing was imported"))),
    }
}

/// What an import did, for its report.
struct Imported {
    done: Done,
    notes: Vec<String>,
    kept: usize,
    had_config: bool,
}

/// The plan applied (after the conflicts are checked), then the cron jobs,
/// then the store flushed.
async fn import_into(
    a: &ImportArgs,
    from: &Path,
    state: &Path,
    mut plan: Plan,
    store: &Store,
) -> Result<Imported, Failure> {
    let keys = openclaw::conflicting_keys(store, &plan.sessions)
        .map_err(|e| Failure::new(1, format!("{e}; nothing was imported")))?;
    refuse_conflicts(a, &plan, &keys, state)?;
    let mut notes = std::mem::take(&mut plan.notes);
    let kept = plan.kept_keys;
    let had_config = plan.config_text.is_some();
    let done = apply(a, plan, store, keys).await?;
    // The agents the import brings (their folders), besides the default.
    let agents: Vec<String> = std::fs::read_dir(from.join("agents"))
        .map(|d| {
            d.flatten()
                .filter_map(|e| e.file_name().to_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    let (_, cron_notes) = cron::import_jobs(from, store, a.force, &agents)?;
    store
        .flush()
        .await
        .map_err(|e| Failure::new(1, e.to_string()))?;
    notes.extend(cron_notes);
    Ok(Imported {
        done,
        notes,
        kept,
        had_config,
    })
}

/// What exists already is a conflict (nothing is imported) unless
/// `--force`.
fn refuse_conflicts(
    a: &ImportArgs,
    plan: &Plan,
    keys: &[String],
    state: &Path,
) -> Result<(), Failure> {
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
    if conflicts.is_empty() || a.force {
        return Ok(());
    }
    let shown: Vec<&str> = conflicts.iter().take(3).map(String::as_str).collect();
    Err(Failure::new(
        1,
        format!(
            "{} thing(s) already exist in {}: {}{}; nothing was imported (pass --force to replace them; the old ones are kept as backups)",
            conflicts.len(),
            state.display(),
            shown.join(", "),
            if conflicts.len() > 3 { ", ..." } else { "" }
        ),
    ))
}

impl Imported {
    fn print(&self, a: &ImportArgs, from: &Path, state: &Path) {
        let (done, kept) = (&self.done, self.kept);
        if a.json {
            print_json(&json!({
                "from": from.display().to_string(),
                "stateDir": state.display().to_string(),
                "config": self.had_config.then(|| a.config_path.display().to_string()),
                "configKeys": kept,
                "sessions": done.sessions,
                "transcriptLines": done.lines,
                "copied": done.copied.iter().map(|(label, src, dest, files)| json!({
                    "what": label, "from": src.display().to_string(), "to": dest.display().to_string(), "files": files,
                })).collect::<Vec<_>>(),
                "backups": done.backups.iter().map(|b| b.display().to_string()).collect::<Vec<_>>(),
                "notes": self.notes,
            }));
            return;
        }
        println!("imported {} into {}:", from.display(), state.display());
        if self.had_config {
            println!("  config: {} ({kept} settings)", a.config_path.display());
        }
        println!(
            "  sessions: {} ({} transcript lines)",
            done.sessions, done.lines
        );
        for (label, src, dest, files) in &done.copied {
            let s = if *files == 1 { "" } else { "s" };
            println!(
                "  {label}: {} -> {} ({files} file{s})",
                src.display(),
                dest.display()
            );
        }
        for b in &done.backups {
            println!("  kept the replaced data in {}", b.display());
        }
        if !self.notes.is_empty() {
            println!("notes:");
            for n in &self.notes {
                println!("  - {n}");
            }
        }
        println!(
            "start the gateway with: ferroclaw gateway --state-dir {}",
            state.display()
        );
    }
}
