//! Road 2: one process table for everybody. A background command belongs
//! to the session (and agent) that started it; a stranger's turn, even in
//! the owner's own main session, sees none of the owner's commands, and its
//! own commands run in a scratch sandbox with a clean environment.

use serde_json::json;

use super::*;
use crate::support::{admin, final_text, say};

fn session_id(text: &str) -> String {
    let at = text
        .find("bg_")
        .unwrap_or_else(|| panic!("no session id: {text}"));
    text[at..]
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect()
}

#[tokio::test]
async fn a_stranger_sees_none_of_the_owners_background_commands() {
    // dmScope main (the default): the stranger's DM lands in the owner's
    // own session, the hardest case.
    let (fake, gw) = start(json!({}), &[]);
    let started = ask(
        &fake,
        OWNER,
        1,
        &tool(
            "exec",
            json!({"command": "echo owner-secret-output; sleep 30", "background": true}),
        ),
    )
    .await;
    let id = session_id(&started);
    let owner_list = ask(&fake, OWNER, 2, &tool("process", json!({"action": "list"}))).await;
    assert!(owner_list.contains(&id), "{owner_list}");
    let list = ask(
        &fake,
        STRANGER,
        3,
        &tool("process", json!({"action": "list"})),
    )
    .await;
    assert!(list.contains("No background sessions."), "{list}");
    for (i, action) in ["poll", "log", "write", "kill", "remove"]
        .into_iter()
        .enumerate()
    {
        let args = json!({"action": action, "sessionId": id, "data": "rm -rf ~\n"});
        let r = ask(&fake, STRANGER, 10 + i as i64, &tool("process", args)).await;
        assert!(r.contains("no session"), "{action}: {r}");
        assert!(!r.contains("owner-secret-output"), "{action}: {r}");
    }
    // A client on another session sees none of it either.
    let mut c = admin(&gw).await;
    let other = say(
        &mut c,
        "agent:main:elsewhere",
        &tool("process", json!({"action": "list"})),
        "o1",
    )
    .await;
    assert!(
        final_text(&other).contains("No background sessions."),
        "{other:?}"
    );
    // The owner's command is still there, running, untouched.
    let poll = ask(
        &fake,
        OWNER,
        20,
        &tool("process", json!({"action": "poll", "sessionId": id})),
    )
    .await;
    assert!(poll.contains("running"), "{poll}");
    ask(
        &fake,
        OWNER,
        21,
        &tool("process", json!({"action": "kill", "sessionId": id})),
    )
    .await;
}

#[tokio::test]
async fn a_strangers_commands_run_only_in_a_scratch_sandbox_without_the_gateways_secrets() {
    crate::support::require_bwrap();
    // The owner sandboxes everything and lets the sandbox write the
    // workspace: a stranger's command still gets neither the workspace nor
    // a skill's key.
    let extra = json!({
        "agents": { "defaults": { "sandbox": { "mode": "all", "workspaceAccess": "rw" } } },
        "skills": { "entries": { "weather": { "env": { "WX_KEY": "wx-secret-4242" } } } },
    });
    let files = [
        ("workspace/HEARTBEAT.md", "check the mail"),
        (
            "workspace/skills/weather/SKILL.md",
            "---\nname: weather\ndescription: Forecasts\n---\nUse curl.\n",
        ),
    ];
    let (fake, gw) = start(extra, &files);
    let script = "pwd; ls; echo \"key=[$WX_KEY]\"; env | grep -c -i -e token -e secret; echo x > HEARTBEAT.md";
    let reply = ask(
        &fake,
        STRANGER,
        1,
        &tool("exec", json!({ "command": script })),
    )
    .await;
    assert!(
        reply.contains("/workspace"),
        "the command ran, sandboxed: {reply}"
    );
    assert!(reply.contains("key=[]"), "{reply}");
    assert!(!reply.contains("wx-secret-4242"), "{reply}");
    assert!(!reply.contains("check the mail"), "{reply}");
    assert_eq!(
        std::fs::read_to_string(workspace(&gw).join("HEARTBEAT.md")).unwrap(),
        "check the mail"
    );
    let scratch = gw.state_dir().join("sandboxes");
    let names: Vec<String> = std::fs::read_dir(&scratch)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        names.iter().all(|n| n.starts_with("untrusted-")),
        "{names:?}"
    );
    // The owner's own sandboxed command gets the workspace and the skill's env.
    let owner = ask(
        &fake,
        OWNER,
        2,
        &tool(
            "exec",
            json!({"command": "cat HEARTBEAT.md; echo \"key=[$WX_KEY]\""}),
        ),
    )
    .await;
    assert!(
        owner.contains("check the mail") && owner.contains("key=[wx-secret-4242]"),
        "{owner}"
    );
}

#[tokio::test]
async fn an_approval_a_strangers_turn_asks_for_never_widens_the_allowlist() {
    crate::support::require_bwrap();
    // Sandboxed, allowlist with approvals: the stranger's command is asked
    // about, and an operator answers "allow-always".
    let extra = json!({
        "agents": { "defaults": { "sandbox": { "mode": "all" } } },
        "tools": { "exec": { "security": "allowlist", "ask": "on-miss", "approvalTimeoutSeconds": 20 } },
    });
    let (fake, gw) = start(extra, &[]);
    let mut approver = crate::support::Client::connect(&gw.ws_url()).await;
    let r = approver
        .handshake(crate::support::connect_params(
            "cli",
            "cli",
            &["operator.approvals"],
            Some(crate::support::TOKEN),
        ))
        .await;
    assert_eq!(r["ok"], true, "{r}");
    fake.dm(
        STRANGER,
        1,
        &tool("exec", json!({"command": "echo from-the-sandbox"})),
    );
    let ev = approver.event("exec.approval.requested").await;
    let id = ev["payload"]["id"].as_str().unwrap().to_string();
    let r = approver
        .call(
            "exec.approval.resolve",
            json!({"id": id, "decision": "allow-always"}),
        )
        .await;
    assert_eq!(r["payload"]["ok"], true, "{r}");
    assert!(fake.until(LONG, |f| !f.sent_to(STRANGER).is_empty()).await);
    let reply = fake.sent_to(STRANGER)[0].text.clone();
    assert!(
        reply.contains("from-the-sandbox"),
        "it ran once, sandboxed: {reply}"
    );
    let file =
        std::fs::read_to_string(gw.state_dir().join("exec-approvals.json")).unwrap_or_default();
    assert!(
        !file.contains("/echo"),
        "a stranger's request widened the allowlist: {file}"
    );
    // The same command from the stranger is asked about again.
    fake.dm(STRANGER, 2, &tool("exec", json!({"command": "echo again"})));
    let again = approver.event("exec.approval.requested").await;
    assert_eq!(
        again["payload"]["request"]["command"], "echo again",
        "{again}"
    );
}
