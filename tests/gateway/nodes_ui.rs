//! OpenClaw's own Control UI on its Devices page (`/nodes`), served by
//! ferroclaw, with OpenClaw's own node host connected and waiting for
//! approval: the node, its capabilities and "approval needed" are shown,
//! and the row's Approve approves it (`tests/browser/control_ui_nodes.test.mjs`).

use serde_json::json;

use super::control_ui::installed_ui;
use crate::support::node_host::NodeHost;
use crate::support::{admin, TestGateway, TOKEN};

#[tokio::test(flavor = "multi_thread")]
async fn the_control_uis_devices_page_shows_a_waiting_node_and_approves_it() {
    let root = installed_ui().display().to_string();
    let gw = TestGateway::with_config(json!({ "gateway": { "controlUi": { "root": root } } }));
    let mut op = admin(&gw).await;
    let home = tempfile::tempdir().unwrap();
    let _host = NodeHost::start(&gw, home.path(), "ui-node");
    op.event("node.pair.requested").await;

    let shots = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("control-ui-nodes");
    let base = format!("http://{}", gw.addr);
    let report = crate::support::browser::browser_script(
        "control_ui_nodes.test.mjs",
        &[base.as_ref(), TOKEN.as_ref(), "ui-node".as_ref()],
        &shots,
    )
    .await;
    let before = report["before"].as_str().unwrap_or_default();
    assert!(
        before.contains("ui-node") && before.contains("approval needed"),
        "{before}"
    );
    assert!(
        before.contains("System"),
        "its capabilities are shown: {before}"
    );
    assert!(report["menu"].to_string().contains("Approve"), "{report}");
    assert_eq!(report["approveAnswered"], true, "{report}");
    for list in ["failedCalls", "consoleErrors", "pageErrors"] {
        assert_eq!(report[list], json!([]), "{list}: {report}");
    }
    let after = report["after"].as_str().unwrap_or_default();
    let row = &after[after.find("ui-node").unwrap_or(0)..];
    assert!(!row.contains("approval needed"), "{row}");
    assert!(
        report["requests"]["node.list"].as_u64().unwrap_or(0) >= 1,
        "{report}"
    );
    let listed = op.call("node.list", json!({})).await;
    assert_eq!(
        listed["payload"]["nodes"][0]["approvalState"], "approved",
        "{listed}"
    );
}

/// OpenClaw's own Control UI answers a question the agent asks
/// (`ask_user` from a WebSocket turn): the chat view shows it, its option
/// resolves it (`question.resolve`), and the run goes on with the answer
/// (`tests/browser/control_ui_question.test.mjs`).
#[tokio::test(flavor = "multi_thread")]
async fn the_control_ui_answers_a_question_the_agent_asks() {
    let root = installed_ui().display().to_string();
    let gw = TestGateway::with_config(json!({ "gateway": { "controlUi": { "root": root } } }));
    let mut op = admin(&gw).await;
    let ask = format!(
        "@tool ask_user {}",
        json!({"questions": [{"id": "color", "header": "Color", "question": "Which color suits the deck?",
            "options": [{"label": "Crimson"}, {"label": "Teal"}]}]})
    );
    let r = op
        .call(
            "chat.send",
            json!({"sessionKey": "main", "message": ask, "idempotencyKey": "ask-ui"}),
        )
        .await;
    assert_eq!(r["ok"], true, "{r}");
    let asked = op.event("question.requested").await;
    assert_eq!(asked["payload"]["runId"], "ask-ui", "{asked}");

    let shots = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("control-ui-question");
    let base = format!("http://{}", gw.addr);
    let report = crate::support::browser::browser_script(
        "control_ui_question.test.mjs",
        &[
            base.as_ref(),
            TOKEN.as_ref(),
            "Which color suits the deck?".as_ref(),
            "Teal".as_ref(),
        ],
        &shots,
    )
    .await;
    assert_eq!(report["resolveAnswered"], true, "{report}");
    assert_eq!(
        report["resolveSent"]["answers"]["answers"]["color"],
        json!(["Teal"]),
        "{report}"
    );
    assert_eq!(report["pageErrors"], json!([]), "{report}");
    let failed = report["failedCalls"].to_string();
    assert!(!failed.contains("question."), "{failed}");
    let before = report["before"].as_str().unwrap_or_default();
    assert!(
        before.contains("Crimson") && before.contains("Teal"),
        "{before}"
    );
    let events = crate::support::chat_until_done(&mut op, "ask-ui").await;
    let text = crate::support::final_text(&events);
    assert!(
        text.contains("Tool ask_user returned: Color: Teal"),
        "{text}"
    );
}
