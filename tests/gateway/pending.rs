//! What waits in a session, shown to whoever looks at it: the exec
//! approval its run is blocked on (replayed to a page that subscribes
//! after a reload, as OpenClaw's `approvalReplay`) and the messages queued
//! behind it (`pendingInputs` of `chat.history`), until they are answered.

use serde_json::{json, Value};

use crate::support::{
    admin, chat_send, chat_until_done, final_text, say, with_scopes, TestGateway,
};

fn exec_line(command: &str) -> String {
    format!("@tool exec {}", json!({ "command": command }))
}

fn pending(h: &Value) -> Value {
    h["payload"]["pendingInputs"].clone()
}

#[tokio::test]
async fn a_session_blocked_on_an_approval_shows_it_and_what_is_queued_behind_it() {
    let gw = TestGateway::with_config(json!({"tools": {"exec": {
        "security": "allowlist", "ask": "on-miss", "approvalTimeoutSeconds": 120,
    }}}));
    let mut c = admin(&gw).await;
    let mut approver = with_scopes(&gw, &["operator.approvals"]).await;
    chat_send(&mut c, "main", &exec_line("echo blocked"), "x1").await;
    let id = approver.event("exec.approval.requested").await["payload"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    chat_send(&mut c, "main", "what I typed next", "x2").await;
    // The session says what it waits for.
    let status = final_text(&say(&mut c, "main", "/status", "st1").await);
    assert!(
        status.contains(&format!("Run: waiting for approval {id}: echo blocked")),
        "{status}"
    );

    let h = c.call("chat.history", json!({"sessionKey": "main"})).await;
    let p = pending(&h);
    assert_eq!(p["total"], 1, "{h}");
    let item = &p["items"][0];
    assert_eq!(
        (&item["id"], &item["state"]),
        (&json!("x2"), &json!("queued"))
    );
    assert_eq!(item["message"]["role"], "user");
    assert_eq!(item["message"]["content"][0]["text"], "what I typed next");
    let texts: Vec<&Value> = h["payload"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| &m["content"][0]["text"])
        .collect();
    assert!(
        !texts.contains(&&json!("what I typed next")),
        "a queued message is not model history yet: {h}"
    );

    // The lanes say the same: one session with a run going and one queued.
    let lanes = c.call("diagnostics.lanes", json!({})).await["payload"].clone();
    assert_eq!(
        lanes["dynamic"],
        json!({"laneCount": 1, "activeCount": 1, "queuedCount": 1, "queuedLaneCount": 1}),
        "{lanes}"
    );
    let main = lanes["lanes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["lane"] == "main")
        .unwrap()
        .clone();
    assert_eq!(main["activeCount"], 1, "{lanes}");

    // A page opened now (or reloaded) is told what blocks the session.
    let sub = c
        .call(
            "sessions.messages.subscribe",
            json!({"key": "main", "includeApprovals": true}),
        )
        .await;
    let replay = &sub["payload"]["approvalReplay"];
    assert_eq!(replay["sessionKey"], "agent:main:main", "{sub}");
    let a = &replay["approvals"][0];
    assert_eq!((&a["id"], &a["status"]), (&json!(id), &json!("pending")));
    assert_eq!(a["presentation"]["commandText"], "echo blocked");
    assert_eq!(a["urlPath"], format!("/approve/{id}"));
    // Another session's page is not.
    let other = c
        .call(
            "sessions.messages.subscribe",
            json!({"key": "other", "includeApprovals": true}),
        )
        .await;
    assert_eq!(other["payload"]["approvalReplay"]["approvals"], json!([]));

    // Answered from that page: both turns end and nothing waits.
    let r = approver
        .call(
            "exec.approval.resolve",
            json!({"id": id, "decision": "deny"}),
        )
        .await;
    assert_eq!(r["payload"]["ok"], true, "{r}");
    chat_until_done(&mut c, "x1").await;
    chat_until_done(&mut c, "x2").await;
    let h = c.call("chat.history", json!({"sessionKey": "main"})).await;
    assert_eq!(pending(&h), json!({"items": [], "total": 0}));
    let sub = c
        .call(
            "sessions.messages.subscribe",
            json!({"key": "main", "includeApprovals": true}),
        )
        .await;
    assert_eq!(sub["payload"]["approvalReplay"]["approvals"], json!([]));
    let lanes = c.call("diagnostics.lanes", json!({})).await["payload"].clone();
    assert_eq!(lanes["dynamic"], Value::Null, "{lanes}");
}
