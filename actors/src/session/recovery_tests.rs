//! The session after a stop or a crash: cut runs are marked, queued
//! messages run in order (a child of `tests`, sharing its harness).

use super::*;

#[test]
fn a_trailing_user_message_means_an_interrupted_run() {
    let user = transcript::message_entry(None, transcript::user_message("hi"));
    let reply = transcript::message_entry(
        None,
        serde_json::json!({"role": "assistant", "content": []}),
    );
    let mut pending = transcript::message_entry(None, transcript::user_message("later"));
    transcript::mark_pending(&mut pending);
    assert_eq!(interrupted(std::slice::from_ref(&user)), Some(&user));
    assert_eq!(interrupted(&[user.clone(), reply.clone()]), None);
    assert_eq!(
        interrupted(&[user.clone(), reply.clone(), pending.clone()]),
        None,
        "pending messages never started a run"
    );
    assert_eq!(interrupted(&[reply, user.clone(), pending]), Some(&user));
    assert_eq!(interrupted(&[]), None);
}

#[actix::test]
async fn a_restarted_session_marks_the_cut_run_and_delivers_what_was_queued() {
    let h = setup(QueueSettings::default());
    // As a killed gateway leaves it: a user message without an answer,
    // then a queued one never delivered.
    let user = transcript::message_entry(None, transcript::user_message("first"));
    let mut queued = transcript::message_entry(None, transcript::user_message("second"));
    transcript::mark_pending(&mut queued);
    transcript::append(&h.store, "sess-2", &[user, queued]).unwrap();
    let deps = SessionDeps {
        store: h.store.clone(),
        ..h.deps.clone()
    };
    let (tx, mut events) = mpsc::unbounded_channel();
    let deps = SessionDeps {
        events: Sink(tx).start().recipient(),
        news: NewsSink(None).start().recipient(),
        ..deps
    };
    let _session = SessionActor::new("agent:main:b".into(), entry("sess-2"), deps).start();
    let text = loop {
        let e = actix::clock::timeout(Duration::from_secs(10), events.recv())
            .await
            .unwrap()
            .unwrap()
            .event;
        if let RunEvent::Final {
            outcome: Outcome::Text(text),
            ..
        } = e
        {
            break text;
        }
    };
    assert_eq!(
        text, "You said: second",
        "the queued message ran after the restart"
    );
    let entries = transcript::entries(&h.store, "sess-2").unwrap();
    assert!(
        entries
            .iter()
            .any(|e| e.get("interrupted") == Some(&Value::Bool(true))),
        "the cut run is marked"
    );
}

/// Events until the end of each run in `runs` (any order).

#[actix::test]
async fn after_a_crash_a_cut_run_is_marked_and_queued_messages_run_in_order() {
    let h = setup(QueueSettings::default());
    let key = "agent:main:crashed";
    let store = &h.store;
    // As a killed gateway leaves it: run r1 started with its input, two
    // messages wait to be collected into run q1.
    let mut input = transcript::message_entry(None, transcript::user_message("first"));
    input["runId"] = json!("r1");
    input["messageId"] = json!("r1");
    transcript::append(store, "sess-c", &[input]).unwrap();
    let item = |id: &str, run: &str, assigned: bool, text: &str| InboxItem {
        message_id: id.into(),
        run_id: run.into(),
        assigned,
        text: text.into(),
        shown: None,
        images: Vec::new(),
        at_ms: 1,
        joinable: true,
        overrides: RunOverrides::default(),
        timeout_ms: None,
    };
    let mut writes = Vec::new();
    for it in [
        item("r1", "r1", true, "first"),
        item("q1", "q1", false, "second"),
        item("q2", "q1", false, "third"),
    ] {
        writes.push(inbox::put(&inbox::new_key(key), &it));
    }
    writes.push(crate::session::run_record::write(
        "r1",
        &RunRecord::pending(key, 1),
    ));
    writes.push(crate::session::run_record::write(
        "q1",
        &RunRecord::pending(key, 1),
    ));
    writes.push(crate::session::run_record::write(
        "q2",
        &RunRecord::alias(key, "q1", 1),
    ));
    store.commit(&writes).unwrap();

    let (tx, mut events) = mpsc::unbounded_channel();
    let deps = SessionDeps {
        events: Sink(tx).start().recipient(),
        news: NewsSink(None).start().recipient(),
        ..h.deps.clone()
    };
    let _s = SessionActor::new(key.into(), entry("sess-c"), deps).start();
    let seen = until_ends(&mut events, &["r1", "q1"]).await;
    assert!(seen.iter().any(|e| matches!(e,
        RunEvent::Failed { run_id, error, .. } if run_id == "r1" && error == INTERRUPTED_NOTE)));
    let queued: Vec<(&str, &str)> = seen
        .iter()
        .filter_map(|e| match e {
            RunEvent::Queued { run_id, message_id } => Some((run_id.as_str(), message_id.as_str())),
            _ => None,
        })
        .collect();
    assert_eq!(queued, [("q1", "q1"), ("q1", "q2")]);
    let text = seen
        .iter()
        .find_map(|e| match e {
            RunEvent::Final {
                run_id,
                outcome: Outcome::Text(text),
                ..
            } if run_id == "q1" => Some(text.clone()),
            _ => None,
        })
        .unwrap();
    let (a, b) = (text.find("second"), text.find("third"));
    assert!(a.is_some() && a < b, "{text}");
    assert_eq!(
        crate::session::run_record::load(store, "r1")
            .unwrap()
            .unwrap()
            .status,
        "error"
    );
    assert_eq!(
        crate::session::run_record::resolve(store, "q2")
            .unwrap()
            .unwrap()
            .1
            .status,
        "ok"
    );
    assert!(
        inbox::load(store, key).unwrap().is_empty(),
        "nothing left to recover"
    );
    let notes = transcript::entries(store, "sess-c")
        .unwrap()
        .iter()
        .filter(|e| e.get("interrupted") == Some(&Value::Bool(true)))
        .count();
    assert_eq!(notes, 1);
}
