//! The tools that end a turn: `sessions_yield` (its acknowledgment is the
//! reply, or nothing is said) and `heartbeat_respond` (a heartbeat's
//! structured answer: an alert delivered once, or the acknowledgement that
//! is never delivered), offered to heartbeat turns only.

use serde_json::{json, Value};

use super::*;

fn beat(notify: bool) -> String {
    let mut args =
        json!({"outcome": "needs_attention", "notify": notify, "summary": "checked the disk"});
    if notify {
        args["notificationText"] = json!("Disk is 95% full");
    }
    tool("heartbeat_respond", args)
}

fn heartbeat_gateway(notify: bool) -> (FakeTelegram, TestGateway) {
    let cfg = json!({"agents": {"defaults": {"heartbeat": {
        "every": "0m", "target": "last", "prompt": format!("Heartbeat check.\n{}", beat(notify)),
    }}}});
    super::super::trust::start(
        cfg,
        &[("workspace/HEARTBEAT.md", "# Checklist\n- the disk\n")],
    )
}

async fn wake(gw: &TestGateway) -> Value {
    let mut c = admin(gw).await;
    let r = c
        .call("wake", json!({"mode": "now", "text": "check"}))
        .await;
    assert!(
        r["payload"]["runId"]
            .as_str()
            .unwrap()
            .starts_with("heartbeat:"),
        "{r}"
    );
    c.event("heartbeat").await["payload"].clone()
}

#[tokio::test]
async fn a_heartbeat_answered_with_notify_delivers_its_alert_once() {
    let (tg, gw) = heartbeat_gateway(true);
    // The owner's chat becomes the main session's last route.
    ask(&tg, OWNER, 1, "hello").await;
    let ev = wake(&gw).await;
    assert!(
        tg.until(LONG, |f| f
            .sent_to(OWNER)
            .iter()
            .any(|s| s.text == "Disk is 95% full"))
            .await,
        "{ev} {:?}",
        tg.sent()
    );
    // Barrier: the next turn's reply; the alert came once and the tool's
    // own result never.
    ask(&tg, OWNER, 2, "ping").await;
    let texts: Vec<String> = tg.sent_to(OWNER).iter().map(|s| s.text.clone()).collect();
    assert_eq!(
        texts.iter().filter(|t| *t == "Disk is 95% full").count(),
        1,
        "{texts:?}"
    );
    assert!(
        !texts.iter().any(|t| t.contains("heartbeat_respond")),
        "{texts:?}"
    );
}

#[tokio::test]
async fn a_heartbeat_answered_without_notify_sends_nothing() {
    let (tg, gw) = heartbeat_gateway(false);
    ask(&tg, OWNER, 1, "hello").await;
    let before = tg.sent_to(OWNER).len();
    let ev = wake(&gw).await;
    assert_eq!(ev["status"], "ok-token", "{ev}");
    ask(&tg, OWNER, 2, "ping").await;
    assert_eq!(
        tg.sent_to(OWNER).len(),
        before + 1,
        "{:?}",
        tg.sent_to(OWNER)
    );
}

#[tokio::test]
async fn heartbeat_respond_is_a_heartbeats_tool_only_and_never_a_strangers() {
    let (tg, _gw) = start(
        json!({"tools": {"untrusted": {"allow": ["*", "heartbeat_respond", "sessions_yield"]}}}),
    );
    let reply = ask(&tg, OWNER, 1, &beat(true)).await;
    assert!(reply.contains("Unknown tool"), "{reply}");
    let reply = ask(&tg, STRANGER, 2, &beat(true)).await;
    assert!(reply.contains("Unknown tool"), "{reply}");
    // sessions_yield, widened: a stranger ends only its own turn.
    let y = tool("sessions_yield", json!({"acknowledgment": "ok, waiting"}));
    let reply = ask(&tg, STRANGER, 3, &y).await;
    assert_eq!(reply, "ok, waiting");
}

#[tokio::test]
async fn sessions_yield_ends_the_turn_with_its_acknowledgment_or_silence() {
    let (tg, _gw) = start(json!({}));
    let y = tool(
        "sessions_yield",
        json!({"acknowledgment": "On it, back soon"}),
    );
    let reply = ask(&tg, OWNER, 1, &format!("{y}\nthis text is never said")).await;
    assert_eq!(reply, "On it, back soon");
    let before = tg.sent_to(OWNER).len();
    tg.dm(
        OWNER,
        2,
        &tool("sessions_yield", json!({"waitFor": "message"})),
    );
    // Barrier: the next turn's reply; the yield said nothing.
    let after = ask(&tg, OWNER, 3, "ping").await;
    assert!(after.starts_with("You said: ping"), "{after}");
    assert_eq!(
        tg.sent_to(OWNER).len(),
        before + 1,
        "{:?}",
        tg.sent_to(OWNER)
    );
}
