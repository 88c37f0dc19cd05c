//! Session tools over the real WebSocket on the offline provider:
//! sessions_spawn (a sub-agent on the subagent lane whose result is
//! announced back to the parent), its depth limit, subagents steer and
//! kill, sessions_send with the reply, sessions_list and session_status.

use std::time::Duration;

use serde_json::{json, Value};

use super::chat::chat_until_done;
use crate::support::{admin, Client, TestGateway};

async fn send(c: &mut Client, key: &str, text: &str, id: &str) {
    let r = c
        .call(
            "chat.send",
            json!({"sessionKey": key, "message": text, "idempotencyKey": id}),
        )
        .await;
    assert_eq!(r["ok"], true, "{r}");
}

fn text_of(p: &Value) -> String {
    p["message"]["content"][0]["text"]
        .as_str()
        .unwrap_or("")
        .to_string()
}

/// The text of the next `final` of `key` that contains `want`.
async fn final_containing(c: &mut Client, key: &str, want: &str) -> String {
    let until = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        assert!(
            tokio::time::Instant::now() < until,
            "no final with {want:?} for {key}"
        );
        let ev = c.event("chat").await;
        let p = &ev["payload"];
        if p["sessionKey"] == key && p["state"] == "final" && text_of(p).contains(want) {
            return text_of(p);
        }
    }
}

/// The whole text of the last tool result in a session's history (the
/// offline model quotes at most 4,000 characters of it).
async fn last_tool_result(c: &mut Client, key: &str) -> String {
    let h = c.call("chat.history", json!({"sessionKey": key})).await;
    let msgs = h["payload"]["messages"].as_array().unwrap();
    let r = msgs
        .iter()
        .rev()
        .find(|m| m["role"] == "toolResult")
        .unwrap_or_else(|| panic!("{h}"));
    r["content"][0]["text"].as_str().unwrap().to_string()
}

fn tool_json(text: &str) -> Value {
    let end = text.find("}\n").map(|i| i + 1).unwrap_or(text.len());
    serde_json::from_str(&text[..end]).unwrap_or_else(|e| panic!("{e}: {text}"))
}

#[tokio::test]
async fn a_subagent_runs_its_task_and_its_result_comes_back_to_the_parent() {
    let gw = TestGateway::start();
    let mut c = admin(&gw).await;
    send(
        &mut c,
        "main",
        "@tool sessions_spawn {\"task\": \"@tokens 3\", \"label\": \"helper\"}",
        "s1",
    )
    .await;
    chat_until_done(&mut c, "s1").await;
    let accepted = tool_json(&last_tool_result(&mut c, "main").await);
    assert_eq!(accepted["status"], "accepted", "{accepted}");
    let child = accepted["childSessionKey"].as_str().unwrap().to_string();
    assert!(child.starts_with("agent:main:subagent:"), "{child}");
    // The announcement is a new parent turn (echoed by the offline model).
    let announced =
        final_containing(&mut c, "agent:main:main", "Sub-agent helper finished: ok").await;
    assert!(announced.contains("w1 w2 w3"), "{announced}");
    // The child is a session of its own, spawned by the parent.
    let list = c.call("sessions.list", json!({})).await;
    let rows = list["payload"]["sessions"].as_array().unwrap();
    assert!(rows.iter().any(|r| r["key"] == child), "{list}");

    // Depth limit: the sub-agent may not spawn another.
    send(
        &mut c,
        "main",
        "@tool sessions_spawn {\"task\": \"@tool sessions_spawn {\\\"task\\\": \\\"deeper\\\"}\", \"label\": \"nested\"}",
        "s2",
    )
    .await;
    chat_until_done(&mut c, "s2").await;
    let announced = final_containing(&mut c, "agent:main:main", "Sub-agent nested finished").await;
    assert!(announced.contains("may not spawn another"), "{announced}");
}

#[tokio::test]
async fn the_parent_can_steer_and_kill_its_subagents() {
    let gw = TestGateway::start();
    let mut c = admin(&gw).await;
    send(
        &mut c,
        "main",
        "@tool sessions_spawn {\"task\": \"@tokens 300\\n@delay 20\", \"label\": \"slow\"}",
        "k1",
    )
    .await;
    chat_until_done(&mut c, "k1").await;
    send(
        &mut c,
        "main",
        "@tool subagents {\"action\": \"list\"}",
        "k2",
    )
    .await;
    chat_until_done(&mut c, "k2").await;
    let listed = tool_json(&last_tool_result(&mut c, "main").await);
    assert_eq!(listed["subagents"][0]["label"], "slow", "{listed}");
    send(
        &mut c,
        "main",
        "@tool subagents {\"action\": \"kill\", \"target\": \"slow\"}",
        "k3",
    )
    .await;
    let killed = text_of(&chat_until_done(&mut c, "k3").await.last().unwrap()["payload"]);
    assert!(
        killed.contains("Killed the run of agent:main:subagent:"),
        "{killed}"
    );
    final_containing(
        &mut c,
        "agent:main:main",
        "Sub-agent slow finished: aborted",
    )
    .await;

    send(
        &mut c,
        "main",
        "@tool sessions_spawn {\"task\": \"@tokens 60\\n@delay 20\", \"label\": \"steered\"}",
        "k4",
    )
    .await;
    chat_until_done(&mut c, "k4").await;
    send(
        &mut c,
        "main",
        "@tool subagents {\"action\": \"steer\", \"target\": \"steered\", \"message\": \"change of plan\"}",
        "k5",
    )
    .await;
    let steered = text_of(&chat_until_done(&mut c, "k5").await.last().unwrap()["payload"]);
    assert!(
        steered.contains("Steered agent:main:subagent:"),
        "{steered}"
    );
    let announced =
        final_containing(&mut c, "agent:main:main", "Sub-agent steered finished: ok").await;
    assert!(
        announced.contains("change of plan"),
        "the steer reached the sub-agent: {announced}"
    );
    send(
        &mut c,
        "main",
        "@tool subagents {\"action\": \"kill\", \"target\": \"nobody\"}",
        "k6",
    )
    .await;
    let refused = text_of(&chat_until_done(&mut c, "k6").await.last().unwrap()["payload"]);
    assert!(
        refused.contains("is not a sub-agent of this session"),
        "{refused}"
    );
}

#[tokio::test]
async fn sessions_send_waits_for_the_reply_and_status_and_list_report() {
    let gw = TestGateway::start();
    let mut c = admin(&gw).await;
    send(&mut c, "other", "hello", "o1").await;
    chat_until_done(&mut c, "o1").await;
    send(
        &mut c,
        "main",
        "@tool sessions_send {\"sessionKey\": \"other\", \"message\": \"ping\"}",
        "m1",
    )
    .await;
    chat_until_done(&mut c, "m1").await;
    let sent = tool_json(&last_tool_result(&mut c, "main").await);
    assert_eq!(sent["status"], "ok", "{sent}");
    assert_eq!(
        sent["reply"], "You said: [From session agent:main:main]\nping",
        "{sent}"
    );
    send(&mut c, "main", "@tool session_status {}", "m2").await;
    let status = text_of(&chat_until_done(&mut c, "m2").await.last().unwrap()["payload"]);
    assert!(
        status.starts_with("Tool session_status returned: Session agent:main:main"),
        "{status}"
    );
    send(&mut c, "main", "@tool sessions_list {\"limit\": 5}", "m3").await;
    chat_until_done(&mut c, "m3").await;
    let listed = tool_json(&last_tool_result(&mut c, "main").await);
    let keys: Vec<&str> = listed["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["key"].as_str().unwrap())
        .collect();
    assert_eq!(keys, ["agent:main:main", "agent:main:other"], "{listed}");
    send(
        &mut c,
        "main",
        "@tool sessions_send {\"sessionKey\": \"main\", \"message\": \"me\"}",
        "m4",
    )
    .await;
    let refused = text_of(&chat_until_done(&mut c, "m4").await.last().unwrap()["payload"]);
    assert!(refused.contains("cannot send to itself"), "{refused}");
}
