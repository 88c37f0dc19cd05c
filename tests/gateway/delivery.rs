//! Delivery without a crash (issue 12, faults 1, 2 and 5): a session runs
//! its messages in the order it acknowledged them, every acknowledgement
//! names the run that answers the message, `agent.wait` resolves every id a
//! client was given, and waits keep no state they should not.

use std::collections::HashMap;
use std::time::Duration;

use serde_json::{json, Value};

use crate::support::{admin, chat_send as send, http, Client, TestGateway};

const GUARD: Duration = Duration::from_secs(20);

/// Terminal `chat` events until every run in `runs` has one: run id ->
/// (state, text).
async fn ends(c: &mut Client, runs: &[&str]) -> HashMap<String, (String, String)> {
    let mut out = HashMap::new();
    while runs.iter().any(|r| !out.contains_key(*r)) {
        let ev = tokio::time::timeout(GUARD, c.event("chat"))
            .await
            .expect("runs end");
        let p = &ev["payload"];
        let state = p["state"].as_str().unwrap_or("").to_string();
        if matches!(state.as_str(), "final" | "error" | "aborted") {
            let text = p["message"]["content"][0]["text"]
                .as_str()
                .unwrap_or("")
                .to_string();
            out.insert(p["runId"].as_str().unwrap().to_string(), (state, text));
        }
    }
    out
}

async fn wait(c: &mut Client, id: &str) -> Value {
    let r = c
        .call("agent.wait", json!({"runId": id, "timeoutMs": 15000}))
        .await;
    assert_eq!(r["ok"], true, "{r}");
    r["payload"].clone()
}

#[tokio::test]
async fn every_acknowledgement_names_the_run_that_answers_and_agent_wait_resolves_it() {
    let gw = TestGateway::start();
    let mut c = admin(&gw).await;
    send(&mut c, "ids", "/queue collect debounce:300ms", "q1").await;
    ends(&mut c, &["q1"]).await;
    let a = send(&mut c, "ids", "@tokens 30\n@delay 10\nfirst", "a").await;
    assert_eq!(a, json!({"runId": "a", "status": "started"}));
    let b = send(&mut c, "ids", "second", "b").await;
    assert_eq!(b, json!({"runId": "b", "status": "accepted"}), "queued");
    let cc = send(&mut c, "ids", "third", "c").await;
    assert_eq!(
        cc,
        json!({"runId": "b", "status": "accepted"}),
        "collected into b's run"
    );
    let done = ends(&mut c, &["a", "b"]).await;
    let (state, text) = &done["b"];
    assert_eq!(state, "final");
    assert!(text.contains("second") && text.contains("third"), "{text}");
    // Every id a client was given resolves, to the run that answered it.
    for (id, run) in [("a", "a"), ("b", "b"), ("c", "b")] {
        let w = wait(&mut c, id).await;
        assert_eq!(
            (w["runId"].as_str(), w["status"].as_str()),
            (Some(run), Some("ok")),
            "{id}: {w}"
        );
    }

    // followup: one run per message, each under its own id.
    send(&mut c, "ids", "/queue followup", "q2").await;
    ends(&mut c, &["q2"]).await;
    send(&mut c, "ids", "@tokens 30\n@delay 10\nbusy", "f0").await;
    let x = send(&mut c, "ids", "ex", "x").await;
    let y = send(&mut c, "ids", "why", "y").await;
    assert_eq!(x, json!({"runId": "x", "status": "accepted"}));
    assert_eq!(y, json!({"runId": "y", "status": "accepted"}));
    let done = ends(&mut c, &["f0", "x", "y"]).await;
    assert_eq!(done["x"].1, "You said: ex");
    assert_eq!(done["y"].1, "You said: why");

    // steer: the message joins the running run, whose id the ack names.
    send(&mut c, "ids", "/queue steer", "q3").await;
    ends(&mut c, &["q3"]).await;
    send(
        &mut c,
        "ids",
        "@tool exec {\"command\":\"sleep 1\"}\n@tool exec {\"command\":\"echo never\"}",
        "long",
    )
    .await;
    loop {
        let ev = c.event("session.tool").await;
        if ev["payload"]["runId"] == "long" {
            break;
        }
    }
    let s = send(&mut c, "ids", "change of plan", "s").await;
    assert_eq!(s, json!({"runId": "long", "status": "in_flight"}));
    let done = ends(&mut c, &["long"]).await;
    assert_eq!(done["long"].1, "You said: change of plan");
    let w = wait(&mut c, "s").await;
    assert_eq!(
        (w["runId"].as_str(), w["status"].as_str()),
        (Some("long"), Some("ok"))
    );
}

#[tokio::test]
async fn a_message_never_overtakes_one_that_waits_out_its_debounce() {
    // The adversarial run's scenario, without the kill: A runs; B arrives
    // and waits (a collect debounce of 3 s, which outlasts A's run whatever
    // the load); C arrives when A ends, while B still waits. C must not
    // start first: it joins B's run.
    let gw = TestGateway::with_config(
        json!({ "messages": { "queue": { "mode": "collect", "debounceMs": 3000 } } }),
    );
    let mut c = admin(&gw).await;
    send(&mut c, "order", "@delay 100\n@tokens 8\nA", "A").await;
    loop {
        let ev = c.event("chat").await;
        if ev["payload"]["runId"] == "A" && ev["payload"]["state"] == "delta" {
            break;
        }
    }
    let b = send(&mut c, "order", "B", "B").await;
    assert_eq!(b["status"], "accepted");
    ends(&mut c, &["A"]).await;
    let cc = send(&mut c, "order", "@delay 200\n@tokens 20\nC", "C").await;
    assert_eq!(cc, json!({"runId": "B", "status": "accepted"}), "{cc}");
    let done = ends(&mut c, &["B"]).await;
    assert_eq!(done["B"].0, "final");
    let h = c.call("chat.history", json!({"sessionKey": "order"})).await;
    let messages = h["payload"]["messages"].as_array().unwrap();
    let text = |m: &Value| m["content"][0]["text"].as_str().unwrap_or("").to_string();
    let users: Vec<String> = messages
        .iter()
        .filter(|m| m["role"] == "user")
        .map(text)
        .collect();
    assert_eq!(
        users.len(),
        2,
        "A's turn, then one turn for B and C: {users:?}"
    );
    // Shown as typed, B before C; the model got both framed by the queue.
    let turn = &users[1];
    assert!(
        turn.starts_with("B\n\n") && turn.ends_with("\nC"),
        "B before C: {turn}"
    );
    let input = messages
        .iter()
        .filter(|m| m["role"] == "user")
        .nth(1)
        .unwrap();
    let body = input["bodyForAgent"].as_str().unwrap_or_default();
    let (pb, pc) = (body.find("Queued #1\n["), body.find("Queued #2\n["));
    assert!(pb.is_some() && pc.is_some() && pb < pc, "{body}");
    let replies = messages.iter().filter(|m| m["role"] == "assistant").count();
    assert_eq!(replies, 2, "{messages:?}");
}

async fn waiters(gw: &TestGateway) -> i64 {
    let (_, _, body) = http(gw.addr, "GET", "/metrics", &[]).await;
    body.lines()
        .find_map(|l| l.strip_prefix("ferroclaw_agent_waiters "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("{body}"))
}

async fn waiters_become(gw: &TestGateway, n: i64) {
    for _ in 0..500 {
        if waiters(gw).await == n {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("waiters stayed at {} (wanted {n})", waiters(gw).await);
}

#[tokio::test]
async fn agent_wait_keeps_nothing_for_unknown_ids_and_lets_go_when_its_caller_does() {
    let gw = TestGateway::start();
    let mut c = admin(&gw).await;
    // Unknown ids: answered when their time runs out, nothing kept.
    let mut ids = Vec::new();
    for i in 0..2000 {
        ids.push(
            c.send_req(
                "agent.wait",
                json!({"runId": format!("never-{i}"), "timeoutMs": 1}),
            )
            .await,
        );
    }
    for id in &ids {
        let r = tokio::time::timeout(GUARD, c.res(id)).await.unwrap();
        assert_eq!(r["payload"]["status"], "timeout", "{r}");
    }
    assert_eq!(waiters(&gw).await, 0);

    // A live run: a huge timeoutMs is clamped, not an overflow, and the
    // waiter is dropped as soon as its connection closes.
    send(&mut c, "w", "@tokens 400\n@delay 20\nlong", "live").await;
    let mut other = admin(&gw).await;
    let pending = other
        .send_req(
            "agent.wait",
            json!({"runId": "live", "timeoutMs": 9_223_372_036_854_775_807u64}),
        )
        .await;
    waiters_become(&gw, 1).await;
    drop(other);
    let _ = pending;
    waiters_become(&gw, 0).await;
    // Another waiter with the same huge timeout gets the run's end.
    let id = c
        .send_req(
            "agent.wait",
            json!({"runId": "live", "timeoutMs": 9_223_372_036_854_775_807u64}),
        )
        .await;
    waiters_become(&gw, 1).await;
    let r = c.call("chat.abort", json!({"sessionKey": "w"})).await;
    assert_eq!(r["payload"]["aborted"], true);
    let w = tokio::time::timeout(GUARD, c.res(&id)).await.unwrap();
    assert_eq!(w["payload"]["stopReason"], "aborted", "{w}");
    waiters_become(&gw, 0).await;
}

#[tokio::test]
async fn waiters_are_bounded_per_connection() {
    let gw = TestGateway::with_config(json!({"gateway": {"maxInFlightRequests": 1000}}));
    let mut c = admin(&gw).await;
    send(&mut c, "b", "@tokens 400\n@delay 20\nlong", "busy-run").await;
    let mut ids = Vec::new();
    for _ in 0..300 {
        ids.push(
            c.send_req(
                "agent.wait",
                json!({"runId": "busy-run", "timeoutMs": 60000}),
            )
            .await,
        );
    }
    waiters_become(&gw, 256).await;
    let r = c.call("chat.abort", json!({"sessionKey": "b"})).await;
    assert_eq!(r["payload"]["aborted"], true);
    let (mut ended, mut refused) = (0, 0);
    for id in &ids {
        let r = tokio::time::timeout(GUARD, c.res(id)).await.unwrap();
        if r["ok"] == true {
            assert_eq!(r["payload"]["stopReason"], "aborted");
            ended += 1;
        } else {
            assert_eq!(r["error"]["code"], "UNAVAILABLE", "{r}");
            assert_eq!(r["error"]["retryable"], true, "{r}");
            refused += 1;
        }
    }
    assert_eq!((ended, refused), (256, 44));
}

#[tokio::test]
async fn a_queued_run_is_cancelled_by_its_id_and_a_repeated_key_is_not_run_twice() {
    let gw = TestGateway::start();
    let mut c = admin(&gw).await;
    send(&mut c, "cq", "/queue followup", "q").await;
    ends(&mut c, &["q"]).await;
    send(&mut c, "cq", "@tokens 60\n@delay 10\nfirst", "r1").await;
    assert_eq!(
        send(&mut c, "cq", "second", "r2").await["status"],
        "accepted"
    );
    assert_eq!(
        send(&mut c, "cq", "third", "r3").await["status"],
        "accepted"
    );
    // The same key again, past the idempotency cache (another method):
    // the session knows it and names its run again.
    let again = c
        .call(
            "agent",
            json!({"sessionKey": "cq", "message": "third", "idempotencyKey": "r3"}),
        )
        .await;
    assert_eq!(again["ok"], true, "{again}");
    let r = c
        .call("chat.abort", json!({"sessionKey": "cq", "runId": "r2"}))
        .await;
    assert_eq!(
        r["payload"],
        json!({"ok": true, "aborted": true, "runIds": ["r2"]})
    );
    let done = ends(&mut c, &["r1", "r2", "r3"]).await;
    assert_eq!(done["r1"].0, "final", "the running run goes on");
    assert_eq!(done["r2"].0, "aborted");
    assert_eq!(done["r3"].1, "You said: third");
    let h = c.call("chat.history", json!({"sessionKey": "cq"})).await;
    let thirds = h["payload"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "assistant" && m["content"][0]["text"] == "You said: third")
        .count();
    assert_eq!(thirds, 1, "run once");
}
