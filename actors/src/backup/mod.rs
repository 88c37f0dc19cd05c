//! `ferroclaw backup create|verify|restore`: one archive holding a
//! consistent snapshot of the store (its log, `store/snapshot.rs`), online
//! copies of the SQLite files (memory indexes, audit ledger), and every
//! other file of the state dir (config, gateway token, credentials, exec
//! approvals, media, the workspace), plus a config and workspaces kept
//! outside it. Logs, the lock and sandboxes are left out.
//!
//! Invariants: an archive is written as `<name>.partial` and renamed only
//! when whole (any failure removes the partial and the staging files); an
//! existing archive is never overwritten; a restore reads the archive once,
//! checking every entry as it writes it into a staging dir beside the
//! target, moves that in whole only when the archive passed, and moves a
//! non-empty target aside (`--force`) rather than deleting it; it writes
//! nowhere an archive names (a workspace goes back where the target's own
//! config puts it, else under `restored-workspaces/`).

use std::path::{Path, PathBuf};

pub mod archive;
mod create;
pub mod receipt;

use archive::{Manifest, Workspace, STORE_LOG};
pub use create::create;

use crate::fsutil::{make_private, private_dir, private_options};
use crate::store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum BackupError {
    /// The archive fails a check.
    #[error("{0}")]
    Invalid(String),
    /// What was asked cannot be done as asked (exit 2).
    #[error("{0}")]
    Refused(String),
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{0} changed while it was read; run the backup again")]
    Changed(String),
    #[error("{0}")]
    Store(#[from] StoreError),
}

impl BackupError {
    pub fn io(what: impl Into<String>, source: std::io::Error) -> BackupError {
        BackupError::Io {
            what: what.into(),
            source,
        }
    }
}

/// What a backup takes.
#[derive(Debug, Clone)]
pub struct Sources {
    pub state_dir: PathBuf,
    /// The config file, when it exists.
    pub config: Option<PathBuf>,
    /// Every agent's workspace.
    pub workspaces: Vec<(String, PathBuf)>,
    pub include_workspace: bool,
}

/// State dir entries never archived: the store (its log is), the lock,
/// logs and sandboxes.
const SKIPPED: &[&str] = &[
    "store",
    "ferroclaw.lock",
    crate::fsutil::RUNTIME_FILE,
    "logs",
    "sandboxes",
];

/// SQLite files copied with SQLite's online backup (their WAL and shm are
/// in the copy).
fn is_sqlite(rel: &Path) -> bool {
    let name = rel.to_string_lossy();
    name == "audit.sqlite" || (name.starts_with("memory/") && name.ends_with(".sqlite"))
}

fn is_sqlite_side(rel: &Path) -> bool {
    let name = rel.to_string_lossy();
    ["-wal", "-shm", "-journal"].iter().any(|s| {
        name.strip_suffix(s)
            .is_some_and(|db| is_sqlite(Path::new(db)))
    })
}

/// Removes what it names when dropped, unless disarmed.
struct Cleanup(Vec<PathBuf>);

impl Drop for Cleanup {
    fn drop(&mut self) {
        for p in &self.0 {
            let _ = std::fs::remove_dir_all(p).or_else(|_| std::fs::remove_file(p));
        }
    }
}

fn inside(path: &Path, dir: &Path) -> bool {
    let canon = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    canon(path).starts_with(canon(dir))
}

/// Copies a live SQLite database with SQLite's online backup: one read
/// transaction, so writers are not held up (WAL) and the copy is one
/// instant of it.
fn sqlite_copy(from: &Path, to: &Path) -> Result<(), BackupError> {
    use rusqlite::{Connection, OpenFlags};
    let err = |e: rusqlite::Error| {
        BackupError::io(
            format!("copying {}", from.display()),
            std::io::Error::other(e),
        )
    };
    let src = Connection::open_with_flags(
        from,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(err)?;
    src.busy_timeout(std::time::Duration::from_secs(10))
        .map_err(err)?;
    let mut dst = Connection::open(to).map_err(err)?;
    use rusqlite::backup::{Backup, StepResult};
    let backup = Backup::new(&src, &mut dst).map_err(err)?;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    // Every page in one step: one read transaction, one instant.
    loop {
        match backup.step(-1).map_err(err)? {
            StepResult::Done => return Ok(()),
            StepResult::More => {}
            _ if std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(50))
            }
            _ => {
                return Err(BackupError::io(
                    format!("copying {}", from.display()),
                    std::io::Error::other("the database stayed locked for 10 s"),
                ))
            }
        }
    }
}

/// How the manifest reports where something came from: the canonical
/// path (a relative `--config` or workspace would not verify as plain).
fn reported(p: &Path) -> String {
    std::fs::canonicalize(p)
        .unwrap_or_else(|_| p.to_path_buf())
        .display()
        .to_string()
}

/// A timestamped archive name (`2026-11-27T19-00-00Z-ferroclaw-backup.tar.gz`).
pub fn default_name(now: chrono::DateTime<chrono::Utc>) -> String {
    format!(
        "{}-ferroclaw-backup.tar.gz",
        now.format("%Y-%m-%dT%H-%M-%SZ")
    )
}

/// Where a restore put things.
#[derive(Debug, Clone)]
pub struct Restored {
    pub manifest: Manifest,
    /// The target's earlier contents, moved aside (`--force`).
    pub replaced: Option<PathBuf>,
    /// Workspaces: where each went (where the target's config puts that
    /// agent's workspace, else under `<target>/restored-workspaces/`).
    pub workspaces: Vec<(String, PathBuf)>,
    /// The restore's id (`gateway.restore.status` answers for it).
    pub operation_id: String,
}

fn is_empty_dir(p: &Path) -> bool {
    std::fs::read_dir(p)
        .map(|mut d| d.next().is_none())
        .unwrap_or(false)
}

/// Where an archive entry goes in the staging dir (None: read, not kept).
fn staged_at(staging: &Path, path: &str) -> Option<PathBuf> {
    if let Some(rel) = path.strip_prefix("state/") {
        Some(staging.join(rel))
    } else if path == "config/ferroclaw.json" {
        Some(staging.join("ferroclaw.json"))
    } else {
        path.strip_prefix("workspaces/")
            .map(|rel| staging.join(RESTORED_WORKSPACES).join(rel))
    }
}

/// Where a restore keeps the archived workspaces it does not put back.
pub const RESTORED_WORKSPACES: &str = "restored-workspaces";

/// Writes one checked entry to `dest`, a new file in the staging dir.
fn write_entry(dest: &Path, path: &str, data: &mut dyn std::io::Read) -> Result<(), BackupError> {
    let io = |what: String, e| BackupError::io(what, e);
    if let Some(dir) = dest.parent() {
        std::fs::create_dir_all(dir)
            .and_then(|()| make_private(dir))
            .map_err(|e| io(format!("restoring {path}"), e))?;
    }
    let mut out = private_options()
        .create_new(true)
        .write(true)
        .open(dest)
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::AlreadyExists => BackupError::Invalid(format!(
                "{path} restores to the same place as another entry"
            )),
            _ => io(format!("restoring {path}"), e),
        })?;
    std::io::copy(data, &mut out).map_err(|e| io(format!("restoring {path}"), e))?;
    Ok(())
}

/// Restores the archive `input` (read once: a file, a pipe, `/dev/stdin`)
/// into `target` (absent or empty; `force` moves a non-empty one aside).
/// A target a gateway runs on is always refused. Each entry is checked as
/// it is read and written into a staging dir beside the target, which is
/// moved in only when the whole archive passed. An archived workspace goes
/// back only where `configured` (the target's own config) puts that
/// agent's workspace, when that place is missing or empty; otherwise it
/// stays in `<target>/restored-workspaces/<agent>/`. No path read from the
/// archive is ever written to.
pub fn restore(
    input: impl std::io::Read,
    target: &Path,
    force: bool,
    configured: &[(String, PathBuf)],
) -> Result<Restored, BackupError> {
    may_restore_into(target, force)?;
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_else(|| "state".into());
    let parent = target
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let staging = parent.join(format!(".{name}.restoring-{}", std::process::id()));
    let mut cleanup = Cleanup(vec![staging.clone()]);
    private_dir(&staging).map_err(|e| BackupError::io("making the staging folder", e))?;
    let verified = archive::read(input, |path, data| {
        if path == STORE_LOG {
            return Ok(Some(crate::store::Store::restore(&staging, data)?));
        }
        if let Some(dest) = staged_at(&staging, path) {
            write_entry(&dest, path, data)?;
        }
        Ok(None)
    })?;
    let io = |what: &str, e| BackupError::io(what.to_string(), e);
    // The receipt arrives with the restored files (`gateway.restore.status`).
    let receipt = receipt::Receipt::of(&verified.manifest, crate::now_ms());
    receipt
        .write(&staging)
        .map_err(|e| io("writing the restore receipt", e))?;
    let replaced = if target.exists() && !is_empty_dir(target) {
        let aside = parent.join(format!(
            "{name}.replaced-{}",
            chrono::Utc::now().format("%Y%m%dT%H%M%SZ")
        ));
        std::fs::rename(target, &aside).map_err(|e| io("moving the old state dir aside", e))?;
        Some(aside)
    } else {
        let _ = std::fs::remove_dir(target);
        None
    };
    std::fs::rename(&staging, target).map_err(|e| io("moving the restored state dir in", e))?;
    cleanup.0.clear();
    let workspaces = place_workspaces(target, &verified.manifest.workspaces, configured);
    Ok(Restored {
        manifest: verified.manifest,
        replaced,
        workspaces,
        operation_id: receipt.operation_id,
    })
}

/// A target a restore may write: not a running gateway's, and empty
/// unless `force` (what is there is moved aside).
fn may_restore_into(target: &Path, force: bool) -> Result<(), BackupError> {
    if !target.exists() {
        return Ok(());
    }
    if crate::store::in_use(target) {
        return Err(BackupError::Refused(format!(
            "{} is in use by a running ferroclaw; stop it first",
            target.display()
        )));
    }
    if !is_empty_dir(target) && !force {
        return Err(BackupError::Refused(format!("{} is not empty: restore into an empty or new folder, or pass --force to move what is there aside", target.display())));
    }
    Ok(())
}

/// Each restored workspace moved to where the target's config puts its
/// agent's (when that is free), else left under `restored-workspaces/`;
/// where each is.
fn place_workspaces(
    target: &Path,
    restored: &[Workspace],
    configured: &[(String, PathBuf)],
) -> Vec<(String, PathBuf)> {
    let mut workspaces = Vec::new();
    let kept = target.join(RESTORED_WORKSPACES);
    for w in restored {
        // A safe name (checked by `read`): one folder under `kept`.
        let from = kept.join(&w.agent_id);
        let home = configured
            .iter()
            .find(|(agent, _)| crate::fsutil::safe_name(agent) == w.agent_id)
            .map(|(_, p)| p);
        let moved = home.is_some_and(|to| {
            (!to.exists() || is_empty_dir(to))
                && to
                    .parent()
                    .is_some_and(|p| std::fs::create_dir_all(p).is_ok())
                && (std::fs::remove_dir(to).is_ok() || !to.exists())
                && std::fs::rename(&from, to).is_ok()
        });
        workspaces.push((
            w.agent_id.clone(),
            match (moved, home) {
                (true, Some(to)) => to.clone(),
                _ => from,
            },
        ));
    }
    if is_empty_dir(&kept) {
        let _ = std::fs::remove_dir(&kept);
    }
    workspaces
}

#[cfg(test)]
mod tests;
