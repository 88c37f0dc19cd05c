//! `ferroclaw doctor`'s disk check: what the state dir holds, by kind.
//! Read from the files (the gateway may be down); symlinks are not
//! followed.

use std::path::Path;

/// The kinds, each a set of entries of the state dir.
const KINDS: &[(&str, &[&str])] = &[
    ("store", &["store"]),
    ("memory", &["memory"]),
    (
        "audit",
        &["audit.sqlite", "audit.sqlite-wal", "audit.sqlite-shm"],
    ),
    ("media", &["media"]),
    ("logs", &["logs"]),
    ("workspace", &["workspace"]),
    ("mcp", &["mcp"]),
];

/// Above this much the check warns.
const WARN_BYTES: u64 = 5 * 1024 * 1024 * 1024;

fn size(p: &Path) -> u64 {
    let Ok(meta) = std::fs::symlink_metadata(p) else {
        return 0;
    };
    if !meta.is_dir() {
        return meta.len();
    }
    std::fs::read_dir(p)
        .map(|entries| entries.flatten().map(|e| size(&e.path())).sum())
        .unwrap_or(0)
}

fn human(n: u64) -> String {
    match n {
        n if n >= 1 << 30 => format!("{:.1} GB", n as f64 / (1u64 << 30) as f64),
        n if n >= 1 << 20 => format!("{:.1} MB", n as f64 / (1u64 << 20) as f64),
        n if n >= 1 << 10 => format!("{:.0} KB", n as f64 / 1024.0),
        n => format!("{n} B"),
    }
}

/// Bytes per kind, then the whole state dir.
pub fn usage(state_dir: &Path) -> (Vec<(&'static str, u64)>, u64) {
    let kinds = KINDS
        .iter()
        .map(|(kind, entries)| {
            (
                *kind,
                entries.iter().map(|e| size(&state_dir.join(e))).sum(),
            )
        })
        .collect();
    (kinds, size(state_dir))
}

/// The check's verdict and its line.
pub fn check(state_dir: &Path) -> (&'static str, String) {
    let (kinds, total) = usage(state_dir);
    let parts: Vec<String> = kinds
        .iter()
        .map(|(k, n)| format!("{k} {}", human(*n)))
        .collect();
    let verdict = if total > WARN_BYTES { "warn" } else { "ok" };
    (
        verdict,
        format!("{} in all: {}", human(total), parts.join(", ")),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_are_summed_from_their_files() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("media/ab")).unwrap();
        std::fs::write(d.path().join("media/ab/x"), vec![0u8; 3000]).unwrap();
        std::fs::write(d.path().join("audit.sqlite"), vec![0u8; 100]).unwrap();
        std::fs::write(d.path().join("audit.sqlite-wal"), vec![0u8; 50]).unwrap();
        let (kinds, total) = usage(d.path());
        let get = |k: &str| kinds.iter().find(|(n, _)| *n == k).unwrap().1;
        assert_eq!((get("media"), get("audit"), get("store")), (3000, 150, 0));
        assert_eq!(total, 3150);
        assert_eq!(check(d.path()), ("ok", "3 KB in all: store 0 B, memory 0 B, audit 150 B, media 3 KB, logs 0 B, workspace 0 B, mcp 0 B".to_string()));
    }
}
