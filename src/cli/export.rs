//! `ferroclaw export [--session KEY] --out DIR`: sessions out of a running
//! gateway, in OpenClaw's own layout (`agents/<agentId>/sessions/
//! sessions.json` plus one `<sessionId>.jsonl` per session), so the folder
//! can be read by OpenClaw or imported again with `ferroclaw import`.
//! Transcripts come page by page (`sessions.export`); everything is written
//! into a staging folder beside DIR and moved into place whole at the end,
//! so a failure leaves nothing half-written.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::{print_json, Connection, Failure, Target};

/// A sessions tree in OpenClaw's layout being written under `root`.
pub(crate) struct SessionsTree {
    root: PathBuf,
    /// agent id -> session key -> row, for each agent's `sessions.json`.
    rows: BTreeMap<String, BTreeMap<String, Value>>,
}

/// A name used as one path component: no separators, not `.`/`..`, not empty.
fn safe_component(s: &str) -> bool {
    !s.is_empty() && s != "." && s != ".." && !s.contains(['/', '\\', '\0']) && s.len() <= 255
}

/// Why an export (or an import's backup of replaced sessions) could not
/// be written.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ExportError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("session {key}: agent {agent:?} or session id {session_id:?} cannot be a file name")]
    Name {
        key: String,
        agent: String,
        session_id: String,
    },
    #[error(transparent)]
    Store(#[from] ferroclaw_actors::store::StoreError),
    #[error(transparent)]
    Transcript(#[from] ferroclaw_actors::transcript::TranscriptError),
}

impl ExportError {
    fn io(path: &Path) -> impl FnOnce(std::io::Error) -> ExportError + '_ {
        move |source| ExportError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}

/// A new (or emptied) file, 0600.
fn private_file(path: &std::path::Path) -> Result<std::fs::File, ExportError> {
    ferroclaw_actors::fsutil::private_options()
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)
        .map_err(ExportError::io(path))
}

impl SessionsTree {
    pub(crate) fn new(root: PathBuf) -> SessionsTree {
        SessionsTree {
            root,
            rows: BTreeMap::new(),
        }
    }

    fn sessions_dir(&self, agent: &str) -> PathBuf {
        self.root.join("agents").join(agent).join("sessions")
    }

    /// Records a session's row and creates its transcript file.
    pub(crate) fn open_transcript(
        &mut self,
        agent: &str,
        key: &str,
        session_id: &str,
        row: Value,
    ) -> Result<(PathBuf, std::io::BufWriter<std::fs::File>), ExportError> {
        if !safe_component(agent) || !safe_component(session_id) {
            return Err(ExportError::Name {
                key: key.to_string(),
                agent: agent.to_string(),
                session_id: session_id.to_string(),
            });
        }
        let dir = self.sessions_dir(agent);
        // Transcripts are private: folders 0700, files 0600 from creation.
        ferroclaw_actors::fsutil::private_dir(&dir).map_err(ExportError::io(&dir))?;
        let path = dir.join(format!("{session_id}.jsonl"));
        let file = private_file(&path)?;
        self.rows
            .entry(agent.to_string())
            .or_default()
            .insert(key.to_string(), row);
        Ok((path, std::io::BufWriter::new(file)))
    }

    /// Writes each agent's `sessions.json` (session key -> row).
    pub(crate) fn write_indexes(&self) -> Result<(), ExportError> {
        for (agent, rows) in &self.rows {
            let path = self.sessions_dir(agent).join("sessions.json");
            let text = serde_json::to_string_pretty(rows)
                .map_err(std::io::Error::other)
                .map_err(ExportError::io(&path))?;
            let mut f = private_file(&path)?;
            f.write_all(text.as_bytes())
                .and_then(|_| f.write_all(b"\n"))
                .and_then(|_| f.sync_all())
                .map_err(ExportError::io(&path))?;
        }
        Ok(())
    }
}

/// Appends entries as JSONL lines.
pub(crate) fn write_lines(
    out: &mut impl Write,
    entries: &[Value],
    path: &Path,
) -> Result<(), ExportError> {
    for e in entries {
        serde_json::to_writer(&mut *out, e)
            .map_err(std::io::Error::other)
            .and_then(|_| out.write_all(b"\n"))
            .map_err(ExportError::io(path))?;
    }
    Ok(())
}

/// Flushes and syncs a finished transcript file.
pub(crate) fn finish_file(
    mut w: std::io::BufWriter<std::fs::File>,
    path: &Path,
) -> Result<(), ExportError> {
    w.flush().map_err(ExportError::io(path))?;
    w.get_ref().sync_all().map_err(ExportError::io(path))
}

/// Renames `staging` to `out` (an absent or empty folder) and syncs the parent.
pub(crate) fn move_into_place(staging: &Path, out: &Path) -> std::io::Result<()> {
    std::fs::rename(staging, out)?;
    if let Some(parent) = out.parent() {
        if let Ok(d) = std::fs::File::open(parent) {
            let _ = d.sync_all();
        }
    }
    Ok(())
}

/// Checks that `out` can receive an export: absent, or an empty folder.
fn check_out(out: &Path) -> Result<(), Failure> {
    match std::fs::read_dir(out) {
        Ok(mut entries) => {
            if entries.next().is_some() {
                return Err(Failure::new(
                    2,
                    format!("{} is not empty; export into a new folder", out.display()),
                ));
            }
            Ok(())
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) if out.exists() => Err(Failure::new(
            2,
            format!(
                "{} is not a folder ({e}); choose a folder for --out",
                out.display()
            ),
        )),
        Err(e) => Err(Failure::new(2, format!("{}: {e}", out.display()))),
    }
}

struct Exported {
    key: String,
    agent: String,
    session_id: String,
    lines: usize,
    file: PathBuf,
}

async fn export_session(
    c: &mut Connection,
    tree: &mut SessionsTree,
    key: &str,
) -> Result<Exported, Failure> {
    let mut cursor: Option<String> = None;
    let mut open: Option<(PathBuf, std::io::BufWriter<std::fs::File>, Exported)> = None;
    loop {
        let mut params = json!({ "key": key });
        if let Some(c) = &cursor {
            params["cursor"] = json!(c);
        }
        let page = c.call("sessions.export", params).await?;
        let entries = page
            .get("entries")
            .and_then(Value::as_array)
            .ok_or_else(|| Failure::new(1, "sessions.export: the gateway sent no entries"))?;
        if open.is_none() {
            let text = |f: &str| {
                page.get(f)
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string()
            };
            let (canonical, agent, session_id) = (text("key"), text("agentId"), text("sessionId"));
            let row = page.get("row").cloned().unwrap_or_else(|| json!({}));
            let (path, w) = tree
                .open_transcript(&agent, &canonical, &session_id, row)
                .map_err(|e| Failure::new(1, format!("cannot write the export: {e}")))?;
            let done = Exported {
                key: canonical,
                agent,
                session_id,
                lines: 0,
                file: path.clone(),
            };
            open = Some((path, w, done));
        }
        let Some((path, w, done)) = open.as_mut() else {
            continue;
        };
        write_lines(w, entries, path)
            .map_err(|e| Failure::new(1, format!("cannot write the export: {e}")))?;
        done.lines += entries.len();
        match page.get("cursor").and_then(Value::as_str) {
            Some(c) => cursor = Some(c.to_string()),
            None => break,
        }
    }
    let Some((path, w, done)) = open else {
        return Err(Failure::new(1, "sessions.export: the gateway sent nothing"));
    };
    finish_file(w, &path).map_err(|e| Failure::new(1, format!("cannot write the export: {e}")))?;
    Ok(done)
}

/// `export`: every session (or `--session KEY`) into `out`.
pub async fn export(t: &Target, session: Option<&str>, out: &Path) -> Result<(), Failure> {
    check_out(out)?;
    let mut c = Connection::open(t).await?;
    c.keep_events = false;
    let keys: Vec<String> = match session {
        Some(k) => vec![k.to_string()],
        None => c
            .call("sessions.list", json!({}))
            .await?
            .get("sessions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|r| r.get("key").and_then(Value::as_str).map(str::to_string))
            .collect(),
    };
    let staging = staging_beside(out)?;
    let written = write_all(&mut c, &keys, &staging, out).await;
    let done = match written {
        Ok(done) => done,
        Err(e) => {
            let _ = std::fs::remove_dir_all(&staging);
            return Err(e);
        }
    };
    report(t, out, &staging, &done);
    Ok(())
}

/// A private staging folder beside `out` (its parent made when missing).
fn staging_beside(out: &Path) -> Result<PathBuf, Failure> {
    let parent = match out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&parent)
        .map_err(|e| Failure::new(1, format!("cannot create {}: {e}", parent.display())))?;
    let name = out.file_name().and_then(|n| n.to_str()).unwrap_or("export");
    let staging = parent.join(format!(".{name}.export-{}", ulid::Ulid::generate()));
    ferroclaw_actors::fsutil::private_dir(&staging)
        .map_err(|e| Failure::new(1, format!("cannot create {}: {e}", staging.display())))?;
    Ok(staging)
}

/// Every session written into `staging`, its indexes, then the whole moved
/// to `out`.
async fn write_all(
    c: &mut Connection,
    keys: &[String],
    staging: &Path,
    out: &Path,
) -> Result<Vec<Exported>, Failure> {
    let mut tree = SessionsTree::new(staging.to_path_buf());
    let mut done = Vec::new();
    for key in keys {
        done.push(export_session(c, &mut tree, key).await?);
    }
    tree.write_indexes()
        .map_err(|e| Failure::new(1, format!("cannot write the export: {e}")))?;
    move_into_place(staging, out).map_err(|e| {
        Failure::new(
            1,
            format!("cannot move the export to {}: {e}", out.display()),
        )
    })?;
    Ok(done)
}

/// What was exported: each session and its lines (or JSON).
fn report(t: &Target, out: &Path, staging: &Path, done: &[Exported]) {
    let lines: usize = done.iter().map(|d| d.lines).sum();
    if t.json {
        let sessions: Vec<Value> = done
            .iter()
            .map(|d| {
                let file = out.join(d.file.strip_prefix(staging).unwrap_or(&d.file));
                json!({ "key": d.key, "agentId": d.agent, "sessionId": d.session_id,
                        "lines": d.lines, "file": file.display().to_string() })
            })
            .collect();
        print_json(
            &json!({ "out": out.display().to_string(), "sessions": sessions, "lines": lines }),
        );
    } else if done.is_empty() {
        println!("no sessions to export; {} is empty", out.display());
    } else {
        for d in done {
            println!("{}  {} lines", d.key, d.lines);
        }
        println!(
            "exported {} session(s), {lines} lines, to {}",
            done.len(),
            out.display()
        );
    }
}
