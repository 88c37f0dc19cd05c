//! One agent's persistent memory index: a SQLite file (rusqlite, SQLite
//! built in) with the chunks, their vectors stored once in binary (the
//! local embedder's as int8 with a scale, a provider's as f32), and an
//! FTS5 table over the chunk texts for BM25 keyword search. An index made
//! by another version of the local embedder is rebuilt from the files. SQLite's
//! FTS5 was chosen over tantivy: one small file per agent that also holds
//! the chunks and vectors transactionally, the same engine OpenClaw's
//! memory uses, and a build that adds seconds rather than minutes.
//!
//! Files are the source of truth: `sync_file` re-chunks a file only when
//! its content hash changed, all in one transaction (a crash leaves the
//! old chunks or the new ones); searching never indexes. Vectors are held
//! in memory quantised (`vectors.rs`) for the vector leg; chunk texts stay
//! on disk and are read only for the few candidates of a search. Two
//! kinds of vectors: the built-in local embedder's (always, made at
//! indexing time) and an embedding provider's, cached by chunk hash and
//! model in `embeddings` (a chunk that did not change is never embedded
//! again, whichever file it moves to).

use std::collections::{HashMap, HashSet};
use std::path::Path;

use rusqlite::{params, Connection, OptionalExtension};

use super::chunk::{chunk, content_hash};
use super::embed::Idf;
use super::rank::{self, Scored};
use super::vectors::{from_blob, to_blob, FlatIndex, QVec, VectorIndex};

#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    #[error("memory index: {0}")]
    Sql(#[from] rusqlite::Error),
    #[error("memory index: the embedding provider returned {got} dimensions where the index holds {want}")]
    Dimensions { want: usize, got: usize },
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

/// Which vectors the vector leg compares.
#[derive(Debug, Clone, PartialEq)]
pub enum VectorLeg {
    /// The built-in local embedder.
    Local,
    /// The provider's vector of the query, against the cached chunk vectors.
    Remote(Vec<f32>),
    /// Keyword search alone (the provider failed): scores are the BM25
    /// leg's, relative to its best.
    None,
}

/// A search.
#[derive(Debug, Clone)]
pub struct Query<'a> {
    pub text: &'a str,
    pub max: usize,
    pub min_score: f64,
    pub now_ms: u64,
    /// A private chat: `MEMORY.md` may be found (never in groups).
    pub private: bool,
    pub leg: VectorLeg,
}

impl<'a> Query<'a> {
    /// The defaults: top 6, `minScore` 0.35, the local vectors, private.
    pub fn new(text: &'a str, now_ms: u64) -> Query<'a> {
        Query {
            text,
            max: rank::MAX_RESULTS,
            min_score: rank::MIN_SCORE,
            now_ms,
            private: true,
            leg: VectorLeg::Local,
        }
    }
}

/// Whether `path` is the curated long-term memory (private chats only).
pub fn is_long_term(path: &str) -> bool {
    path.eq_ignore_ascii_case("MEMORY.md")
}

struct Stored {
    path: String,
    hash: String,
    start_line: usize,
    end_line: usize,
}

/// The provider's vectors of one model, by chunk hash.
struct Remote {
    model: String,
    by_hash: HashMap<String, QVec>,
}

pub struct MemoryIndex {
    conn: Connection,
    idf: Idf,
    chunks: HashMap<i64, Stored>,
    by_path: HashMap<String, Vec<i64>>,
    /// The local embedder's vectors, by chunk id.
    local: Box<dyn VectorIndex>,
    remote: Option<Remote>,
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files (path TEXT PRIMARY KEY, hash TEXT NOT NULL, mtime_ms INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS chunks (
  id INTEGER PRIMARY KEY, path TEXT NOT NULL, start_line INTEGER NOT NULL, end_line INTEGER NOT NULL,
  hash TEXT NOT NULL, text TEXT NOT NULL, vector BLOB NOT NULL);
CREATE INDEX IF NOT EXISTS chunks_path ON chunks(path);
CREATE TABLE IF NOT EXISTS embeddings (
  model TEXT NOT NULL, hash TEXT NOT NULL, vector BLOB NOT NULL, PRIMARY KEY (model, hash));
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(text, content='chunks', content_rowid='id');
CREATE TRIGGER IF NOT EXISTS chunks_ai AFTER INSERT ON chunks BEGIN
  INSERT INTO chunks_fts(rowid, text) VALUES (new.id, new.text); END;
CREATE TRIGGER IF NOT EXISTS chunks_ad AFTER DELETE ON chunks BEGIN
  INSERT INTO chunks_fts(chunks_fts, rowid, text) VALUES ('delete', old.id, old.text); END;
";

/// The write-ahead log is cut back to this size whenever a checkpoint
/// resets it (SQLite's `journal_size_limit`).
pub const WAL_LIMIT_BYTES: u64 = 8 * 1024 * 1024;

impl MemoryIndex {
    /// Copies the write-ahead log into the database and truncates it
    /// (`wal_checkpoint(TRUNCATE)`); the actor calls it after every sweep.
    /// Returns false when a reader's open snapshot (another process, a
    /// backup) holds the log: nothing waits, the next sweep tries again.
    pub fn checkpoint(&self) -> Result<bool, IndexError> {
        let busy: i64 = self
            .conn
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| r.get(0))?;
        Ok(busy == 0)
    }

    /// Opens (or creates) the index at `path`; `:memory:` for tests.
    pub fn open(path: &Path) -> Result<MemoryIndex, IndexError> {
        // Created 0600, so its WAL and shared-memory files (SQLite gives
        // them the database's mode) are private too. (`:memory:` is no file.)
        if path != Path::new(":memory:") {
            if let Err(e) = crate::fsutil::private_options()
                .create(true)
                .append(true)
                .open(path)
            {
                tracing::warn!(error = %e, "memory index file not created private");
            }
        }
        let conn = Connection::open(path)?;
        conn.execute_batch(&format!(
            "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA journal_size_limit={WAL_LIMIT_BYTES};"
        ))?;
        conn.execute_batch(SCHEMA)?;
        let version: Option<String> = conn
            .query_row("SELECT value FROM meta WHERE key = 'embedder'", [], |r| {
                r.get(0)
            })
            .optional()?;
        if version.as_deref() != Some(super::embed::VERSION) {
            // Vectors of another embedder: everything is indexed again
            // (the files are the source of truth).
            conn.execute_batch("DELETE FROM chunks; DELETE FROM files;")?;
            conn.execute(
                "INSERT OR REPLACE INTO meta (key, value) VALUES ('embedder', ?1)",
                params![super::embed::VERSION],
            )?;
        }
        let mut idx = MemoryIndex {
            conn,
            idf: Idf::default(),
            chunks: HashMap::new(),
            by_path: HashMap::new(),
            local: Box::new(FlatIndex::default()),
            remote: None,
        };
        idx.load()?;
        Ok(idx)
    }

    fn load(&mut self) -> Result<(), IndexError> {
        let mut stmt = self
            .conn
            .prepare("SELECT id, path, start_line, end_line, hash, text, vector FROM chunks")?;
        let mut rows = stmt.query([])?;
        while let Some(r) = rows.next()? {
            let id: i64 = r.get(0)?;
            let text: String = r.get(5)?;
            self.idf.add(&text);
            let s = Stored {
                path: r.get(1)?,
                start_line: r.get::<_, i64>(2)? as usize,
                end_line: r.get::<_, i64>(3)? as usize,
                hash: r.get(4)?,
            };
            if let Some(v) = QVec::from_bytes(&r.get::<_, Vec<u8>>(6)?) {
                self.local.insert(id, v);
            }
            self.by_path.entry(s.path.clone()).or_default().push(id);
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
    /// when its content is unchanged). Old chunks out and new ones in are
    /// one transaction.
    pub fn sync_file(
        &mut self,
        path: &str,
        text: &str,
        mtime_ms: u64,
    ) -> Result<Synced, IndexError> {
        let hash = content_hash(text);
        let known: Option<(String, i64)> = self
            .conn
            .query_row(
                "SELECT hash, mtime_ms FROM files WHERE path = ?1",
                params![path],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?;
        if let Some((_, at)) = known.filter(|(h, _)| *h == hash) {
            if at != mtime_ms as i64 {
                self.conn.execute(
                    "UPDATE files SET mtime_ms = ?2 WHERE path = ?1",
                    params![path, mtime_ms as i64],
                )?;
            }
            return Ok(Synced::Unchanged);
        }
        let pieces = chunk(text);
        // The frequencies as they will be, so the new vectors use them
        // (undone if the write fails).
        let old = self.texts_of(path)?;
        for t in &old {
            self.idf.remove(t);
        }
        for c in &pieces {
            self.idf.add(&c.text);
        }
        let written = self.write_chunks(path, &hash, mtime_ms, &pieces);
        let added = match written {
            Ok(a) => a,
            Err(e) => {
                for c in &pieces {
                    self.idf.remove(&c.text);
                }
                for t in &old {
                    self.idf.add(t);
                }
                return Err(e);
            }
        };
        self.forget(path);
        let ids = added.iter().map(|(id, _, _)| *id).collect();
        self.by_path.insert(path.to_string(), ids);
        for (id, stored, local) in added {
            self.local.insert(id, local);
            self.chunks.insert(id, stored);
        }
        Ok(Synced::Indexed(pieces.len()))
    }

    /// Replaces `path`'s chunks with `pieces` in one transaction.
    fn write_chunks(
        &mut self,
        path: &str,
        hash: &str,
        mtime_ms: u64,
        pieces: &[super::chunk::Chunk],
    ) -> Result<Vec<(i64, Stored, QVec)>, IndexError> {
        let tx = self.conn.transaction()?;
        tx.execute("DELETE FROM chunks WHERE path = ?1", params![path])?;
        let mut added = Vec::new();
        {
            let mut insert = tx.prepare_cached(
                "INSERT INTO chunks (path, start_line, end_line, hash, text, vector) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?;
            for c in pieces {
                let local = QVec::from_f32(&self.idf.embed(&c.text));
                insert.execute(params![
                    path,
                    c.start_line as i64,
                    c.end_line as i64,
                    c.hash,
                    c.text,
                    local.to_bytes()
                ])?;
                added.push((
                    tx.last_insert_rowid(),
                    Stored {
                        path: path.to_string(),
                        hash: c.hash.clone(),
                        start_line: c.start_line,
                        end_line: c.end_line,
                    },
                    local,
                ));
            }
        }
        tx.execute(
            "INSERT INTO files (path, hash, mtime_ms) VALUES (?1, ?2, ?3) ON CONFLICT(path) DO UPDATE SET hash = ?2, mtime_ms = ?3",
            params![path, hash, mtime_ms as i64],
        )?;
        tx.commit()?;
        Ok(added)
    }

    /// The stored texts of `path`'s chunks.
    fn texts_of(&self, path: &str) -> Result<Vec<String>, IndexError> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT text FROM chunks WHERE path = ?1")?;
        let rows = stmt.query_map(params![path], |r| r.get::<_, String>(0))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Drops `path`'s chunks from memory (not from disk).
    fn forget(&mut self, path: &str) {
        for id in self.by_path.remove(path).unwrap_or_default() {
            self.chunks.remove(&id);
            self.local.remove(id);
        }
    }

    /// A file is gone: its chunks go (one transaction).
    pub fn remove_file(&mut self, path: &str) -> Result<(), IndexError> {
        let texts = self.texts_of(path)?;
        let tx = self.conn.transaction()?;
        tx.execute("DELETE FROM chunks WHERE path = ?1", params![path])?;
        tx.execute("DELETE FROM files WHERE path = ?1", params![path])?;
        tx.commit()?;
        for t in texts {
            self.idf.remove(&t);
        }
        self.forget(path);
        Ok(())
    }

    /// The indexed files and their modification times.
    pub fn files(&self) -> Result<HashMap<String, u64>, IndexError> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT path, mtime_ms FROM files")?;
        let rows = stmt.query_map([], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)? as u64))
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Uses the provider vectors of `model` (loads those cached).
    pub fn use_remote(&mut self, model: &str) -> Result<(), IndexError> {
        if self.remote.as_ref().is_some_and(|r| r.model == model) {
            return Ok(());
        }
        let mut by_hash = HashMap::new();
        {
            let mut stmt = self
                .conn
                .prepare("SELECT hash, vector FROM embeddings WHERE model = ?1")?;
            let mut rows = stmt.query(params![model])?;
            while let Some(r) = rows.next()? {
                let v = from_blob(&r.get::<_, Vec<u8>>(1)?);
                by_hash.insert(r.get::<_, String>(0)?, QVec::from_f32(&v));
            }
        }
        self.remote = Some(Remote {
            model: model.to_string(),
            by_hash,
        });
        Ok(())
    }

    /// The dimensions of the provider vectors held (None: none yet).
    pub fn remote_dims(&self) -> Option<usize> {
        self.remote
            .as_ref()?
            .by_hash
            .values()
            .next()
            .map(QVec::dims)
    }

    /// Up to `limit` chunks (hash, text) the provider has no vector for.
    pub fn missing_remote(&self, limit: usize) -> Result<Vec<(String, String)>, IndexError> {
        let Some(remote) = &self.remote else {
            return Ok(Vec::new());
        };
        let mut seen = HashSet::new();
        let mut ids = Vec::new();
        for (id, s) in &self.chunks {
            if ids.len() >= limit {
                break;
            }
            if !remote.by_hash.contains_key(&s.hash) && seen.insert(s.hash.clone()) {
                ids.push(*id);
            }
        }
        ids.sort_unstable();
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            if let Some(t) = self.text_of(id)? {
                out.push((self.chunks[&id].hash.clone(), t));
            }
        }
        Ok(out)
    }

    /// Stores provider vectors (by chunk hash) for the model in use; all
    /// must have the index's dimensions.
    pub fn store_remote(&mut self, vectors: Vec<(String, Vec<f32>)>) -> Result<(), IndexError> {
        let want = self
            .remote_dims()
            .or_else(|| vectors.first().map(|(_, v)| v.len()));
        if let Some(want) = want {
            if let Some((_, bad)) = vectors.iter().find(|(_, v)| v.len() != want || want == 0) {
                return Err(IndexError::Dimensions {
                    want,
                    got: bad.len(),
                });
            }
        }
        let Some(model) = self.remote.as_ref().map(|r| r.model.clone()) else {
            return Ok(());
        };
        let tx = self.conn.transaction()?;
        for (hash, v) in &vectors {
            tx.execute(
                "INSERT OR REPLACE INTO embeddings (model, hash, vector) VALUES (?1, ?2, ?3)",
                params![model, hash, to_blob(v)],
            )?;
        }
        tx.commit()?;
        if let Some(r) = self.remote.as_mut() {
            for (hash, v) in vectors {
                r.by_hash.insert(hash, QVec::from_f32(&v));
            }
        }
        Ok(())
    }

    /// Drops cached provider vectors no chunk has any more.
    pub fn prune_remote(&mut self) -> Result<usize, IndexError> {
        let n = self.conn.execute(
            "DELETE FROM embeddings WHERE hash NOT IN (SELECT hash FROM chunks)",
            [],
        )?;
        if n > 0 {
            let live: HashSet<&String> = self.chunks.values().map(|s| &s.hash).collect();
            if let Some(r) = self.remote.as_mut() {
                r.by_hash.retain(|h, _| live.contains(h));
            }
        }
        Ok(n)
    }

    fn text_of(&self, id: i64) -> Result<Option<String>, IndexError> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT text FROM chunks WHERE id = ?1")?;
        Ok(stmt.query_row(params![id], |r| r.get(0)).optional()?)
    }

    /// BM25 candidates: chunk id -> score (higher is better).
    fn keyword(&self, query: &str, n: usize) -> Result<HashMap<String, f64>, IndexError> {
        let Some(q) = rank::keyword_query(query) else {
            return Ok(HashMap::new());
        };
        let mut stmt = self.conn.prepare_cached(
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
    fn vector(&self, leg: &VectorLeg, text: &str, n: usize) -> HashMap<String, f64> {
        let query = match leg {
            VectorLeg::None => return HashMap::new(),
            VectorLeg::Local => QVec::from_f32(&self.idf.embed(text)),
            VectorLeg::Remote(v) => QVec::from_f32(&super::vectors::normalised(v.clone())),
        };
        if matches!(leg, VectorLeg::Local) {
            return self
                .local
                .top(&query, n)
                .into_iter()
                .map(|(id, s)| (id.to_string(), f64::from(s)))
                .collect();
        }
        let remote = self.remote.as_ref().map(|r| &r.by_hash);
        let scored: Vec<(i64, f32)> = self
            .chunks
            .iter()
            .filter_map(|(id, s)| {
                let score = remote?.get(&s.hash)?.dot(&query);
                (score > 0.0).then_some((*id, score))
            })
            .collect();
        super::vectors::best(scored, n)
            .into_iter()
            .map(|(id, s)| (id.to_string(), f64::from(s)))
            .collect()
    }

    /// The hybrid search: both legs (4x `max` candidates each), fusion
    /// (or the keyword leg alone), `MEMORY.md` left out of non-private
    /// chats, decay at `now`, `min_score`, MMR to `max`.
    pub fn search(&self, q: &Query) -> Result<Vec<Hit>, IndexError> {
        let n = q.max.max(1) * rank::CANDIDATE_FACTOR;
        let keyword = self.keyword(q.text, n)?;
        let scores = match q.leg {
            VectorLeg::None => rank::relative(&keyword),
            _ => rank::fuse(&self.vector(&q.leg, q.text, n), &keyword),
        };
        let mut candidates = Vec::new();
        for (id, score) in scores {
            let Some(s) = id.parse::<i64>().ok().and_then(|i| self.chunks.get(&i)) else {
                continue;
            };
            if !q.private && is_long_term(&s.path) {
                continue;
            }
            let score = score * rank::decay(&s.path, q.now_ms);
            if score < q.min_score {
                continue;
            }
            let Some(text) = self.text_of(id.parse().unwrap_or_default())? else {
                continue;
            };
            candidates.push(Scored { id, score, text });
        }
        Ok(rank::mmr(candidates, q.max, rank::MMR_LAMBDA)
            .into_iter()
            .filter_map(|c| {
                let s = self.chunks.get(&c.id.parse::<i64>().ok()?)?;
                Some(Hit {
                    path: s.path.clone(),
                    start_line: s.start_line,
                    end_line: s.end_line,
                    score: c.score,
                    snippet: rank::snippet(&c.text),
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
        let hits = idx.search(&Query::new("Falcon budget", NOW)).unwrap();
        assert_eq!(hits[0].path, "memory/projects.md", "{hits:?}");
        // Paraphrase: shares stems, not the phrase.
        let hits = idx
            .search(&Query::new(
                "what does Ann like to drink in the mornings",
                NOW,
            ))
            .unwrap();
        assert_eq!(hits[0].path, "MEMORY.md", "{hits:?}");
        assert_eq!((hits[0].start_line, hits[0].end_line), (1, 5));
        let hits = idx
            .search(&Query::new("when are the design team meetings", NOW))
            .unwrap();
        assert_eq!(hits[0].path, "memory/2026-11-20.md", "{hits:?}");
        assert!(idx.search(&Query::new("?!", NOW)).unwrap().is_empty());
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
        let hits = idx.search(&Query::new("Porto", NOW)).unwrap();
        assert_eq!(hits[0].path, "USER.md");
        assert!(idx
            .search(&Query::new("Falcon", NOW))
            .unwrap()
            .iter()
            .all(|h| h.path != "memory/projects.md"));
        assert!(
            idx.search(&Query::new("Lisbon", NOW))
                .unwrap()
                .iter()
                .all(|h| h.path != "USER.md"),
            "the old text is gone from FTS"
        );
    }

    #[test]
    fn long_term_memory_stays_private_and_keyword_search_stands_alone() {
        let mut idx = MemoryIndex::open(Path::new(":memory:")).unwrap();
        corpus(&mut idx);
        let mut q = Query::new("green tea morning", NOW);
        assert_eq!(idx.search(&q).unwrap()[0].path, "MEMORY.md");
        q.private = false;
        assert!(
            idx.search(&q)
                .unwrap()
                .iter()
                .all(|h| h.path != "MEMORY.md"),
            "never in a group"
        );
        // Keyword alone: the best BM25 hit scores 1, nothing without the words.
        let mut q = Query::new("Falcon", NOW);
        q.leg = VectorLeg::None;
        let hits = idx.search(&q).unwrap();
        assert_eq!(hits.len(), 1);
        assert_eq!(
            (hits[0].path.as_str(), hits[0].score),
            ("memory/projects.md", 1.0)
        );
        q.text = "what does Ann like to drink";
        assert!(
            idx.search(&q).unwrap().is_empty(),
            "a paraphrase needs vectors"
        );
    }

    #[test]
    fn provider_vectors_are_cached_by_chunk_hash_and_checked_for_dimensions() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("main.sqlite");
        // A toy provider: one dimension per topic word.
        let embed = |t: &str| -> Vec<f32> {
            ["tea", "car", "meeting", "dentist", "bridge"]
                .iter()
                .map(|w| {
                    if t.to_lowercase().contains(w) {
                        1.0
                    } else {
                        0.0
                    }
                })
                .chain([0.1])
                .collect()
        };
        {
            let mut idx = MemoryIndex::open(&path).unwrap();
            corpus(&mut idx);
            assert!(
                idx.missing_remote(10).unwrap().is_empty(),
                "no provider yet"
            );
            idx.use_remote("toy-1").unwrap();
            let missing = idx.missing_remote(100).unwrap();
            assert_eq!(missing.len(), 5);
            let bad = vec![(missing[0].0.clone(), vec![1.0; 3])];
            idx.store_remote(missing.iter().map(|(h, t)| (h.clone(), embed(t))).collect())
                .unwrap();
            assert!(matches!(
                idx.store_remote(bad),
                Err(IndexError::Dimensions { want: 6, got: 3 })
            ));
            assert!(idx.missing_remote(100).unwrap().is_empty());
            // "structure" shares no word with the note: only the vector finds it.
            let mut q = Query::new("which bridge structure", NOW);
            q.leg = VectorLeg::Remote(embed(q.text));
            assert_eq!(idx.search(&q).unwrap()[0].path, "memory/projects.md");
        }
        let mut idx = MemoryIndex::open(&path).unwrap();
        idx.use_remote("toy-1").unwrap();
        assert_eq!(idx.remote_dims(), Some(6), "cached across a reopen");
        // An edit: only the changed chunk needs the provider again.
        idx.sync_file("USER.md", "Name: Ann Lee. Drives a red car.\n", 9)
            .unwrap();
        let missing = idx.missing_remote(100).unwrap();
        assert_eq!(missing.len(), 1);
        assert!(missing[0].1.contains("red car"));
        assert_eq!(idx.prune_remote().unwrap(), 1, "the old USER.md vector");
        idx.use_remote("toy-2").unwrap();
        assert_eq!(idx.missing_remote(100).unwrap().len(), 5, "another model");
    }
}
