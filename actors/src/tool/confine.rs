//! Workspace confinement for the file tools. A path is resolved by hand,
//! one component at a time, from the canonical workspace root: symlinks are
//! followed only while the path is inside the workspace, and the first
//! component that leads out ends the walk with "outside the workspace".
//! Invariant: nothing outside the workspace is ever looked at (no `stat`,
//! no `readlink`) to decide the answer, so the answer for an outside path is
//! the same whether or not it exists: the tools are not an existence oracle.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

use super::Workspace;
use crate::fsutil::expand_home;

crate::reason_error! {
    /// Why a path is refused: outside the workspace, or protected.
    pub struct Confined;
}

/// Symlinks followed in one resolution (as the kernel's `ELOOP` limit).
const MAX_LINKS: usize = 40;

fn outside(raw: &str) -> Confined {
    Confined(format!("{raw}: outside the workspace"))
}

/// One path component still to walk.
enum Step {
    Root,
    Up,
    Name(OsString),
}

fn steps(path: &Path) -> impl Iterator<Item = Step> + '_ {
    path.components().filter_map(|c| match c {
        Component::RootDir | Component::Prefix(_) => Some(Step::Root),
        Component::CurDir => None,
        Component::ParentDir => Some(Step::Up),
        Component::Normal(n) => Some(Step::Name(n.to_owned())),
    })
}

/// Resolves `raw` against the canonical `root` without touching anything
/// outside it. Returns the resolved path (it may not exist; everything
/// under a missing component is taken as written) or the refusal.
fn resolve(root: &Path, raw: &str) -> Result<PathBuf, Confined> {
    let start = if Path::new(raw).is_absolute() {
        PathBuf::from("/")
    } else {
        root.to_path_buf()
    };
    let mut todo: VecDeque<Step> = steps(Path::new(raw)).collect();
    let mut at = start;
    let mut links = 0;
    // Once a component is missing, nothing below it exists either.
    let mut missing = false;
    while let Some(step) = todo.pop_front() {
        match step {
            Step::Root => at = PathBuf::from("/"),
            // The kernel cannot walk `..` out of a folder that does not exist.
            Step::Up if missing => {
                return Err(Confined::from(format!(
                    "{raw}: `..` in a path that does not exist yet"
                )))
            }
            Step::Up => {
                at.pop();
            }
            Step::Name(name) => at.push(name),
        }
        if at.starts_with(root) {
            if at == root || missing {
                continue;
            }
            match at.symlink_metadata() {
                Ok(meta) if meta.file_type().is_symlink() => {
                    links += 1;
                    if links > MAX_LINKS {
                        return Err(Confined::from(format!(
                            "{raw}: too many levels of symbolic links"
                        )));
                    }
                    let target =
                        std::fs::read_link(&at).map_err(|e| Confined(format!("{raw}: {e}")))?;
                    at.pop();
                    for s in steps(&target).collect::<Vec<_>>().into_iter().rev() {
                        todo.push_front(s);
                    }
                }
                Ok(_) => {}
                Err(_) => missing = true,
            }
        } else if !root.starts_with(&at) {
            // Neither in the workspace nor on the way to it (the root is
            // canonical: its ancestors hold no symlinks to follow).
            return Err(outside(raw));
        }
    }
    if at.starts_with(root) {
        Ok(at)
    } else {
        Err(outside(raw))
    }
}

fn root_of(workspace: &Workspace) -> Result<PathBuf, Confined> {
    workspace.canonicalize().map_err(|e| {
        Confined(format!(
            "workspace {} is not usable: {e}",
            workspace.display()
        ))
    })
}

fn home_refused(raw: &str) -> Option<Confined> {
    (raw == "~" || raw.starts_with("~/")).then(|| {
        Confined(format!(
            "{raw}: outside the workspace (home paths are not allowed)"
        ))
    })
}

/// Resolves an existing path inside the workspace; `..`, absolute paths
/// outside it and symlinks leading out are refused (unless
/// `workspaceOnly` is off), the same way whether or not the target exists.
pub(crate) fn confine(workspace: &Workspace, raw: &str) -> Result<PathBuf, Confined> {
    if !workspace.only && !workspace.untrusted {
        let p = expand_home(raw).unwrap_or_else(|| workspace.root.join(raw));
        return p
            .canonicalize()
            .map_err(|e| Confined(format!("{raw}: {e}")));
    }
    if let Some(e) = home_refused(raw) {
        return Err(e);
    }
    let root = root_of(workspace)?;
    let resolved = resolve(&root, raw)?;
    guard(workspace, &root, &resolved, raw)?;
    // Inside the workspace: a missing file may say so.
    let real = resolved
        .canonicalize()
        .map_err(|e| Confined(format!("{raw}: {e}")))?;
    if real.starts_with(&root) {
        guard(workspace, &root, &real, raw)?;
        Ok(real)
    } else {
        // Swapped for a symlink between the two looks.
        Err(outside(raw))
    }
}

/// An untrusted turn's refusal of a protected file (`trust::protected`),
/// judged on the resolved path, so no link or `..` reaches one.
fn guard(workspace: &Workspace, root: &Path, at: &Path, raw: &str) -> Result<(), Confined> {
    if !workspace.untrusted {
        return Ok(());
    }
    match crate::trust::protected(at.strip_prefix(root).unwrap_or(at)) {
        Some(why) => Err(Confined::from(format!(
            "{raw}: not available to a turn that holds a message from someone who is not the operator ({why})"
        ))),
        None => Ok(()),
    }
}

/// Whether an untrusted turn's walk (ls, find, grep) skips `at`.
pub(crate) fn hidden(workspace: &Workspace, root: &Path, at: &Path) -> bool {
    guard(workspace, root, at, "").is_err()
}

/// Resolves a path that may not exist yet (write, edit, apply_patch): the
/// same walk; the result is a path strictly inside the workspace.
pub(crate) fn confine_new(workspace: &Workspace, raw: &str) -> Result<PathBuf, Confined> {
    if !workspace.only && !workspace.untrusted {
        return Ok(expand_home(raw).unwrap_or_else(|| workspace.root.join(raw)));
    }
    if let Some(e) = home_refused(raw) {
        return Err(e);
    }
    let root = root_of(workspace)?;
    let resolved = resolve(&root, raw)?;
    if resolved == root {
        return Err(Confined::from(format!("{raw}: is the workspace itself")));
    }
    guard(workspace, &root, &resolved, raw)?;
    Ok(resolved)
}

/// [`confine`] on the blocking pool: the walk stats the path and reads
/// its links, so tool calls never do it on an actor's thread.
pub(crate) async fn confined(workspace: &Workspace, raw: &str) -> Result<PathBuf, Confined> {
    let (w, r) = (workspace.clone(), raw.to_string());
    tokio::task::spawn_blocking(move || confine(&w, &r))
        .await
        .map_err(|e| Confined(format!("{raw}: {e}")))?
}

/// [`confine_new`] on the blocking pool.
pub(crate) async fn confined_new(workspace: &Workspace, raw: &str) -> Result<PathBuf, Confined> {
    let (w, r) = (workspace.clone(), raw.to_string());
    tokio::task::spawn_blocking(move || confine_new(&w, &r))
        .await
        .map_err(|e| Confined(format!("{raw}: {e}")))?
}

/// What a path is (following links), looked up without blocking: None
/// when it does not exist or cannot be looked at.
pub(crate) async fn kind_of(path: &Path) -> Option<std::fs::FileType> {
    tokio::fs::metadata(path).await.ok().map(|m| m.file_type())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ws(dir: &Path) -> Workspace {
        Workspace::from(dir)
    }

    #[test]
    fn outside_paths_get_one_answer_whether_or_not_they_exist() {
        let d = tempfile::tempdir().unwrap();
        let out = tempfile::tempdir().unwrap();
        std::fs::write(out.path().join("there.txt"), "x").unwrap();
        std::os::unix::fs::symlink(out.path(), d.path().join("link")).unwrap();
        std::os::unix::fs::symlink(out.path().join("gone"), d.path().join("dangling")).unwrap();
        let w = ws(d.path());
        let there = out.path().join("there.txt").display().to_string();
        let gone = out.path().join("not-there.txt").display().to_string();
        let rel_there = format!(
            "../{}/there.txt",
            out.path().file_name().unwrap().to_str().unwrap()
        );
        let rel_gone = format!(
            "../{}/nope.txt",
            out.path().file_name().unwrap().to_str().unwrap()
        );
        let pairs = [
            (there.as_str(), gone.as_str()),
            (rel_there.as_str(), rel_gone.as_str()),
            ("link/there.txt", "link/nope.txt"),
            ("/etc/hostname", "/etc/does-not-exist-anywhere"),
            ("dangling", "link/deeper/still"),
        ];
        for (exists, missing) in pairs {
            for f in [confine, confine_new] {
                let a = f(&w, exists).unwrap_err();
                let b = f(&w, missing).unwrap_err();
                assert_eq!(
                    a.0.replace(exists, "P"),
                    b.0.replace(missing, "P"),
                    "{exists} vs {missing}"
                );
                assert!(a.0.ends_with("outside the workspace"), "{a}");
            }
        }
    }

    #[test]
    fn inside_paths_resolve_through_inside_symlinks() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        std::fs::write(root.join("a/b/f.txt"), "x").unwrap();
        std::os::unix::fs::symlink("a/b", root.join("short")).unwrap();
        std::os::unix::fs::symlink(root.join("a"), root.join("abs")).unwrap();
        let w = ws(&root);
        assert_eq!(confine(&w, "short/f.txt").unwrap(), root.join("a/b/f.txt"));
        assert_eq!(
            confine(&w, "abs/b/../b/f.txt").unwrap(),
            root.join("a/b/f.txt")
        );
        assert_eq!(
            confine(&w, &root.join("a/b/f.txt").display().to_string()).unwrap(),
            root.join("a/b/f.txt")
        );
        assert!(confine(&w, "a/missing.txt")
            .unwrap_err()
            .to_string()
            .contains("No such file"));
        assert_eq!(
            confine_new(&w, "short/new/x.txt").unwrap(),
            root.join("a/b/new/x.txt")
        );
        assert_eq!(confine_new(&w, "a/../y.txt").unwrap(), root.join("y.txt"));
        assert!(confine_new(&w, "new/../y.txt")
            .unwrap_err()
            .to_string()
            .contains("`..`"));
        assert!(confine_new(&w, "a/../../y.txt").is_err());
        assert!(
            confine_new(&w, ".").is_err(),
            "the workspace itself is no file"
        );
        assert!(confine(&w, "~/x")
            .unwrap_err()
            .to_string()
            .contains("home paths"));
    }

    #[test]
    fn an_untrusted_turn_never_reaches_a_protected_file_by_any_path() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("memory")).unwrap();
        std::fs::write(root.join("HEARTBEAT.md"), "x").unwrap();
        std::fs::write(root.join("notes.md"), "x").unwrap();
        std::os::unix::fs::symlink("HEARTBEAT.md", root.join("hb")).unwrap();
        std::os::unix::fs::symlink("memory", root.join("m")).unwrap();
        let w = Workspace {
            root: root.clone(),
            only: false,
            untrusted: true,
        };
        for raw in [
            "HEARTBEAT.md",
            "./heartbeat.md",
            "hb",
            "m/new.md",
            "memory/../MEMORY.md",
            "skills/a/SKILL.md",
        ] {
            let e = confine_new(&w, raw).unwrap_err();
            assert!(e.0.contains("not available"), "{raw}: {e}");
        }
        for raw in ["HEARTBEAT.md", "hb"] {
            assert!(
                confine(&w, raw)
                    .unwrap_err()
                    .to_string()
                    .contains("not available"),
                "{raw}"
            );
        }
        assert_eq!(confine(&w, "notes.md").unwrap(), root.join("notes.md"));
        assert!(
            confine(&w, "/etc/hostname")
                .unwrap_err()
                .to_string()
                .contains("outside"),
            "workspaceOnly off does not open the host to a stranger's turn"
        );
        let trusted = Workspace {
            untrusted: false,
            ..w
        };
        assert_eq!(confine(&trusted, "hb").unwrap(), root.join("HEARTBEAT.md"));
    }

    #[test]
    fn symlink_loops_end() {
        let d = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink("b", d.path().join("a")).unwrap();
        std::os::unix::fs::symlink("a", d.path().join("b")).unwrap();
        let e = confine(&ws(d.path()), "a").unwrap_err();
        assert!(e.0.contains("symbolic links"), "{e}");
    }
}
