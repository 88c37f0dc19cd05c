//! Exec safety over the real WebSocket: approvals asked of
//! `operator.approvals` clients (allow-once, allow-always into the
//! allowlist, deny, timeout), exec.approvals.get/set, per-session
//! execSecurity/execHost via sessions.patch, and the bubblewrap sandbox
//! (no network, its own /workspace).

use serde_json::{json, Value};

use super::chat::chat_until_done;
use crate::support::{admin, final_text, Client, TestGateway};

async fn send(c: &mut Client, text: &str, id: &str) {
    let r = c
        .call(
            "chat.send",
            json!({"sessionKey": "main", "message": text, "idempotencyKey": id}),
        )
        .await;
    assert_eq!(r["ok"], true, "{r}");
}

fn exec_line(command: &str) -> String {
    format!("@tool exec {}", json!({ "command": command }))
}

async fn client_with(gw: &TestGateway, scopes: &[&str]) -> Client {
    crate::support::with_scopes(gw, scopes).await
}

#[tokio::test]
async fn approvals_go_to_approvers_and_their_decisions_apply() {
    let gw = TestGateway::with_config(json!({"tools": {"exec": {
        "security": "allowlist", "ask": "on-miss", "approvalTimeoutSeconds": 2,
    }}}));
    let mut c = admin(&gw).await;
    let mut approver = client_with(&gw, &["operator.approvals"]).await;
    let mut reader = client_with(&gw, &["operator.read"]).await;

    // allow-once: this command runs, nothing is remembered.
    send(
        &mut c,
        &exec_line("echo once > once.txt; echo ran-once"),
        "a1",
    )
    .await;
    let ev = approver.event("exec.approval.requested").await;
    let req = &ev["payload"];
    assert_eq!(
        req["request"]["command"], "echo once > once.txt; echo ran-once",
        "{ev}"
    );
    assert_eq!(req["request"]["sessionKey"], "agent:main:main");
    assert_eq!(req["request"]["security"], "allowlist");
    assert!(req["expiresAtMs"].as_u64().unwrap() > req["createdAtMs"].as_u64().unwrap());
    let id = req["id"].as_str().unwrap().to_string();
    let r = approver
        .call(
            "exec.approval.resolve",
            json!({"id": id, "decision": "allow-once"}),
        )
        .await;
    assert_eq!(r["payload"]["ok"], true, "{r}");
    let resolved = approver.event("exec.approval.resolved").await;
    assert_eq!(resolved["payload"]["decision"], "allow-once");
    assert_eq!(
        final_text(&chat_until_done(&mut c, "a1").await),
        "Tool exec returned: ran-once"
    );
    assert!(gw.state_dir().join("workspace/once.txt").exists());
    let again = approver
        .call(
            "exec.approval.resolve",
            json!({"id": id, "decision": "deny"}),
        )
        .await;
    assert_eq!(again["error"]["code"], "APPROVAL_NOT_FOUND", "{again}");

    // allow-always: the binary joins the allowlist; the next run is not asked.
    send(&mut c, &exec_line("echo always"), "a2").await;
    let id = approver.event("exec.approval.requested").await["payload"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    approver
        .call(
            "exec.approval.resolve",
            json!({"id": id, "decision": "allow-always"}),
        )
        .await;
    assert_eq!(
        final_text(&chat_until_done(&mut c, "a2").await),
        "Tool exec returned: always"
    );
    send(&mut c, &exec_line("echo again"), "a3").await;
    assert_eq!(
        final_text(&chat_until_done(&mut c, "a3").await),
        "Tool exec returned: again"
    );
    let file: Value = serde_json::from_str(
        &std::fs::read_to_string(gw.state_dir().join("exec-approvals.json")).unwrap(),
    )
    .unwrap();
    let pattern = file["agents"]["main"]["allowlist"][0]["pattern"]
        .as_str()
        .unwrap();
    assert!(pattern.ends_with("/echo"), "{file}");
    assert!(
        approver
            .backlog_events("exec.approval.requested")
            .is_empty(),
        "the allowlisted run asked nobody"
    );

    // deny: not run.
    send(&mut c, &exec_line("touch denied.txt"), "a4").await;
    let id = approver.event("exec.approval.requested").await["payload"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    approver
        .call(
            "exec.approval.resolve",
            json!({"id": id, "decision": "deny"}),
        )
        .await;
    let text = final_text(&chat_until_done(&mut c, "a4").await);
    assert!(
        text.contains("exec: not run: the operator denied this command"),
        "{text}"
    );
    assert!(!gw.state_dir().join("workspace/denied.txt").exists());

    // No answer: denied when the approval expires.
    send(&mut c, &exec_line("touch late.txt"), "a5").await;
    approver.event("exec.approval.requested").await;
    let text = final_text(&chat_until_done(&mut c, "a5").await);
    assert!(text.contains("no operator answered"), "{text}");
    let expired = loop {
        let ev = approver.event("exec.approval.resolved").await;
        if ev["payload"]["decision"] == "deny" && ev["payload"].get("resolvedBy").is_none() {
            break ev;
        }
    };
    assert_eq!(expired["payload"]["reason"], "timeout", "{expired}");
    assert!(!gw.state_dir().join("workspace/late.txt").exists());

    // A read-only client never saw any of it.
    assert!(reader.backlog_events("exec.approval.requested").is_empty());
    let r = reader
        .call(
            "exec.approval.resolve",
            json!({"id": "x", "decision": "deny"}),
        )
        .await;
    assert_eq!(r["ok"], false, "{r}");
}

#[tokio::test]
async fn approvals_file_and_session_settings() {
    let gw = TestGateway::start();
    let mut c = admin(&gw).await;
    let got = c.call("exec.approvals.get", json!({})).await["payload"].clone();
    assert_eq!(got["exists"], false);
    assert_eq!(got["file"]["version"], 1);
    let hash = got["hash"].as_str().unwrap().to_string();
    let file = json!({"version": 1, "defaults": {"security": "deny"}, "agents": {}});
    let stale = c
        .call(
            "exec.approvals.set",
            json!({"file": file, "baseHash": "nope"}),
        )
        .await;
    assert!(
        stale["error"]["message"]
            .as_str()
            .unwrap()
            .contains("baseHash"),
        "{stale}"
    );
    let bad = c
        .call(
            "exec.approvals.set",
            json!({"file": {"version": 1, "defaults": {"ask": "sometimes"}}, "baseHash": hash}),
        )
        .await;
    assert!(
        bad["error"]["message"]
            .as_str()
            .unwrap()
            .contains("defaults.ask"),
        "{bad}"
    );
    let set = c
        .call(
            "exec.approvals.set",
            json!({"file": file, "baseHash": hash}),
        )
        .await;
    assert_eq!(set["payload"]["exists"], true, "{set}");
    // The file's deny is stricter than the config's full: exec is refused.
    send(&mut c, &exec_line("touch x.txt"), "f1").await;
    let text = final_text(&chat_until_done(&mut c, "f1").await);
    assert!(text.contains("exec: not run: exec is disabled"), "{text}");
    let set = c
        .call(
            "exec.approvals.set",
            json!({"file": {"version": 1}, "baseHash": set["payload"]["hash"]}),
        )
        .await;
    assert_eq!(set["ok"], true, "{set}");

    // Per session: execSecurity deny, then back.
    let r = c
        .call(
            "sessions.patch",
            json!({"key": "main", "execSecurity": "deny"}),
        )
        .await;
    assert_eq!(r["payload"]["entry"]["execSecurity"], "deny", "{r}");
    send(&mut c, &exec_line("echo hi"), "f2").await;
    assert!(final_text(&chat_until_done(&mut c, "f2").await).contains("exec is disabled"));
    let r = c
        .call(
            "sessions.patch",
            json!({"key": "main", "execSecurity": "open"}),
        )
        .await;
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("execSecurity"),
        "{r}"
    );
    c.call(
        "sessions.patch",
        json!({"key": "main", "execSecurity": null}),
    )
    .await;
    send(&mut c, &exec_line("echo hi"), "f3").await;
    assert_eq!(
        final_text(&chat_until_done(&mut c, "f3").await),
        "Tool exec returned: hi"
    );
}

#[tokio::test]
async fn sandboxed_exec_has_no_network_and_its_own_workspace() {
    crate::support::require_bwrap();
    let gw = TestGateway::start();
    let mut c = admin(&gw).await;
    let r = c
        .call(
            "sessions.patch",
            json!({"key": "main", "execHost": "sandbox"}),
        )
        .await;
    assert_eq!(r["payload"]["entry"]["execHost"], "sandbox", "{r}");
    std::fs::write(gw.state_dir().join("workspace/secret.txt"), "host file").unwrap();
    let script =
        "pwd; echo made > made.txt; ls; cat /proc/net/dev | tail -n +3 | cut -d: -f1 | tr -d ' '";
    send(&mut c, &exec_line(script), "s1").await;
    chat_until_done(&mut c, "s1").await;
    let h = c.call("chat.history", json!({"sessionKey": "main"})).await;
    let out = h["payload"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "toolResult")
        .unwrap()["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_string();
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines, ["/workspace", "made.txt", "lo"], "{out}");
    assert!(
        !gw.state_dir().join("workspace/made.txt").exists(),
        "workspaceAccess none: the agent workspace is not touched"
    );
    assert!(gw.state_dir().join("sandboxes").is_dir());
}

#[tokio::test]
async fn the_approvals_view_says_what_is_in_force() {
    // The Control UI shows `resolvedDefaults`: the config's tools.exec met
    // with the file's defaults, never a policy that is not in force.
    let gw = TestGateway::start();
    let mut c = admin(&gw).await;
    let got = c.call("exec.approvals.get", json!({})).await["payload"].clone();
    assert_eq!(
        got["resolvedDefaults"],
        json!({"security": "full", "ask": "off", "askFallback": "deny", "autoAllowSkills": false})
    );
    let file = json!({"version": 1, "defaults": {"security": "allowlist", "ask": "on-miss"}});
    let set = c
        .call(
            "exec.approvals.set",
            json!({"file": file, "baseHash": got["hash"]}),
        )
        .await;
    assert_eq!(
        set["payload"]["resolvedDefaults"]["security"], "allowlist",
        "{set}"
    );
    assert_eq!(set["payload"]["resolvedDefaults"]["ask"], "on-miss");
    let again = c.call("exec.approvals.get", json!({})).await["payload"].clone();
    assert_eq!(again["hash"], set["payload"]["hash"]);
}
