//! `FileCache`: small text files (bootstrap files, SKILL.md) read once and
//! served again while their size and modification time are unchanged, so a
//! run pays a `stat` per file, and every session shares one copy.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

/// Files larger than this are not cached (read each time).
const MAX_CACHED_BYTES: u64 = 1 << 20;
/// Entries kept before the cache starts over.
const MAX_ENTRIES: usize = 512;

/// (size, modification time, text) per path.
type Entry = (u64, Option<SystemTime>, Arc<str>);

#[derive(Default)]
pub struct FileCache {
    entries: Mutex<HashMap<PathBuf, Entry>>,
}

impl FileCache {
    /// The file's text (lossy UTF-8), or None when it is missing or not a file.
    pub fn read(&self, path: &Path) -> Option<Arc<str>> {
        let meta = std::fs::metadata(path).ok().filter(|m| m.is_file())?;
        let (len, mtime) = (meta.len(), meta.modified().ok());
        if let Ok(entries) = self.entries.lock() {
            if let Some((l, m, text)) = entries.get(path) {
                if *l == len && *m == mtime && mtime.is_some() {
                    return Some(text.clone());
                }
            }
        }
        let bytes = std::fs::read(path).ok()?;
        let text: Arc<str> = Arc::from(String::from_utf8_lossy(&bytes).as_ref());
        if len <= MAX_CACHED_BYTES {
            if let Ok(mut entries) = self.entries.lock() {
                if entries.len() >= MAX_ENTRIES {
                    entries.clear();
                }
                entries.insert(path.to_path_buf(), (len, mtime, text.clone()));
            }
        }
        Some(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_changed_file_is_read_again() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f.md");
        let cache = FileCache::default();
        assert!(cache.read(&p).is_none());
        std::fs::write(&p, "one").unwrap();
        let a = cache.read(&p).unwrap();
        let b = cache.read(&p).unwrap();
        assert!(Arc::ptr_eq(&a, &b), "unchanged: the same shared text");
        std::fs::write(&p, "three").unwrap();
        assert_eq!(&*cache.read(&p).unwrap(), "three");
        assert!(
            cache.read(dir.path()).is_none(),
            "a directory is not a file"
        );
    }
}
