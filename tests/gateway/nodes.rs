//! Nodes, proven with OpenClaw's own headless node host (`openclaw node
//! run`, unchanged) and OpenClaw's CLI (`openclaw nodes ...`): pairing and
//! approval, listing, invocation with idempotency keys, the node's own
//! approvals deciding, a node killed mid-call; and, with raw signed
//! clients, every refusal (an unpaired identity, a replayed token, roles
//! crossing, a command the node never declared).

use std::process::Output;

use serde_json::{json, Value};

use super::interop::{call_json, openclaw_command};
use crate::support::node_host::{self, NodeHost, RawAuth};
use crate::support::process::{Within, CHILD_LIMIT};
use crate::support::{admin, Client, Device, TestGateway, TOKEN};

async fn cli(gw: &TestGateway, home: &std::path::Path, args: &[&str]) -> Output {
    let mut cmd = openclaw_command(gw, home, args);
    tokio::task::spawn_blocking(move || cmd.within(CHILD_LIMIT))
        .await
        .unwrap()
}

/// The one node `node.list` shows.
async fn only_node(op: &mut Client) -> Value {
    let list = op.call("node.list", json!({})).await;
    assert_eq!(list["ok"], true, "{list}");
    let nodes = list["payload"]["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), 1, "{list}");
    nodes[0].clone()
}

async fn invoke(op: &mut Client, node: &str, command: &str, params: Value, key: &str) -> Value {
    op.call(
        "node.invoke",
        json!({ "nodeId": node, "command": command, "params": params,
                "idempotencyKey": key, "timeoutMs": 30000 }),
    )
    .await
}

async fn which(op: &mut Client, node: &str, key: &str) -> Value {
    invoke(op, node, "system.which", json!({"bins": ["sh"]}), key).await
}

async fn run_on(op: &mut Client, node: &str, argv: &[&str], key: &str) -> Value {
    invoke(op, node, "system.run", json!({ "command": argv }), key).await
}

#[tokio::test(flavor = "multi_thread")]
async fn openclaws_node_host_pairs_is_approved_and_runs_commands_once_per_key() {
    let gw = TestGateway::start();
    let mut op = admin(&gw).await;
    let home = tempfile::tempdir().unwrap();
    let host = NodeHost::start(&gw, home.path(), "pi-node");

    // Paired as a device at once (loopback); its commands wait for approval.
    let requested = op.event("node.pair.requested").await["payload"].clone();
    let node_id = requested["nodeId"].as_str().unwrap().to_string();
    let request_id = requested["requestId"].as_str().unwrap().to_string();
    let declared = requested["commands"].as_array().unwrap();
    assert!(declared.contains(&json!("system.run")), "{requested}");
    assert_eq!(
        requested["requiredApproveScopes"],
        json!(["operator.pairing", "operator.admin"])
    );
    let node = only_node(&mut op).await;
    assert_eq!(node["approvalState"], "pending-approval", "{node}");
    assert_eq!(node["connected"], true);
    assert_eq!(node["commands"], json!([]));
    assert_eq!(node["displayName"], "pi-node");
    let early = which(&mut op, &node_id, "w0").await;
    assert_eq!(early["error"]["code"], "INVALID_REQUEST", "{early}");
    assert!(early["error"]["message"]
        .as_str()
        .unwrap()
        .contains("pending approval"));

    // OpenClaw's CLI lists the request and approves it.
    let cli_home = tempfile::tempdir().unwrap();
    let pending = call_json(&cli(&gw, cli_home.path(), &["nodes", "pending", "--json"]).await);
    assert!(pending.to_string().contains(&request_id), "{pending}");
    let approved = cli(&gw, cli_home.path(), &["nodes", "approve", &request_id]).await;
    assert!(approved.status.success(), "{approved:?}");
    let resolved = op.event("node.pair.resolved").await["payload"].clone();
    assert_eq!(resolved["decision"], "approved");
    assert_eq!(resolved["requestId"], request_id.as_str());

    let listed = call_json(&cli(&gw, cli_home.path(), &["nodes", "list", "--json"]).await);
    assert!(listed.to_string().contains(&node_id), "{listed}");
    let status = call_json(&cli(&gw, cli_home.path(), &["nodes", "status", "--json"]).await);
    assert!(status.to_string().contains("pi-node"), "{status}");
    let node = only_node(&mut op).await;
    assert_eq!(node["approvalState"], "approved", "{node}");
    // The Control UI's environments list it beside the gateway.
    let envs = op.call("environments.list", json!({})).await["payload"]["environments"].clone();
    let env = envs
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["id"] == format!("node:{node_id}"))
        .cloned()
        .unwrap_or_else(|| panic!("no node environment: {envs}"));
    assert_eq!(
        (&env["type"], &env["status"], &env["label"]),
        (&json!("node"), &json!("available"), &json!("pi-node")),
        "{env}"
    );
    assert!(
        env["invocableCommands"]
            .as_array()
            .unwrap()
            .contains(&json!("system.run")),
        "{env}"
    );
    let described = op.call("node.describe", json!({ "nodeId": node_id })).await;
    let d = &described["payload"];
    assert!(
        d["caps"].as_array().unwrap().contains(&json!("system")),
        "{described}"
    );
    assert!(
        d["connectedAtMs"].as_u64().is_some() && d["pathEnv"].is_string(),
        "{described}"
    );
    let presence = op.call("system-presence", json!({})).await;
    let as_node = presence["payload"]
        .as_array()
        .unwrap()
        .iter()
        .any(|p| p["deviceId"] == node_id.as_str() && p["roles"] == json!(["node"]));
    assert!(as_node, "a presence entry for the node: {presence}");
    // Its token is in the store, in a state dir only the owner can open.
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(gw.state_dir())
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o700);
    assert!(node["commands"]
        .as_array()
        .unwrap()
        .contains(&json!("system.run")));

    // `openclaw nodes invoke`, by the node's name.
    let which = call_json(
        &cli(
            &gw,
            cli_home.path(),
            &[
                "nodes",
                "invoke",
                "--node",
                "pi-node",
                "--command",
                "system.which",
                "--params",
                r#"{"bins":["sh"]}"#,
                "--json",
            ],
        )
        .await,
    );
    let sh = which["payload"]["bins"]["sh"]
        .as_str()
        .unwrap_or_else(|| panic!("{which}"));
    assert!(
        sh.ends_with("/sh") && std::path::Path::new(sh).exists(),
        "{which}"
    );

    // system.run on the node, once per idempotency key.
    let marker = home.path().join("runs.txt");
    let line = format!("echo ran >> {}; echo hello-from-node", marker.display());
    let first = run_on(&mut op, &node_id, &["sh", "-c", &line], "k-1").await;
    assert_eq!(first["ok"], true, "{first}");
    assert_eq!(first["payload"]["payload"]["stdout"], "hello-from-node\n");
    let again = run_on(&mut op, &node_id, &["sh", "-c", &line], "k-1").await;
    assert_eq!(again["payload"], first["payload"], "the kept answer");
    // And through OpenClaw's CLI (its `nodes invoke` keeps system.run for
    // the exec tool, so: `gateway call node.invoke`).
    let params = json!({ "nodeId": node_id, "command": "system.run", "idempotencyKey": "k-2",
                         "params": { "command": ["sh", "-c", line] } })
    .to_string();
    let args = [
        "gateway",
        "call",
        "node.invoke",
        "--json",
        "--params",
        &params,
    ];
    let third = call_json(&cli(&gw, cli_home.path(), &args).await);
    assert_eq!(third["payload"]["stdout"], "hello-from-node\n", "{third}");
    let runs = std::fs::read_to_string(&marker).unwrap();
    assert_eq!(runs.lines().count(), 2, "k-1 ran once, k-2 once: {runs}");
    drop(host);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_node_hosts_own_approvals_decide_and_a_killed_node_fails_the_call_cleanly() {
    let gw = TestGateway::start();
    let mut op = admin(&gw).await;
    let home = tempfile::tempdir().unwrap();
    let mut host = NodeHost::start(&gw, home.path(), "laptop");
    let requested = op.event("node.pair.requested").await["payload"].clone();
    let node_id = requested["nodeId"].as_str().unwrap().to_string();
    // Approved through node.pair.approve this time.
    let ok = op
        .call(
            "node.pair.approve",
            json!({ "requestId": requested["requestId"] }),
        )
        .await;
    assert_eq!(ok["ok"], true, "{ok}");
    assert_eq!(ok["payload"]["node"]["approvalState"], "approved");

    // The node's approvals file, read and written on the node.
    let got = op
        .call("exec.approvals.node.get", json!({ "nodeId": node_id }))
        .await;
    assert_eq!(got["ok"], true, "{got}");
    let hash = got["payload"]["hash"].as_str().unwrap().to_string();
    let mut file = got["payload"]["file"].clone();
    file["defaults"] = json!({ "security": "deny" });
    let set = op
        .call(
            "exec.approvals.node.set",
            json!({ "nodeId": node_id, "file": file, "baseHash": hash }),
        )
        .await;
    assert_eq!(set["ok"], true, "{set}");
    let denied = run_on(&mut op, &node_id, &["echo", "nope"], "d-1").await;
    assert_eq!(denied["ok"], false, "{denied}");
    let msg = denied["error"]["message"].as_str().unwrap();
    assert!(msg.contains("SYSTEM_RUN_DENIED"), "{denied}");
    assert_eq!(denied["error"]["code"], "UNAVAILABLE");
    let got = op
        .call("exec.approvals.node.get", json!({ "nodeId": node_id }))
        .await;
    let mut file = got["payload"]["file"].clone();
    file["defaults"] = json!({ "security": "full", "ask": "off" });
    let hash = got["payload"]["hash"].clone();
    let set = op
        .call(
            "exec.approvals.node.set",
            json!({ "nodeId": node_id, "file": file, "baseHash": hash }),
        )
        .await;
    assert_eq!(set["ok"], true, "{set}");

    // Killed mid-call: the call fails at once, and its key is never run again.
    let marker = home.path().join("slow.txt");
    let line = format!("echo started >> {}; sleep 20", marker.display());
    let id = op
        .send_req(
            "node.invoke",
            json!({ "nodeId": node_id, "command": "system.run",
                    "params": { "command": ["sh", "-c", line] },
                    "idempotencyKey": "slow-1", "timeoutMs": 60000 }),
        )
        .await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !marker.exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the command never started"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    host.kill();
    let failed = op.res(&id).await;
    assert_eq!(
        failed["error"]["details"]["code"], "DISCONNECTED",
        "{failed}"
    );
    host.restart();
    let which = which(&mut op, &node_id, "w-2").await;
    assert_eq!(which["ok"], true, "reconnected and still approved: {which}");
    let retry = op
        .call(
            "node.invoke",
            json!({ "nodeId": node_id, "command": "system.run",
                    "params": { "command": ["sh", "-c", line] },
                    "idempotencyKey": "slow-1", "timeoutMs": 60000 }),
        )
        .await;
    // The first answer again (the response cache), or, once that is gone,
    // the registry's refusal: either way the command is not sent again.
    let code = retry["error"]["details"]["code"].as_str().unwrap_or("");
    assert!(
        matches!(code, "DISCONNECTED" | "OUTCOME_UNKNOWN"),
        "{retry}"
    );
    let started = std::fs::read_to_string(&marker).unwrap();
    assert_eq!(started.lines().count(), 1, "never run twice: {started}");

    // A bounded call: the deadline answers, the node is told to cancel.
    let quick = op
        .call(
            "node.invoke",
            json!({ "nodeId": node_id, "command": "system.run",
                    "params": { "command": ["sleep", "10"] },
                    "idempotencyKey": "t-1", "timeoutMs": 300 }),
        )
        .await;
    assert_eq!(quick["error"]["details"]["code"], "TIMEOUT", "{quick}");
}

/// A raw node with the shared token.
async fn raw_node(
    gw: &TestGateway,
    dev: &Device,
    commands: &[&str],
    headers: &[(&str, &str)],
) -> (Client, Value) {
    node_host::raw_node(&gw.ws_url(), dev, commands, RawAuth::Token(TOKEN), headers).await
}

#[tokio::test(flavor = "multi_thread")]
async fn strangers_replays_and_crossed_roles_are_refused_and_nothing_runs() {
    // The raw node reports no platform OpenClaw knows: only what
    // gateway.nodes.commands.allow names may be invoked on it.
    let gw = TestGateway::with_config(json!({
        "gateway": { "nodes": { "commands": { "allow": ["system.which", "system.run"] } } }
    }));
    let mut op = admin(&gw).await;

    // Never paired, from elsewhere: pairing required, nothing listed as connected.
    let stranger = Device::new(41);
    let remote = [("host", "gateway.example:18789")];
    let (_c, res) = raw_node(&gw, &stranger, &["system.run"], &remote).await;
    assert_eq!(res["error"]["code"], "NOT_PAIRED", "{res}");
    assert_eq!(res["error"]["details"]["code"], "PAIRING_REQUIRED");
    let listed = op.call("node.list", json!({})).await;
    assert_eq!(listed["payload"]["nodes"], json!([]), "{listed}");

    // A node that declares system.which only.
    let dev = Device::new(42);
    let (mut node, res) = raw_node(&gw, &dev, &["system.which"], &[]).await;
    assert_eq!(res["ok"], true, "{res}");
    let node_token = res["payload"]["auth"]["deviceToken"]
        .as_str()
        .unwrap()
        .to_string();
    node_host::approve_next(&mut op).await;
    let node_id = dev.id.clone();

    // Its token replayed by another device: refused.
    let thief = Device::new(43);
    let auth = RawAuth::DeviceToken(&node_token);
    let (_c, res) = node_host::raw_node(&gw.ws_url(), &thief, &["system.which"], auth, &[]).await;
    assert_eq!(res["ok"], false, "{res}");
    assert_eq!(
        res["error"]["details"]["code"], "AUTH_DEVICE_TOKEN_MISMATCH",
        "{res}"
    );

    // A node calling operator methods, an operator calling node-only ones.
    for (method, params) in [
        ("node.list", json!({})),
        (
            "chat.send",
            json!({ "sessionKey": "main", "message": "hi", "idempotencyKey": "x" }),
        ),
        (
            "node.invoke",
            json!({ "nodeId": node_id, "command": "system.which", "idempotencyKey": "n" }),
        ),
    ] {
        let r = node.call(method, params).await;
        assert_eq!(
            r["error"]["message"], "unauthorized role: node",
            "{method}: {r}"
        );
    }
    let mut writer = Client::connect(&gw.ws_url()).await;
    let scopes = ["operator.read", "operator.write", "operator.pairing"];
    let hello = writer
        .handshake(crate::support::connect_params(
            "cli",
            "cli",
            &scopes,
            Some(TOKEN),
        ))
        .await;
    assert_eq!(hello["ok"], true, "{hello}");
    for method in ["node.invoke.result", "node.event", "node.skills.update"] {
        let r = writer.call(method, json!({})).await;
        assert_eq!(
            r["error"]["message"], "unauthorized role: operator",
            "{method}: {r}"
        );
    }
    // An admin passes the role check, as in OpenClaw, and acts for no node.
    let r = op
        .call(
            "node.invoke.result",
            json!({ "id": "x", "nodeId": node_id, "ok": true }),
        )
        .await;
    assert_eq!(r["error"]["message"], "nodeId required", "{r}");

    // Commands it never declared, private controls, its approvals file: refused.
    for (command, want) in [
        ("system.run", "does not support"),
        ("camera.snap", "explicit gateway.nodes.commands.allow"),
        ("worker.launch.v1", "private node controls"),
        ("system.execApprovals.get", "use exec.approvals.node"),
    ] {
        let r = invoke(
            &mut op,
            &node_id,
            command,
            json!({}),
            &format!("x-{command}"),
        )
        .await;
        assert_eq!(r["error"]["code"], "INVALID_REQUEST", "{command}: {r}");
        let m = r["error"]["message"].as_str().unwrap();
        assert!(m.contains(want), "{command}: {m}");
    }
    // The declared one reaches it; the node answers with node.invoke.result.
    let id = op
        .send_req(
            "node.invoke",
            json!({ "nodeId": node_id, "command": "system.which",
                    "params": { "bins": ["sh"] }, "idempotencyKey": "w" }),
        )
        .await;
    let req = node.event("node.invoke.request").await["payload"].clone();
    assert_eq!(req["command"], "system.which", "{req}");
    assert!(
        node.backlog_events("node.invoke.request").is_empty(),
        "nothing else was sent"
    );
    let wrong = node
        .call(
            "node.invoke.result",
            json!({ "id": req["id"], "nodeId": "someone-else", "ok": true }),
        )
        .await;
    assert_eq!(wrong["error"]["message"], "nodeId mismatch", "{wrong}");
    let answered = node
        .call(
            "node.invoke.result",
            json!({ "id": req["id"], "nodeId": node_id, "ok": true,
                    "payloadJSON": "{\"bins\":{\"sh\":\"/bin/sh\"}}" }),
        )
        .await;
    assert_eq!(answered["payload"], json!({ "ok": true }), "{answered}");
    let res = op.res(&id).await;
    assert_eq!(res["payload"]["payload"]["bins"]["sh"], "/bin/sh", "{res}");

    // Removed: its connection closes and its token opens nothing.
    let removed = op
        .call("node.pair.remove", json!({ "nodeId": node_id }))
        .await;
    assert_eq!(removed["ok"], true, "{removed}");
    let closed = node.closed().await;
    assert_eq!(closed.code, 1008, "{}", closed.reason);
    let auth = RawAuth::DeviceToken(&node_token);
    let (_c, res) = node_host::raw_node(&gw.ws_url(), &dev, &["system.which"], auth, &[]).await;
    assert_eq!(res["ok"], false, "{res}");
}

/// Starts a gateway (exec on nodes by default, hooks on, the untrusted
/// profile widened to `nodes`), a node host, and approves it.
async fn agent_setup(home: &std::path::Path) -> (TestGateway, Client, NodeHost, String) {
    let gw = TestGateway::with_config(json!({
        "tools": {
            "exec": { "security": "full", "ask": "off" },
            "untrusted": { "allow": ["exec", "nodes"] },
        },
        "hooks": { "enabled": true, "token": "hook-secret-0123456789" },
    }));
    let mut op = admin(&gw).await;
    let host = NodeHost::start(&gw, home, "agent-node");
    let requested = node_host::approve_next(&mut op).await;
    let node_id = requested["nodeId"].as_str().unwrap().to_string();
    // Exec on the node for this session only (OpenClaw's sessions.patch keys).
    let patched = op
        .call(
            "sessions.patch",
            json!({ "key": "main", "execHost": "node", "execNode": "agent-node" }),
        )
        .await;
    assert_eq!(patched["ok"], true, "{patched}");
    (gw, op, host, node_id)
}

#[tokio::test(flavor = "multi_thread")]
async fn the_agents_exec_runs_on_the_node_its_output_reaches_the_transcript_and_strangers_never_do()
{
    use super::trust::{history_until, tool, tool_results};
    let home = tempfile::tempdir().unwrap();
    let (gw, mut op, _host, node_id) = agent_setup(home.path()).await;
    let marker = home.path().join("agent.txt");

    // A real turn: the offline model's @tool line, exec with host node.
    let line = format!("echo agent-ran >> {}; echo on-the-node", marker.display());
    let sent = op
        .call("chat.send", json!({ "sessionKey": "main", "message": tool("exec", json!({ "command": line })), "idempotencyKey": "a1" }))
        .await;
    assert_eq!(sent["ok"], true, "{sent}");
    let h = history_until(&mut op, "agent:main:main", |m| !tool_results(m).is_empty()).await;
    let results = tool_results(&h);
    assert!(results[0].contains("on-the-node"), "{results:?}");
    assert_eq!(std::fs::read_to_string(&marker).unwrap(), "agent-ran\n");

    // The nodes tool: status, and run.
    let status = tool("nodes", json!({ "action": "status" }));
    op.call(
        "chat.send",
        json!({ "sessionKey": "main", "message": status, "idempotencyKey": "a2" }),
    )
    .await;
    let h = history_until(&mut op, "agent:main:main", |m| tool_results(m).len() >= 2).await;
    let listed = &tool_results(&h)[1];
    assert!(
        listed.contains(&node_id) && listed.contains("system.run"),
        "{listed}"
    );

    // The node's own approvals deny: a tool error, nothing runs.
    let got = op
        .call("exec.approvals.node.get", json!({ "nodeId": node_id }))
        .await;
    let mut file = got["payload"]["file"].clone();
    file["defaults"] = json!({ "security": "deny" });
    let set = op
        .call(
            "exec.approvals.node.set",
            json!({ "nodeId": node_id, "file": file, "baseHash": got["payload"]["hash"] }),
        )
        .await;
    assert_eq!(set["ok"], true, "{set}");
    let run = tool(
        "nodes",
        json!({ "action": "run", "node": "agent-node", "command": ["sh", "-c", line] }),
    );
    op.call(
        "chat.send",
        json!({ "sessionKey": "main", "message": run, "idempotencyKey": "a3" }),
    )
    .await;
    let h = history_until(&mut op, "agent:main:main", |m| tool_results(m).len() >= 3).await;
    let denied = h
        .iter()
        .filter(|m| m["role"] == "toolResult")
        .nth(2)
        .unwrap()
        .clone();
    assert_eq!(denied["isError"], true, "{denied}");
    assert!(denied.to_string().contains("SYSTEM_RUN_DENIED"), "{denied}");
    assert_eq!(std::fs::read_to_string(&marker).unwrap(), "agent-ran\n");

    // A stranger's turn (a webhook) with both tools in its profile: neither
    // reaches the node.
    for (i, call) in [
        tool("exec", json!({ "command": format!("touch {}", home.path().join("pwned-exec").display()) })),
        tool("nodes", json!({ "action": "run", "node": "agent-node", "command": ["touch", home.path().join("pwned-nodes").display().to_string()] })),
    ]
    .into_iter()
    .enumerate()
    {
        let r = reqwest::Client::new()
            .post(format!("http://{}/hooks/agent", gw.addr))
            .header("authorization", "Bearer hook-secret-0123456789")
            .json(&json!({ "message": call, "deliver": false }))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        let body: Value = r.json().await.unwrap();
        let waited = op
            .call("agent.wait", json!({ "runId": body["runId"], "timeoutMs": 20_000 }))
            .await;
        assert_eq!(waited["payload"]["status"], "ok", "{i}: {waited}");
    }
    assert!(!home.path().join("pwned-exec").exists());
    assert!(!home.path().join("pwned-nodes").exists());
}

pub(crate) async fn ferroclaw(gw: &TestGateway, args: &[&str]) -> Output {
    let mut cmd = std::process::Command::new(crate::support::process::BIN);
    let state = gw.state_dir().join("cli-state");
    cmd.args(args)
        .arg("--state-dir")
        .arg(&state)
        .args(["--url", &gw.ws_url(), "--token", TOKEN])
        .env_clear()
        .env("PATH", "/usr/bin:/bin");
    tokio::task::spawn_blocking(move || cmd.within(CHILD_LIMIT))
        .await
        .unwrap()
}

pub(crate) fn stdout(o: &Output) -> String {
    assert!(o.status.success(), "{o:?}");
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn ferroclaw_nodes_lists_approves_renames_describes_and_invokes() {
    let gw = TestGateway::with_config(json!({
        "gateway": { "nodes": { "commands": { "allow": ["system.which"] } } }
    }));
    let dev = Device::new(51);
    let (mut node, res) = raw_node(&gw, &dev, &["system.which"], &[]).await;
    assert_eq!(res["ok"], true, "{res}");

    let pending = stdout(&ferroclaw(&gw, &["nodes", "pending"]).await);
    let request = pending.split_whitespace().next().unwrap().to_string();
    assert!(pending.contains("system.which"), "{pending}");
    let approved = stdout(&ferroclaw(&gw, &["nodes", "approve", &request]).await);
    assert!(
        approved.contains("approved") && approved.contains(&dev.id),
        "{approved}"
    );
    stdout(&ferroclaw(&gw, &["nodes", "rename", &dev.id[..10], "garage-pi"]).await);
    let list = stdout(&ferroclaw(&gw, &["nodes", "list"]).await);
    assert!(
        list.contains("garage-pi") && list.contains("connected, approved"),
        "{list}"
    );
    let described: Value = serde_json::from_str(&stdout(
        &ferroclaw(&gw, &["nodes", "describe", "garage-pi"]).await,
    ))
    .unwrap();
    assert_eq!(
        described["commands"],
        json!(["system.which"]),
        "{described}"
    );

    // The CLI's invoke reaches the node; the node answers.
    let args = [
        "nodes",
        "invoke",
        "garage-pi",
        "system.which",
        "--params",
        r#"{"bins":["git"]}"#,
    ];
    let cli = ferroclaw(&gw, &args);
    let answer = async {
        let req = node.event("node.invoke.request").await["payload"].clone();
        assert_eq!(req["paramsJSON"], r#"{"bins":["git"]}"#, "{req}");
        let r = node
            .call(
                "node.invoke.result",
                json!({ "id": req["id"], "nodeId": dev.id, "ok": true, "payload": { "bins": { "git": "/usr/bin/git" } } }),
            )
            .await;
        assert_eq!(r["ok"], true, "{r}");
    };
    let (out, ()) = tokio::join!(cli, answer);
    let invoked: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(
        invoked["payload"]["bins"]["git"], "/usr/bin/git",
        "{invoked}"
    );

    let unknown = ferroclaw(&gw, &["nodes", "reject", "no-such-request"]).await;
    assert!(!unknown.status.success());
    assert!(
        String::from_utf8_lossy(&unknown.stderr).contains("unknown requestId"),
        "{unknown:?}"
    );
}
