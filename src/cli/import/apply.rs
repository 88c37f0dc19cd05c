//! Moving a checked import into place: staged copies renamed with a
//! journal that undoes them, backups of replaced sessions, the one-
//! transaction session commit.

use std::path::{Path, PathBuf};

use ferroclaw_actors::openclaw;
use ferroclaw_actors::store::Store;

use super::{ImportArgs, Plan};
use crate::cli::export::{finish_file, write_lines, SessionsTree};
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
        let agent = ferroclaw_actors::ids::key::agent(key);
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

pub(super) struct Done {
    pub(super) copied: Vec<(String, PathBuf, PathBuf, usize)>,
    pub(super) backups: Vec<PathBuf>,
    pub(super) sessions: usize,
    pub(super) lines: usize,
}

pub(super) async fn apply(
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
    ferroclaw_actors::fsutil::private_dir(&staging)
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
        // Keys and the allowlist are private here whatever they were there.
        let copied = copy_tree(&c.src, &tmp).and_then(|n| {
            if c.secret {
                ferroclaw_actors::fsutil::make_private(&tmp)?;
            }
            Ok(n)
        });
        match copied {
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
