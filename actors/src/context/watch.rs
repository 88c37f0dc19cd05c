//! `DirWatch`: tells whether anything changed in a set of directories since
//! it last looked, without looking at the files. On Linux an inotify
//! queue, read without blocking: the kernel queues an event inside the
//! write, rename or delete itself, so a change made before `generation`
//! is called is always seen by it (an edit made just before a message is
//! sent is never missed, unlike a watcher thread that might not have run
//! yet). Elsewhere, or when a directory cannot be watched, there is no
//! generation and callers read the disk each time, as before.

use std::collections::{HashMap, HashSet};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// A change counter over watched directories.
pub struct DirWatch {
    inner: Mutex<Option<Queue>>,
}

#[cfg(target_os = "linux")]
struct Queue {
    inotify: inotify::Inotify,
    /// Directories watched as asked.
    watched: HashSet<PathBuf>,
    /// What counts per watch: every event, or (an ancestor standing in for
    /// missing directories) only those naming the child on their way.
    interest: HashMap<inotify::WatchDescriptor, Interest>,
    /// Bumped for every read that found events.
    generation: u64,
    /// A directory could not be watched: no generation can be trusted.
    blind: bool,
}

#[cfg(not(target_os = "linux"))]
struct Queue;

#[cfg(target_os = "linux")]
enum Interest {
    All,
    Names(HashSet<OsString>),
}

impl Default for DirWatch {
    fn default() -> Self {
        DirWatch::new()
    }
}

impl DirWatch {
    #[cfg(target_os = "linux")]
    pub fn new() -> DirWatch {
        let queue = match inotify::Inotify::init() {
            Ok(inotify) => Some(Queue {
                inotify,
                watched: HashSet::new(),
                interest: HashMap::new(),
                generation: 0,
                blind: false,
            }),
            Err(e) => {
                tracing::warn!(error = %e, "no inotify: context files are looked at every run");
                None
            }
        };
        DirWatch {
            inner: Mutex::new(queue),
        }
    }

    #[cfg(not(target_os = "linux"))]
    pub fn new() -> DirWatch {
        DirWatch {
            inner: Mutex::new(None),
        }
    }

    /// Watches `dir` for files made, written, renamed or removed in it (and
    /// for itself going away); a missing `dir` by its nearest existing
    /// ancestor, so its creation is seen. Watch before reading: a change
    /// made while the files are read is then counted.
    #[cfg(target_os = "linux")]
    pub fn watch(&self, dir: &Path) {
        use inotify::WatchMask;
        let Ok(mut guard) = self.inner.lock() else {
            return;
        };
        let Some(q) = guard.as_mut() else { return };
        // Blind already (said once, when it went blind), or watched.
        if q.blind || q.watched.contains(dir) {
            return;
        }
        let all = WatchMask::CREATE
            | WatchMask::DELETE
            | WatchMask::MODIFY
            | WatchMask::CLOSE_WRITE
            | WatchMask::MOVED_FROM
            | WatchMask::MOVED_TO
            | WatchMask::ATTRIB
            | WatchMask::DELETE_SELF
            | WatchMask::MOVE_SELF;
        let Some((at, child)) = nearest_existing(dir) else {
            tracing::warn!(dir = %dir.display(), "no existing ancestor to watch: context files are looked at every run");
            q.blind = true;
            return;
        };
        let mask = match child {
            None => all,
            Some(_) => {
                WatchMask::CREATE
                    | WatchMask::MOVED_TO
                    | WatchMask::DELETE_SELF
                    | WatchMask::MOVE_SELF
            }
        };
        // Adding to an existing watch merges the masks (an ancestor that is
        // also watched whole keeps everything).
        match q.inotify.watches().add(at, mask | WatchMask::MASK_ADD) {
            Ok(wd) => match child {
                None => {
                    q.interest.insert(wd, Interest::All);
                    q.watched.insert(dir.to_path_buf());
                }
                Some(name) => match q
                    .interest
                    .entry(wd)
                    .or_insert_with(|| Interest::Names(HashSet::new()))
                {
                    Interest::All => {}
                    Interest::Names(names) => {
                        names.insert(name);
                    }
                },
            },
            Err(e) => {
                tracing::warn!(dir = %dir.display(), error = %e, "cannot watch: context files are looked at every run");
                q.blind = true;
            }
        }
    }

    #[cfg(not(target_os = "linux"))]
    pub fn watch(&self, _dir: &Path) {}

    /// The current generation, after counting what the queue holds (one
    /// read that does not block). None: changes cannot be told, read the
    /// disk.
    #[cfg(target_os = "linux")]
    pub fn generation(&self) -> Option<u64> {
        let mut guard = self.inner.lock().ok()?;
        let q = guard.as_mut()?;
        if q.blind {
            return None;
        }
        let mut buf = [0u8; 4096];
        loop {
            let mut changed = false;
            match q.inotify.read_events(&mut buf) {
                Ok(events) => {
                    let mut any = false;
                    for e in events {
                        any = true;
                        if e.mask.contains(inotify::EventMask::IGNORED) {
                            q.interest.remove(&e.wd);
                        }
                        changed |= match q.interest.get(&e.wd) {
                            Some(Interest::Names(names)) => {
                                e.name.is_some_and(|n| names.contains(n))
                                    || !e.mask.intersects(
                                        inotify::EventMask::CREATE | inotify::EventMask::MOVED_TO,
                                    )
                            }
                            _ => true,
                        };
                    }
                    if !any {
                        break;
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) => {
                    tracing::warn!(error = %e, "inotify read failed: context files are looked at every run");
                    q.blind = true;
                    return None;
                }
            }
            if changed {
                q.generation += 1;
                // Watched again from the start at the next read (a removed
                // directory's watch is gone; a made one is watched itself).
                q.watched.clear();
            }
        }
        Some(q.generation)
    }

    #[cfg(not(target_os = "linux"))]
    pub fn generation(&self) -> Option<u64> {
        None
    }
}

/// `dir` when it exists, else its nearest existing ancestor and the child
/// on the way to `dir` (watched for it being made or moved in).
fn nearest_existing(dir: &Path) -> Option<(&Path, Option<OsString>)> {
    let mut at = dir;
    let mut child = None;
    while !at.is_dir() {
        child = at.file_name().map(OsString::from);
        at = at.parent()?;
    }
    Some((at, child))
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn every_change_made_before_a_look_is_seen() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        std::fs::create_dir(&ws).unwrap();
        let w = DirWatch::new();
        w.watch(&ws);
        let g0 = w.generation().unwrap();
        assert_eq!(w.generation(), Some(g0), "nothing happened");
        std::fs::write(ws.join("AGENTS.md"), "one").unwrap();
        let g1 = w.generation().unwrap();
        assert!(g1 > g0, "a new file is seen at once");
        assert_eq!(w.generation(), Some(g1));
        std::fs::write(ws.join("AGENTS.md"), "two").unwrap();
        assert!(w.generation().unwrap() > g1, "an edit is seen at once");
        // A missing directory: its parent stands in, so its creation is
        // seen, and nothing else made there counts.
        let state = dir.path().join("state");
        std::fs::create_dir(&state).unwrap();
        let skills = state.join("skills");
        w.watch(&skills);
        let g2 = w.generation().unwrap();
        std::fs::write(state.join("audit.sqlite-wal"), "x").unwrap();
        std::fs::write(state.join("audit.sqlite-wal"), "xy").unwrap();
        assert_eq!(w.generation(), Some(g2), "another file of the parent");
        std::fs::create_dir(&skills).unwrap();
        let g3 = w.generation().unwrap();
        assert!(g3 > g2, "the directory's creation is seen");
        w.watch(&skills);
        std::fs::write(skills.join("x"), "x").unwrap();
        assert!(w.generation().unwrap() > g3, "then its files");
    }
}
