//! A consistent copy of the whole store taken while the gateway writes to
//! it, as a log of JSON lines (`ferroclaw backup`), and a store rebuilt
//! from such a log.
//!
//! Consistency without a long pause: every write holds a shared gate
//! while it lands. A snapshot takes the gate exclusively twice, for as long
//! as the writes in flight take to land: once to start a journal, once to
//! end it. Between the two it copies every tree while writes go on; each
//! write in between is also noted in the journal. The log is the copy,
//! then the journal in write order: replayed in order, it gives the store
//! exactly as it was at the second instant (a key copied before or after
//! its change ends with the journal's value; a write spanning trees lands
//! whole on one side of the instant). The journal is bounded
//! (`JOURNAL_LIMIT_BYTES`); a snapshot outrun by writes fails rather than
//! grow memory without bound.
//!
//! Log lines: a header `{"format":"ferroclaw-store","version":1,
//! "schema":N,"writtenBy":V}`, then `{"t":tree,"k":key,"v":value}` (the
//! stored envelope as it is) or `{"t":tree,"k":key,"d":true}` (removed),
//! then `{"end":true,"entries":N}` (a log without it is truncated).

use std::io::{BufRead, Write};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError, RwLock, RwLockReadGuard};

use serde::Deserialize;
use serde_json::value::RawValue;

use super::{schema, Store, StoreError, Tree};

/// The most a snapshot's journal holds before the snapshot gives up.
pub const JOURNAL_LIMIT_BYTES: usize = 64 * 1024 * 1024;

const FORMAT: &str = "ferroclaw-store";
const LOG_VERSION: u32 = 1;

/// One write noted while a snapshot runs: a key and its new value (None: removed).
type Change = (Tree, String, Option<Vec<u8>>);

#[derive(Default)]
struct Recorded {
    changes: Vec<Change>,
    bytes: usize,
    overflow: bool,
}

/// The gate every write holds and the journal of a running snapshot.
#[derive(Default)]
pub(super) struct Journal {
    gate: RwLock<()>,
    recording: AtomicBool,
    recorded: Mutex<Recorded>,
}

/// A write in progress: holds the gate until it drops.
pub(super) struct Entered<'a> {
    _gate: RwLockReadGuard<'a, ()>,
    journal: &'a Journal,
    recording: bool,
}

impl Journal {
    /// Enter before a write lands; the write is noted after it landed.
    pub(super) fn enter(&self) -> Entered<'_> {
        let gate = self.gate.read().unwrap_or_else(PoisonError::into_inner);
        Entered {
            _gate: gate,
            journal: self,
            // Fixed while the gate is held: a snapshot starts and ends
            // under the exclusive gate.
            recording: self.recording.load(Ordering::SeqCst),
        }
    }

    /// Starts recording; None when a snapshot already runs.
    fn begin(&self) -> Option<Active<'_>> {
        let _all = self.gate.write().unwrap_or_else(PoisonError::into_inner);
        if self.recording.swap(true, Ordering::SeqCst) {
            return None;
        }
        *self.recorded.lock().unwrap_or_else(PoisonError::into_inner) = Recorded::default();
        Some(Active { journal: self })
    }
}

impl Entered<'_> {
    /// Notes a landed write (a no-op when no snapshot runs).
    pub(super) fn note(&self, tree: Tree, key: &str, value: Option<&[u8]>) {
        if !self.recording {
            return;
        }
        let mut r = self
            .journal
            .recorded
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if r.overflow {
            return;
        }
        r.bytes += key.len() + value.map_or(0, <[u8]>::len) + 32;
        if r.bytes > JOURNAL_LIMIT_BYTES {
            r.overflow = true;
            r.changes = Vec::new();
            return;
        }
        r.changes
            .push((tree, key.to_string(), value.map(<[u8]>::to_vec)));
    }
}

/// A snapshot recording; stops recording when dropped (also on failure).
struct Active<'a> {
    journal: &'a Journal,
}

impl Journal {
    /// Stops recording at one instant; what was recorded.
    fn stop(&self) -> Recorded {
        let _all = self.gate.write().unwrap_or_else(PoisonError::into_inner);
        self.recording.store(false, Ordering::SeqCst);
        std::mem::take(&mut *self.recorded.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

impl Active<'_> {
    /// Ends recording; the changes since the start, in order (None: it
    /// overflowed).
    fn finish(self) -> Option<Vec<Change>> {
        let r = self.journal.stop();
        (!r.overflow).then_some(r.changes)
    }
}

impl Drop for Active<'_> {
    fn drop(&mut self) {
        self.journal.stop();
    }
}

/// What a log held.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LogSummary {
    /// Lines between the header and the end mark.
    pub entries: u64,
    /// Of them, those noted from the journal.
    pub journaled: u64,
    /// The store schema the log was written with.
    pub schema: u32,
}

fn failed(what: &str, e: impl std::fmt::Display) -> StoreError {
    StoreError::Io {
        dir: Default::default(),
        source: std::io::Error::other(format!("{what}: {e}")),
    }
}

fn line(out: &mut dyn Write, tree: Tree, key: &str, value: Option<&[u8]>) -> std::io::Result<()> {
    out.write_all(b"{\"t\":\"")?;
    out.write_all(tree.name().as_bytes())?;
    out.write_all(b"\",\"k\":")?;
    serde_json::to_writer(&mut *out, key)?;
    match value {
        Some(v) => {
            out.write_all(b",\"v\":")?;
            out.write_all(v)?;
            out.write_all(b"}\n")
        }
        None => out.write_all(b",\"d\":true}\n"),
    }
}

impl Store {
    /// Writes a consistent copy of every tree to `out` (the module doc
    /// says how). One snapshot at a time; writes are held back only while
    /// the journal starts and ends.
    pub fn snapshot(&self, out: &mut dyn Write) -> Result<LogSummary, StoreError> {
        let io = |e: std::io::Error| failed("writing the snapshot", e);
        let active = self
            .inner
            .journal
            .begin()
            .ok_or_else(|| failed("snapshot", "another backup of this store is running"))?;
        let header = serde_json::json!({
            "format": FORMAT,
            "version": LOG_VERSION,
            "schema": schema::SCHEMA_VERSION,
            "writtenBy": env!("CARGO_PKG_VERSION"),
        });
        writeln!(out, "{header}").map_err(io)?;
        let mut entries = 0u64;
        for tree in Tree::ALL {
            for item in self.tree(tree).iter() {
                let (k, v) = item?;
                line(out, tree, &String::from_utf8_lossy(&k), Some(&v)).map_err(io)?;
                entries += 1;
            }
        }
        let changes = active.finish().ok_or_else(|| {
            failed(
                "snapshot",
                "the gateway wrote more than the journal holds while the copy ran; try again when it is quieter",
            )
        })?;
        for (tree, key, value) in &changes {
            line(out, *tree, key, value.as_deref()).map_err(io)?;
        }
        let total = entries + changes.len() as u64;
        writeln!(out, "{{\"end\":true,\"entries\":{total}}}").map_err(io)?;
        out.flush().map_err(io)?;
        Ok(LogSummary {
            entries: total,
            journaled: changes.len() as u64,
            schema: schema::SCHEMA_VERSION,
        })
    }

    /// Builds the store of `state_dir` (which must have none) from a log.
    /// A log that does not parse, names an unknown tree, comes from a
    /// newer schema or lacks its end mark fails; the half-built store is
    /// then removed.
    pub fn restore(state_dir: &Path, input: impl BufRead) -> Result<LogSummary, StoreError> {
        let dir = state_dir.join("store");
        if dir.exists() {
            return Err(failed(
                "restore",
                format!("{} already exists", dir.display()),
            ));
        }
        let built = Store::open(state_dir).and_then(|store| {
            let summary = read_log(input, |tree, key, value| {
                let t = store.tree(tree);
                match value {
                    Some(v) => t.insert(key.as_bytes(), v.as_bytes()).map(|_| ()),
                    None => t.remove(key.as_bytes()).map(|_| ()),
                }
                .map_err(StoreError::from)
            })?;
            store.inner.db.flush()?;
            Ok(summary)
        });
        if built.is_err() {
            let _ = std::fs::remove_dir_all(&dir);
        }
        built
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LogLine<'a> {
    t: &'a str,
    k: String,
    #[serde(borrow)]
    v: Option<&'a RawValue>,
    #[serde(default)]
    d: bool,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Header {
    format: String,
    version: u32,
    schema: u32,
    written_by: String,
}

/// The longest line a log may hold (one stored value and its key): a
/// log from outside (a restored archive) cannot make a reader hold more.
const MAX_LINE: u64 = 64 << 20;

/// The lines of `input`, each at most `MAX_LINE` bytes (a longer one is an
/// error, read no further than the limit).
fn bounded_lines(mut input: impl BufRead) -> impl Iterator<Item = std::io::Result<String>> {
    let mut buf = Vec::new();
    std::iter::from_fn(move || {
        buf.clear();
        let read = std::io::Read::take(&mut input, MAX_LINE + 1).read_until(b'\n', &mut buf);
        match read {
            Ok(0) => None,
            Err(e) => Some(Err(e)),
            Ok(_) if buf.len() as u64 > MAX_LINE => Some(Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("a line over {} MiB", MAX_LINE >> 20),
            ))),
            Ok(_) => {
                let line = buf.strip_suffix(b"\n").unwrap_or(&buf);
                let line = line.strip_suffix(b"\r").unwrap_or(line);
                Some(
                    String::from_utf8(line.to_vec())
                        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e)),
                )
            }
        }
    })
}

/// A log's first line, read: a store log of a schema this build reads,
/// else why not.
fn header(first: &str) -> Result<Header, StoreError> {
    let bad = |what: String| failed("store log", format!("line 1: {what}"));
    let header: Header =
        serde_json::from_str(first).map_err(|e| bad(format!("not a store log: {e}")))?;
    if header.format != FORMAT || header.version != LOG_VERSION {
        return Err(bad(format!(
            "unknown format {} {}",
            header.format, header.version
        )));
    }
    if header.schema > schema::SCHEMA_VERSION {
        return Err(bad(format!(
            "written by ferroclaw {} (store schema {}); this build reads schema {} and older",
            header.written_by,
            header.schema,
            schema::SCHEMA_VERSION
        )));
    }
    Ok(header)
}

/// Reads a log, handing each entry to `apply`; checks the header, every
/// line (at most 64 MiB each) and the end mark.
pub fn read_log(
    input: impl BufRead,
    mut apply: impl FnMut(Tree, &str, Option<&str>) -> Result<(), StoreError>,
) -> Result<LogSummary, StoreError> {
    let bad = |n: usize, what: String| failed("store log", format!("line {n}: {what}"));
    let mut lines = bounded_lines(input);
    let first = lines
        .next()
        .ok_or_else(|| bad(1, "empty".into()))?
        .map_err(|e| bad(1, e.to_string()))?;
    let header = header(&first)?;
    let mut summary = LogSummary {
        schema: header.schema,
        ..Default::default()
    };
    for (i, text) in lines.enumerate() {
        let n = i + 2;
        let text = text.map_err(|e| bad(n, e.to_string()))?;
        if let Ok(end) = serde_json::from_str::<serde_json::Value>(&text) {
            if end.get("end") == Some(&serde_json::Value::Bool(true)) {
                let said = end.get("entries").and_then(serde_json::Value::as_u64);
                if said != Some(summary.entries) {
                    return Err(bad(
                        n,
                        format!(
                            "the end mark says {said:?} entries, the log holds {}",
                            summary.entries
                        ),
                    ));
                }
                return Ok(summary);
            }
        }
        let entry: LogLine = serde_json::from_str(&text).map_err(|e| bad(n, e.to_string()))?;
        let tree = Tree::ALL
            .into_iter()
            .find(|t| t.name() == entry.t)
            .ok_or_else(|| bad(n, format!("unknown tree {:?}", entry.t)))?;
        let value = match (entry.v, entry.d) {
            (Some(v), false) => Some(v.get()),
            (None, true) => None,
            _ => return Err(bad(n, "an entry has a value or is removed".into())),
        };
        apply(tree, &entry.k, value)?;
        summary.entries += 1;
    }
    Err(failed("store log", "truncated: no end mark"))
}

#[cfg(test)]
#[path = "snapshot_tests.rs"]
mod tests;
