//! Which files are an agent's memory, and reading them safely: `MEMORY.md`
//! and `USER.md` at the workspace root, `memory/**/*.md`, and the
//! configured `extraPaths` (files or folders of `.md`, relative to the
//! workspace). A symlink that leads out of the workspace, a file over the
//! size cap or one that is not text (a NUL byte) is skipped with the
//! reason; invalid UTF-8 is read lossily. The sweep compares modification
//! times with what the index holds, so only changed files are read.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Memory files larger than this are not indexed.
pub const MAX_FILE_BYTES: u64 = 2 * 1024 * 1024;

/// A memory file: its path relative to the workspace (with `/`) and mtime.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub rel: String,
    pub abs: PathBuf,
    pub mtime_ms: u64,
}

/// Why a file was left out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    pub rel: String,
    pub why: &'static str,
}

fn rel_of(workspace: &Path, p: &Path) -> Option<String> {
    let rel = p.strip_prefix(workspace).ok()?;
    Some(
        rel.components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join("/"),
    )
}

fn consider(
    workspace: &Path,
    root: &Path,
    p: &Path,
    found: &mut Vec<Found>,
    skipped: &mut Vec<Skipped>,
) {
    let Some(rel) = rel_of(workspace, p) else {
        return;
    };
    // Symlinks are followed only while they stay inside the workspace.
    let inside = p.canonicalize().is_ok_and(|c| c.starts_with(root));
    if !inside {
        skipped.push(Skipped {
            rel,
            why: "outside the workspace",
        });
        return;
    }
    let Ok(meta) = std::fs::metadata(p) else {
        return;
    };
    if !meta.is_file() {
        return;
    }
    if meta.len() > MAX_FILE_BYTES {
        skipped.push(Skipped {
            rel,
            why: "too large",
        });
        return;
    }
    let mtime_ms = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_millis() as u64);
    found.push(Found {
        rel,
        abs: p.to_path_buf(),
        mtime_ms,
    });
}

fn walk_md(
    workspace: &Path,
    root: &Path,
    dir: &Path,
    found: &mut Vec<Found>,
    skipped: &mut Vec<Skipped>,
) {
    let walker = walkdir_like(dir);
    for p in walker {
        if p.extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| e.eq_ignore_ascii_case("md"))
        {
            consider(workspace, root, &p, found, skipped);
        }
    }
}

/// The files under `dir` (at most 10 levels, sorted; links followed, loops
/// stopped by walkdir).
fn walkdir_like(dir: &Path) -> Vec<PathBuf> {
    walkdir::WalkDir::new(dir)
        .max_depth(10)
        .follow_links(true)
        .sort_by_file_name()
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| !e.file_type().is_dir())
        .map(|e| e.path().to_path_buf())
        .collect()
}

/// An agent's memory files now.
pub fn collect(workspace: &Path, extra: &[String]) -> (Vec<Found>, Vec<Skipped>) {
    let (mut found, mut skipped) = (Vec::new(), Vec::new());
    let Ok(root) = workspace.canonicalize() else {
        return (found, skipped);
    };
    for name in ["MEMORY.md", "USER.md"] {
        let p = workspace.join(name);
        if p.exists() {
            consider(workspace, &root, &p, &mut found, &mut skipped);
        }
    }
    walk_md(
        workspace,
        &root,
        &workspace.join("memory"),
        &mut found,
        &mut skipped,
    );
    for e in extra {
        let p = workspace.join(e.trim_start_matches('/'));
        if p.is_dir() {
            walk_md(workspace, &root, &p, &mut found, &mut skipped);
        } else if p.exists() {
            consider(workspace, &root, &p, &mut found, &mut skipped);
        }
    }
    found.sort_by(|a, b| a.rel.cmp(&b.rel));
    found.dedup_by(|a, b| a.rel == b.rel);
    (found, skipped)
}

/// A memory file's text: None for one that is not text (a NUL byte);
/// invalid UTF-8 is replaced.
pub fn read_text(p: &Path) -> Option<String> {
    let bytes = std::fs::read(p).ok()?;
    if bytes.len() as u64 > MAX_FILE_BYTES || bytes.contains(&0) {
        return None;
    }
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// What a sweep must do: files to (re)read (new or with another mtime),
/// and indexed files that are gone.
pub fn changes(found: &[Found], indexed: &HashMap<String, u64>) -> (Vec<Found>, Vec<String>) {
    let read = found
        .iter()
        .filter(|f| indexed.get(&f.rel) != Some(&f.mtime_ms))
        .cloned()
        .collect();
    let gone = indexed
        .keys()
        .filter(|k| !found.iter().any(|f| &f.rel == *k))
        .cloned()
        .collect();
    (read, gone)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_files_are_found_and_unsafe_ones_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        std::fs::create_dir_all(ws.join("memory/2026")).unwrap();
        std::fs::create_dir_all(ws.join("notes")).unwrap();
        std::fs::write(ws.join("MEMORY.md"), "m").unwrap();
        std::fs::write(ws.join("AGENTS.md"), "not memory").unwrap();
        std::fs::write(ws.join("memory/2026-11-24.md"), "d").unwrap();
        std::fs::write(ws.join("memory/2026/deep.md"), "deep").unwrap();
        std::fs::write(ws.join("memory/image.png"), [0u8, 1, 2]).unwrap();
        std::fs::write(ws.join("notes/extra.md"), "x").unwrap();
        std::fs::write(
            ws.join("memory/big.md"),
            vec![b'a'; (MAX_FILE_BYTES + 1) as usize],
        )
        .unwrap();
        std::fs::write(dir.path().join("secret.md"), "outside").unwrap();
        std::os::unix::fs::symlink(dir.path().join("secret.md"), ws.join("memory/escape.md"))
            .unwrap();
        std::os::unix::fs::symlink(ws.join("MEMORY.md"), ws.join("memory/alias.md")).unwrap();
        let (found, skipped) = collect(&ws, &["notes".to_string()]);
        let rels: Vec<&str> = found.iter().map(|f| f.rel.as_str()).collect();
        assert_eq!(
            rels,
            vec![
                "MEMORY.md",
                "memory/2026-11-24.md",
                "memory/2026/deep.md",
                "memory/alias.md",
                "notes/extra.md"
            ]
        );
        assert!(skipped.contains(&Skipped {
            rel: "memory/escape.md".into(),
            why: "outside the workspace"
        }));
        assert!(skipped.contains(&Skipped {
            rel: "memory/big.md".into(),
            why: "too large"
        }));
        std::fs::write(ws.join("memory/bin.md"), b"abc\0def").unwrap();
        assert_eq!(read_text(&ws.join("memory/bin.md")), None);
        std::fs::write(ws.join("memory/latin.md"), b"caf\xe9").unwrap();
        assert_eq!(
            read_text(&ws.join("memory/latin.md")).as_deref(),
            Some("caf\u{fffd}")
        );
    }

    #[test]
    fn a_sweep_reads_only_changed_files_and_drops_gone_ones() {
        let f = |rel: &str, m: u64| Found {
            rel: rel.into(),
            abs: PathBuf::from(rel),
            mtime_ms: m,
        };
        let indexed: HashMap<String, u64> = [
            ("MEMORY.md".to_string(), 5),
            ("memory/old.md".to_string(), 1),
        ]
        .into();
        let (read, gone) = changes(&[f("MEMORY.md", 5), f("USER.md", 9)], &indexed);
        assert_eq!(read, vec![f("USER.md", 9)]);
        assert_eq!(gone, vec!["memory/old.md".to_string()]);
        let (read, _) = changes(&[f("MEMORY.md", 6)], &indexed);
        assert_eq!(read.len(), 1, "a new mtime is read again");
    }
}
