//! The session's supervision of its run: a failure a retry may cure
//! restarts it, and a reset during the backoff ends it once (a child of
//! `tests`, sharing its harness).

use super::super::runs::run_id_of;
use super::*;

#[actix::test]
async fn after_a_failed_run_the_session_answers_the_next_message() {
    let mut h = setup(QueueSettings::default());
    h.send("@error unavailable", "k1").await;
    let events = h.until_end("k1").await;
    match events.last() {
        Some(RunEvent::Failed { error, .. }) => {
            assert!(error.contains("gave up after 4 tries"), "{error}")
        }
        other => panic!("{other:?}"),
    }
    let starts = events
        .iter()
        .filter(|e| matches!(e, RunEvent::Started { .. }))
        .count();
    assert_eq!(starts, 4, "the first try and three restarts");
    h.send("are you there?", "k2").await;
    assert_eq!(
        final_text(&h.until_end("k2").await),
        "You said: are you there?"
    );
}

/// A reset while a failed run waits out its restart's backoff ends that
/// run once, as aborted: no `RunActor` of it is left to say so, and the
/// backoff's end finds it gone and says nothing more.
#[actix::test]
async fn a_reset_during_a_restart_backoff_ends_the_run_once() {
    let mut h = setup(QueueSettings::default());
    h.deps.restart.backoff = Duration::from_secs(600);
    h.session =
        SessionActor::new("agent:main:main".into(), entry("sess-1"), h.deps.clone()).start();
    h.send("@error unavailable", "k1").await;
    // The barrier: the failure reached the session and its backoff began.
    let restarted = &h.deps.metrics.runs_restarted;
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while restarted.load(std::sync::atomic::Ordering::Relaxed) == 0 {
        assert!(std::time::Instant::now() < deadline, "no restart");
        actix::clock::sleep(Duration::from_millis(5)).await;
    }
    h.session.send(ResetSession).await.unwrap().unwrap();
    let ended = h.until_end("k1").await;
    assert!(
        matches!(ended.last(), Some(RunEvent::Aborted { .. })),
        "{ended:?}"
    );
    // The next turn's end proves anything more of k1 would have come first.
    h.send("still there?", "k2").await;
    let next = h.until_end("k2").await;
    assert_eq!(final_text(&next), "You said: still there?");
    let stray: Vec<_> = next.iter().filter(|e| run_id_of(e) == Some("k1")).collect();
    assert!(stray.is_empty(), "k1 ended twice: {stray:?}");
    let record = crate::session::run_record::load(&h.store, "k1")
        .unwrap()
        .unwrap();
    assert_eq!(record.status, "aborted");
}
