//! Tests of store snapshots: a point-in-time cut under writes, restored from the log; bad logs restore nothing.

use std::io::Write;

use serde_json::{json, Value};

use super::*;

/// Every entry of every tree, for comparing two stores.
fn contents(store: &Store) -> Vec<(&'static str, String, Value)> {
    let mut out = Vec::new();
    for tree in Tree::ALL {
        for (k, v) in store.scan::<Value>(tree, "").unwrap() {
            out.push((tree.name(), k, v));
        }
    }
    out
}

/// A snapshot's output that runs `during` once, when the copy has begun
/// (after the header line): writes made there land while the copy runs.
struct Meddler<'a> {
    out: Vec<u8>,
    during: Option<Box<dyn FnOnce() + 'a>>,
}

impl Write for Meddler<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.out.contains(&b'\n') {
            if let Some(f) = self.during.take() {
                f();
            }
        }
        self.out.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn restored(log: &[u8]) -> (tempfile::TempDir, Store, LogSummary) {
    let dir = tempfile::tempdir().unwrap();
    let summary = Store::restore(dir.path(), log).unwrap();
    let store = Store::open(dir.path()).unwrap();
    (dir, store, summary)
}

#[test]
fn a_restored_store_holds_what_the_snapshot_saw() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    store
        .put(Tree::Sessions, "agent:main:main", &json!({"n": 1}))
        .unwrap();
    store
        .put(
            Tree::Transcripts,
            "s1\u{0}0001",
            &json!({"text": "a \"quoted\"\nline é"}),
        )
        .unwrap();
    store
        .put_batch(
            Tree::CronJobs,
            &[("j1".into(), json!(1)), ("j2".into(), json!(2))],
        )
        .unwrap();
    let mut log = Vec::new();
    let summary = store.snapshot(&mut log).unwrap();
    assert_eq!(summary.journaled, 0);
    let (_d, copy, read) = restored(&log);
    assert_eq!(read.entries, summary.entries);
    assert_eq!(contents(&copy), contents(&store));
    assert!(contents(&store).len() >= 5, "schema mark + 4 entries");
}

/// Writes land while the copy runs (deterministically: the output itself
/// makes them, after the copy began). The log replays to the store as it
/// was when the snapshot ended: the late values win, removed keys are
/// gone, and a transaction over two trees is whole.
#[test]
fn writes_during_the_copy_end_up_in_the_log_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    for i in 0..200 {
        store
            .put(Tree::Transcripts, &format!("k{i:04}"), &json!(i))
            .unwrap();
    }
    store.put(Tree::Devices, "gone", &json!("x")).unwrap();
    let s = store.clone();
    let mut out = Meddler {
        out: Vec::new(),
        during: Some(Box::new(move || {
            s.put(Tree::Transcripts, "k0000", &json!("changed"))
                .unwrap();
            s.put(Tree::Transcripts, "k0199", &json!("changed late"))
                .unwrap();
            s.remove(Tree::Devices, "gone").unwrap();
            s.commit(&[
                (Tree::Outbox, "a\u{0}1".into(), Some(json!("chunk"))),
                (Tree::OutboxSent, "a\u{0}m1".into(), Some(json!("a\u{0}1"))),
            ])
            .unwrap();
        })),
    };
    let summary = store.snapshot(&mut out).unwrap();
    assert_eq!(
        summary.journaled, 5,
        "every write of the copy's span is noted"
    );
    let (_d, copy, _) = restored(&out.out);
    assert_eq!(contents(&copy), contents(&store));
    let get = |t, k| copy.get::<Value>(t, k).unwrap();
    assert_eq!(get(Tree::Transcripts, "k0000"), Some(json!("changed")));
    assert_eq!(get(Tree::Devices, "gone"), None);
    assert_eq!(get(Tree::OutboxSent, "a\u{0}m1"), Some(json!("a\u{0}1")));
    // After the snapshot, writes are no longer noted (nothing recorded).
    store.put(Tree::Meta, "after", &json!(1)).unwrap();
    let r = store.inner.journal.recorded.lock().unwrap();
    assert!(r.changes.is_empty() && !store.inner.journal.recording.load(Ordering::SeqCst));
}

/// A writer thread keeps committing `seq/<n>` together with `last = n`
/// while snapshots are taken: every restored copy is a cut of that
/// history, never a torn one (`last` is the highest `seq/` and every
/// lower one is there). Holds by construction: the cut is one instant.
#[test]
fn a_snapshot_under_a_steady_writer_is_a_point_in_time_cut() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let stop = std::sync::Arc::new(AtomicBool::new(false));
    let (s, halt) = (store.clone(), stop.clone());
    let writer = std::thread::spawn(move || {
        let mut n = 0u64;
        while !halt.load(Ordering::Relaxed) {
            s.commit(&[
                (Tree::Usage, format!("seq/{n:08}"), Some(json!(n))),
                (Tree::Meta, "last".into(), Some(json!(n))),
            ])
            .unwrap();
            n += 1;
        }
        n
    });
    let mut journaled = 0;
    for _ in 0..5 {
        let mut log = Vec::new();
        journaled += store.snapshot(&mut log).unwrap().journaled;
        let (_d, copy, _) = restored(&log);
        let seqs = copy.scan::<u64>(Tree::Usage, "seq/").unwrap();
        let last = copy.get::<u64>(Tree::Meta, "last").unwrap();
        match last {
            None => assert!(seqs.is_empty()),
            Some(last) => {
                assert_eq!(seqs.len() as u64, last + 1, "every seq up to last");
                assert!(seqs.iter().enumerate().all(|(i, (_, v))| *v == i as u64));
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    let written = writer.join().unwrap();
    eprintln!("writer committed {written}; {journaled} noted during copies");
}

#[test]
fn one_snapshot_at_a_time_and_an_outrun_journal_fails_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let s = store.clone();
    let mut out = Meddler {
        out: Vec::new(),
        during: Some(Box::new(move || {
            let err = s.snapshot(&mut Vec::new()).unwrap_err();
            assert!(err.to_string().contains("another backup"), "{err}");
            let mb = "x".repeat(1024 * 1024);
            for i in 0..(JOURNAL_LIMIT_BYTES / (1024 * 1024) + 2) {
                s.put(Tree::Transcripts, &format!("big{i}"), &mb).unwrap();
            }
        })),
    };
    let err = store.snapshot(&mut out).unwrap_err();
    assert!(
        err.to_string().contains("more than the journal holds"),
        "{err}"
    );
    // Recording stopped and its memory went with it; the next one works.
    assert!(store
        .inner
        .journal
        .recorded
        .lock()
        .unwrap()
        .changes
        .is_empty());
    let mut log = Vec::new();
    assert_eq!(store.snapshot(&mut log).unwrap().journaled, 0);
}

#[test]
fn a_bad_log_restores_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    store.put(Tree::Sessions, "s", &json!(1)).unwrap();
    let mut log = Vec::new();
    store.snapshot(&mut log).unwrap();
    let text = String::from_utf8(log).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let header = lines[0].to_string();
    let newer = header.replace(
        &format!("\"schema\":{}", schema::SCHEMA_VERSION),
        &format!("\"schema\":{}", schema::SCHEMA_VERSION + 1),
    );
    assert_ne!(newer, header);
    let cases = [
        ("truncated", lines[..lines.len() - 1].join("\n")),
        ("end mark", text.replace("\"entries\":", "\"entries\":1")),
        (
            "unknown tree",
            text.replace("\"t\":\"sessions\"", "\"t\":\"future\""),
        ),
        ("expected", text.replace("\"v\":", "\"w\":")),
        ("schema", text.replacen(&header, &newer, 1)),
        ("not a store log", "hello\n".to_string()),
        ("empty", String::new()),
    ];
    for (what, bad) in cases {
        let target = tempfile::tempdir().unwrap();
        let err = Store::restore(target.path(), bad.as_bytes()).unwrap_err();
        assert!(err.to_string().contains(what), "{what}: {err}");
        assert!(!target.path().join("store").exists(), "{what}: removed");
    }
    // A store that exists is never restored over.
    let err = Store::restore(dir.path(), text.as_bytes()).unwrap_err();
    assert!(err.to_string().contains("already exists"), "{err}");
}

#[test]
fn an_endless_line_is_refused_at_the_line_limit() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let mut log = Vec::new();
    store.snapshot(&mut log).unwrap();
    let text = String::from_utf8(log).unwrap();
    let header = format!("{}\n", text.lines().next().unwrap());
    // A crafted archive's log: the header, then a line that never ends.
    let endless = std::io::Read::chain(header.as_bytes(), std::io::repeat(b'x'));
    let err = read_log(std::io::BufReader::new(endless), |_, _, _| Ok(())).unwrap_err();
    assert!(err.to_string().contains("over 64 MiB"), "{err}");
}
