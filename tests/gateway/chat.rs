//! Chat over the real WebSocket on the built-in offline provider: chat.send
//! acks, streamed `chat`/`agent` events, a tool loop with a real child
//! process, abort, in-flight duplicates and chat.history.

use serde_json::json;

use crate::support::{admin, TestGateway};

pub(crate) use crate::support::chat_until_done;

#[tokio::test]
async fn chat_send_streams_deltas_and_a_final_and_history_keeps_both_turns() {
    let gw = TestGateway::start();
    let mut c = admin(&gw).await;
    let ack = c
        .call(
            "chat.send",
            json!({"sessionKey": "main", "message": "hello\u{0}there", "idempotencyKey": "k1"}),
        )
        .await;
    assert_eq!(
        ack["payload"],
        json!({"runId": "k1", "status": "started"}),
        "{ack}"
    );
    let events = chat_until_done(&mut c, "k1").await;
    let last = &events.last().unwrap()["payload"];
    assert_eq!(last["state"], "final");
    assert_eq!(last["sessionKey"], "agent:main:main");
    assert_eq!(
        last["message"]["content"][0]["text"], "You said: hellothere",
        "NUL removed"
    );
    assert_eq!(last["stopReason"], "stop");
    assert!(last["usage"]["output"].as_u64().unwrap() > 0);
    let frame_seqs: Vec<u64> = events.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert!(frame_seqs.windows(2).all(|w| w[1] > w[0]), "{frame_seqs:?}");
    for d in events.iter().filter(|e| e["payload"]["state"] == "delta") {
        assert!(
            d["payload"]["deltaText"].is_string()
                && d["payload"]["message"]["content"][0]["text"].is_string()
        );
    }
    let agent_end = loop {
        let ev = c.event("agent").await;
        if ev["payload"]["stream"] == "lifecycle" && ev["payload"]["data"]["phase"] == "end" {
            break ev;
        }
    };
    assert_eq!(agent_end["payload"]["runId"], "k1");

    let h = c.call("chat.history", json!({"sessionKey": "main"})).await["payload"].clone();
    let msgs = h["messages"].as_array().unwrap();
    assert_eq!(msgs.len(), 2, "{h}");
    assert_eq!(
        (msgs[0]["role"].as_str(), msgs[1]["role"].as_str()),
        (Some("user"), Some("assistant"))
    );
    assert_eq!(msgs[1]["content"][0]["text"], "You said: hellothere");
    assert!(h["sessionId"].is_string());
    let one = c
        .call(
            "chat.history",
            json!({"sessionKey": "agent:main:main", "limit": 1}),
        )
        .await["payload"]
        .clone();
    assert_eq!(one["messages"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn a_tool_loop_runs_a_real_command_and_answers_with_its_output() {
    let gw = TestGateway::start();
    let mut c = admin(&gw).await;
    c.call("chat.send", json!({"sessionKey": "main", "message": "@tool exec {\"command\":\"echo from-the-shell\"}", "idempotencyKey": "t1"})).await;
    let events = chat_until_done(&mut c, "t1").await;
    let text = events.last().unwrap()["payload"]["message"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        text.contains("Tool exec returned: from-the-shell"),
        "{text}"
    );
    let h = c.call("chat.history", json!({"sessionKey": "main"})).await["payload"].clone();
    let roles: Vec<&str> = h["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "assistant", "toolResult", "assistant"]);
}

#[tokio::test]
async fn abort_stops_a_run_and_duplicates_are_in_flight_then_cached() {
    let gw = TestGateway::start();
    let mut c = admin(&gw).await;
    let send = json!({"sessionKey": "main", "message": "@tokens 2000\n@delay 20", "idempotencyKey": "long"});
    c.call("chat.send", send.clone()).await;
    loop {
        let ev = c.event("chat").await;
        if ev["payload"]["state"] == "delta" {
            break;
        }
    }
    let dup = c.call("chat.send", send.clone()).await;
    assert_eq!(
        dup["payload"],
        json!({"runId": "long", "status": "in_flight"})
    );
    let r = c.call("chat.abort", json!({"sessionKey": "main"})).await;
    assert_eq!(
        r["payload"],
        json!({"ok": true, "aborted": true, "runIds": ["long"]})
    );
    let events = chat_until_done(&mut c, "long").await;
    assert_eq!(events.last().unwrap()["payload"]["state"], "aborted");
    let dup = c.call("chat.send", send).await;
    assert_eq!(
        dup["payload"],
        json!({"runId": "long", "status": "started"}),
        "replayed from the cache, not re-run"
    );
    let r = c.call("chat.abort", json!({"sessionKey": "main"})).await;
    assert_eq!(r["payload"]["aborted"], false);
}

#[tokio::test]
async fn bad_chat_params_are_clear_errors() {
    let gw = TestGateway::start();
    let mut c = admin(&gw).await;
    let r = c
        .call(
            "chat.send",
            json!({"sessionKey": "main", "message": "   ", "idempotencyKey": "e1"}),
        )
        .await;
    assert_eq!(
        r["error"]["message"],
        "invalid chat.send params: message is empty"
    );
    let r = c
        .call(
            "chat.send",
            json!({"sessionKey": "a b", "message": "x", "idempotencyKey": "e2"}),
        )
        .await;
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("invalid sessionKey"),
        "{r}"
    );
    let r = c
        .call("chat.send", json!({"sessionKey": "main", "message": "x"}))
        .await;
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("idempotencyKey"),
        "{r}"
    );
    let r = c
        .call("chat.history", json!({"sessionKey": "main", "limit": 5000}))
        .await;
    assert_eq!(r["error"]["code"], "INVALID_REQUEST");
    let r = c
        .call("chat.history", json!({"sessionKey": "never-used"}))
        .await;
    assert_eq!(r["payload"]["messages"], json!([]));
}

#[tokio::test]
async fn agent_answers_twice_on_the_same_id_and_agent_wait_reports_the_run() {
    let gw = TestGateway::start();
    let mut c = admin(&gw).await;
    let id = c
        .send_req("agent", json!({"message": "hi agent", "sessionKey": "agent:main:x", "idempotencyKey": "a1", "deliver": false, "timeout": 600}))
        .await;
    let first = c.res(&id).await;
    assert_eq!(first["payload"]["status"], "accepted", "{first}");
    assert_eq!(first["payload"]["runId"], "a1");
    assert!(first["payload"]["acceptedAt"].is_u64());
    let second = c.res(&id).await;
    assert_eq!(second["ok"], true, "{second}");
    let p = &second["payload"];
    assert_eq!(
        (p["status"].as_str(), p["summary"].as_str()),
        (Some("ok"), Some("completed"))
    );
    assert_eq!(p["result"]["payloads"][0]["text"], "You said: hi agent");
    assert!(p["result"]["meta"]["durationMs"].is_u64());

    let w = c.call("agent.wait", json!({"runId": "a1"})).await;
    assert_eq!(w["payload"]["status"], "ok", "{w}");
    assert!(w["payload"]["endedAt"].as_u64() >= w["payload"]["startedAt"].as_u64());
    let w = c
        .call("agent.wait", json!({"runId": "never", "timeoutMs": 50}))
        .await;
    assert_eq!(w["payload"], json!({"runId": "never", "status": "timeout"}));

    // A retry with the same key replays the final answer, without a new run.
    let again = c
        .call(
            "agent",
            json!({"message": "hi agent", "sessionKey": "agent:main:x", "idempotencyKey": "a1"}),
        )
        .await;
    assert_eq!(again["payload"], second["payload"]);
    let h = c
        .call("chat.history", json!({"sessionKey": "agent:main:x"}))
        .await;
    assert_eq!(h["payload"]["messages"].as_array().unwrap().len(), 2);
}

/// The `agent` final answer carries the reply even when the run ended
/// before the gateway started waiting for it (the offline model answers at
/// once; many calls at a time make that likely).
#[tokio::test]
async fn concurrent_agent_calls_each_get_their_reply_text() {
    let gw = TestGateway::start();
    let mut c = admin(&gw).await;
    let mut ids = Vec::new();
    for i in 0..40 {
        let id = c
            .send_req("agent", json!({"message": format!("n{i}"), "sessionKey": format!("agent:main:c{i}"), "idempotencyKey": format!("c{i}")}))
            .await;
        ids.push((i, id));
    }
    for (i, id) in ids {
        assert_eq!(c.res(&id).await["payload"]["status"], "accepted");
        let fin = c.res(&id).await;
        assert_eq!(
            fin["payload"]["result"]["payloads"][0]["text"],
            format!("You said: n{i}"),
            "{fin}"
        );
    }
}

#[tokio::test]
async fn agent_wait_reports_runs_that_ended_before_a_restart() {
    let mut gw = TestGateway::start();
    let mut c = admin(&gw).await;
    for (key, message) in [("w-ok", "hello"), ("w-err", "@error auth")] {
        c.call(
            "chat.send",
            json!({"sessionKey": key, "message": message, "idempotencyKey": key}),
        )
        .await;
        chat_until_done(&mut c, key).await;
    }
    drop(c);
    gw.restart();
    let mut c = admin(&gw).await;
    let ok = c
        .call("agent.wait", json!({"runId": "w-ok", "timeoutMs": 2000}))
        .await;
    let p = &ok["payload"];
    assert_eq!(
        (p["status"].as_str(), p["stopReason"].as_str()),
        (Some("ok"), Some("stop")),
        "{ok}"
    );
    assert!(p["startedAt"].as_u64().unwrap() > 0);
    assert!(p["endedAt"].as_u64() >= p["startedAt"].as_u64());
    let err = c
        .call("agent.wait", json!({"runId": "w-err", "timeoutMs": 2000}))
        .await;
    assert_eq!(err["payload"]["status"], "error", "{err}");
    assert!(
        err["payload"]["error"]
            .as_str()
            .unwrap()
            .contains("authentication"),
        "{err}"
    );
}

/// 50 sessions at once through the 4-slot main lane: every run completes.
/// (This caught a store deadlock: sled's flush_async parked its own IO threads.)
#[tokio::test]
async fn fifty_sessions_in_parallel_all_complete_through_the_lane() {
    let gw = TestGateway::start();
    let mut c = admin(&gw).await;
    for i in 0..50 {
        c.send_req("chat.send", json!({"sessionKey": format!("m-{i}"), "message": "hi", "idempotencyKey": format!("m{i}")})).await;
    }
    let mut done = std::collections::HashSet::new();
    while done.len() < 50 {
        let ev = c.event("chat").await;
        if ev["payload"]["state"] == "final" {
            done.insert(ev["payload"]["runId"].as_str().unwrap().to_string());
        }
    }
}

#[tokio::test]
async fn reasoning_streams_as_agent_thinking_events_and_stays_in_the_transcript() {
    let gw = TestGateway::start();
    let mut c = admin(&gw).await;
    let events = crate::support::say(&mut c, "main", "@think look at it first\nhello", "th1").await;
    assert_eq!(crate::support::final_text(&events), "You said: hello");
    let thinking: Vec<serde_json::Value> = c
        .backlog_events("agent")
        .into_iter()
        .filter(|e| e["payload"]["stream"] == "thinking" && e["payload"]["runId"] == "th1")
        .collect();
    assert_eq!(
        thinking.len(),
        4,
        "one event per reasoning word: {thinking:?}"
    );
    let last = &thinking.last().unwrap()["payload"];
    assert_eq!(last["data"]["text"], "look at it first");
    assert_eq!(last["data"]["delta"], "first");
    assert_eq!(last["sessionKey"], "agent:main:main");
    // The reply text never carries the reasoning.
    for e in &events {
        let text = e["payload"]["message"]["content"][0]["text"]
            .as_str()
            .unwrap_or("");
        assert!(!text.contains("look at"), "{e}");
    }
    let h = c.call("chat.history", json!({"sessionKey": "main"})).await;
    let assistant = &h["payload"]["messages"][1];
    assert_eq!(
        assistant["content"][0],
        json!({"type": "thinking", "thinking": "look at it first"}),
        "{h}"
    );
    assert_eq!(assistant["content"][1]["text"], "You said: hello");

    // `/reasoning off`: nothing on the wire; the transcript still keeps it.
    let ev = crate::support::say(&mut c, "main", "/reasoning off", "th2").await;
    assert!(crate::support::final_text(&ev).contains("off"), "{ev:?}");
    c.backlog_events("agent");
    crate::support::say(&mut c, "main", "@think hidden plan\nagain", "th3").await;
    let seen = c
        .backlog_events("agent")
        .into_iter()
        .filter(|e| e["payload"]["stream"] == "thinking")
        .count();
    assert_eq!(seen, 0);
    let h = c.call("chat.history", json!({"sessionKey": "main"})).await;
    let msgs = h["payload"]["messages"].as_array().unwrap();
    assert_eq!(
        msgs.last().unwrap()["content"][0]["thinking"],
        "hidden plan",
        "{h}"
    );

    // `/reasoning on`: held back, then sent whole before the run ends.
    crate::support::say(&mut c, "main", "/reasoning on", "th4").await;
    c.backlog_events("agent");
    crate::support::say(&mut c, "main", "@think the whole plan\nthird", "th5").await;
    // The lifecycle end follows the chat final on the socket: read up to it.
    let is_end = |e: &serde_json::Value| {
        e["payload"]["runId"] == "th5"
            && e["payload"]["stream"] == "lifecycle"
            && e["payload"]["data"]["phase"] == "end"
    };
    let mut agent = c.backlog_events("agent");
    while !agent.iter().any(is_end) {
        agent.push(c.event("agent").await);
    }
    agent.retain(|e| e["payload"]["runId"] == "th5");
    let thinking: Vec<&serde_json::Value> = agent
        .iter()
        .filter(|e| e["payload"]["stream"] == "thinking")
        .collect();
    assert_eq!(thinking.len(), 1, "{agent:?}");
    assert_eq!(thinking[0]["payload"]["data"]["text"], "the whole plan");
    let end = agent.iter().find(|e| is_end(e)).expect("lifecycle end");
    assert!(
        thinking[0]["payload"]["seq"].as_u64() < end["payload"]["seq"].as_u64(),
        "the reasoning comes before the end: {agent:?}"
    );
}

/// A message queued while the session is busy is shown as it was typed
/// when its turn starts (the model still gets it with its time envelope).
#[tokio::test]
async fn a_queued_message_is_shown_as_typed_when_its_turn_starts() {
    let gw = TestGateway::start();
    let mut c = admin(&gw).await;
    crate::support::chat_send(&mut c, "main", "@tokens 30\n@delay 20", "busy").await;
    crate::support::chat_send(&mut c, "main", "@tokens 2\nwhat I typed", "later").await;
    chat_until_done(&mut c, "busy").await;
    chat_until_done(&mut c, "later").await;
    let h = c.call("chat.history", json!({"sessionKey": "main"})).await;
    let users: Vec<String> = h["payload"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| {
            m["content"][0]["text"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    assert_eq!(
        users,
        ["@tokens 30\n@delay 20", "@tokens 2\nwhat I typed"],
        "{h}"
    );
}
