//! OpenClaw session stores, in and out. OpenClaw keeps, per agent,
//! `agents/<agentId>/sessions/sessions.json` (session key -> row) and one
//! `<sessionId>.jsonl` transcript per session; ferroclaw keeps the same rows
//! as `SessionEntry`s and the same lines in its store. This module converts
//! rows both ways, reads an OpenClaw sessions folder (validated whole: one
//! bad row or line refuses everything) and imports its sessions. Transcripts
//! stream in, a line at a time, under their session ids, which no session
//! row names yet (invisible); then every row lands in one store transaction.
//! Memory stays bounded by a batch, whatever the size of the transcripts.
//! Plain file and store work: no actors, no network.

pub mod memory;

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};

use crate::inbound::SessionKey;
use crate::session::directives::{REASONING_LEVELS, THINKING_LEVELS, USAGE_LEVELS, VERBOSE_LEVELS};
use crate::session::queue::{parse_queue_directive, DropPolicy, QueueMode, QueueSettings};
use crate::session::SessionEntry;
use crate::store::{Store, StoreError, Tree};
use crate::transcript::{self, TranscriptError};

#[derive(Debug, thiserror::Error)]
pub enum MigrateError {
    #[error("{path}: {message}")]
    Bad { path: PathBuf, message: String },
    #[error("cannot read {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("{0}")]
    Conflict(String),
}

impl MigrateError {
    fn bad(path: &Path, message: impl Into<String>) -> MigrateError {
        MigrateError::Bad {
            path: path.to_path_buf(),
            message: message.into(),
        }
    }
}

/// One session read from an OpenClaw (or ferroclaw-exported) sessions folder.
#[derive(Debug, Clone)]
pub struct ImportedSession {
    /// The canonical session key.
    pub key: String,
    pub entry: SessionEntry,
    /// Its transcript file (checked, every line); None: no history.
    pub transcript: Option<PathBuf>,
    /// How many entries the transcript holds.
    pub lines: usize,
}

/// Transcript entries written per store batch during an import.
const IMPORT_BATCH: usize = 512;

/// What a sessions folder held: its sessions, and notes on what was left
/// out or changed (unsupported values, transcripts not named by any row).
#[derive(Debug, Default)]
pub struct SessionsDir {
    pub sessions: Vec<ImportedSession>,
    pub notes: Vec<String>,
}

/// A session's row in OpenClaw's `sessions.json` shape. ferroclaw's own
/// fields (`createdAt`, `queue`, `agentOverride`, `skillFilter`,
/// `lastMessagePreview`) ride along so a ferroclaw round trip loses nothing;
/// OpenClaw ignores them.
pub fn openclaw_row(e: &SessionEntry) -> Value {
    let mut row = match serde_json::to_value(e) {
        Ok(Value::Object(m)) => m,
        _ => Map::new(),
    };
    row.insert("sessionStartedAt".into(), json!(e.created_at));
    if let Some((provider, model)) = e.model_override.as_deref().and_then(|m| m.split_once('/')) {
        row.insert("providerOverride".into(), json!(provider));
        row.insert("modelOverride".into(), json!(model));
    }
    if let Some(q) = e.queue.as_deref() {
        if let Ok(s) = parse_queue_directive(q, QueueSettings::default()) {
            let mode = match s.mode {
                QueueMode::Steer => "steer",
                QueueMode::Followup => "followup",
                QueueMode::Collect => "collect",
                QueueMode::SteerBacklog => "steer-backlog",
                QueueMode::Interrupt => "interrupt",
            };
            let drop = match s.drop {
                DropPolicy::Old => "old",
                DropPolicy::New => "new",
                DropPolicy::Summarize => "summarize",
            };
            row.insert("queueMode".into(), json!(mode));
            row.insert(
                "queueDebounceMs".into(),
                json!(s.debounce.as_millis() as u64),
            );
            row.insert("queueCap".into(), json!(s.cap));
            row.insert("queueDrop".into(), json!(drop));
        }
    }
    Value::Object(row)
}

fn string(row: &Value, field: &str) -> Option<String> {
    row.get(field)
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

fn count(row: &Value, field: &str) -> u64 {
    row.get(field)
        .and_then(|v| v.as_u64().or_else(|| v.as_f64().map(|f| f.max(0.0) as u64)))
        .unwrap_or(0)
}

crate::reason_error! {
    /// Why an OpenClaw session row cannot be taken.
    pub struct BadRow;
}

/// A `SessionEntry` from an OpenClaw row (or one ferroclaw exported).
/// Values ferroclaw does not support are left out, each with a note.
pub fn entry_from_row(
    key: &str,
    row: &Value,
    now: u64,
    notes: &mut Vec<String>,
) -> Result<SessionEntry, BadRow> {
    if !row.is_object() {
        return Err("the row is not a JSON object".into());
    }
    let session_id = string(row, "sessionId").ok_or("missing \"sessionId\"")?;
    if session_id.contains(['\0', '/', '\\']) || session_id.len() > 256 || session_id == ".." {
        return Err(format!("sessionId {session_id:?} is not usable").into());
    }
    let updated_at = match count(row, "updatedAt") {
        0 => now,
        t => t,
    };
    let created_at = ["createdAt", "sessionStartedAt", "startedAt"]
        .iter()
        .map(|f| count(row, f))
        .find(|t| *t > 0)
        .unwrap_or(updated_at);
    let model_override = match (
        string(row, "providerOverride"),
        string(row, "modelOverride"),
    ) {
        (Some(p), Some(m)) if !m.contains('/') => Some(format!("{p}/{m}")),
        (_, m) => m,
    };
    let mut entry = SessionEntry {
        session_id,
        created_at,
        updated_at,
        label: string(row, "label"),
        model_override,
        auth_profile_override: string(row, "authProfileOverride"),
        model_provider: string(row, "modelProvider"),
        model: string(row, "model"),
        agent_override: string(row, "agentOverride"),
        spawned_by: string(row, "spawnedBy"),
        exec_node: string(row, "execNode"),
        skill_filter: row.get("skillFilter").and_then(Value::as_array).map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        }),
        // ferroclaw's own export carries it (OpenClaw's rows do not).
        last_run: row
            .get("lastRun")
            .and_then(|v| serde_json::from_value(v.clone()).ok()),
        origin: origin_of(row),
        ..counters_of(row)
    };
    // The notes in the row's order: the levels, then the queue.
    levels(key, row, notes, &mut entry);
    entry.queue = queue_of(key, row, notes);
    Ok(entry)
}

/// The row's levels and exec settings; one ferroclaw does not take is
/// left out with a note.
fn levels(key: &str, row: &Value, notes: &mut Vec<String>, e: &mut SessionEntry) {
    let mut level = |field: &str, allowed: &[&str], aliases: &[(&str, &str)]| {
        let v = string(row, field)?;
        let v = aliases
            .iter()
            .find(|(from, _)| *from == v)
            .map(|(_, to)| to.to_string())
            .unwrap_or(v);
        if allowed.contains(&v.as_str()) {
            Some(v)
        } else {
            notes.push(format!(
                "{key}: {field} {v:?} is not supported here; left out"
            ));
            None
        }
    };
    e.thinking_level = level("thinkingLevel", THINKING_LEVELS, &[]);
    e.verbose_level = level("verboseLevel", VERBOSE_LEVELS, &[]);
    e.reasoning_level = level("reasoningLevel", REASONING_LEVELS, &[]);
    e.response_usage = level("responseUsage", USAGE_LEVELS, &[("on", "tokens")]);
    e.send_policy = level("sendPolicy", &["allow", "deny"], &[]);
    e.exec_host = level("execHost", &["gateway", "sandbox", "node"], &[]);
    e.exec_security = level("execSecurity", &["deny", "allowlist", "full"], &[]);
    e.exec_ask = level("execAsk", &["off", "on-miss", "always"], &[]);
}

/// The queue settings (`queue`, else OpenClaw's `queueMode` and its
/// fields), when they parse.
fn queue_of(key: &str, row: &Value, notes: &mut Vec<String>) -> Option<String> {
    let q = string(row, "queue").or_else(|| {
        let mut q = string(row, "queueMode")?;
        if let Some(ms) = row.get("queueDebounceMs").and_then(Value::as_u64) {
            q.push_str(&format!(" debounce:{ms}ms"));
        }
        if let Some(cap) = row.get("queueCap").and_then(Value::as_u64) {
            q.push_str(&format!(" cap:{cap}"));
        }
        if let Some(drop) = string(row, "queueDrop") {
            q.push_str(&format!(" drop:{drop}"));
        }
        Some(q)
    })?;
    match parse_queue_directive(&q, QueueSettings::default()) {
        Ok(_) => Some(q),
        Err(e) => {
            notes.push(format!("{key}: queue settings {q:?}: {e}; left out"));
            None
        }
    }
}

/// OpenClaw's last route: where the session's channel replies go.
fn origin_of(row: &Value) -> Option<crate::session::Origin> {
    let (channel, to) = (string(row, "lastChannel")?, string(row, "lastTo")?);
    Some(crate::session::Origin {
        channel,
        account_id: string(row, "lastAccountId").unwrap_or_else(|| "default".into()),
        to,
        thread_id: string(row, "lastThreadId"),
        chat_type: string(row, "chatType").unwrap_or_else(|| "direct".into()),
        matched_by: "import".into(),
    })
}

/// The row's counters: tokens, usage, compactions, the memory flush.
fn counters_of(row: &Value) -> SessionEntry {
    let small = |field: &str| count(row, field).min(u64::from(u32::MAX)) as u32;
    let flag = |field: &str| row.get(field).and_then(Value::as_bool).unwrap_or(false);
    SessionEntry {
        input_tokens: count(row, "inputTokens"),
        output_tokens: count(row, "outputTokens"),
        total_tokens: count(row, "totalTokens"),
        total_tokens_fresh: flag("totalTokensFresh"),
        cache_read: count(row, "cacheRead"),
        cache_write: count(row, "cacheWrite"),
        context_tokens: row.get("contextTokens").and_then(Value::as_u64),
        usage_by_model: row
            .get("usageByModel")
            .and_then(|v| serde_json::from_value(v.clone()).ok())
            .unwrap_or_default(),
        compaction_count: small("compactionCount"),
        memory_flush_compaction_count: row
            .get("memoryFlushCompactionCount")
            .and_then(Value::as_u64)
            .map(|n| n.min(u64::from(u32::MAX)) as u32),
        memory_flush_at: row.get("memoryFlushAt").and_then(Value::as_u64),
        aborted_last_run: flag("abortedLastRun"),
        last_message_preview: string(row, "lastMessagePreview"),
        spawn_depth: small("spawnDepth"),
        ..SessionEntry::default()
    }
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> MigrateError + '_ {
    move |source| MigrateError::Io {
        path: path.to_path_buf(),
        source,
    }
}

fn transcript_error(path: &Path, e: TranscriptError) -> MigrateError {
    match e {
        TranscriptError::Io(source) => MigrateError::Io {
            path: path.to_path_buf(),
            source,
        },
        other => MigrateError::bad(path, other.to_string()),
    }
}

/// Where a row's transcript is: its `sessionFile` when that file exists
/// (absolute, or relative to the folder), else the file of that name in the
/// folder (the folder may have moved), else `<sessionId>.jsonl`.
fn transcript_path(dir: &Path, row: &Value, session_id: &str) -> PathBuf {
    if let Some(f) = string(row, "sessionFile") {
        let p = dir.join(&f);
        if p.is_file() {
            return p;
        }
        if let Some(name) = Path::new(&f).file_name() {
            let p = dir.join(name);
            if p.is_file() {
                return p;
            }
        }
    }
    dir.join(format!("{session_id}.jsonl"))
}

/// A session's transcript, checked line by line and dropped (the import
/// reads it again): its path and lines, or none (noted) when it is gone.
fn checked(
    path: &Path,
    key: &str,
    notes: &mut Vec<String>,
) -> Result<(Option<std::path::PathBuf>, usize), MigrateError> {
    match std::fs::File::open(path) {
        Ok(f) => {
            let n = transcript::each_jsonl(std::io::BufReader::new(f), |_| Ok(()))
                .map_err(|e| transcript_error(path, e))?;
            Ok((Some(path.to_path_buf()), n))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            notes.push(format!(
                "{key}: no transcript file ({}); imported without history",
                path.display()
            ));
            Ok((None, 0))
        }
        Err(e) => Err(io(path)(e)),
    }
}

/// A note of the transcript files in `dir` no session row names.
fn orphans(dir: &Path, used: &HashSet<std::path::PathBuf>) -> Option<String> {
    let files = std::fs::read_dir(dir).ok()?;
    let orphans = files
        .filter_map(Result::ok)
        .map(|f| f.path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl") && !used.contains(p))
        .count();
    (orphans > 0).then(|| {
        format!(
            "{}: {orphans} transcript file(s) not named by any session row (old or reset sessions) were left out",
            dir.display()
        )
    })
}

/// Reads one agent's sessions folder (`sessions.json` plus the transcripts
/// its rows name). Keys are canonicalised for `agent_id`. Every row and
/// every line is checked; the first bad one is the error, naming its file
/// (and line). A row whose transcript file is missing imports with an
/// empty transcript, noted.
pub fn read_sessions_dir(
    dir: &Path,
    agent_id: &str,
    main_key: &str,
    now: u64,
) -> Result<SessionsDir, MigrateError> {
    let index = dir.join("sessions.json");
    let raw = std::fs::read_to_string(&index).map_err(io(&index))?;
    let rows: BTreeMap<String, Value> = serde_json::from_str(&raw).map_err(|e| {
        MigrateError::bad(&index, format!("not a JSON object of session rows: {e}"))
    })?;
    let mut out = SessionsDir::default();
    let mut used_files = HashSet::new();
    let mut keys = HashSet::new();
    for (raw_key, row) in &rows {
        let key = SessionKey::canonical(raw_key, agent_id, main_key)
            .map_err(|e| MigrateError::bad(&index, format!("session key {raw_key:?}: {e}")))?;
        let key = key.as_str().to_string();
        if !keys.insert(key.clone()) {
            return Err(MigrateError::bad(
                &index,
                format!("session key {raw_key:?} appears twice (as {key})"),
            ));
        }
        let entry = entry_from_row(&key, row, now, &mut out.notes)
            .map_err(|e| MigrateError::bad(&index, format!("session {raw_key:?}: {e}")))?;
        let path = transcript_path(dir, row, &entry.session_id);
        let (transcript, lines) = checked(&path, &key, &mut out.notes)?;
        used_files.insert(path);
        out.sessions.push(ImportedSession {
            key,
            entry,
            transcript,
            lines,
        });
    }
    let mut ids = HashSet::new();
    for s in &out.sessions {
        if !ids.insert(s.entry.session_id.as_str()) {
            return Err(MigrateError::bad(
                &index,
                format!("sessionId {} is used by two rows", s.entry.session_id),
            ));
        }
    }
    out.notes.extend(orphans(dir, &used_files));
    Ok(out)
}

/// The keys of `sessions` the store already has.
pub fn conflicting_keys(
    store: &Store,
    sessions: &[ImportedSession],
) -> Result<Vec<String>, MigrateError> {
    let mut keys = Vec::new();
    for s in sessions {
        if store.get::<SessionEntry>(Tree::Sessions, &s.key)?.is_some() {
            keys.push(s.key.clone());
        }
    }
    Ok(keys)
}

/// Streams one session's transcript into the store under `session_id`, in
/// batches. A `session` header line names the id it is stored under.
fn stream_transcript(
    store: &Store,
    s: &ImportedSession,
    session_id: &str,
) -> Result<usize, MigrateError> {
    let Some(path) = &s.transcript else {
        return Ok(0);
    };
    let file = std::fs::File::open(path).map_err(io(path))?;
    let mut batch = Vec::with_capacity(IMPORT_BATCH);
    let n = transcript::each_jsonl(std::io::BufReader::new(file), |mut v| {
        if transcript::Entry::of(&v) == transcript::Entry::Session {
            v["id"] = json!(session_id);
        }
        batch.push(v);
        if batch.len() == IMPORT_BATCH {
            transcript::append(store, session_id, &batch)?;
            batch.clear();
        }
        Ok(())
    })
    .map_err(|e| transcript_error(path, e))?;
    transcript::append(store, session_id, &batch).map_err(|e| transcript_error(path, e))?;
    Ok(n)
}

/// Writes the sessions' transcripts (under fresh ids where theirs are
/// taken; each id written is noted in `written`) and returns the entries
/// to commit, with the lines written.
fn staged(
    store: &Store,
    sessions: Vec<ImportedSession>,
    written: &mut Vec<String>,
) -> Result<(Vec<crate::store::StoreWrite>, usize), MigrateError> {
    let existing: Vec<(String, SessionEntry)> = store.scan(Tree::Sessions, "")?;
    let mut used: HashSet<String> = existing.iter().map(|(_, e)| e.session_id.clone()).collect();
    let mut writes = Vec::new();
    let mut lines = 0;
    for mut s in sessions {
        let in_store = !transcript::page(store, &s.entry.session_id, None, 1)
            .map_err(|e| MigrateError::Conflict(e.to_string()))?
            .0
            .is_empty();
        if used.contains(&s.entry.session_id) || in_store {
            s.entry.session_id = ulid::Ulid::generate().to_string();
        }
        used.insert(s.entry.session_id.clone());
        written.push(s.entry.session_id.clone());
        lines += stream_transcript(store, &s, &s.entry.session_id)?;
        if let Some((_, old)) = existing.iter().find(|(k, _)| *k == s.key) {
            writes.extend(
                transcript::removals_for(store, &old.session_id)
                    .map_err(|e| MigrateError::Conflict(e.to_string()))?,
            );
        }
        let entry = serde_json::to_value(&s.entry).map_err(StoreError::from)?;
        writes.push((Tree::Sessions, s.key, Some(entry)));
    }
    Ok((writes, lines))
}

/// Imports sessions into the store. Transcripts stream in first, under
/// session ids no row names yet; then every row (and, with `replace`, the
/// removal of the replaced sessions' old transcripts) lands in one
/// transaction, and the store is flushed. A key that already exists is a
/// conflict (nothing written) unless `replace`. A session id the store
/// already uses (a re-import) gets a fresh one. On failure the streamed
/// lines are removed again. Returns the number of transcript lines written.
pub async fn commit_import(
    store: &Store,
    sessions: Vec<ImportedSession>,
    replace: bool,
) -> Result<usize, MigrateError> {
    let conflicts = conflicting_keys(store, &sessions)?;
    if !conflicts.is_empty() && !replace {
        let shown: Vec<&str> = conflicts.iter().take(3).map(String::as_str).collect();
        return Err(MigrateError::Conflict(format!(
            "{} session(s) already exist here ({}{}); pass --force to replace them",
            conflicts.len(),
            shown.join(", "),
            if conflicts.len() > 3 { ", ..." } else { "" }
        )));
    }
    let mut written: Vec<String> = Vec::new();
    let result = staged(store, sessions, &mut written);
    let outcome = match result {
        Ok((writes, lines)) => store
            .commit(&writes)
            .map(|_| lines)
            .map_err(MigrateError::from),
        Err(e) => Err(e),
    };
    match outcome {
        Ok(lines) => {
            store.flush().await?;
            Ok(lines)
        }
        Err(e) => {
            for id in &written {
                if let Err(cleanup) = transcript::delete(store, id) {
                    tracing::warn!(session_id = %id, error = %cleanup, "cannot remove a half-imported transcript");
                }
            }
            Err(e)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: u64 = 1_770_000_000_000;

    #[test]
    fn openclaw_rows_become_entries_and_unsupported_values_are_noted() {
        let row = json!({
            "sessionId": "9f1c", "updatedAt": 1770364145000u64, "sessionStartedAt": 1770364140000u64,
            "thinkingLevel": "adaptive", "verboseLevel": "full", "responseUsage": "on",
            "providerOverride": "anthropic", "modelOverride": "claude-sonnet-4-6",
            "queueMode": "followup", "queueDebounceMs": 500, "queueCap": 5, "queueDrop": "old",
            "inputTokens": 10, "outputTokens": 5.0, "totalTokens": 15, "label": "work",
            "skillsSnapshot": {"prompt": "..."}, "origin": {"provider": "telegram"}
        });
        let mut notes = Vec::new();
        let e = entry_from_row("agent:main:main", &row, NOW, &mut notes).unwrap();
        assert_eq!(e.session_id, "9f1c");
        assert_eq!((e.created_at, e.updated_at), (1770364140000, 1770364145000));
        assert_eq!(e.thinking_level, None);
        assert_eq!(e.verbose_level.as_deref(), Some("full"));
        assert_eq!(e.response_usage.as_deref(), Some("tokens"));
        assert_eq!(
            e.model_override.as_deref(),
            Some("anthropic/claude-sonnet-4-6")
        );
        assert_eq!(
            e.queue.as_deref(),
            Some("followup debounce:500ms cap:5 drop:old")
        );
        assert_eq!(
            (e.input_tokens, e.output_tokens, e.total_tokens),
            (10, 5, 15)
        );
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(notes[0].contains("thinkingLevel \"adaptive\""), "{notes:?}");

        for bad in [json!({}), json!({"sessionId": "../x"}), json!("row")] {
            assert!(entry_from_row("k", &bad, NOW, &mut notes).is_err(), "{bad}");
        }
    }

    #[test]
    fn an_exported_row_reads_back_as_the_same_entry() {
        let mut e = SessionEntry::new(NOW);
        e.label = Some("l".into());
        e.model_override = Some("openai/gpt-5".into());
        e.queue = Some("collect debounce:2s cap:25".into());
        e.agent_override = Some("work".into());
        e.skill_filter = Some(vec!["git".into()]);
        e.thinking_level = Some("high".into());
        e.input_tokens = 3;
        let row = openclaw_row(&e);
        assert_eq!(row["providerOverride"], "openai");
        assert_eq!(row["modelOverride"], "gpt-5");
        assert_eq!(row["queueMode"], "collect");
        assert_eq!(row["queueDebounceMs"], 2000);
        let mut notes = Vec::new();
        let back = entry_from_row("agent:main:main", &row, NOW + 5, &mut notes).unwrap();
        assert_eq!(back, e);
        assert!(notes.is_empty(), "{notes:?}");
    }

    fn write(dir: &Path, name: &str, text: &str) {
        std::fs::write(dir.join(name), text).unwrap();
    }

    #[test]
    fn a_sessions_folder_is_read_whole_or_refused_with_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        write(
            d,
            "sessions.json",
            r#"{"agent:main:main": {"sessionId": "a1", "updatedAt": 5},
                "web:x": {"sessionId": "b2", "sessionFile": "/elsewhere/b2.jsonl"},
                "agent:main:empty": {"sessionId": "c3"}}"#,
        );
        write(d, "a1.jsonl", "{\"type\":\"session\",\"id\":\"a1\"}\n\n{\"type\":\"message\",\"message\":{\"role\":\"user\",\"content\":\"hi\"}}\n");
        write(d, "b2.jsonl", "{\"type\":\"session\",\"id\":\"b2\"}\n");
        write(d, "old.jsonl", "{\"type\":\"session\"}\n");
        let got = read_sessions_dir(d, "main", "main", NOW).unwrap();
        let keys: Vec<&str> = got.sessions.iter().map(|s| s.key.as_str()).collect();
        assert_eq!(
            keys,
            ["agent:main:empty", "agent:main:main", "agent:main:web:x"]
        );
        let lines: Vec<usize> = got.sessions.iter().map(|s| s.lines).collect();
        assert_eq!(lines, [0, 2, 1]);
        assert_eq!(got.notes.len(), 2, "{:?}", got.notes);

        write(d, "b2.jsonl", "{\"type\":\"session\"}\n{\"message\":{}}\n");
        let err = read_sessions_dir(d, "main", "main", NOW)
            .unwrap_err()
            .to_string();
        assert!(err.contains("b2.jsonl") && err.contains("line 2"), "{err}");

        write(d, "sessions.json", "[1, 2]");
        let err = read_sessions_dir(d, "main", "main", NOW)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("sessions.json") && err.contains("not a JSON object"),
            "{err}"
        );
    }

    #[actix::test]
    async fn an_import_lands_whole_or_not_at_all_and_force_replaces() {
        let dir = tempfile::tempdir().unwrap();
        let files = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let session = |key: &str, id: &str, lines: usize| {
            let path = files.path().join(format!("{id}-{key}.jsonl"));
            let mut text = format!("{{\"type\":\"session\",\"id\":\"{id}\"}}\n");
            for i in 1..lines {
                text.push_str(&format!("{{\"type\":\"custom\",\"n\":{i}}}\n"));
            }
            std::fs::write(&path, text).unwrap();
            ImportedSession {
                key: key.into(),
                entry: SessionEntry {
                    session_id: id.into(),
                    ..SessionEntry::new(NOW)
                },
                transcript: Some(path),
                lines,
            }
        };
        let n = commit_import(&store, vec![session("agent:main:a", "s1", 3)], false)
            .await
            .unwrap();
        assert_eq!(n, 3);
        assert_eq!(transcript::entries(&store, "s1").unwrap().len(), 3);

        // A conflict refuses everything: no row, no streamed line.
        let again = commit_import(
            &store,
            vec![
                session("agent:main:b", "s2", 1),
                session("agent:main:a", "s3", 1),
            ],
            false,
        )
        .await
        .unwrap_err()
        .to_string();
        assert!(
            again.contains("1 session(s) already exist") && again.contains("--force"),
            "{again}"
        );
        assert_eq!(
            store
                .get::<SessionEntry>(Tree::Sessions, "agent:main:b")
                .unwrap(),
            None
        );
        assert!(transcript::entries(&store, "s2").unwrap().is_empty());

        // --force: the row points at the new transcript; the old one goes.
        commit_import(&store, vec![session("agent:main:a", "s3", 2)], true)
            .await
            .unwrap();
        let a: SessionEntry = store.get(Tree::Sessions, "agent:main:a").unwrap().unwrap();
        assert_eq!(a.session_id, "s3");
        assert!(
            transcript::entries(&store, "s1").unwrap().is_empty(),
            "old transcript gone"
        );
        assert_eq!(transcript::entries(&store, "s3").unwrap().len(), 2);

        // Importing the same session again: its id is taken, so it gets a
        // fresh one (the header follows), and the old lines go.
        commit_import(&store, vec![session("agent:main:a", "s3", 4)], true)
            .await
            .unwrap();
        let a: SessionEntry = store.get(Tree::Sessions, "agent:main:a").unwrap().unwrap();
        assert_ne!(a.session_id, "s3");
        let lines = transcript::entries(&store, &a.session_id).unwrap();
        assert_eq!(lines.len(), 4);
        assert_eq!(lines[0]["id"], json!(a.session_id));
        assert!(transcript::entries(&store, "s3").unwrap().is_empty());

        // A failure half-way (a transcript gone since it was checked):
        // nothing lands and nothing streamed stays behind.
        let ok = session("agent:main:c", "s4", 5);
        let gone = session("agent:main:d", "s5", 2);
        std::fs::remove_file(gone.transcript.as_ref().unwrap()).unwrap();
        let err = commit_import(&store, vec![ok, gone], false)
            .await
            .unwrap_err();
        assert!(err.to_string().contains("s5-agent:main:d.jsonl"), "{err}");
        assert_eq!(
            store
                .get::<SessionEntry>(Tree::Sessions, "agent:main:c")
                .unwrap(),
            None
        );
        assert!(
            transcript::entries(&store, "s4").unwrap().is_empty(),
            "streamed lines removed"
        );
    }
}
