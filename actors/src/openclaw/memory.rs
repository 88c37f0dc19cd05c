//! An OpenClaw agent's memory (its workspace's `MEMORY.md` and
//! `memory/**/*.md`) planned and copied into a ferroclaw workspace under
//! `memory/imports/openclaw/`, as OpenClaw's own memory importers copy
//! Claude's and Hermes' memory under `memory/imports/<provider>/`; the memory
//! watcher then indexes the copies. Backs `migrations.memory.plan`/`apply`.
//!
//! Trust: the source is the owner's own OpenClaw install, reached only by an
//! admin-scoped operator call; its files are copied byte for byte and never
//! read as instructions. Symlinks and other non-regular files are not
//! followed. Plain file work: no actors, no network.

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

/// The provider id `migrations.memory.*` names this importer by.
pub const PROVIDER_ID: &str = "openclaw";
/// OpenClaw's cap on the items of one memory import.
pub const MAX_ITEMS: usize = 2000;
/// The largest memory file copied: what the memory index takes.
pub use crate::memory::files::MAX_FILE_BYTES;
/// OpenClaw's reason for an item whose target is already there.
pub const TARGET_EXISTS: &str = "target exists";

#[derive(Debug, thiserror::Error)]
pub enum MemoryImportError {
    #[error("cannot read {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: not a valid OpenClaw config: {message}")]
    Config { path: PathBuf, message: String },
    #[error("memory import found {0} items; the maximum is {MAX_ITEMS}. Narrow or split the source memory before importing.")]
    TooMany(usize),
}

/// Where an OpenClaw install keeps its state, as OpenClaw finds it:
/// `OPENCLAW_STATE_DIR`, else `~/.openclaw`.
pub fn state_dir(env_state: Option<&str>, home: Option<&Path>) -> Option<PathBuf> {
    match env_state.map(str::trim).filter(|s| !s.is_empty()) {
        Some(s) => Some(expand_home(s, home)),
        None => home.map(|h| h.join(".openclaw")),
    }
}

fn expand_home(p: &str, home: Option<&Path>) -> PathBuf {
    match (p.strip_prefix("~/"), home) {
        (Some(rest), Some(h)) => h.join(rest),
        _ if p == "~" => home.map_or_else(|| PathBuf::from(p), Path::to_path_buf),
        _ => PathBuf::from(p),
    }
}

/// The workspace OpenClaw gives `agent` (its `resolveAgentWorkspaceDir`):
/// the agent's own `workspace`; for the default agent
/// `agents.defaults.workspace`, else `<state>/workspace`; for another agent
/// `<agents.defaults.workspace>/<id>`, else `<state>/workspace-<id>`.
pub fn agent_workspace(
    root: &Path,
    home: Option<&Path>,
    agent: &str,
) -> Result<PathBuf, MemoryImportError> {
    let cfg_path = root.join("openclaw.json");
    let cfg: Value = match std::fs::read_to_string(&cfg_path) {
        Ok(raw) => json5::from_str(&raw).map_err(|e| MemoryImportError::Config {
            path: cfg_path.clone(),
            message: e.to_string(),
        })?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Value::Null,
        Err(source) => {
            return Err(MemoryImportError::Io {
                path: cfg_path,
                source,
            })
        }
    };
    let text = |v: Option<&Value>| {
        v.and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(|s| expand_home(s, home))
    };
    let list = cfg
        .pointer("/agents/list")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let id_of = |a: &Value| a["id"].as_str().unwrap_or("").to_ascii_lowercase();
    if let Some(own) = text(
        list.iter()
            .find(|a| id_of(a) == agent)
            .map(|a| &a["workspace"]),
    ) {
        return Ok(own);
    }
    let default = list
        .iter()
        .find(|a| a["default"] == Value::Bool(true))
        .or_else(|| list.first())
        .map_or_else(|| "main".to_string(), id_of);
    let fallback = text(cfg.pointer("/agents/defaults/workspace"));
    Ok(match (agent == default, fallback) {
        (true, Some(ws)) => ws,
        (true, None) => root.join("workspace"),
        (false, Some(ws)) => ws.join(agent),
        (false, None) => root.join(format!("workspace-{agent}")),
    })
}

/// What happens, or happened, to one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ItemStatus {
    Planned,
    Migrated,
    Skipped,
    Conflict,
    Error,
}

/// One memory file and where it goes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Item {
    /// `memory:<relative path>`.
    pub id: String,
    pub status: ItemStatus,
    pub source: PathBuf,
    pub target: PathBuf,
    /// Its path under the OpenClaw workspace (`MEMORY.md`, `memory/x.md`).
    pub relative: String,
    pub size: u64,
    /// The source's modification time: a file edited after the plan
    /// changes the plan's fingerprint.
    pub modified_ms: u64,
    pub reason: Option<String>,
    /// Where a replaced target was kept (apply with overwrite).
    pub backup: Option<PathBuf>,
}

/// An import worked out before anything is written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Plan {
    /// The OpenClaw agent workspace the memory is read from.
    pub from: PathBuf,
    /// The ferroclaw agent workspace it goes into.
    pub target: PathBuf,
    pub items: Vec<Item>,
}

impl Plan {
    /// A stable digest of the plan (what is copied where, in which state,
    /// with each source's size and time): `apply` refuses a plan that
    /// changed since the operator saw it.
    pub fn fingerprint(&self, agent: &str, overwrite: bool) -> String {
        let text =
            serde_json::to_string(&(1, agent, PROVIDER_ID, overwrite, self)).unwrap_or_default();
        Sha256::digest(text.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }
}

/// The memory files of the workspace `from`: `MEMORY.md` (or `memory.md`)
/// and every regular `*.md` under `memory/`, by relative path.
fn memory_files(from: &Path) -> Vec<(String, std::fs::Metadata)> {
    let mut found = Vec::new();
    for name in ["MEMORY.md", "memory.md"] {
        if let Ok(m) = std::fs::symlink_metadata(from.join(name)) {
            if m.is_file() {
                found.push((name.to_string(), m));
                break;
            }
        }
    }
    let dir = from.join("memory");
    let walker = walkdir::WalkDir::new(&dir)
        .follow_links(false)
        .sort_by_file_name();
    for entry in walker.into_iter().filter_map(Result::ok) {
        let is_md = entry.path().extension().is_some_and(|e| e == "md");
        let (Ok(m), true) = (entry.metadata(), is_md) else {
            continue;
        };
        let Ok(rel) = entry.path().strip_prefix(from) else {
            continue;
        };
        if m.is_file() {
            found.push((rel.to_string_lossy().replace('\\', "/"), m));
        }
    }
    found
}

/// The plan for copying `from`'s memory into `target`'s
/// `memory/imports/openclaw/`. A target already there is a conflict unless
/// `overwrite`; when `from` is `target` (ferroclaw runs in the OpenClaw
/// workspace itself) its memory is indexed where it is: every item skipped.
pub fn plan(from: &Path, target: &Path, overwrite: bool) -> Result<Plan, MemoryImportError> {
    let files = memory_files(from);
    if files.len() > MAX_ITEMS {
        return Err(MemoryImportError::TooMany(files.len()));
    }
    let same = match (std::fs::canonicalize(from), std::fs::canonicalize(target)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    let root = target.join("memory").join("imports").join(PROVIDER_ID);
    let items = files
        .into_iter()
        .map(|(relative, m)| {
            let dest = root.join(&relative);
            let (status, reason) = status_of(&dest, &m, same, overwrite);
            Item {
                id: format!("memory:{relative}"),
                status,
                source: from.join(&relative),
                target: dest,
                size: m.len(),
                modified_ms: modified_ms(&m),
                relative,
                reason: reason.map(str::to_string),
                backup: None,
            }
        })
        .collect();
    Ok(Plan {
        from: from.to_path_buf(),
        target: target.to_path_buf(),
        items,
    })
}

fn modified_ms(m: &std::fs::Metadata) -> u64 {
    m.modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_millis() as u64)
}

fn status_of(
    dest: &Path,
    source: &std::fs::Metadata,
    same: bool,
    overwrite: bool,
) -> (ItemStatus, Option<&'static str>) {
    if same {
        return (
            ItemStatus::Skipped,
            Some("this agent's workspace is that OpenClaw workspace: its memory is indexed where it is"),
        );
    }
    if source.len() > MAX_FILE_BYTES {
        return (
            ItemStatus::Skipped,
            Some("larger than the memory index takes (2 MB)"),
        );
    }
    match std::fs::symlink_metadata(dest) {
        Ok(m) if !m.is_file() => (ItemStatus::Conflict, Some("target is not a regular file")),
        Ok(_) if !overwrite => (ItemStatus::Conflict, Some(TARGET_EXISTS)),
        _ => (ItemStatus::Planned, None),
    }
}

/// Copies the plan's items named in `ids` (each planned, or a conflict when
/// `overwrite`; the caller checked). Each file lands whole (written beside
/// its target, then renamed); a replaced target is kept first as
/// `<target>.bak-<now_ms>`. Returns the items with what happened to each.
pub fn apply(plan: &Plan, ids: &[String], now_ms: u64) -> Vec<Item> {
    let ids: std::collections::HashSet<&str> = ids.iter().map(String::as_str).collect();
    plan.items
        .iter()
        .filter(|i| ids.contains(i.id.as_str()))
        .map(|i| {
            let mut done = i.clone();
            match copy_one(&plan.target, i, now_ms) {
                Ok(backup) => {
                    done.status = ItemStatus::Migrated;
                    done.reason = None;
                    done.backup = backup;
                }
                Err(e) => {
                    done.status = ItemStatus::Error;
                    done.reason = Some(e.to_string());
                }
            }
            done
        })
        .collect()
}

/// Every folder between the workspace and `dir` that exists is a real
/// folder, not a symlink: the workspace is the agent's to write, and a link
/// it planted at `memory/imports/openclaw` must not send the copies out of
/// it.
fn no_link_between(workspace: &Path, dir: &Path) -> std::io::Result<()> {
    let inside = dir
        .strip_prefix(workspace)
        .map_err(|_| std::io::Error::other("target is outside the workspace"))?;
    let mut at = workspace.to_path_buf();
    for part in inside.components() {
        at.push(part);
        match std::fs::symlink_metadata(&at) {
            Ok(m) if !m.is_dir() => {
                return Err(std::io::Error::other(format!(
                    "{} is not a folder (a link is not followed)",
                    at.display()
                )))
            }
            _ => {}
        }
    }
    Ok(())
}

fn copy_one(workspace: &Path, i: &Item, now_ms: u64) -> std::io::Result<Option<PathBuf>> {
    let source = std::fs::symlink_metadata(&i.source)?;
    if !source.is_file() {
        return Err(std::io::Error::other("source is not a regular file"));
    }
    let bytes = std::fs::read(&i.source)?;
    let dir = i.target.parent().unwrap_or(Path::new("."));
    no_link_between(workspace, dir)?;
    std::fs::create_dir_all(dir)?;
    let backup = match std::fs::symlink_metadata(&i.target) {
        Ok(m) if m.is_file() => {
            let name = i.target.file_name().unwrap_or_default().to_string_lossy();
            let kept = dir.join(format!("{name}.bak-{now_ms}"));
            std::fs::copy(&i.target, &kept)?;
            Some(kept)
        }
        Ok(_) => return Err(std::io::Error::other("target is not a regular file")),
        Err(_) => None,
    };
    let staged = dir.join(format!(".import-{now_ms}-{}", std::process::id()));
    std::fs::write(&staged, &bytes)?;
    std::fs::rename(&staged, &i.target).inspect_err(|_| {
        let _ = std::fs::remove_file(&staged);
    })?;
    Ok(backup)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(p: &Path, text: &str) {
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    #[test]
    fn openclaws_workspace_rules_pick_the_agents_folder() {
        let root = tempfile::tempdir().unwrap();
        let home = Path::new("/home/u");
        let ws = |agent: &str| agent_workspace(root.path(), Some(home), agent).unwrap();
        assert_eq!(ws("main"), root.path().join("workspace"));
        assert_eq!(ws("ops"), root.path().join("workspace-ops"));
        write(
            &root.path().join("openclaw.json"),
            "{ agents: { defaults: { workspace: '~/ws' }, list: [ { id: 'Ops', default: true }, { id: 'doc', workspace: '/srv/doc' } ] } }",
        );
        assert_eq!(ws("ops"), home.join("ws"));
        assert_eq!(ws("main"), home.join("ws/main"));
        assert_eq!(ws("doc"), PathBuf::from("/srv/doc"));
        write(&root.path().join("openclaw.json"), "{ agents: ");
        assert!(matches!(
            agent_workspace(root.path(), Some(home), "main"),
            Err(MemoryImportError::Config { .. })
        ));
        assert_eq!(state_dir(None, Some(home)), Some(home.join(".openclaw")));
        assert_eq!(state_dir(Some("~/oc"), Some(home)), Some(home.join("oc")));
    }

    #[test]
    fn a_plan_copies_memory_files_and_apply_keeps_what_it_replaces() {
        let from = tempfile::tempdir().unwrap();
        let to = tempfile::tempdir().unwrap();
        write(&from.path().join("MEMORY.md"), "likes tea");
        write(&from.path().join("memory/2026-11-01.md"), "met Ana");
        write(&from.path().join("memory/notes.txt"), "not memory");
        write(&from.path().join("AGENTS.md"), "not memory either");
        #[cfg(unix)]
        std::os::unix::fs::symlink("/etc/passwd", from.path().join("memory/passwd.md")).unwrap();
        let p = plan(from.path(), to.path(), false).unwrap();
        let ids: Vec<&str> = p.items.iter().map(|i| i.id.as_str()).collect();
        assert_eq!(ids, ["memory:MEMORY.md", "memory:memory/2026-11-01.md"]);
        assert!(p.items.iter().all(|i| i.status == ItemStatus::Planned));
        let fp = p.fingerprint("main", false);
        assert_eq!(fp.len(), 64);
        assert_eq!(
            fp,
            plan(from.path(), to.path(), false)
                .unwrap()
                .fingerprint("main", false)
        );

        let all: Vec<String> = p.items.iter().map(|i| i.id.clone()).collect();
        let done = apply(&p, &all, 7);
        assert!(
            done.iter().all(|i| i.status == ItemStatus::Migrated),
            "{done:?}"
        );
        let dest = to
            .path()
            .join("memory/imports/openclaw/memory/2026-11-01.md");
        assert_eq!(std::fs::read_to_string(&dest).unwrap(), "met Ana");

        // Now there: a conflict, and a changed fingerprint.
        let again = plan(from.path(), to.path(), false).unwrap();
        assert!(again.items.iter().all(|i| i.status == ItemStatus::Conflict));
        assert_eq!(again.items[0].reason.as_deref(), Some(TARGET_EXISTS));
        assert_ne!(again.fingerprint("main", false), fp);
        write(&from.path().join("MEMORY.md"), "likes coffee now");
        let replace = plan(from.path(), to.path(), true).unwrap();
        let done = apply(&replace, &["memory:MEMORY.md".to_string()], 9);
        assert_eq!(done.len(), 1);
        let kept = done[0].backup.clone().unwrap();
        assert_eq!(std::fs::read_to_string(kept).unwrap(), "likes tea");
        let target = to.path().join("memory/imports/openclaw/MEMORY.md");
        assert_eq!(std::fs::read_to_string(target).unwrap(), "likes coffee now");
    }

    #[cfg(unix)]
    #[test]
    fn a_link_planted_in_the_workspace_does_not_send_the_copies_out_of_it() {
        let from = tempfile::tempdir().unwrap();
        let to = tempfile::tempdir().unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        write(&from.path().join("MEMORY.md"), "likes tea");
        std::fs::create_dir_all(to.path().join("memory/imports")).unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), to.path().join("memory/imports/openclaw"))
            .unwrap();
        let p = plan(from.path(), to.path(), false).unwrap();
        let done = apply(&p, &["memory:MEMORY.md".to_string()], 1);
        assert_eq!(done[0].status, ItemStatus::Error, "{done:?}");
        assert!(done[0].reason.as_deref().unwrap().contains("not a folder"));
        assert_eq!(std::fs::read_dir(elsewhere.path()).unwrap().count(), 0);
    }

    #[test]
    fn the_same_workspace_is_indexed_where_it_is() {
        let ws = tempfile::tempdir().unwrap();
        write(&ws.path().join("MEMORY.md"), "x");
        let p = plan(ws.path(), ws.path(), false).unwrap();
        assert_eq!(p.items.len(), 1);
        assert_eq!(p.items[0].status, ItemStatus::Skipped);
    }
}
