//! The archive: a gzipped tar whose payload entries come first and whose
//! last entry is `manifest.json`, naming every payload with its size and
//! SHA-256. [`read`] reads an archive once, end to end, and trusts nothing
//! in it: paths must be plain relative names outside what a restore
//! reserves, entries regular files, every checksum must match the manifest
//! both ways, every path the manifest names must be plain (agent ids safe
//! names, the places it reports without `..`), and the store log
//! must end with its end mark. `verify` is a read that keeps nothing; a
//! restore is a read that writes each entry into its staging dir as it
//! passes, so what was checked is what was written.

use std::collections::BTreeMap;
use std::io::{BufReader, Read, Write};
use std::path::{Component, Path};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::BackupError;
use crate::store::snapshot::LogSummary;

pub const FORMAT: &str = "ferroclaw-backup";
pub const VERSION: u32 = 1;
pub const MANIFEST: &str = "manifest.json";
/// The store's snapshot log in the archive.
pub const STORE_LOG: &str = "store/store.jsonl";

/// One payload of the archive.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    pub path: String,
    pub bytes: u64,
    pub sha256: String,
}

/// A workspace outside the state dir, archived under `workspaces/<agent>/`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Workspace {
    pub agent_id: String,
    pub source: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Manifest {
    pub format: String,
    pub version: u32,
    pub created_at_ms: u64,
    pub written_by: String,
    /// The store schema of the snapshot.
    pub schema: u32,
    /// Where it was taken from (absolute).
    pub state_dir: String,
    pub config: Option<String>,
    #[serde(default)]
    pub workspaces: Vec<Workspace>,
    /// Store entries in the log (the snapshot's summary).
    pub store_entries: u64,
    pub entries: Vec<Entry>,
}

/// Whether an archive path is a plain relative path (no `..`, no root).
pub fn safe_path(p: &str) -> bool {
    !p.is_empty()
        && !p.contains('\\')
        && Path::new(p)
            .components()
            .all(|c| matches!(c, Component::Normal(_)))
}

/// A reader that hashes and counts what passes through it.
pub struct Hashing<R> {
    inner: R,
    hash: Sha256,
    bytes: u64,
}

impl<R: Read> Hashing<R> {
    pub fn new(inner: R) -> Self {
        Hashing {
            inner,
            hash: Sha256::new(),
            bytes: 0,
        }
    }
    pub fn finish(self) -> (u64, String) {
        (self.bytes, hex(&self.hash.finalize()))
    }
}

impl<R: Read> Read for Hashing<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hash.update(&buf[..n]);
        self.bytes += n as u64;
        Ok(n)
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Appends `size` bytes of `data` at `path`, hashed on the way.
pub fn append<W: Write>(
    tar: &mut tar::Builder<W>,
    path: &str,
    size: u64,
    data: impl Read,
) -> Result<Entry, BackupError> {
    let mut header = tar::Header::new_gnu();
    header.set_size(size);
    header.set_mode(0o600);
    header.set_mtime(crate::now_ms() / 1000);
    header.set_entry_type(tar::EntryType::Regular);
    let mut hashing = Hashing::new(data.take(size));
    tar.append_data(&mut header, path, &mut hashing)
        .map_err(|e| BackupError::io(format!("writing {path} into the archive"), e))?;
    let (bytes, sha256) = hashing.finish();
    if bytes != size {
        return Err(BackupError::Changed(path.to_string()));
    }
    Ok(Entry {
        path: path.to_string(),
        bytes,
        sha256,
    })
}

/// What `verify` found.
#[derive(Debug, Clone)]
pub struct Verified {
    pub manifest: Manifest,
    pub store: LogSummary,
}

fn damaged(e: impl std::fmt::Display) -> BackupError {
    BackupError::Invalid(format!(
        "the archive is damaged or not a ferroclaw backup: {e}"
    ))
}

/// Reads the whole archive at `archive`; Ok only when every check above holds.
pub fn verify(archive: &Path) -> Result<Verified, BackupError> {
    let file = std::fs::File::open(archive)
        .map_err(|e| BackupError::io(format!("opening {}", archive.display()), e))?;
    read(file, |path, data| match path {
        STORE_LOG => crate::store::snapshot::read_log(data, |_, _, _| Ok(()))
            .map(Some)
            .map_err(|e| BackupError::Invalid(format!("{path}: {e}"))),
        _ => Ok(None),
    })
}

/// Whether a manifest's agent id is a plain name (`safe_name`'s letters:
/// never `..`, `/` or empty), so `workspaces/<agent>/` stays one folder.
fn safe_agent(id: &str) -> bool {
    !id.is_empty() && id.len() <= 128 && crate::fsutil::safe_name(id) == id
}

/// Whether a path the manifest reports (where it came from) is plain: no
/// `..`, no NUL. Nothing is ever written there (an archive from an older
/// build may report a relative `--config`).
fn plain_reported(p: &str) -> bool {
    !p.is_empty()
        && !p.contains('\0')
        && Path::new(p).components().all(|c| {
            matches!(
                c,
                Component::RootDir | Component::CurDir | Component::Normal(_)
            )
        })
}

/// State dir entries an archive never holds: the store (its log is),
/// the lock, and where a restore keeps workspaces.
fn reserved(path: &str) -> bool {
    ["state/store/", "state/restored-workspaces/"]
        .iter()
        .any(|r| path.starts_with(r))
        || path == "state/ferroclaw.lock"
}

/// Every check on the manifest, after the payloads it names were read.
/// The places a manifest reports are plain paths and its workspaces' agent
/// ids safe and distinct: those ids.
fn places_of(manifest: &Manifest) -> Result<std::collections::BTreeSet<&str>, BackupError> {
    let places = std::iter::once(&manifest.state_dir)
        .chain(&manifest.config)
        .chain(manifest.workspaces.iter().map(|w| &w.source));
    for p in places {
        if !plain_reported(p) {
            return Err(BackupError::Invalid(format!(
                "manifest: {p:?} is not a plain path"
            )));
        }
    }
    let mut agents = std::collections::BTreeSet::new();
    for w in &manifest.workspaces {
        if !safe_agent(&w.agent_id) || !agents.insert(w.agent_id.as_str()) {
            return Err(BackupError::Invalid(format!(
                "manifest: unsafe or repeated workspace agent id {:?}",
                w.agent_id
            )));
        }
    }
    Ok(agents)
}

fn check_manifest(
    manifest: &Manifest,
    mut seen: BTreeMap<String, Entry>,
) -> Result<(), BackupError> {
    if manifest.format != FORMAT || manifest.version > VERSION {
        return Err(BackupError::Invalid(format!(
            "manifest: {} version {} is not a backup this build reads",
            manifest.format, manifest.version
        )));
    }
    let agents = places_of(manifest)?;
    for e in &manifest.entries {
        if !safe_path(&e.path) {
            return Err(BackupError::Invalid(format!(
                "manifest: unsafe path {:?}",
                e.path
            )));
        }
        match seen.remove(&e.path) {
            None => {
                return Err(BackupError::Invalid(format!(
                    "{} is in the manifest, not in the archive",
                    e.path
                )))
            }
            Some(got) if got != *e => {
                return Err(BackupError::Invalid(format!(
                    "{}: checksum mismatch (manifest {} bytes {}, archive {} bytes {})",
                    e.path, e.bytes, e.sha256, got.bytes, got.sha256
                )))
            }
            Some(_) => {}
        }
        if let Some(rest) = e.path.strip_prefix("workspaces/") {
            let agent = rest.split('/').next().unwrap_or("");
            if !agents.contains(agent) {
                return Err(BackupError::Invalid(format!(
                    "{}: no workspace {agent:?} in the manifest",
                    e.path
                )));
            }
        }
    }
    if let Some(extra) = seen.keys().next() {
        return Err(BackupError::Invalid(format!(
            "{extra} is in the archive, not in the manifest"
        )));
    }
    Ok(())
}

/// Reads an archive once, from any reader (a file, a pipe), checking each
/// entry before `payload` gets it: a plain relative path, not reserved, a
/// regular file, not seen before, not after the manifest. `payload` reads
/// what it wants of the entry (the rest is read for the checksum) and
/// returns the store log's summary for `STORE_LOG`. Every check on the
/// manifest runs at the end: until `read` returns Ok, nothing `payload`
/// wrote may be trusted.
pub fn read(
    input: impl Read,
    mut payload: impl FnMut(&str, &mut dyn std::io::BufRead) -> Result<Option<LogSummary>, BackupError>,
) -> Result<Verified, BackupError> {
    let mut tar = tar::Archive::new(flate2::read::GzDecoder::new(BufReader::new(input)));
    let mut seen: BTreeMap<String, Entry> = BTreeMap::new();
    let mut manifest: Option<Manifest> = None;
    let mut store = None;
    for item in tar.entries().map_err(damaged)? {
        let mut entry = item.map_err(damaged)?;
        let path = entry.path().map_err(damaged)?.to_string_lossy().to_string();
        if !safe_path(&path) || reserved(&path) {
            return Err(BackupError::Invalid(format!(
                "unsafe path in the archive: {path:?}"
            )));
        }
        if entry.header().entry_type() != tar::EntryType::Regular {
            return Err(BackupError::Invalid(format!("{path}: not a regular file")));
        }
        if seen.contains_key(&path) || (path == MANIFEST && manifest.is_some()) {
            return Err(BackupError::Invalid(format!("{path} appears twice")));
        }
        if path == MANIFEST {
            let m: Manifest = serde_json::from_reader(&mut entry)
                .map_err(|e| BackupError::Invalid(format!("manifest.json: {e}")))?;
            manifest = Some(m);
            continue;
        }
        if manifest.is_some() {
            return Err(BackupError::Invalid(format!("{path} follows the manifest")));
        }
        let mut hashing = Hashing::new(&mut entry);
        let summary = payload(&path, &mut BufReader::new(&mut hashing))?;
        if path == STORE_LOG {
            store = Some(summary.ok_or_else(|| damaged("the store log was not read"))?);
        }
        std::io::copy(&mut hashing, &mut std::io::sink()).map_err(damaged)?;
        let (bytes, sha256) = hashing.finish();
        seen.insert(
            path.clone(),
            Entry {
                path,
                bytes,
                sha256,
            },
        );
    }
    let manifest = manifest.ok_or_else(|| damaged("no manifest.json (truncated?)"))?;
    check_manifest(&manifest, seen)?;
    let store = store.ok_or_else(|| BackupError::Invalid(format!("no {STORE_LOG}")))?;
    if store.entries != manifest.store_entries {
        return Err(BackupError::Invalid(format!(
            "{STORE_LOG} holds {} entries, the manifest says {}",
            store.entries, manifest.store_entries
        )));
    }
    Ok(Verified { manifest, store })
}
