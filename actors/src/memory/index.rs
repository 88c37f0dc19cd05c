//! One agent's persistent memory index: a SQLite file (rusqlite, SQLite
//! built in) with the chunks, their vectors stored once as binary f32, and
//! an FTS5 table over the chunk texts for BM25 keyword search. SQLite's
//! FTS5 was chosen over tantivy: one small file per agent that also holds
//! the chunks and vectors transactionally, the same engine OpenClaw's
//! memory uses, and a build that adds seconds rather than minutes.
//!
//! Files are the source of truth: `sync_file` re-chunks a file only when
//! its content hash changed, in one transaction; searching never indexes.
//! Vectors are kept in memory for the vector leg (searched by a full scan
//! behind `search`; the local embedder's IDF is rebuilt at open).

use std::collections::HashMap;
use std::path::Path;

use rusqlite::{params, Connection, OptionalExtension};

use super::chunk::{chunk, content_hash};
use super::embed::{cosine, Idf};
use super::rank::{self, Scored};

#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    #[error("memory index: {0}")]
    Sql(#[from] rusqlite::Error),
}

/// What syncing a file did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Synced {
    Unchanged,
    /// Re-chunked: this many chunks now.
    Indexed(usize),
}

/// One search result.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    pub path: String,
    pub start_line: usize,
    pub end_line: usize,
    pub score: f64,
    pub snippet: String,
}

struct Stored {
    path: String,
    text: String,
    start_line: usize,
    end_line: usize,
    vector: Vec<f32>,
}

pub struct MemoryIndex {
    conn: Connection,
    idf: Idf,
    chunks: HashMap<i64, Stored>,
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS files (path TEXT PRIMARY KEY, hash TEXT NOT NULL, mtime_ms INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS chunks (
  id INTEGER PRIMARY KEY, path TEXT NOT NULL, start_line INTEGER NOT NULL, end_line INTEGER NOT NULL,
  hash TEXT NOT NULL, text TEXT NOT NULL, vector BLOB NOT NULL);
CREATE INDEX IF NOT EXISTS chunks_path ON chunks(path);
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(text, content='chunks', content_rowid='id');
CREATE TRIGGER IF NOT EXISTS chunks_ai AFTER INSERT ON chunks BEGIN
  INSERT INTO chunks_fts(rowid, text) VALUES (new.id, new.text); END;
CREATE TRIGGER IF NOT EXISTS chunks_ad AFTER DELETE ON chunks BEGIN
  INSERT INTO chunks_fts(chunks_fts, rowid, text) VALUES ('delete', old.id, old.text); END;
";

fn to_blob(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn from_blob(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

impl MemoryIndex {
    /// Opens (or creates) the index at `path`; `:memory:` for tests.
    pub fn open(path: &Path) -> Result<MemoryIndex, IndexError> {
        let conn = Connection::open(path)?;
        conn.execute_batch("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;")?;
        conn.execute_batch(SCHEMA)?;
        let mut idx = MemoryIndex {
            conn,
            idf: Idf::default(),
            chunks: HashMap::new(),
        };
        idx.load()?;
        Ok(idx)
    }

    fn load(&mut self) -> Result<(), IndexError> {
        let mut stmt = self
            .conn
            .prepare("SELECT id, path, start_line, end_line, text, vector FROM chunks")?;
        let rows = stmt.query_map([], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                Stored {
                    path: r.get(1)?,
                    start_line: r.get::<_, i64>(2)? as usize,
                    end_line: r.get::<_, i64>(3)? as usize,
                    text: r.get(4)?,
                    vector: from_blob(&r.get::<_, Vec<u8>>(5)?),
                },
            ))
        })?;
        for row in rows {
            let (id, s) = row?;
            self.idf.add(&s.text);
            self.chunks.insert(id, s);
        }
        Ok(())
    }

    /// Chunks held.
    pub fn len(&self) -> usize {
        self.chunks.len()
    }

    pub fn is_empty(&self) -> bool {
        self.chunks.is_empty()
    }

    /// Brings one file's chunks up to date with `text` (nothing happens
    /// when its content is unchanged).
    pub fn sync_file(
        &mut self,
        path: &str,
        text: &str,
        mtime_ms: u64,
    ) -> Result<Synced, IndexError> {
        let hash = content_hash(text);
        let known: Option<String> = self
            .conn
            .query_row(
                "SELECT hash FROM files WHERE path = ?1",
                params![path],
                |r| r.get(0),
            )
            .optional()?;
        if known.as_deref() == Some(hash.as_str()) {
            return Ok(Synced::Unchanged);
        }
        self.drop_chunks(path)?;
        let pieces = chunk(text);
        for c in &pieces {
            self.idf.add(&c.text);
        }
        let tx = self.conn.transaction()?;
        let mut added = Vec::new();
        for c in &pieces {
            let vector = self.idf.embed(&c.text);
            tx.execute(
                "INSERT INTO chunks (path, start_line, end_line, hash, text, vector) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![path, c.start_line as i64, c.end_line as i64, c.hash, c.text, to_blob(&vector)],
            )?;
            let id = tx.last_insert_rowid();
            added.push((
                id,
                Stored {
                    path: path.to_string(),
                    text: c.text.clone(),
                    start_line: c.start_line,
                    end_line: c.end_line,
                    vector,
                },
            ));
        }
        tx.execute(
            "INSERT INTO files (path, hash, mtime_ms) VALUES (?1, ?2, ?3) ON CONFLICT(path) DO UPDATE SET hash = ?2, mtime_ms = ?3",
            params![path, hash, mtime_ms as i64],
        )?;
        tx.commit()?;
        self.chunks.extend(added);
        Ok(Synced::Indexed(pieces.len()))
    }

    fn drop_chunks(&mut self, path: &str) -> Result<(), IndexError> {
        let ids: Vec<i64> = self
            .chunks
            .iter()
            .filter(|(_, s)| s.path == path)
            .map(|(id, _)| *id)
            .collect();
        for id in &ids {
            if let Some(s) = self.chunks.remove(id) {
                self.idf.remove(&s.text);
            }
        }
        self.conn
            .execute("DELETE FROM chunks WHERE path = ?1", params![path])?;
        Ok(())
    }

    /// A file is gone: its chunks go.
    pub fn remove_file(&mut self, path: &str) -> Result<(), IndexError> {
        self.drop_chunks(path)?;
        self.conn
            .execute("DELETE FROM files WHERE path = ?1", params![path])?;
        Ok(())
    }

    /// The indexed files and their modification times.
    pub fn files(&self) -> Result<HashMap<String, u64>, IndexError> {
        let mut stmt = self.conn.prepare("SELECT path, mtime_ms FROM files")?;
        let rows = stmt.query_map([], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)? as u64))
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// BM25 candidates: chunk id -> score (higher is better).
    fn keyword(&self, query: &str, n: usize) -> Result<HashMap<String, f64>, IndexError> {
        let Some(q) = rank::keyword_query(query) else {
            return Ok(HashMap::new());
        };
        let mut stmt = self.conn.prepare(
            "SELECT rowid, bm25(chunks_fts) FROM chunks_fts WHERE chunks_fts MATCH ?1 ORDER BY bm25(chunks_fts) LIMIT ?2",
        )?;
        let rows = stmt.query_map(params![q, n as i64], |r| {
            Ok((r.get::<_, i64>(0)?, r.get::<_, f64>(1)?))
        })?;
        let mut out = HashMap::new();
        for row in rows {
            let (id, bm25) = row?;
            out.insert(id.to_string(), -bm25);
        }
        Ok(out)
    }

    /// Vector candidates by cosine similarity (positive ones).
    fn vector(&self, query: &str, n: usize) -> HashMap<String, f64> {
        let q = self.idf.embed(query);
        let mut scored: Vec<(i64, f32)> = self
            .chunks
            .iter()
            .map(|(id, s)| (*id, cosine(&q, &s.vector)))
            .filter(|(_, s)| *s > 0.0)
            .collect();
        scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        scored
            .into_iter()
            .take(n)
            .map(|(id, s)| (id.to_string(), f64::from(s)))
            .collect()
    }

    /// The hybrid search: both legs (4x `max` candidates each), fusion,
    /// decay at `now`, `MIN_SCORE`, MMR to `max`.
    pub fn search(&self, query: &str, max: usize, now_ms: u64) -> Result<Vec<Hit>, IndexError> {
        let n = max.max(1) * rank::CANDIDATE_FACTOR;
        let fused = rank::fuse(&self.vector(query, n), &self.keyword(query, n)?);
        let candidates: Vec<Scored> = fused
            .into_iter()
            .filter_map(|(id, score)| {
                let s = self.chunks.get(&id.parse::<i64>().ok()?)?;
                let score = score * rank::decay(&s.path, now_ms);
                (score >= rank::MIN_SCORE).then(|| Scored {
                    id,
                    score,
                    text: s.text.clone(),
                })
            })
            .collect();
        Ok(rank::mmr(candidates, max, rank::MMR_LAMBDA)
            .into_iter()
            .filter_map(|c| {
                let s = self.chunks.get(&c.id.parse::<i64>().ok()?)?;
                Some(Hit {
                    path: s.path.clone(),
                    start_line: s.start_line,
                    end_line: s.end_line,
                    score: c.score,
                    snippet: rank::snippet(&s.text),
                })
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: u64 = 1_795_478_400_000;

    fn corpus(idx: &mut MemoryIndex) {
        let files = [
            ("MEMORY.md", "# Memory\n\nAnn prefers green tea in the morning, never coffee.\n\nThe car is a 2019 Skoda; tyres changed every October.\n"),
            ("USER.md", "Name: Ann Lee. Lives in Lisbon. Works as a structural engineer.\n"),
            ("memory/2026-11-20.md", "Weekly meeting with the design team moved to Thursdays at 10:00.\n"),
            ("memory/2026-06-01.md", "Dentist appointment booked for 2026-06-12 at 09:30 with Dr. Sousa.\n"),
            ("memory/projects.md", "Project Falcon: bridge retrofit, budget 2.4M EUR, deadline March 2027.\n"),
        ];
        for (p, t) in files {
            assert!(matches!(
                idx.sync_file(p, t, 1).unwrap(),
                Synced::Indexed(_)
            ));
        }
    }

    #[test]
    fn hybrid_search_finds_keywords_and_paraphrases() {
        let mut idx = MemoryIndex::open(Path::new(":memory:")).unwrap();
        corpus(&mut idx);
        // Keyword: an exact identifier.
        let hits = idx.search("Falcon budget", 6, NOW).unwrap();
        assert_eq!(hits[0].path, "memory/projects.md", "{hits:?}");
        // Paraphrase: shares stems, not the phrase.
        let hits = idx
            .search("what does Ann like to drink in the mornings", 6, NOW)
            .unwrap();
        assert_eq!(hits[0].path, "MEMORY.md", "{hits:?}");
        assert_eq!((hits[0].start_line, hits[0].end_line), (1, 5));
        let hits = idx
            .search("when are the design team meetings", 6, NOW)
            .unwrap();
        assert_eq!(hits[0].path, "memory/2026-11-20.md", "{hits:?}");
        assert!(idx.search("?!", 6, NOW).unwrap().is_empty());
    }

    #[test]
    fn files_reindex_only_when_changed_and_removals_stick_across_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("main.sqlite");
        {
            let mut idx = MemoryIndex::open(&path).unwrap();
            corpus(&mut idx);
            assert_eq!(
                idx.sync_file(
                    "USER.md",
                    "Name: Ann Lee. Lives in Lisbon. Works as a structural engineer.\n",
                    2
                )
                .unwrap(),
                Synced::Unchanged
            );
            assert_eq!(
                idx.sync_file("USER.md", "Name: Ann Lee. Moved to Porto in 2026.\n", 3)
                    .unwrap(),
                Synced::Indexed(1)
            );
            idx.remove_file("memory/projects.md").unwrap();
        }
        let idx = MemoryIndex::open(&path).unwrap();
        assert_eq!(idx.len(), 4);
        assert!(!idx.files().unwrap().contains_key("memory/projects.md"));
        assert_eq!(idx.files().unwrap()["USER.md"], 3);
        let hits = idx.search("Porto", 6, NOW).unwrap();
        assert_eq!(hits[0].path, "USER.md");
        assert!(idx
            .search("Falcon", 6, NOW)
            .unwrap()
            .iter()
            .all(|h| h.path != "memory/projects.md"));
        assert!(
            idx.search("Lisbon", 6, NOW)
                .unwrap()
                .iter()
                .all(|h| h.path != "USER.md"),
            "the old text is gone from FTS"
        );
    }
}
