//! `durable.*`'s projections read back from real records in a real store.

use super::*;
use crate::channels::ledger::{self, chunk_key, DeliveryOf};
use crate::ids::SessionKey;

const SESSION: &str = "agent:main:telegram:direct:42";

fn item(run: &str, index: usize, created_ms: u64) -> OutboxItem {
    OutboxItem {
        account: "default".into(),
        key: chunk_key(SESSION, run, index),
        target: "42".into(),
        thread_id: None,
        edit_of: None,
        media: None,
        text: "the reply's words never leave".into(),
        buttons: Vec::new(),
        voice: false,
        speech: None,
        state: OutState::Pending,
        created_ms,
        receipt: None,
    }
}

fn delivery(run: &str, created_ms: u64) -> Delivery {
    Delivery {
        account: "default".into(),
        session_key: DeliveryOf::Session(SessionKey::stored(SESSION)),
        run_id: run.into(),
        target: "42".into(),
        thread_id: None,
        reply_to: None,
        answers: None,
        created_ms,
        finalized: false,
        chat_type: None,
        untrusted: false,
        kind: Default::default(),
        voice_in: false,
        late: None,
    }
}

/// Three replies: `done` (two chunks sent), `cut` (a chunk whose send got
/// no answer), `open` (its run still streams, started before this process);
/// and a run a stop cut off.
fn records() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let items = [item("done", 0, 10), item("done", 1, 10), item("cut", 0, 20)];
    store
        .commit(&ledger::enqueue(&store, &items).unwrap())
        .unwrap();
    for (k, id) in [(&items[0].key, "m1"), (&items[1].key, "m2")] {
        let sent = OutState::Sent {
            message_id: id.into(),
            at_ms: 15,
        };
        ledger::settle(&store, "default", k, sent).unwrap();
    }
    let unknown = OutState::Unknown {
        resolution: Resolution::NotResent,
        at_ms: 25,
    };
    ledger::settle(&store, "default", &items[2].key, unknown).unwrap();
    ledger::add_delivery(&store, &delivery("open", 30)).unwrap();
    let cut = RunRecord {
        status: "error".into(),
        ended_at: 41,
        error: Some(crate::session::INTERRUPTED_NOTE.into()),
        ..RunRecord::pending(SESSION, 40)
    };
    crate::session::run_record::save(&store, "lost-run", &cut).unwrap();
    (dir, store)
}

#[test]
fn each_reply_is_a_wake_whose_status_says_how_its_items_ended() {
    let (_dir, store) = records();
    let r = Records::read(&store, 35).unwrap();
    let wakes = r.wakes();
    let of = |run: &str| {
        wakes
            .iter()
            .find(|w| w.source_run_id == run)
            .unwrap()
            .clone()
    };
    assert_eq!(wakes.len(), 3, "{wakes:?}");
    assert_eq!(wakes[0].source_run_id, "open", "newest first");
    let done = of("done");
    assert_eq!(
        (done.status, done.reason, done.attempt_count),
        ("acked", "child_terminal", 2)
    );
    assert_eq!(
        (done.acked_at, done.owner_ref.as_str()),
        (Some(15), SESSION)
    );
    assert_eq!(done.target_ref, "default:42");
    let cut = of("cut");
    assert_eq!((cut.status, cut.reason), ("suspended", "delivery_unknown"));
    let open = of("open");
    assert_eq!(
        (open.status, open.reason, open.attempt_count),
        ("pending", "restart_interrupted", 0)
    );
    // Its attempts, in send order, with the platform's outcome.
    let attempts = r.attempts(&done.wake_id);
    let states: Vec<_> = attempts
        .iter()
        .map(|a| (a.status, a.handoff_accepted_at))
        .collect();
    assert_eq!(
        states,
        [
            ("handoff_accepted", Some(15)),
            ("handoff_accepted", Some(15))
        ]
    );
    assert_eq!(r.attempts(&cut.wake_id)[0].unknown_at, Some(25));
    assert!(r.attempts("default|nothing/here").is_empty());
    // No message text is ever projected.
    let wire = serde_json::to_string(&(wakes, attempts, r.facts(), r.obligations())).unwrap();
    assert!(!wire.contains("never leave"), "{wire}");
}

#[test]
fn unanswered_sends_and_cut_off_runs_are_open_facts_and_owed() {
    let (_dir, store) = records();
    let r = Records::read(&store, 35).unwrap();
    let facts = r.facts();
    let kinds: Vec<_> = facts
        .iter()
        .map(|f| (f.kind, f.source_run_id.as_str()))
        .collect();
    assert_eq!(
        kinds,
        [
            ("lost_after_dispatch", "lost-run"),
            ("delivery_unknown", "cut")
        ]
    );
    let owed: Vec<_> = r.obligations().iter().map(|o| o.kind).collect();
    assert_eq!(
        owed,
        [
            "unresolved_uncertainty",
            "pending_wake",
            "unresolved_uncertainty"
        ]
    );
    let stats = r.stats();
    assert_eq!((stats.steps, stats.runs, stats.open_runs), (3, 1, 0));
    assert_eq!(
        (stats.pending_wakes, stats.unresolved_uncertainty_facts),
        (1, 2)
    );
    // One sent again with its key is resolved: not listed, superseded.
    let again = [item("again", 0, 60)];
    store
        .commit(&ledger::enqueue(&store, &again).unwrap())
        .unwrap();
    let resent = OutState::Unknown {
        resolution: Resolution::Resent,
        at_ms: 61,
    };
    assert!(ledger::settle(&store, "default", &again[0].key, resent).unwrap());
    let r = Records::read(&store, 35).unwrap();
    assert_eq!(r.facts().len(), 2);
    let w = r
        .wakes()
        .into_iter()
        .find(|w| w.source_run_id == "again")
        .unwrap();
    assert_eq!(r.attempts(&w.wake_id)[0].status, "superseded");
}

#[test]
fn an_update_not_yet_handed_over_is_owed_from_when_it_was_sent() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let key = ledger::InboundKey {
        channel: "telegram",
        account: "default",
        peer: "42",
        message_id: "7",
    };
    let record = serde_json::json!({ "tsMs": 1234, "text": "hi" });
    ledger::accept_with(&store, &key, None, 2000, Some(&record)).unwrap();
    let r = Records::read(&store, 0).unwrap();
    let owed = r.obligations();
    assert_eq!(owed.len(), 1, "{owed:?}");
    assert_eq!(
        (owed[0].kind, owed[0].created_at),
        ("pending_delivery_queue", 1234)
    );
    assert_eq!(r.stats().events, 1);
}

#[test]
fn settled_outbox_items_older_than_the_bound_are_pruned_and_pending_ones_stay() {
    let (_dir, store) = records();
    let waiting = [item("later", 0, 5)];
    store
        .commit(&ledger::enqueue(&store, &waiting).unwrap())
        .unwrap();
    // A reply still open keeps its settled chunks: a resumed delivery
    // must not send them again.
    let open = [item("open", 0, 1)];
    store
        .commit(&ledger::enqueue(&store, &open).unwrap())
        .unwrap();
    let sent = OutState::Sent {
        message_id: "m9".into(),
        at_ms: 2,
    };
    ledger::settle(&store, "default", &open[0].key, sent).unwrap();
    assert_eq!(ledger::prune_outbox(&store, 16).unwrap(), 2);
    assert!(ledger::sent_item(&store, "default", "m9")
        .unwrap()
        .is_some());
    let left = Records::read(&store, 0).unwrap();
    assert_eq!(
        left.stats().steps,
        3,
        "the unknown one (made at 20), a pending one and the open reply's stay"
    );
    assert!(ledger::sent_item(&store, "default", "m1")
        .unwrap()
        .is_none());
}
