//! Tests of the store: values and their versions, group commit, pages, scans and commits across trees.

use super::*;

/// Group commit: flushes waiting together share one sled flush, a
/// flush with nothing new written costs none, and a write after a
/// flush is flushed again (and survives a reopen).
#[actix::test]
async fn concurrent_flushes_share_one() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let stats = store.stats();
    for i in 0..20 {
        store.put(Tree::Meta, &format!("k{i}"), &i).unwrap();
    }
    let waits: Vec<_> = (0..20).map(|_| store.flush()).collect();
    for r in futures_util::future::join_all(waits).await {
        r.unwrap();
    }
    let n = |c: &AtomicU64| c.load(Ordering::Relaxed);
    assert_eq!(n(&stats.flushes), 1);
    assert_eq!(n(&stats.flushes_shared), 19);
    store.flush().await.unwrap();
    assert_eq!(n(&stats.flushes), 1, "nothing new: no flush");
    store.put(Tree::Meta, "late", &1).unwrap();
    store.flush().await.unwrap();
    assert_eq!(n(&stats.flushes), 2, "a later write is flushed");
    drop(store);
    let store = Store::open(dir.path()).unwrap();
    assert_eq!(store.get::<i32>(Tree::Meta, "late").unwrap(), Some(1));
    assert_eq!(store.get::<i32>(Tree::Meta, "k19").unwrap(), Some(19));
}

/// sled's flusher thread is off: a write no durability point follows is
/// flushed by the backstop timer (on the writer's runtime), once, and an
/// idle store arms nothing after it.
#[actix::test]
async fn a_write_nothing_flushes_is_flushed_by_the_backstop() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let stats = store.stats();
    let flushes = || stats.flushes.load(Ordering::Relaxed);
    let start = flushes();
    store.put(Tree::Meta, "k", &1).unwrap();
    store.put(Tree::Meta, "k2", &2).unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while flushes() == start {
        assert!(
            std::time::Instant::now() < deadline,
            "no backstop flush in 10 s"
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    let inner = &store.inner;
    assert!(inner.durable.load(Ordering::SeqCst) >= inner.landed.load(Ordering::SeqCst));
    assert_eq!(flushes(), start + 1, "one flush for the burst");
    assert!(
        !inner.backstop.load(Ordering::SeqCst),
        "nothing armed while idle"
    );
}

#[test]
fn values_round_trip_with_version_envelope() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    store.put(Tree::Meta, "k", &vec![1, 2, 3]).unwrap();
    let got: Option<Vec<u32>> = store.get(Tree::Meta, "k").unwrap();
    assert_eq!(got, Some(vec![1, 2, 3]));
    let raw = store.tree(Tree::Meta).get("k").unwrap().unwrap();
    assert_eq!(&raw[..], br#"{"v":1,"data":[1,2,3]}"#);
    assert!(store.remove(Tree::Meta, "k").unwrap());
    assert!(!store.remove(Tree::Meta, "k").unwrap());
}

#[test]
fn second_open_of_same_dir_is_refused_not_hung() {
    let dir = tempfile::tempdir().unwrap();
    let _first = Store::open(dir.path()).unwrap();
    let second = Store::open(dir.path());
    assert!(matches!(second, Err(StoreError::AlreadyInUse { .. })));
}

#[test]
fn a_store_reopens_at_once_after_it_is_dropped() {
    // sled's background threads may still hold its file lock for a
    // moment after a drop; a restart in the same process must wait
    // that out, never fail.
    let dir = tempfile::tempdir().unwrap();
    for round in 0..40u32 {
        let store = Store::open(dir.path()).unwrap();
        store.put(Tree::Meta, &format!("k{round}"), &round).unwrap();
        store.inner.db.flush().unwrap();
    }
    let store = Store::open(dir.path()).unwrap();
    let last: Option<u32> = store.get(Tree::Meta, "k39").unwrap();
    assert_eq!(last, Some(39));
}

#[test]
fn newer_value_versions_are_reported_not_misread() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    store
        .tree(Tree::Meta)
        .insert("k", &br#"{"v":99,"data":1}"#[..])
        .unwrap();
    let got: Result<Option<u32>, _> = store.get(Tree::Meta, "k");
    assert!(matches!(got, Err(StoreError::TooNew { found: 99, .. })));
}

#[test]
fn pages_cover_a_prefix_once_in_order_within_the_byte_budget() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    for i in 0..25 {
        store
            .put(Tree::Meta, &format!("p:{i:02}"), &"x".repeat(90))
            .unwrap();
    }
    store.put(Tree::Meta, "q:00", &"other").unwrap();
    let (mut seen, mut after, mut pages) = (Vec::new(), None::<String>, 0);
    loop {
        let (page, next): (Vec<(String, String)>, _) = store
            .scan_page(Tree::Meta, "p:", after.as_deref(), 500)
            .unwrap();
        // 107 stored bytes each (the 90-char value in its envelope): 4 fit in 500.
        assert!(!page.is_empty() && page.len() <= 4, "{}", page.len());
        seen.extend(page.into_iter().map(|(k, _)| k));
        pages += 1;
        match next {
            Some(k) => after = Some(k),
            None => break,
        }
    }
    let want: Vec<String> = (0..25).map(|i| format!("p:{i:02}")).collect();
    assert_eq!(seen, want);
    assert_eq!(pages, 7);
    let (one, next): (Vec<(String, String)>, _) =
        store.scan_page(Tree::Meta, "p:", None, 1).unwrap();
    assert_eq!(
        (one.len(), next.as_deref()),
        (1, Some("p:00")),
        "one entry even over budget"
    );
}

#[test]
fn a_commit_writes_and_removes_across_trees_together() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    store.put(Tree::Sessions, "old", &1).unwrap();
    store
        .commit(&[
            (
                Tree::Sessions,
                "new".into(),
                Some(serde_json::json!({"a": 1})),
            ),
            (
                Tree::Transcripts,
                "s\0x".into(),
                Some(serde_json::json!("line")),
            ),
            (Tree::Sessions, "old".into(), None),
        ])
        .unwrap();
    let new: Option<serde_json::Value> = store.get(Tree::Sessions, "new").unwrap();
    assert_eq!(new, Some(serde_json::json!({"a": 1})));
    let line: Option<String> = store.get(Tree::Transcripts, "s\0x").unwrap();
    assert_eq!(line.as_deref(), Some("line"));
    assert_eq!(store.get::<u32>(Tree::Sessions, "old").unwrap(), None);
}

#[test]
fn scan_returns_prefix_matches_in_key_order() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    for k in ["b:2", "a:1", "b:1"] {
        store.put(Tree::Meta, k, &k).unwrap();
    }
    let got: Vec<(String, String)> = store.scan(Tree::Meta, "b:").unwrap();
    let keys: Vec<_> = got.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(keys, ["b:1", "b:2"]);
}
