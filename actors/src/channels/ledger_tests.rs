//! The ledger's records read back as written: whose delivery, the
//! outbox's states and receipts, cursors and marks.

use super::ledger::*;
use crate::ids::SessionKey;
use crate::store::Store;

#[test]
fn whose_delivery_reads_back_as_it_was_stored() {
    for (of, text, agent) in [
        (
            DeliveryOf::Session(SessionKey::stored("agent:ops:telegram:dm:1")),
            "agent:ops:telegram:dm:1",
            Some("ops"),
        ),
        (DeliveryOf::Send, "send", None),
        (DeliveryOf::Notice, "notice", None),
    ] {
        let v = serde_json::to_value(&of).unwrap();
        assert_eq!(v, serde_json::Value::from(text));
        let back: DeliveryOf = serde_json::from_value(v).unwrap();
        assert_eq!(back.agent(), agent);
        assert_eq!(back, of);
    }
}

fn key<'a>(peer: &'a str, message_id: &'a str) -> InboundKey<'a> {
    InboundKey {
        channel: "telegram",
        account: "default",
        peer,
        message_id,
    }
}

fn chunk(index: usize, text: &str) -> OutboxItem {
    OutboxItem {
        account: "default".into(),
        key: chunk_key("agent:main:telegram:direct:42", "run-1", index),
        target: "42".into(),
        thread_id: None,
        edit_of: None,
        media: None,
        text: text.into(),
        buttons: Vec::new(),
        voice: false,
        speech: None,
        state: OutState::Pending,
        created_ms: 1,
        receipt: None,
    }
}

#[test]
fn a_status_reaches_the_chunk_sent_as_that_message_and_never_moves_back() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let item = chunk(0, "hello");
    store
        .commit(&enqueue(&store, std::slice::from_ref(&item)).unwrap())
        .unwrap();
    let sent = OutState::Sent {
        message_id: "wamid.OUT".into(),
        at_ms: 2,
    };
    assert!(settle(&store, "default", &item.key, sent).unwrap());
    let r = |status: &str, at_ms| Receipt {
        status: status.into(),
        error: None,
        at_ms,
    };
    assert!(receipt(&store, "default", "wamid.OUT", r("delivered", 3)).unwrap());
    assert!(receipt(&store, "default", "wamid.OUT", r("read", 4)).unwrap());
    assert!(
        !receipt(&store, "default", "wamid.OUT", r("delivered", 5)).unwrap(),
        "late"
    );
    assert!(!receipt(&store, "default", "wamid.OTHER", r("read", 6)).unwrap());
    assert!(!receipt(&store, "other", "wamid.OUT", r("read", 6)).unwrap());
    let got = get(&store, "default", &item.key).unwrap().unwrap();
    assert_eq!(got.receipt, Some(r("read", 4)));
    // The index is not a chunk: nothing pending appears from it.
    assert!(pending(&store, "default").unwrap().is_empty());
}

#[tokio::test]
async fn an_update_is_run_once_and_the_cursor_only_moves_forward_across_restarts() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = Store::open(dir.path()).unwrap();
        assert_eq!(
            accept(&store, &key("42", "100"), Some(101), 10).unwrap(),
            Accepted::New
        );
        assert_eq!(
            accept(&store, &key("42", "100"), Some(101), 11).unwrap(),
            Accepted::Replay
        );
        assert_eq!(
            accept(&store, &key("43", "100"), Some(102), 12).unwrap(),
            Accepted::New,
            "another peer"
        );
        // A late, older update never moves the cursor back.
        assert_eq!(
            accept(&store, &key("44", "7"), Some(8), 13).unwrap(),
            Accepted::New
        );
        assert_eq!(cursor(&store, "telegram", "default").unwrap(), Some(102));
        store.flush().await.unwrap();
    }
    // After a restart (a re-poll from the old cursor replays the updates).
    let store = Store::open(dir.path()).unwrap();
    assert_eq!(cursor(&store, "telegram", "default").unwrap(), Some(102));
    assert_eq!(
        accept(&store, &key("42", "100"), None, 20).unwrap(),
        Accepted::Replay
    );
    assert_eq!(cursor(&store, "telegram", "other").unwrap(), None);
    // Old keys can go; new ones stay.
    assert_eq!(
        accept(&store, &key("45", "200"), None, 1_000).unwrap(),
        Accepted::New
    );
    assert_eq!(prune_inbound(&store, 100).unwrap(), 3);
    assert_eq!(
        accept(&store, &key("45", "200"), None, 1_001).unwrap(),
        Accepted::Replay
    );
}

#[tokio::test]
async fn unsent_chunks_resume_after_a_restart_and_sent_ones_are_never_sent_again() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = Store::open(dir.path()).unwrap();
        let writes = enqueue(
            &store,
            &[chunk(0, "one"), chunk(1, "two"), chunk(2, "three")],
        )
        .unwrap();
        store.commit(&writes).unwrap();
        // The same chunks again (a replayed run end): nothing new.
        assert!(enqueue(&store, &[chunk(0, "one")]).unwrap().is_empty());
        let sent = OutState::Sent {
            message_id: "m-9".into(),
            at_ms: 5,
        };
        assert!(settle(&store, "default", &chunk(0, "").key, sent.clone()).unwrap());
        let unknown = OutState::Unknown {
            resolution: Resolution::NotResent,
            at_ms: 6,
        };
        assert!(settle(&store, "default", &chunk(1, "").key, unknown).unwrap());
        // A sent chunk stays sent.
        assert!(!settle(&store, "default", &chunk(0, "").key, OutState::Pending).unwrap());
        store.flush().await.unwrap();
    }
    let store = Store::open(dir.path()).unwrap();
    let left: Vec<String> = pending(&store, "default")
        .unwrap()
        .into_iter()
        .map(|c| c.text)
        .collect();
    assert_eq!(left, ["three"], "only what never left");
    let first = get(&store, "default", &chunk(0, "").key).unwrap().unwrap();
    assert_eq!(
        first.state,
        OutState::Sent {
            message_id: "m-9".into(),
            at_ms: 5
        }
    );
    let second = get(&store, "default", &chunk(1, "").key).unwrap().unwrap();
    assert!(matches!(
        second.state,
        OutState::Unknown {
            resolution: Resolution::NotResent,
            ..
        }
    ));
    assert!(pending(&store, "other").unwrap().is_empty());
    // Keys order chunks by index.
    assert!(chunk_key("s", "r", 2) < chunk_key("s", "r", 10));
}
