//! The memory index's write-ahead log stays bounded: a long-lived reader
//! (another connection in a read transaction, as a backup or a user's
//! `sqlite3` holds one) pins it past the log's limit while 2,500 chunks are
//! written; once the
//! reader is gone a checkpoint truncates it, and without a reader it never
//! grows past `journal_size_limit` plus what one checkpoint interval adds.

use super::index::{MemoryIndex, WAL_LIMIT_BYTES};

/// A file of about `n` chunks (1,600 characters each, 320 overlapping).
fn file_text(seed: usize, n: usize) -> String {
    let mut s = String::new();
    let mut i = 0;
    while s.len() < n * 1_280 {
        s.push_str(&format!(
            "note {seed}-{i}: the plants in room {} want water on day {}\n",
            i % 17,
            i % 31
        ));
        i += 1;
    }
    s
}

fn wal_size(db: &std::path::Path) -> u64 {
    let wal = db.with_file_name(format!("{}-wal", db.file_name().unwrap().to_string_lossy()));
    std::fs::metadata(wal).map(|m| m.len()).unwrap_or(0)
}

#[test]
fn a_reader_pins_the_log_only_while_it_reads_and_the_log_stays_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("main.sqlite");
    let mut idx = MemoryIndex::open(&path).unwrap();
    idx.sync_file("memory/seed.md", &file_text(0, 2), 1)
        .unwrap();

    let reader = rusqlite::Connection::open(&path).unwrap();
    reader.execute_batch("BEGIN").unwrap();
    let _: i64 = reader
        .query_row("SELECT count(*) FROM chunks", [], |r| r.get(0))
        .unwrap();
    for f in 0..25 {
        idx.sync_file(&format!("memory/f{f}.md"), &file_text(f, 102), 1)
            .unwrap();
    }
    assert!(idx.len() >= 2_500, "{} chunks", idx.len());
    let pinned = wal_size(&path);
    assert!(
        pinned > WAL_LIMIT_BYTES,
        "the pinned log passed its limit: {pinned}"
    );
    assert!(
        !idx.checkpoint().unwrap(),
        "the reader's snapshot holds the log"
    );
    reader.execute_batch("COMMIT").unwrap();
    drop(reader);
    assert!(idx.checkpoint().unwrap());
    let after = wal_size(&path);
    assert_eq!(after, 0, "truncated once the reader left");

    // No reader: SQLite's own checkpoints reuse the log, and the limit cuts it back.
    let mut most = 0;
    for f in 25..37 {
        idx.sync_file(&format!("memory/f{f}.md"), &file_text(f, 100), 1)
            .unwrap();
        most = most.max(wal_size(&path));
    }
    eprintln!(
        "memory index WAL: {:.1} MB pinned by a reader over 2,500 chunks, {after} bytes after the checkpoint, at most {:.1} MB over 1,200 more chunks with no reader",
        pinned as f64 / 1e6,
        most as f64 / 1e6
    );
    assert!(most <= WAL_LIMIT_BYTES + 8 * 1024 * 1024, "{most} bytes");
}
