//! Per-call approval of MCP tools (`mcp.servers.<name>.approval`), over
//! the real WebSocket with the offline model calling the fault server's
//! tools: `prompt` asks an `operator.approvals` client for every call (a
//! denied call never reaches the server); `auto` runs a tool the server
//! marks read-only, asks for the others, and an allow-always becomes a
//! grant in the approvals file (`agents.main.mcpTools`) that answers the
//! next call, but never for a turn holding a stranger's message.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::mcp::{node, offline_call, servers_until, ROOT};
use crate::support::{
    admin, chat_until_done, connect_params, final_text, Client, TestGateway, TOKEN,
};

fn server(dir: &Path, approval: &str) -> Value {
    json!({"mcp": {"servers": {"legacy": {
        "command": node(),
        "args": [PathBuf::from(ROOT).join("tests/mcp/fault_server.mjs"), "legacy"],
        "env": {"FAULT_LOG": dir.join("legacy.log")},
        "approval": approval,
    }}}, "tools": {"exec": {"approvalTimeoutSeconds": 5}}})
}

/// The `tools/call`s the server received, by tool name.
fn calls(dir: &Path) -> Vec<String> {
    std::fs::read_to_string(dir.join("legacy.log"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|m| m["method"] == "tools/call")
        .filter_map(|m| m["params"]["name"].as_str().map(str::to_string))
        .collect()
}

async fn approver(gw: &TestGateway) -> Client {
    let mut c = Client::connect(&gw.ws_url()).await;
    let r = c
        .handshake(connect_params(
            "cli",
            "cli",
            &["operator.approvals"],
            Some(TOKEN),
        ))
        .await;
    assert_eq!(r["ok"], true, "{r}");
    c
}

/// Answers the next MCP approval with `decision`; returns its request.
async fn answer(a: &mut Client, decision: &str) -> Value {
    let ev = a.event("exec.approval.requested").await;
    let id = ev["payload"]["id"].as_str().unwrap().to_string();
    let r = a
        .call(
            "exec.approval.resolve",
            json!({"id": id, "decision": decision}),
        )
        .await;
    assert_eq!(r["ok"], true, "{r}");
    ev["payload"]["request"].clone()
}

#[tokio::test]
async fn prompt_asks_for_every_call_and_a_denied_call_never_reaches_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let gw = TestGateway::with_config(server(dir.path(), "prompt"));
    let mut c = admin(&gw).await;
    servers_until(&mut c, |s| s.iter().all(|x| x["state"] == "ready")).await;
    let mut a = approver(&gw).await;

    offline_call(&mut c, "legacy__ok", "p1").await;
    let request = answer(&mut a, "deny").await;
    assert_eq!(request["host"], "mcp", "{request}");
    assert_eq!(request["mcpServer"], "legacy", "{request}");
    assert_eq!(request["mcpTool"], "ok", "{request}");
    assert!(
        request["command"].as_str().unwrap().contains("p1"),
        "{request}"
    );
    let text = final_text(&chat_until_done(&mut c, "p1").await);
    assert!(text.contains("denied"), "{text}");
    assert!(calls(dir.path()).is_empty(), "a denied call is never made");

    // Read-only or not, prompt asks; allow-once runs it this time only.
    offline_call(&mut c, "legacy__ok", "p2").await;
    answer(&mut a, "allow-once").await;
    let text = final_text(&chat_until_done(&mut c, "p2").await);
    assert!(text.contains("ok says p2"), "{text}");
    // allow-always under prompt mints nothing: the next call asks again.
    offline_call(&mut c, "legacy__ok", "p3").await;
    answer(&mut a, "allow-always").await;
    chat_until_done(&mut c, "p3").await;
    offline_call(&mut c, "legacy__ok", "p4").await;
    answer(&mut a, "allow-once").await;
    let text = final_text(&chat_until_done(&mut c, "p4").await);
    assert!(text.contains("ok says p4"), "{text}");
    assert_eq!(calls(dir.path()), ["ok", "ok", "ok"]);
}

#[tokio::test]
async fn auto_runs_read_only_tools_and_remembers_an_allow_always() {
    let dir = tempfile::tempdir().unwrap();
    let gw = TestGateway::with_config(server(dir.path(), "auto"));
    let mut c = admin(&gw).await;
    servers_until(&mut c, |s| s.iter().all(|x| x["state"] == "ready")).await;
    let mut a = approver(&gw).await;

    // `ok` is readOnlyHint: no question.
    offline_call(&mut c, "legacy__ok", "a1").await;
    let text = final_text(&chat_until_done(&mut c, "a1").await);
    assert!(text.contains("ok says a1"), "{text}");
    // `add` is not: asked; allow-always is a grant for this tool.
    offline_call(&mut c, "legacy__add", "a2").await;
    answer(&mut a, "allow-always").await;
    let text = final_text(&chat_until_done(&mut c, "a2").await);
    assert!(text.contains("added a tool"), "{text}");
    let file: Value = serde_json::from_str(
        &std::fs::read_to_string(gw.state_dir().join("exec-approvals.json")).unwrap(),
    )
    .unwrap();
    let grants = &file["agents"]["main"]["mcpTools"];
    assert_eq!(grants[0]["server"], "legacy", "{file}");
    assert_eq!(grants[0]["tool"], "add", "{file}");
    assert_eq!(grants[0]["source"], "allow-always", "{file}");
    // The grant answers the next call, with other arguments.
    offline_call(&mut c, "legacy__add", "a3").await;
    let text = final_text(&chat_until_done(&mut c, "a3").await);
    assert!(text.contains("added a tool"), "{text}");
    assert!(
        !a.take_backlog()
            .iter()
            .any(|f| f["event"] == "exec.approval.requested"),
        "the grant answered without asking"
    );
    assert_eq!(calls(dir.path()), ["ok", "add", "add"]);
}
