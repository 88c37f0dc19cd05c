//! Small file helpers shared by the gateway and the actors.

use std::path::Path;

/// Writes the file atomically: temp file, fsync, rename, fsync the directory.
pub fn write_atomic(path: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let tmp = dir.join(format!(
        ".{}.{}.tmp",
        path.file_name().and_then(|n| n.to_str()).unwrap_or("file"),
        ulid::Ulid::generate()
    ));
    let mut f = std::fs::File::create(&tmp)?;
    f.write_all(text.as_bytes())?;
    f.sync_all()?;
    drop(f);
    std::fs::rename(&tmp, path)?;
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// `~` and `~/x` as the home directory (`HOME`); other paths: None.
pub fn expand_home(raw: &str) -> Option<std::path::PathBuf> {
    let home = std::env::var_os("HOME")?;
    match raw {
        "~" => Some(std::path::PathBuf::from(home)),
        r => r
            .strip_prefix("~/")
            .map(|rest| std::path::PathBuf::from(home).join(rest)),
    }
}

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
