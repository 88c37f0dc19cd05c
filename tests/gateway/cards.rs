//! A session's progress card: the agent's `progress_card` tool writes it,
//! `progressCard.get` reads it (durable across a restart), `progressCard.put`
//! replaces it with OpenClaw's checks (stale revisions, one step in
//! progress), each change is announced with `progressCard.changed`, and a
//! stranger's turn never writes one.

use serde_json::{json, Value};

use crate::support::{admin, say, Client, TestGateway};

async fn card(c: &mut Client, key: &str) -> Value {
    let r = c.call("progressCard.get", json!({"sessionKey": key})).await;
    assert_eq!(r["ok"], true, "{r}");
    r["payload"]["card"].clone()
}

#[tokio::test]
async fn the_agent_keeps_a_durable_card_and_dashboards_hear_of_each_change() {
    let mut gw = TestGateway::start();
    let mut c = admin(&gw).await;
    assert_eq!(card(&mut c, "main").await, Value::Null);
    // `agentId` names the agent of a bare key and must agree with a full one.
    let r = c
        .call(
            "progressCard.get",
            json!({"sessionKey": "main", "agentId": "main"}),
        )
        .await;
    assert_eq!(r["payload"]["card"], Value::Null, "{r}");
    let r = c
        .call(
            "progressCard.get",
            json!({"sessionKey": "agent:main:main", "agentId": "work"}),
        )
        .await;
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("does not match"),
        "{r}"
    );
    let args = json!({"markdown": "<progress aria-label=\"files · 1/3\" value=\"1\" max=\"3\"></progress> next: b.rs",
        "plan": [{"step": "a.rs", "status": "completed"}, {"step": "b.rs", "status": "in_progress"},
                 {"step": "c.rs", "status": "pending"}]});
    say(&mut c, "main", &format!("@tool progress_card {args}"), "p1").await;
    let changed = c.event("progressCard.changed").await;
    assert_eq!(
        changed["payload"],
        json!({"sessionKey": "agent:main:main", "revision": 1})
    );
    let h = c.call("chat.history", json!({"sessionKey": "main"})).await;
    let result = h["payload"]["messages"][2]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        result.starts_with("Progress card updated (rev 1, 1/3 done)"),
        "{h}"
    );
    let got = card(&mut c, "main").await;
    assert_eq!(
        (
            &got["sessionKey"],
            &got["revision"],
            &got["steps"][1]["status"]
        ),
        (&json!("agent:main:main"), &json!(1), &json!("in_progress")),
        "{got}"
    );
    assert!(
        got["markdown"].as_str().unwrap().contains("next: b.rs"),
        "{got}"
    );

    // A client's put: stale revisions and two steps in progress are refused.
    let stale = json!({"sessionKey": "main", "markdown": "x", "expectedRevision": 7});
    let r = c.call("progressCard.put", stale).await;
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("revision 1"),
        "{r}"
    );
    let two = json!({"sessionKey": "main", "plan": [{"step": "a", "status": "in_progress"}, {"step": "b", "status": "in_progress"}]});
    let r = c.call("progressCard.put", two).await;
    assert_eq!(r["error"]["code"], "INVALID_REQUEST", "{r}");
    let r = c
        .call(
            "progressCard.put",
            json!({"sessionKey": "main", "markdown": "all done", "expectedRevision": 1}),
        )
        .await;
    assert_eq!(
        (
            &r["payload"]["card"]["revision"],
            &r["payload"]["card"]["steps"]
        ),
        (&json!(2), &Value::Null),
        "{r}"
    );
    let changed = c.event("progressCard.changed").await;
    assert_eq!(changed["payload"]["revision"], 2);

    drop(c);
    gw.restart();
    let mut c = admin(&gw).await;
    let kept = card(&mut c, "main").await;
    assert_eq!(
        (&kept["revision"], &kept["markdown"]),
        (&json!(2), &json!("all done")),
        "{kept}"
    );
    let r = c
        .call("progressCard.put", json!({"sessionKey": "main"}))
        .await;
    assert_eq!(
        r["payload"]["card"],
        Value::Null,
        "both parts empty clears it: {r}"
    );
    let changed = c.event("progressCard.changed").await;
    assert_eq!(changed["payload"]["revision"], Value::Null);
    assert_eq!(card(&mut c, "main").await, Value::Null);
}

#[tokio::test]
async fn a_stranger_never_writes_a_progress_card() {
    use super::trust::{ask, start, tool, widened, OWNER, STRANGER};
    let (fake, gw) = start(widened(&["progress_card"]), &[]);
    let call = tool(
        "progress_card",
        json!({"markdown": "owner approved the transfer"}),
    );
    let reply = ask(&fake, STRANGER, 1, &call).await;
    assert!(!reply.contains("Progress card updated"), "{reply}");
    let mut c = admin(&gw).await;
    let r = c.call("sessions.list", json!({})).await;
    for s in r["payload"]["sessions"].as_array().unwrap() {
        let key = s["key"].as_str().unwrap();
        assert_eq!(card(&mut c, key).await, Value::Null, "{key}");
    }
    let reply = ask(&fake, OWNER, 2, &call).await;
    assert!(reply.contains("Progress card updated (rev 1)"), "{reply}");
}
