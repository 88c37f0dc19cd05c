//! Small file helpers shared by the gateway and the actors. What the
//! gateway keeps in its state dir is private from creation: folders 0700,
//! files 0600 (the config, the gateway token, the approvals file, the
//! store, the memory index, logs, exports).

use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// Creates `dir` and its missing parents as 0700, and makes `dir` itself
/// 0700 if it already was looser (a state dir from before).
pub fn private_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    let mode = std::fs::metadata(dir)?.permissions().mode();
    if mode & 0o077 != 0 {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    }
    Ok(())
}

/// Options that create a file 0600 (an existing file keeps its mode: see
/// [`make_private`]).
pub fn private_options() -> std::fs::OpenOptions {
    let mut o = std::fs::OpenOptions::new();
    o.mode(0o600);
    o
}

/// Makes `path` private: a file 0600; a folder 0700 with everything in it
/// (files a library created with its own mode, such as sled's).
pub fn make_private(path: &Path) -> std::io::Result<()> {
    let meta = std::fs::symlink_metadata(path)?;
    if meta.is_dir() {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o700))?;
        for entry in std::fs::read_dir(path)? {
            make_private(&entry?.path())?;
        }
    } else if meta.is_file() && meta.permissions().mode() & 0o077 != 0 {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
    }
    Ok(())
}

/// Writes the file atomically: temp file (0600 from creation: what is
/// written this way holds secrets), fsync, rename, fsync the directory.
pub fn write_atomic(path: &Path, text: &str) -> std::io::Result<()> {
    write_replacing(path, text, true)
}

/// Replaces the file as `write_atomic` does (a reader sees the old text or
/// the new, whole), without the two fsyncs: for a file rewritten at every
/// start that a crash may lose (the gateway's runtime record; a missing or
/// empty one reads as none).
pub fn write_replace(path: &Path, text: &str) -> std::io::Result<()> {
    write_replacing(path, text, false)
}

fn write_replacing(path: &Path, text: &str, durable: bool) -> std::io::Result<()> {
    use std::io::Write;
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let tmp = dir.join(format!(
        ".{}.{}.tmp",
        path.file_name().and_then(|n| n.to_str()).unwrap_or("file"),
        ulid::Ulid::generate()
    ));
    let mut f = private_options().write(true).create_new(true).open(&tmp)?;
    f.write_all(text.as_bytes())?;
    if durable {
        f.sync_all()?;
    }
    drop(f);
    std::fs::rename(&tmp, path)?;
    if durable {
        if let Ok(d) = std::fs::File::open(dir) {
            let _ = d.sync_all();
        }
    }
    Ok(())
}

/// `~` and `~/x` under the home directory (`HOME`, as `main.rs` installed
/// it); other paths: None.
pub fn expand_home(raw: &str) -> Option<std::path::PathBuf> {
    crate::host::env().expand_home(raw)
}

/// The running gateway's `<state dir>/gateway.runtime.json` (0600): how
/// to reach it (its address and pid), written once it listens, for the
/// CLI's commands that find a gateway by its state dir. Never archived.
pub const RUNTIME_FILE: &str = "gateway.runtime.json";

/// `name` as one path component: ASCII letters, digits, `-` and `_` kept,
/// anything else `_`.
pub fn safe_name(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(p: &Path) -> u32 {
        std::fs::metadata(p).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn what_is_written_here_is_private_from_creation_and_stays_so() {
        let d = tempfile::tempdir().unwrap();
        let state = d.path().join("a/state");
        private_dir(&state).unwrap();
        assert_eq!(mode(&state), 0o700);
        assert_eq!(mode(&d.path().join("a")), 0o700);
        std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o755)).unwrap();
        private_dir(&state).unwrap();
        assert_eq!(mode(&state), 0o700, "a looser existing folder is tightened");
        let f = state.join("ferroclaw.json");
        write_atomic(&f, "{}").unwrap();
        assert_eq!(mode(&f), 0o600);
        write_atomic(&f, "{a:1}").unwrap();
        assert_eq!(mode(&f), 0o600, "kept by a rewrite");
        let lib = state.join("store");
        std::fs::create_dir(&lib).unwrap();
        std::fs::write(lib.join("db"), "x").unwrap();
        make_private(&lib).unwrap();
        assert_eq!((mode(&lib), mode(&lib.join("db"))), (0o700, 0o600));
    }

    #[test]
    fn a_replaced_file_is_whole_private_and_leaves_no_temp_behind() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("run/gateway.runtime.json");
        write_replace(&f, "{\"pid\":1}").unwrap();
        write_replace(&f, "{\"pid\":2}").unwrap();
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "{\"pid\":2}");
        assert_eq!(mode(&f), 0o600);
        let left: Vec<_> = std::fs::read_dir(d.path().join("run")).unwrap().collect();
        assert_eq!(left.len(), 1, "{left:?}");
    }
}
