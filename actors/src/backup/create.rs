//! Writing an archive: the store's consistent log, the state dir (SQLite
//! files copied through SQLite), the config, the workspaces outside the
//! state dir, then the manifest; written beside the target as `.partial`
//! and renamed once whole.

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

use flate2::write::GzEncoder;

use super::archive::{self, Entry, Manifest, Workspace, MANIFEST, STORE_LOG};
use super::{
    inside, is_sqlite, is_sqlite_side, reported, sqlite_copy, BackupError, Cleanup, Sources,
    SKIPPED,
};
use crate::fsutil::{private_dir, private_options};

/// Writes the archive at `output` (which must not exist). `store_log`
/// writes the store's snapshot log into the file it is given.
pub fn create(
    src: &Sources,
    output: &Path,
    store_log: impl FnOnce(&mut File) -> Result<(), BackupError>,
) -> Result<Manifest, BackupError> {
    let dir = target_dir(src, output)?;
    let name = output
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    let partial = dir.join(format!("{name}.partial"));
    let staging = dir.join(format!(".{name}.staging"));
    // Removed at the end either way (the partial is renamed when whole).
    let _cleanup = Cleanup(vec![partial.clone(), staging.clone()]);
    private_dir(&staging).map_err(|e| BackupError::io("making the staging folder", e))?;
    // The store first: its log, made consistent by the store (or the
    // gateway that owns it), then checked.
    let log_path = staging.join("store.jsonl");
    let summary = store_snapshot(&log_path, store_log)?;
    let mut w = Writer::open(&partial)?;
    w.add(STORE_LOG, &log_path)?;
    w.add_state(src, &staging)?;
    let config = src.config.as_ref().filter(|c| c.is_file());
    if let Some(c) = config.filter(|c| !inside(c, &src.state_dir)) {
        w.add("config/ferroclaw.json", c)?;
    }
    let workspaces = w.add_workspaces(src)?;
    let manifest = Manifest {
        format: archive::FORMAT.into(),
        version: archive::VERSION,
        created_at_ms: crate::now_ms(),
        written_by: env!("CARGO_PKG_VERSION").into(),
        schema: summary.schema,
        state_dir: reported(&src.state_dir),
        config: config.map(|c| reported(c)),
        workspaces,
        store_entries: summary.entries,
        entries: std::mem::take(&mut w.entries),
    };
    w.finish(&manifest, &partial)?;
    std::fs::rename(&partial, output)
        .map_err(|e| BackupError::io(format!("writing {}", partial.display()), e))?;
    Ok(manifest)
}

/// The folder the archive goes to: never over an existing file, never
/// inside what it backs up.
fn target_dir<'a>(src: &Sources, output: &'a Path) -> Result<&'a Path, BackupError> {
    if output.exists() {
        return Err(BackupError::Refused(format!(
            "{} exists; an archive is never overwritten",
            output.display()
        )));
    }
    let mut trees = vec![src.state_dir.clone()];
    trees.extend(src.workspaces.iter().map(|(_, w)| w.clone()));
    let dir = output
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if trees.iter().any(|t| inside(dir, t)) {
        return Err(BackupError::Refused(format!(
            "{} is inside what it backs up; write it elsewhere",
            output.display()
        )));
    }
    Ok(dir)
}

/// The store's log written at `log_path`, then read back whole.
fn store_snapshot(
    log_path: &Path,
    store_log: impl FnOnce(&mut File) -> Result<(), BackupError>,
) -> Result<crate::store::snapshot::LogSummary, BackupError> {
    let mut log = private_options()
        .create_new(true)
        .write(true)
        .read(true)
        .open(log_path)
        .map_err(|e| BackupError::io("writing the store log", e))?;
    store_log(&mut log)?;
    drop(log);
    let log = File::open(log_path).map_err(|e| BackupError::io("reading the store log", e))?;
    Ok(crate::store::snapshot::read_log(
        std::io::BufReader::new(log),
        |_, _, _| Ok(()),
    )?)
}

/// The archive being written and what it holds so far.
struct Writer {
    tar: tar::Builder<GzEncoder<BufWriter<File>>>,
    entries: Vec<Entry>,
}

impl Writer {
    fn open(partial: &Path) -> Result<Writer, BackupError> {
        let file = private_options()
            .create_new(true)
            .write(true)
            .open(partial)
            .map_err(|e| BackupError::io(format!("creating {}", partial.display()), e))?;
        Ok(Writer {
            tar: tar::Builder::new(GzEncoder::new(
                BufWriter::new(file),
                flate2::Compression::default(),
            )),
            entries: Vec::new(),
        })
    }

    /// `file` at `path` in the archive.
    fn add(&mut self, path: &str, file: &Path) -> Result<(), BackupError> {
        let read = |e| BackupError::io(format!("reading {}", file.display()), e);
        let f = File::open(file).map_err(read)?;
        let size = f.metadata().map_err(read)?.len();
        self.entries
            .push(archive::append(&mut self.tar, path, size, f)?);
        Ok(())
    }

    /// The state dir under `state/`, but what is never backed up (and the
    /// workspaces when they are left out); SQLite files through a copy.
    fn add_state(&mut self, src: &Sources, staging: &Path) -> Result<(), BackupError> {
        let skip_ws: Vec<PathBuf> = if src.include_workspace {
            vec![]
        } else {
            src.workspaces.iter().map(|(_, w)| w.clone()).collect()
        };
        let mut copies = 0;
        for item in walkdir::WalkDir::new(&src.state_dir)
            .sort_by_file_name()
            .into_iter()
            .filter_entry(|e| {
                let skipped =
                    e.depth() == 1 && SKIPPED.contains(&e.file_name().to_string_lossy().as_ref());
                !skipped && !skip_ws.iter().any(|w| e.path() == w)
            })
        {
            let item = item.map_err(|e| BackupError::io("reading the state dir", e.into()))?;
            let rel = item
                .path()
                .strip_prefix(&src.state_dir)
                .unwrap_or(item.path());
            if !item.file_type().is_file() || is_sqlite_side(rel) {
                continue;
            }
            let in_archive = format!("state/{}", rel.to_string_lossy());
            if !is_sqlite(rel) {
                self.add(&in_archive, item.path())?;
                continue;
            }
            copies += 1;
            let copy = staging.join(format!("sqlite-{copies}"));
            sqlite_copy(item.path(), &copy)?;
            self.add(&in_archive, &copy)?;
            std::fs::remove_file(&copy)
                .map_err(|e| BackupError::io("removing a staging copy", e))?;
        }
        Ok(())
    }

    /// Each workspace outside the state dir under `workspaces/<agent>/`
    /// (once, however many agents share it).
    fn add_workspaces(&mut self, src: &Sources) -> Result<Vec<Workspace>, BackupError> {
        let mut outside = Vec::new();
        for (agent, ws) in src.workspaces.iter().filter(|_| src.include_workspace) {
            let seen = outside
                .iter()
                .any(|w: &Workspace| Path::new(&w.source) == ws);
            if inside(ws, &src.state_dir) || !ws.is_dir() || seen {
                continue;
            }
            let safe = crate::fsutil::safe_name(agent);
            for item in walkdir::WalkDir::new(ws).sort_by_file_name() {
                let item = item
                    .map_err(|e| BackupError::io(format!("reading {}", ws.display()), e.into()))?;
                if item.file_type().is_file() {
                    let rel = item.path().strip_prefix(ws).unwrap_or(item.path());
                    let at = format!("workspaces/{safe}/{}", rel.to_string_lossy());
                    self.add(&at, item.path())?;
                }
            }
            outside.push(Workspace {
                agent_id: safe,
                source: reported(ws),
            });
        }
        Ok(outside)
    }

    /// The manifest last, then the file synced.
    fn finish(mut self, manifest: &Manifest, partial: &Path) -> Result<(), BackupError> {
        let text = serde_json::to_vec_pretty(manifest)
            .map_err(|e| BackupError::io("manifest", e.into()))?;
        archive::append(&mut self.tar, MANIFEST, text.len() as u64, text.as_slice())?;
        let finish = |e| BackupError::io(format!("writing {}", partial.display()), e);
        let file = self
            .tar
            .into_inner()
            .map_err(finish)?
            .finish()
            .map_err(finish)?;
        let file = file.into_inner().map_err(|e| finish(e.into_error()))?;
        file.sync_all().map_err(finish)
    }
}
