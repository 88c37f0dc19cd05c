//! `AuditDb`: the ledger's SQLite file and the one thread that owns it (an
//! actix sync actor: its messages run in order on that thread). Rows hold
//! the filter columns and the record as JSON; the sequence is the row id.

use std::path::Path;

use actix::prelude::*;
use rusqlite::{params_from_iter, Connection, OptionalExtension};

use super::messages::{Append, Prune, Read};
use super::refs::Keyed;
use super::{Activity, Entry, Flow, Page, Query, Who};

#[derive(Debug, thiserror::Error)]
pub enum DbError {
    #[error("audit ledger: {0}")]
    Sql(#[from] rusqlite::Error),
    #[error("audit ledger: unreadable record {0}: {1}")]
    Record(u64, String),
    #[error("audit ledger: the ledger is not running")]
    Gone,
    #[error("audit ledger: no randomness for its key")]
    Random,
}

/// How much is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub max_rows: u64,
    pub retention_ms: u64,
}

impl Default for Limits {
    /// OpenClaw's: 100,000 rows, 30 days.
    fn default() -> Self {
        Limits {
            max_rows: 100_000,
            retention_ms: 30 * 86_400_000,
        }
    }
}

pub struct AuditDb {
    conn: Connection,
    keyed: Keyed,
    limits: Limits,
    next: u64,
    rows: u64,
    span: tracing::Span,
}

/// The page's query: events since `since` matching `q`, newest first,
/// after its cursor, one more than `limit` (to tell there are more).
fn select(q: &Query, since: u64, limit: usize) -> (String, Vec<rusqlite::types::Value>) {
    let mut sql = String::from(
        "SELECT sequence, occurred_at, event_id, body FROM events WHERE occurred_at >= ?",
    );
    let mut args: Vec<rusqlite::types::Value> = vec![(since as i64).into()];
    let mut eq = |col: &str, v: &Option<String>| {
        if let Some(v) = v {
            sql.push_str(&format!(" AND {col} = ?"));
            args.push(v.clone().into());
        }
    };
    eq("agent_id", &q.agent_id);
    eq("session_key", &q.session_key);
    eq("run_id", &q.run_id);
    eq("kind", &q.kind);
    eq("status", &q.status);
    eq("direction", &q.direction);
    eq("channel", &q.channel);
    if q.kind.is_none() {
        sql.push_str(if q.messages {
            " AND kind != 'control'"
        } else {
            " AND kind IN ('agent_run', 'tool_action')"
        });
    }
    for (bound, v) in [
        (" AND occurred_at >= ?", q.after),
        (" AND occurred_at <= ?", q.before),
    ] {
        if let Some(v) = v {
            sql.push_str(bound);
            args.push((v as i64).into());
        }
    }
    if let Some(c) = q.cursor {
        sql.push_str(" AND sequence < ?");
        args.push((c as i64).into());
    }
    sql.push_str(" ORDER BY sequence DESC LIMIT ?");
    args.push((limit as i64 + 1).into());
    (sql, args)
}

impl AuditDb {
    /// Opens (or makes) the ledger at `path`.
    pub fn open(path: &Path, limits: Limits) -> Result<AuditDb, DbError> {
        // Created 0600, so its WAL and shared-memory files (SQLite gives
        // them the database's mode) are private too.
        if let Err(e) = crate::fsutil::private_options()
            .create(true)
            .append(true)
            .open(path)
        {
            tracing::warn!(error = %e, "audit ledger file not created private");
        }
        let conn = Connection::open(path)?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        // The log is cut back to 4 MB whenever a checkpoint resets it; the
        // hourly prune ends with a TRUNCATE checkpoint.
        conn.pragma_update(None, "journal_size_limit", 4 * 1024 * 1024)?;
        // Pages are read in sequence order and rarely twice: a small page
        // cache (512 KB, SQLite's default is 2 MB) keeps the idle RSS low.
        conn.pragma_update(None, "cache_size", -512)?;
        conn.execute_batch(
            "CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v BLOB NOT NULL);
             CREATE TABLE IF NOT EXISTS events (
               sequence INTEGER PRIMARY KEY,
               occurred_at INTEGER NOT NULL,
               kind TEXT NOT NULL,
               status TEXT NOT NULL,
               agent_id TEXT, session_key TEXT, run_id TEXT, direction TEXT, channel TEXT,
               event_id TEXT NOT NULL,
               body TEXT NOT NULL);
             CREATE INDEX IF NOT EXISTS events_at ON events(occurred_at);
             CREATE INDEX IF NOT EXISTS events_run ON events(run_id);
             CREATE INDEX IF NOT EXISTS events_session ON events(session_key);",
        )?;
        let keyed = key(&conn)?;
        let next: u64 =
            conn.query_row("SELECT COALESCE(MAX(sequence), 0) FROM events", [], |r| {
                r.get::<_, i64>(0)
            })? as u64
                + 1;
        let rows = count(&conn)?;
        let mut db = AuditDb {
            conn,
            keyed,
            limits,
            next,
            rows,
            span: tracing::info_span!("audit_db"),
        };
        db.prune(crate::now_ms())?;
        Ok(db)
    }

    /// Writes `records` in one transaction (platform ids replaced by their
    /// references first) and drops what went over the limits.
    pub fn append(&mut self, records: Vec<super::Record>) -> Result<usize, DbError> {
        if records.is_empty() {
            return Ok(0);
        }
        let tx = self.conn.transaction()?;
        let mut n = 0;
        {
            let mut insert = tx.prepare_cached(
                "INSERT INTO events (sequence, occurred_at, kind, status, agent_id, session_key,
                   run_id, direction, channel, event_id, body)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
            )?;
            for r in records {
                let activity = pseudonymize(&self.keyed, r.activity);
                let body = serde_json::to_string(&activity)
                    .map_err(|e| DbError::Record(self.next, e.to_string()))?;
                insert.execute(rusqlite::params![
                    self.next as i64,
                    r.at_ms as i64,
                    activity.kind(),
                    activity.status(),
                    activity.agent_id(),
                    activity.session_key(),
                    activity.run_id(),
                    activity.direction(),
                    activity.channel(),
                    ulid::Ulid::generate().to_string(),
                    body,
                ])?;
                self.next += 1;
                n += 1;
            }
        }
        tx.commit()?;
        self.rows += n as u64;
        if self.rows > self.limits.max_rows {
            self.prune(crate::now_ms())?;
        }
        Ok(n)
    }

    /// Deletes rows past the retention and the oldest over the row limit.
    /// Copies the log into the database and truncates it. False when a
    /// reader's snapshot (a backup, `sqlite3`) holds it: nothing waits, the
    /// next hourly prune tries again.
    pub fn checkpoint(&self) -> Result<bool, DbError> {
        let busy: i64 = self
            .conn
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| r.get(0))?;
        Ok(busy == 0)
    }

    pub fn prune(&mut self, now: u64) -> Result<usize, DbError> {
        let oldest = now.saturating_sub(self.limits.retention_ms) as i64;
        let mut gone = self
            .conn
            .execute("DELETE FROM events WHERE occurred_at < ?1", [oldest])?;
        let rows = count(&self.conn)?;
        if rows > self.limits.max_rows {
            let over = (rows - self.limits.max_rows) as i64;
            gone += self.conn.execute(
                "DELETE FROM events WHERE sequence IN
                   (SELECT sequence FROM events ORDER BY sequence ASC LIMIT ?1)",
                [over],
            )?;
        }
        self.rows = count(&self.conn)?;
        if gone > 0 {
            tracing::info!(parent: &self.span, removed = gone, kept = self.rows, "old audit records removed");
        }
        Ok(gone)
    }

    /// One page, newest first.
    pub fn list(&self, q: &Query, now: u64) -> Result<Page, DbError> {
        let limit = q.limit.clamp(1, 500);
        let since = now.saturating_sub(self.limits.retention_ms);
        let (sql, args) = select(q, since, limit);
        let mut stmt = self.conn.prepare(&sql)?;
        let rows = stmt.query_map(params_from_iter(args), |r| {
            Ok((
                r.get::<_, i64>(0)? as u64,
                r.get::<_, i64>(1)? as u64,
                r.get::<_, String>(2)?,
                r.get::<_, String>(3)?,
            ))
        })?;
        let mut entries = Vec::with_capacity(limit);
        let mut more = false;
        for row in rows {
            let (sequence, occurred_at, event_id, body) = row?;
            if entries.len() == limit {
                more = true;
                break;
            }
            let activity: Activity = serde_json::from_str(&body)
                .map_err(|e| DbError::Record(sequence, e.to_string()))?;
            entries.push(Entry {
                sequence,
                event_id,
                occurred_at,
                activity,
            });
        }
        let next = more.then(|| entries.last().map(|e| e.sequence)).flatten();
        Ok(Page { entries, next })
    }

    /// Rows held now.
    pub fn rows(&self) -> u64 {
        self.rows
    }
}

fn count(conn: &Connection) -> Result<u64, DbError> {
    Ok(conn.query_row("SELECT COUNT(*) FROM events", [], |r| r.get::<_, i64>(0))? as u64)
}

/// The ledger's key, made at its first start.
fn key(conn: &Connection) -> Result<Keyed, DbError> {
    let get = |k: &str| -> Result<Option<Vec<u8>>, DbError> {
        Ok(conn
            .query_row("SELECT v FROM meta WHERE k = ?1", [k], |r| r.get(0))
            .optional()?)
    };
    if let (Some(key), Some(id)) = (get("hmac_key")?, get("hmac_key_id")?) {
        if let (Ok(key), Ok(id)) = (<[u8; 32]>::try_from(key), <[u8; 16]>::try_from(id)) {
            return Ok(Keyed::new(key, id));
        }
    }
    let (mut key, mut id) = ([0u8; 32], [0u8; 16]);
    if getrandom::fill(&mut key).is_err() || getrandom::fill(&mut id).is_err() {
        return Err(DbError::Random);
    }
    conn.execute(
        "INSERT OR REPLACE INTO meta (k, v) VALUES ('hmac_key', ?1), ('hmac_key_id', ?2)",
        rusqlite::params![key.to_vec(), id.to_vec()],
    )?;
    Ok(Keyed::new(key, id))
}

/// `a` with every platform id replaced by its keyed reference.
fn pseudonymize(keyed: &Keyed, a: Activity) -> Activity {
    let r = |domain: &str, v: Option<String>| v.map(|v| keyed.reference(domain, &v));
    match a {
        Activity::Message(mut m) => {
            m.account = r("account", m.account);
            m.chat = r("chat", m.chat);
            m.message = r("message", m.message);
            m.target = r("target", m.target);
            if let Flow::Inbound { sender, .. } = &mut m.flow {
                *sender = keyed.reference("sender", sender);
            }
            Activity::Message(m)
        }
        Activity::Control(mut c) => {
            if let Who::ChannelSender(s) = &mut c.actor {
                *s = keyed.reference("sender", s);
            }
            Activity::Control(c)
        }
        other => other,
    }
}

impl Actor for AuditDb {
    type Context = SyncContext<Self>;
}

impl Handler<Append> for AuditDb {
    type Result = ();
    fn handle(&mut self, msg: Append, _: &mut SyncContext<Self>) {
        let n = msg.records.len();
        if let Err(e) = self.append(msg.records) {
            tracing::error!(parent: &self.span, error = %e, lost = n, "audit records not written");
        }
    }
}

impl Handler<Read> for AuditDb {
    type Result = Result<Page, DbError>;
    fn handle(&mut self, msg: Read, _: &mut SyncContext<Self>) -> Self::Result {
        self.list(&msg.query, crate::now_ms())
    }
}

impl Handler<Prune> for AuditDb {
    type Result = ();
    fn handle(&mut self, _: Prune, _: &mut SyncContext<Self>) {
        if let Err(e) = self.prune(crate::now_ms()) {
            tracing::error!(parent: &self.span, error = %e, "cannot prune the audit ledger");
        }
        if let Err(e) = self.checkpoint() {
            tracing::warn!(parent: &self.span, error = %e, "audit ledger log not checkpointed");
        }
    }
}
