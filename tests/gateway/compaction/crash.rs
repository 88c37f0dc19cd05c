//! SIGKILL of the real binary while a compaction's summary call is in
//! flight, then a restart on the same state dir: the session loads (the
//! transcript has every message and no half-written compaction), answers
//! the next message, and the turn cut off by the kill is reported, not lost.

use std::time::Duration;

use serde_json::{json, Value};

use super::*;
use crate::support::fake_provider::{last_text, FakeProvider};
use crate::support::process::{sigkill, spawn_gateway};
use crate::support::{chat_until_done, connect_params, final_text, Client};

async fn connect(addr: &str, token: &str) -> Client {
    let mut c = Client::connect(&format!("ws://{addr}/")).await;
    let scopes = ["operator.admin", "operator.read", "operator.write"];
    let res = c
        .handshake(connect_params("cli", "cli", &scopes, Some(token)))
        .await;
    assert_eq!(res["ok"], true, "{res}");
    c
}

#[tokio::test]
async fn a_sigkill_during_compaction_leaves_a_session_that_loads_and_answers() {
    let fake = FakeProvider::start().await;
    fake.respond_with(|body: &Value| {
        let last = last_text(body);
        if last.contains(SUMMARY_ASK) {
            // Hangs long enough for the kill to land mid-call.
            delayed(answer(body, &good_summary(body)), Duration::from_secs(20))
        } else if last.contains(FLUSH_ASK) {
            answer(body, "NO_REPLY")
        } else {
            answer(body, &format!("ack {}", turn_of(body)))
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(&fake, 12_000, json!({}));
    std::fs::write(dir.path().join("ferroclaw.json"), cfg.to_string()).unwrap();
    let (mut child, addr, token) = spawn_gateway(dir.path());
    let mut c = connect(&addr, &token).await;
    let mut sent = 0;
    // Turns until one waits on the summary call.
    'grow: for n in 0..60 {
        let id = format!("k{n}");
        let p = json!({"sessionKey": "main", "message": filler(n, 1_200), "idempotencyKey": id});
        let ack = c.call("chat.send", p).await;
        assert_eq!(ack["ok"], true, "{ack}");
        sent = n;
        for _ in 0..200 {
            let summary_asked = fake
                .requests
                .lock()
                .unwrap()
                .iter()
                .any(|(b, _)| last_text(b).contains(SUMMARY_ASK));
            if summary_asked {
                break 'grow;
            }
            let answered = fake.requests.lock().unwrap().iter().any(|(b, _)| {
                turn_of(b) == format!("turn-{n}") && !last_text(b).contains(FLUSH_ASK)
            });
            if answered {
                chat_until_done(&mut c, &id).await;
                continue 'grow;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    assert!(sent > 0, "the conversation grew");
    sigkill(&mut child);
    drop(c);

    let (_child, addr, token) = spawn_gateway(dir.path());
    let mut c = connect(&addr, &token).await;
    let entries = transcript(&mut c).await;
    assert!(
        entries.iter().all(|e| e["type"] != "compaction"),
        "no half-written compaction"
    );
    let users = entries
        .iter()
        .filter(|e| e["message"]["role"] == "user")
        .count();
    assert_eq!(
        users,
        sent + 1,
        "every acknowledged message is in the transcript"
    );
    // The turn the kill cut off is reported (not silently lost) ...
    let cut_off = format!("k{sent}");
    let r = c
        .call("agent.wait", json!({"runId": cut_off, "timeoutMs": 1000}))
        .await;
    assert_ne!(r["payload"]["status"], "ok", "{r}");
    // ... and the session answers (compacting first, now without the hang).
    fake.respond_with(|body: &Value| {
        if last_text(body).contains(SUMMARY_ASK) {
            answer(body, &good_summary(body))
        } else {
            answer(body, &format!("ack {}", turn_of(body)))
        }
    });
    let p =
        json!({"sessionKey": "main", "message": "turn-777 hello again", "idempotencyKey": "after"});
    c.call("chat.send", p).await;
    let events = chat_until_done(&mut c, "after").await;
    assert_eq!(final_text(&events), "ack turn-777");
    let entries = transcript(&mut c).await;
    assert_eq!(
        entries.iter().filter(|e| e["type"] == "compaction").count(),
        1
    );
}
