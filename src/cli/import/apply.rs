//! Moving a checked import into place: staged copies renamed with a
//! journal that undoes them, backups of replaced sessions, the one-
//! transaction session commit.

use std::path::{Path, PathBuf};

use ferroclaw_actors::openclaw;
use ferroclaw_actors::store::Store;

use super::{ImportArgs, Plan};
use crate::cli::export::{finish_file, write_lines, ExportError, SessionsTree};
use crate::cli::Failure;

/// A destination that may be replaced without asking: missing, an empty
/// folder, or a workspace holding only ferroclaw's untouched first-run file.
pub(super) fn replaceable(dest: &Path) -> bool {
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
        ferroclaw_actors::fsutil::private_dir(p)?;
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
fn back_up_sessions(store: &Store, keys: &[String], dir: &Path) -> Result<(), ExportError> {
    let mut tree = SessionsTree::new(dir.to_path_buf());
    for key in keys {
        let Some(entry) = store.get::<ferroclaw_actors::session::SessionEntry>(
            ferroclaw_actors::store::Tree::Sessions,
            key,
        )?
        else {
            continue;
        };
        let agent = ferroclaw_actors::ids::key::agent(key);
        let entries = ferroclaw_actors::transcript::entries(store, &entry.session_id)?;
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

pub(super) struct Done {
    pub(super) copied: Vec<(String, PathBuf, PathBuf, usize)>,
    pub(super) backups: Vec<PathBuf>,
    pub(super) sessions: usize,
    pub(super) lines: usize,
}

/// Where an import stages what it writes: a folder in the state dir, and
/// the config beside its destination (`--config` may be on another
/// filesystem, where a rename from the state dir would fail).
struct Staging {
    dir: PathBuf,
    config: PathBuf,
}

impl Staging {
    fn new(a: &ImportArgs) -> Staging {
        let name = a
            .config_path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("config");
        Staging {
            dir: a.state.join(format!(".import-{}", ulid::Ulid::generate())),
            config: a
                .config_path
                .parent()
                .unwrap_or(Path::new("."))
                .join(format!(".{name}.import-{}", ulid::Ulid::generate())),
        }
    }

    fn cleanup(&self) {
        let _ = std::fs::remove_dir_all(&self.dir);
        let _ = std::fs::remove_file(&self.config);
    }
}

/// An import's failure: what could not be done, and that nothing was
/// imported.
fn fail(what: impl std::fmt::Display, e: &dyn std::fmt::Display) -> Failure {
    Failure::new(1, format!("{what}: {e}; nothing was imported"))
}

/// One staged thing and where it goes: `(staged, dest, label, source,
/// files)`.
type Move = (PathBuf, PathBuf, String, Option<PathBuf>, usize);

pub(super) async fn apply(
    a: &ImportArgs,
    plan: Plan,
    store: &Store,
    conflicts_keys: Vec<String>,
) -> Result<Done, Failure> {
    let stamp = ferroclaw_actors::now_ms() / 1000;
    let staging = Staging::new(a);
    ferroclaw_actors::fsutil::private_dir(&staging.dir)
        .map_err(|e| fail(format!("cannot create {}", staging.dir.display()), &e))?;
    // 1. Stage every copy (the slow part; nothing outside staging changes).
    let (moves, backup) = match stage(a, &plan, store, &conflicts_keys, &staging, stamp) {
        Ok(staged) => staged,
        Err(e) => {
            staging.cleanup();
            return Err(e);
        }
    };
    // 2. Move into place, keeping a journal to undo.
    let mut journal = Vec::new();
    let mut backups: Vec<PathBuf> = backup.into_iter().collect();
    let copied = match move_into_place(&moves, &staging, stamp, &mut journal, &mut backups) {
        Ok(c) => c,
        Err(e) => {
            undo_all(journal);
            staging.cleanup();
            return Err(fail("cannot move the imported files into place", &e));
        }
    };
    // 3. The sessions, in one transaction.
    let sessions = plan.sessions.len();
    let lines = match openclaw::commit_import(store, plan.sessions, a.force).await {
        Ok(n) => n,
        Err(e) => {
            undo_all(journal);
            staging.cleanup();
            return Err(fail("cannot write the sessions", &e));
        }
    };
    staging.cleanup();
    Ok(Done {
        copied,
        backups,
        sessions,
        lines,
    })
}

/// Each staged thing moved to its place, what was there moved aside (into
/// staging when it may be replaced, else kept as `<name>.bak-<time>`);
/// every move is in `journal`. Returns what was copied from where.
fn move_into_place(
    moves: &[Move],
    staging: &Staging,
    stamp: u64,
    journal: &mut Vec<Undo>,
    backups: &mut Vec<PathBuf>,
) -> std::io::Result<Vec<(String, PathBuf, PathBuf, usize)>> {
    let mut copied = Vec::new();
    for (i, (tmp, dest, label, src, n)) in moves.iter().enumerate() {
        if dest.exists() || dest.is_symlink() {
            let aside = if replaceable(dest) {
                staging.dir.join(format!("replaced-{i}"))
            } else {
                let b = with_suffix(dest, &format!(".bak-{stamp}"));
                backups.push(b.clone());
                b
            };
            rename(dest, &aside, journal)?;
        }
        rename(tmp, dest, journal)?;
        if let Some(src) = src {
            copied.push((label.clone(), src.clone(), dest.clone(), *n));
        }
    }
    Ok(copied)
}

/// Every copy, the config and the backup of the sessions being replaced,
/// staged; what each staged thing becomes, and where the sessions' backup
/// goes.
fn stage(
    a: &ImportArgs,
    plan: &Plan,
    store: &Store,
    conflicts_keys: &[String],
    staging: &Staging,
    stamp: u64,
) -> Result<(Vec<Move>, Option<PathBuf>), Failure> {
    let mut moves = Vec::new();
    let mut backup = None;
    for (i, c) in plan.copies.iter().enumerate() {
        let tmp = staging.dir.join(format!("copy-{i}"));
        // Keys and the allowlist are private here whatever they were there.
        let n = copy_tree(&c.src, &tmp)
            .and_then(|n| {
                if c.secret {
                    ferroclaw_actors::fsutil::make_private(&tmp)?;
                }
                Ok(n)
            })
            .map_err(|e| fail(format!("cannot copy {}", c.src.display()), &e))?;
        let src = Some(c.src.clone());
        moves.push((tmp, c.dest.clone(), c.label.to_string(), src, n));
    }
    if let Some(text) = &plan.config_text {
        ferroclaw_actors::fsutil::write_atomic(&staging.config, text)
            .map_err(|e| fail("cannot write the config", &e))?;
        let dest = a.config_path.clone();
        moves.push((staging.config.clone(), dest, "config".into(), None, 1));
    }
    if !conflicts_keys.is_empty() {
        let staged_backup = staging.dir.join("backup");
        back_up_sessions(store, conflicts_keys, &staged_backup)
            .map_err(|e| fail("cannot back up the sessions being replaced", &e))?;
        let dest = a.state.join(format!("backup-{stamp}"));
        backup = Some(dest.clone());
        moves.push((staged_backup, dest, "sessions backup".into(), None, 0));
    }
    Ok((moves, backup))
}
