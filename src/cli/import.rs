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
use std::sync::Arc;

use ferroclaw::config;
use ferroclaw_actors::openclaw::{self, ImportedSession};
use ferroclaw_actors::store::{Store, StoreError};
use serde_json::{json, Value};

use super::export::{finish_file, write_lines, SessionsTree};
use super::{print_json, Failure};

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

fn bad(message: impl Into<String>) -> Failure {
    Failure::new(2, format!("{}; nothing was imported", message.into()))
}

// ---- config -----------------------------------------------------------

#[derive(Debug, PartialEq)]
enum Seg {
    Key(String),
    Index(usize),
}

/// Path segments from `a.b[0].c` (serde_path_to_error) or `a.b.0.c`
/// (serde_ignored; `?` segments mark options and are skipped).
fn segments(path: &str) -> Vec<Seg> {
    let mut out = Vec::new();
    for part in path.split('.').filter(|p| !p.is_empty() && *p != "?") {
        let mut rest = part;
        if let Some(i) = rest.find('[') {
            out.push(Seg::Key(rest[..i].to_string()));
            rest = &rest[i..];
            while let Some(r) = rest.strip_prefix('[') {
                let Some((n, tail)) = r.split_once(']') else {
                    break;
                };
                if let Ok(n) = n.parse() {
                    out.push(Seg::Index(n));
                }
                rest = tail;
            }
        } else if let Ok(n) = rest.parse::<usize>() {
            out.push(Seg::Index(n));
        } else {
            out.push(Seg::Key(rest.to_string()));
        }
    }
    out
}

/// Removes the value at `path`; true when something was removed.
fn remove_path(v: &mut Value, path: &str) -> bool {
    let segs = segments(path);
    let Some((last, parents)) = segs.split_last() else {
        return false;
    };
    let mut cur = v;
    for s in parents {
        let next = match s {
            Seg::Key(k) => cur.get_mut(k.as_str()),
            Seg::Index(i) => cur.get_mut(*i),
        };
        match next {
            Some(n) => cur = n,
            None => return false,
        }
    }
    match (last, cur) {
        (Seg::Key(k), Value::Object(m)) => m.remove(k).is_some(),
        (Seg::Index(i), Value::Array(a)) if *i < a.len() => {
            a.remove(*i);
            true
        }
        _ => false,
    }
}

/// The config key a start-time error names (`tools.web.fetch.maxChars must
/// be ...` -> `tools.web.fetch.maxChars`).
fn key_in_message(message: &str) -> Option<String> {
    let key: String = message
        .trim()
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '[' | ']'))
        .collect();
    let key = key.trim_end_matches('.').to_string();
    key.contains('.').then_some(key)
}

fn expand(raw: &str, home: Option<&Path>, base: &Path) -> PathBuf {
    let p = match (raw.strip_prefix("~/"), raw == "~", home) {
        (Some(rest), _, Some(h)) => h.join(rest),
        (_, true, Some(h)) => h.to_path_buf(),
        _ => PathBuf::from(raw),
    };
    if p.is_absolute() {
        p
    } else {
        base.join(p)
    }
}

fn valid_bind(cfg: &Value) -> bool {
    let bind = cfg.pointer("/gateway/bind").and_then(Value::as_str);
    match bind {
        None | Some("loopback" | "localhost" | "lan" | "auto") => true,
        Some("custom") => cfg
            .pointer("/gateway/host")
            .and_then(Value::as_str)
            .is_some_and(|h| h.parse::<std::net::IpAddr>().is_ok()),
        Some(ip) => ip.parse::<std::net::IpAddr>().is_ok(),
    }
}

/// Plans the workspace at `ptr` (a config pointer, or the default when the
/// key is absent): one under the OpenClaw state dir is copied to the same
/// place under the ferroclaw state dir (and the key follows it, or goes when
/// it is the default); one elsewhere stays where it is.
fn plan_workspace(
    cfg: &mut Value,
    ptr: &str,
    default: Option<&Path>,
    from: &Path,
    state: &Path,
    home: Option<&Path>,
    plan: &mut Plan,
) {
    let configured = cfg.pointer(ptr).and_then(Value::as_str).map(str::to_string);
    let src = match (&configured, default) {
        (Some(raw), _) => expand(raw, home, from),
        (None, Some(d)) => d.to_path_buf(),
        (None, None) => return,
    };
    let src = src.canonicalize().unwrap_or(src);
    let inside = src.strip_prefix(from).ok().map(Path::to_path_buf);
    let default_dest = state.join("workspace");
    match inside {
        Some(rel) if !rel.as_os_str().is_empty() => {
            let dest = state.join(&rel);
            if src.is_dir() {
                plan.copies.push(Copy {
                    label: "workspace",
                    src: src.clone(),
                    dest: dest.clone(),
                });
            } else if configured.is_some() {
                plan.notes.push(format!(
                    "workspace {} (from {ptr}) does not exist; nothing copied",
                    src.display()
                ));
            }
            if let Some((parent, key)) = ptr.rsplit_once('/') {
                if let Some(Value::Object(m)) = cfg.pointer_mut(parent) {
                    if dest == default_dest && ptr == "/agents/defaults/workspace" {
                        m.remove(key);
                    } else if configured.is_some() {
                        m.insert(key.into(), json!(dest.display().to_string()));
                    }
                }
            }
        }
        _ => {
            if let Some(Value::Object(m)) =
                ptr.rsplit_once('/').and_then(|(p, _)| cfg.pointer_mut(p))
            {
                if let Some(key) = ptr.rsplit('/').next() {
                    m.insert(key.into(), json!(src.display().to_string()));
                }
            }
            plan.notes.push(format!(
                "workspace {} is outside {}: left where it is, and the config points at it",
                src.display(),
                from.display()
            ));
        }
    }
}

/// Converts `openclaw.json` into a ferroclaw config: settings ferroclaw
/// takes stay as they are; the rest is left out with a note each; the
/// result passes the same checks as a gateway start.
fn convert_config(
    mut cfg: Value,
    from: &Path,
    state: &Path,
    home: Option<&Path>,
    plan: &mut Plan,
) -> Result<Value, Failure> {
    if contains_key(&cfg, "$include") {
        plan.notes.push(
            "openclaw.json uses $include: the included files were not read; merge them into the ferroclaw config by hand".into(),
        );
    }
    // Older OpenClaw configs kept the workspace under `agent.workspace`.
    if let Some(w) = cfg.pointer("/agent/workspace").cloned() {
        if cfg.pointer("/agents/defaults/workspace").is_none() {
            config::set_dotted(&mut cfg, "agents.defaults.workspace", w);
        }
    }
    let mut left_out = Vec::new();
    let settings = loop {
        if !valid_bind(&cfg) {
            let bind = cfg.pointer("/gateway/bind").cloned().unwrap_or(Value::Null);
            remove_path(&mut cfg, "gateway.bind");
            remove_path(&mut cfg, "gateway.host");
            left_out.push(format!("gateway.bind {bind} (ferroclaw binds loopback, lan, custom or an IP; loopback is used)"));
            continue;
        }
        let text = serde_json::to_string(&cfg).map_err(|e| bad(e.to_string()))?;
        match config::check_user_raw(&text, "openclaw.json") {
            Ok((_, settings, warnings)) => {
                let unknown: Vec<String> = warnings
                    .iter()
                    .filter_map(|w| w.strip_prefix("unknown config key "))
                    .filter_map(|w| w.strip_suffix(" (ignored)"))
                    .map(str::to_string)
                    .collect();
                let mut removed = false;
                for path in unknown {
                    if remove_path(&mut cfg, &path) {
                        left_out.push(format!("{path} (not a ferroclaw setting)"));
                        removed = true;
                    }
                }
                if !removed {
                    break settings;
                }
            }
            Err(config::ConfigError::Invalid { path, message, .. }) => {
                // An unsupported provider API takes its provider with it.
                let target = match path.strip_suffix(".api") {
                    Some(provider) if path.starts_with("models.providers.") => provider.to_string(),
                    _ => path.clone(),
                };
                if !remove_path(&mut cfg, &target) {
                    return Err(bad(format!("openclaw.json: {path}: {message}")));
                }
                left_out.push(format!("{target} ({message})"));
            }
            Err(e) => return Err(bad(e.to_string())),
        }
        if left_out.len() > 500 {
            return Err(bad(
                "openclaw.json: too many settings ferroclaw cannot take",
            ));
        }
    };
    // Workspaces: the default one, then each agent's.
    let default_ws = from.join("workspace");
    plan_workspace(
        &mut cfg,
        "/agents/defaults/workspace",
        Some(&default_ws),
        from,
        state,
        home,
        plan,
    );
    let agents = settings.agents.list.len();
    for i in 0..agents {
        let ptr = format!("/agents/list/{i}/workspace");
        if cfg.pointer(&ptr).is_some() {
            plan_workspace(&mut cfg, &ptr, None, from, state, home, plan);
            plan.notes.push(format!(
                "agents.list[{i}].workspace: ferroclaw runs every agent in agents.defaults.workspace for now; the copy is kept for when per-agent workspaces come"
            ));
        }
    }
    // The checks a gateway start runs; a setting they refuse is left out.
    let no_env: ferroclaw_actors::provider::hub::EnvReader = Arc::new(|_: &str| None);
    for _ in 0..50 {
        let text = serde_json::to_string(&cfg).map_err(|e| bad(e.to_string()))?;
        let (_, settings, _) = config::check_user_raw(&text, "openclaw.json")
            .map_err(|e| bad(format!("the converted config: {e}")))?;
        use ferroclaw_actors::plan::StartError;
        let failed = match ferroclaw_actors::plan::plan(&settings, state, no_env.clone()) {
            Ok(_) => {
                plan.kept_keys = count_leaves(&cfg);
                for l in left_out {
                    plan.notes.push(format!("config: left out {l}"));
                }
                return Ok(cfg);
            }
            Err(e @ (StartError::Model(_) | StartError::Provider(_))) => {
                ("agents.defaults.model".to_string(), e.to_string())
            }
            Err(e) => match key_in_message(&e.to_string()) {
                Some(key) => (key, e.to_string()),
                None => return Err(bad(format!("the converted config would not start: {e}"))),
            },
        };
        if !remove_path(&mut cfg, &failed.0) {
            return Err(bad(format!(
                "the converted config would not start: {}",
                failed.1
            )));
        }
        left_out.push(format!("{} ({})", failed.0, failed.1));
    }
    Err(bad("the converted config would not start"))
}

fn contains_key(v: &Value, key: &str) -> bool {
    match v {
        Value::Object(m) => m.contains_key(key) || m.values().any(|v| contains_key(v, key)),
        Value::Array(a) => a.iter().any(|v| contains_key(v, key)),
        _ => false,
    }
}

fn count_leaves(v: &Value) -> usize {
    match v {
        Value::Object(m) => m.values().map(count_leaves).sum(),
        Value::Array(a) if !a.is_empty() => a.iter().map(count_leaves).sum(),
        _ => 1,
    }
}

// ---- reading the OpenClaw state dir -------------------------------------

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

/// A destination that may be replaced without asking: missing, an empty
/// folder, or a workspace holding only ferroclaw's untouched first-run file.
fn replaceable(dest: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir(dest) else {
        return !dest.exists();
    };
    let names: Vec<_> = entries
        .filter_map(Result::ok)
        .map(|e| e.file_name())
        .collect();
    match names.as_slice() {
        [] => true,
        [one] if one == "BOOTSTRAP.md" => std::fs::read_to_string(dest.join("BOOTSTRAP.md"))
            .is_ok_and(|t| t == ferroclaw_actors::context::prompt::FIRST_RUN_BOOTSTRAP),
        _ => false,
    }
}

/// Copies a file or a folder tree (symlinks copied as links, special files
/// skipped). Returns the number of files copied.
fn copy_tree(src: &Path, dest: &Path) -> std::io::Result<usize> {
    if src.is_file() {
        if let Some(p) = dest.parent() {
            std::fs::create_dir_all(p)?;
        }
        std::fs::copy(src, dest)?;
        return Ok(1);
    }
    let mut files = 0;
    for entry in walkdir::WalkDir::new(src).follow_links(false) {
        let entry = entry.map_err(std::io::Error::other)?;
        let rel = entry
            .path()
            .strip_prefix(src)
            .map_err(std::io::Error::other)?;
        let target = dest.join(rel);
        let ft = entry.file_type();
        if ft.is_dir() {
            std::fs::create_dir_all(&target)?;
        } else if ft.is_file() {
            std::fs::copy(entry.path(), &target)?;
            files += 1;
        } else if ft.is_symlink() {
            let link = std::fs::read_link(entry.path())?;
            std::os::unix::fs::symlink(link, &target)?;
        }
    }
    Ok(files)
}

/// A step that moved something, and how to take it back.
enum Undo {
    /// `to` was renamed from `from`.
    Moved { from: PathBuf, to: PathBuf },
}

fn undo_all(journal: Vec<Undo>) {
    for u in journal.into_iter().rev() {
        match u {
            Undo::Moved { from, to } => {
                if let Err(e) = std::fs::rename(&to, &from) {
                    eprintln!(
                        "warning: could not move {} back to {}: {e}",
                        to.display(),
                        from.display()
                    );
                }
            }
        }
    }
}

fn rename(from: &Path, to: &Path, journal: &mut Vec<Undo>) -> std::io::Result<()> {
    if let Some(p) = to.parent() {
        std::fs::create_dir_all(p)?;
    }
    std::fs::rename(from, to)?;
    journal.push(Undo::Moved {
        from: from.to_path_buf(),
        to: to.to_path_buf(),
    });
    Ok(())
}

fn with_suffix(p: &Path, suffix: &str) -> PathBuf {
    let mut s = p.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

/// Writes the sessions `--force` replaces as an export (their rows and
/// transcripts) under `dir`.
fn back_up_sessions(store: &Store, keys: &[String], dir: &Path) -> Result<(), String> {
    let mut tree = SessionsTree::new(dir.to_path_buf());
    for key in keys {
        let Some(entry) = store
            .get::<ferroclaw_actors::session::SessionEntry>(
                ferroclaw_actors::store::Tree::Sessions,
                key,
            )
            .map_err(|e| e.to_string())?
        else {
            continue;
        };
        let agent = key.split(':').nth(1).unwrap_or("main");
        let entries = ferroclaw_actors::transcript::entries(store, &entry.session_id)
            .map_err(|e| e.to_string())?;
        let (path, mut w) = tree.open_transcript(
            agent,
            key,
            &entry.session_id,
            openclaw::openclaw_row(&entry),
        )?;
        write_lines(&mut w, &entries, &path)?;
        finish_file(w, &path)?;
    }
    tree.write_indexes()
}

struct Done {
    copied: Vec<(String, PathBuf, PathBuf, usize)>,
    backups: Vec<PathBuf>,
    sessions: usize,
    lines: usize,
}

async fn apply(
    a: &ImportArgs,
    plan: Plan,
    store: &Store,
    conflicts_keys: Vec<String>,
) -> Result<Done, Failure> {
    let stamp = ferroclaw_actors::now_ms() / 1000;
    let staging = a.state.join(format!(".import-{}", ulid::Ulid::generate()));
    let fail = |what: String, e: &dyn std::fmt::Display| {
        Failure::new(1, format!("{what}: {e}; nothing was imported"))
    };
    std::fs::create_dir_all(&staging)
        .map_err(|e| fail(format!("cannot create {}", staging.display()), &e))?;
    // The config is staged beside its destination (`--config` may be on
    // another filesystem, where a rename from the state dir would fail).
    let staged_config = a
        .config_path
        .parent()
        .unwrap_or(Path::new("."))
        .join(format!(
            ".{}.import-{}",
            a.config_path
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or("config"),
            ulid::Ulid::generate()
        ));
    let cleanup = |staging: &Path| {
        let _ = std::fs::remove_dir_all(staging);
        let _ = std::fs::remove_file(&staged_config);
    };
    // 1. Stage every copy (the slow part; nothing outside staging changes).
    let mut staged = Vec::new();
    for (i, c) in plan.copies.iter().enumerate() {
        let tmp = staging.join(format!("copy-{i}"));
        match copy_tree(&c.src, &tmp) {
            Ok(n) => staged.push((tmp, n)),
            Err(e) => {
                cleanup(&staging);
                return Err(fail(format!("cannot copy {}", c.src.display()), &e));
            }
        }
    }
    if let Some(text) = &plan.config_text {
        if let Err(e) = ferroclaw_actors::fsutil::write_atomic(&staged_config, text) {
            cleanup(&staging);
            return Err(fail("cannot write the config".into(), &e));
        }
    }
    let staged_backup = staging.join("backup");
    if !conflicts_keys.is_empty() {
        if let Err(e) = back_up_sessions(store, &conflicts_keys, &staged_backup) {
            cleanup(&staging);
            return Err(fail(
                "cannot back up the sessions being replaced".into(),
                &e,
            ));
        }
    }
    // 2. Move into place, keeping a journal to undo.
    let mut journal = Vec::new();
    let mut backups = Vec::new();
    let mut copied = Vec::new();
    let mut moves: Vec<(PathBuf, PathBuf, String, Option<PathBuf>, usize)> = plan
        .copies
        .iter()
        .zip(&staged)
        .map(|(c, (tmp, n))| {
            (
                tmp.clone(),
                c.dest.clone(),
                c.label.to_string(),
                Some(c.src.clone()),
                *n,
            )
        })
        .collect();
    if plan.config_text.is_some() {
        moves.push((
            staged_config.clone(),
            a.config_path.clone(),
            "config".into(),
            None,
            1,
        ));
    }
    if !conflicts_keys.is_empty() {
        let dest = a.state.join(format!("backup-{stamp}"));
        backups.push(dest.clone());
        moves.push((staged_backup, dest, "sessions backup".into(), None, 0));
    }
    let mut step = || -> std::io::Result<()> {
        for (i, (tmp, dest, label, src, n)) in moves.iter().enumerate() {
            if dest.exists() || dest.is_symlink() {
                let aside = if replaceable(dest) {
                    staging.join(format!("replaced-{i}"))
                } else {
                    let b = with_suffix(dest, &format!(".bak-{stamp}"));
                    backups.push(b.clone());
                    b
                };
                rename(dest, &aside, &mut journal)?;
            }
            rename(tmp, dest, &mut journal)?;
            if let Some(src) = src {
                copied.push((label.clone(), src.clone(), dest.clone(), *n));
            }
        }
        Ok(())
    };
    if let Err(e) = step() {
        undo_all(journal);
        cleanup(&staging);
        return Err(fail("cannot move the imported files into place".into(), &e));
    }
    // 3. The sessions, in one transaction.
    let sessions = plan.sessions.len();
    let lines = match openclaw::commit_import(store, plan.sessions, a.force).await {
        Ok(n) => n,
        Err(e) => {
            undo_all(journal);
            cleanup(&staging);
            return Err(fail("cannot write the sessions".into(), &e));
        }
    };
    cleanup(&staging);
    Ok(Done {
        copied,
        backups,
        sessions,
        lines,
    })
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_from_both_error_formats_remove_the_right_value() {
        let check = |path: &str, want: Value| {
            let mut v = json!({"a": {"list": [{"x": 1, "y": 2}, {"x": 3}]}, "b": 1});
            assert!(remove_path(&mut v, path), "{path}");
            assert_eq!(v, want, "{path}");
        };
        check(
            "a.list[0].x",
            json!({"a": {"list": [{"y": 2}, {"x": 3}]}, "b": 1}),
        );
        check(
            "a.list.1.x",
            json!({"a": {"list": [{"x": 1, "y": 2}, {}]}, "b": 1}),
        );
        check("a.?.list.0", json!({"a": {"list": [{"x": 3}]}, "b": 1}));
        check("b", json!({"a": {"list": [{"x": 1, "y": 2}, {"x": 3}]}}));
        let mut v = json!({"a": 1});
        assert!(!remove_path(&mut v, "a.b.c"));
        assert!(!remove_path(&mut v, "."));
    }

    #[test]
    fn keys_are_found_at_the_start_of_start_errors() {
        assert_eq!(
            key_in_message("tools.web.fetch.maxChars must be a non-negative integer").as_deref(),
            Some("tools.web.fetch.maxChars")
        );
        assert_eq!(
            key_in_message("agents.defaults.sandbox.mode: \"docker\" (off, non-main or all)")
                .as_deref(),
            Some("agents.defaults.sandbox.mode")
        );
        assert_eq!(key_in_message("no key here"), None);
    }
}
