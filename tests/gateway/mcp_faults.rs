//! MCP servers that misbehave, written for these tests
//! (`tests/mcp/fault_server.mjs`: plain JSON-RPC, each fault exactly what
//! it says, every message it got in a log): one per protocol revision,
//! one that crashes mid-call, one that hangs (timeout, abort), one that
//! changes its tools, one that speaks garbage, one that floods, one with
//! colliding names and a bad schema. The gateway and its other servers keep
//! working through all of them.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::mcp::{fake_config, node, offered, servers_until, tool_results, ROOT};
use crate::support::fake_provider::{FakeProvider, Script};
use crate::support::{admin, chat_send, chat_until_done, final_text, TestGateway};

/// A config with `servers` under `mcp.servers`, on the fake provider.
fn fake_servers(fake: &FakeProvider, servers: Value) -> Value {
    fake_config(fake, json!({ "servers": servers }))
}

/// `mcp.servers.<mode>`: the fault server in `mode`, logging to `dir/<mode>.log`.
fn fault(dir: &Path, mode: &str, extra: Value) -> Value {
    let mut s = json!({
        "command": node(),
        "args": [PathBuf::from(ROOT).join("tests/mcp/fault_server.mjs"), mode],
        "env": {"FAULT_LOG": dir.join(format!("{mode}.log"))},
    });
    ferroclaw::config::merge_patch(&mut s, &extra);
    s
}

/// The messages a fault server received.
fn received(dir: &Path, mode: &str) -> Vec<Value> {
    std::fs::read_to_string(dir.join(format!("{mode}.log")))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

async fn received_until(dir: &Path, mode: &str, pred: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let got = received(dir, mode);
        if pred(&got) {
            return got;
        }
        assert!(Instant::now() < deadline, "{mode} never got there: {got:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn methods(msgs: &[Value]) -> Vec<String> {
    msgs.iter()
        .filter_map(|m| m["method"].as_str().map(str::to_string))
        .collect()
}

fn by<'a>(servers: &'a [Value], name: &str) -> &'a Value {
    servers.iter().find(|s| s["name"] == name).unwrap()
}

#[tokio::test]
async fn a_2025_11_25_server_and_a_2026_07_28_server_are_both_spoken() {
    let dir = tempfile::tempdir().unwrap();
    let fake = FakeProvider::start().await;
    fake.push(Script::tool_call(
        "c1",
        "legacy__ok",
        &json!({"text": "old"}),
    ));
    fake.push(Script::tool_call(
        "c2",
        "modern__ok",
        &json!({"text": "new"}),
    ));
    fake.push(Script::text(&["both"]));
    let gw = TestGateway::with_config(fake_servers(
        &fake,
        json!({
            "legacy": fault(dir.path(), "legacy", json!({})),
            "modern": fault(dir.path(), "modern", json!({})),
        }),
    ));
    let mut c = admin(&gw).await;
    let servers = servers_until(&mut c, |s| {
        s.len() == 2 && s.iter().all(|x| x["state"] == "ready")
    })
    .await;
    assert_eq!(
        by(&servers, "legacy")["protocol"],
        "2025-11-25",
        "{servers:?}"
    );
    assert_eq!(
        by(&servers, "modern")["protocol"],
        "2026-07-28",
        "{servers:?}"
    );
    assert_eq!(by(&servers, "modern")["serverInfo"], "fault-modern 1.0.0");
    chat_send(&mut c, "main", "use both", "v1").await;
    assert_eq!(final_text(&chat_until_done(&mut c, "v1").await), "both");
    let last = fake.requests.lock().unwrap().last().unwrap().0.clone();
    let results = tool_results(&last);
    assert!(results[0].contains("ok says old"), "{results:?}");
    assert!(results[1].contains("ok says new"), "{results:?}");

    // The legacy server was asked to discover first, then initialized.
    let legacy = methods(&received(dir.path(), "legacy"));
    let discover = legacy.iter().position(|m| m == "server/discover");
    let init = legacy.iter().position(|m| m == "initialize");
    assert!(discover.is_some() && discover < init, "{legacy:?}");
    // The modern one never saw `initialize`, and every request it got
    // names the revision in `_meta`.
    let modern = received(dir.path(), "modern");
    assert!(
        !methods(&modern).contains(&"initialize".to_string()),
        "{modern:?}"
    );
    for m in modern
        .iter()
        .filter(|m| m["id"].is_number() || m["id"].is_string())
    {
        assert!(
            m["params"]["_meta"].to_string().contains("2026-07-28"),
            "a request without the revision in _meta: {m}"
        );
    }
    assert!(
        results[1].contains("meta="),
        "tools/call carried _meta: {results:?}"
    );
}

#[tokio::test]
async fn a_server_that_crashes_mid_call_fails_that_call_clearly_and_answers_the_next() {
    let dir = tempfile::tempdir().unwrap();
    let fake = FakeProvider::start().await;
    fake.push(Script::tool_call("c1", "crash__crash", &json!({})));
    fake.push(Script::text(&["it broke"]));
    fake.push(Script::tool_call(
        "c2",
        "crash__ok",
        &json!({"text": "again"}),
    ));
    fake.push(Script::text(&["fine"]));
    let gw = TestGateway::with_config(fake_servers(
        &fake,
        json!({"crash": fault(dir.path(), "crash", json!({}))}),
    ));
    let mut c = admin(&gw).await;
    servers_until(&mut c, |s| s.iter().all(|x| x["state"] == "ready")).await;
    chat_send(&mut c, "main", "crash it", "x1").await;
    assert_eq!(final_text(&chat_until_done(&mut c, "x1").await), "it broke");
    let body = fake.requests.lock().unwrap()[1].0.clone();
    let r = tool_results(&body);
    assert!(
        r[0].contains("crash") && (r[0].contains("failed") || r[0].contains("stopped")),
        "{r:?}"
    );
    servers_until(&mut c, |s| {
        s[0]["state"] == "ready" && s[0]["restarts"].as_u64() >= Some(1)
    })
    .await;
    chat_send(&mut c, "main", "try again", "x2").await;
    assert_eq!(final_text(&chat_until_done(&mut c, "x2").await), "fine");
    let body = fake.requests.lock().unwrap()[3].0.clone();
    assert!(tool_results(&body)
        .last()
        .unwrap()
        .contains("ok says again"));
}

#[tokio::test]
async fn a_hanging_call_times_out_and_an_abort_cancels_it_on_the_server() {
    let dir = tempfile::tempdir().unwrap();
    // The offline model runs `@tool` lines; `short` times out after 300 ms.
    let gw = TestGateway::with_config(json!({"mcp": {"servers": {
        "hang": fault(dir.path(), "hang", json!({})),
        "short": fault(dir.path(), "hang", json!({"requestTimeoutMs": 300, "env": {"FAULT_LOG": dir.path().join("short.log")}})),
    }}}));
    let mut c = admin(&gw).await;
    servers_until(&mut c, |s| {
        s.len() == 2 && s.iter().all(|x| x["state"] == "ready")
    })
    .await;

    chat_send(&mut c, "s1", "@tool short__hang {}", "t1").await;
    let events = chat_until_done(&mut c, "t1").await;
    assert_eq!(events.last().unwrap()["payload"]["state"], "final");
    let history = c.call("chat.history", json!({"sessionKey": "s1"})).await;
    assert!(
        history["payload"]
            .to_string()
            .contains("timed out after 300 ms"),
        "{history}"
    );
    let short = received_until(dir.path(), "short", |m| {
        methods(m).contains(&"notifications/cancelled".to_string())
    })
    .await;
    let call = short.iter().find(|m| m["method"] == "tools/call").unwrap();
    let cancel = short
        .iter()
        .find(|m| m["method"] == "notifications/cancelled")
        .unwrap();
    assert_eq!(cancel["params"]["requestId"], call["id"], "{cancel}");

    chat_send(&mut c, "s2", "@tool hang__hang {}", "t2").await;
    received_until(dir.path(), "hang", |m| {
        methods(m).contains(&"tools/call".to_string())
    })
    .await;
    let r = c
        .call("chat.abort", json!({"sessionKey": "s2", "runId": "t2"}))
        .await;
    assert_eq!(r["payload"]["aborted"], true, "{r}");
    let events = chat_until_done(&mut c, "t2").await;
    assert_eq!(events.last().unwrap()["payload"]["state"], "aborted");
    let got = received_until(dir.path(), "hang", |m| {
        methods(m).contains(&"notifications/cancelled".to_string())
    })
    .await;
    let call = got.iter().find(|m| m["method"] == "tools/call").unwrap();
    let cancel = got
        .iter()
        .find(|m| m["method"] == "notifications/cancelled")
        .unwrap();
    assert_eq!(cancel["params"]["requestId"], call["id"]);
    // The server is still up and answers.
    chat_send(&mut c, "s3", "@tool hang__ok {\"text\":\"still\"}", "t3").await;
    chat_until_done(&mut c, "t3").await;
    let history = c.call("chat.history", json!({"sessionKey": "s3"})).await;
    assert!(
        history["payload"].to_string().contains("ok says still"),
        "{history}"
    );
}

#[tokio::test]
async fn a_tool_list_change_reaches_the_runs_next_model_call() {
    let dir = tempfile::tempdir().unwrap();
    let fake = FakeProvider::start().await;
    fake.push(Script::tool_call("c1", "changes__add", &json!({})));
    fake.push(Script::tool_call(
        "c2",
        "changes__added",
        &json!({"text": "new tool"}),
    ));
    fake.push(Script::text(&["done"]));
    let gw = TestGateway::with_config(fake_servers(
        &fake,
        json!({"changes": fault(dir.path(), "changes", json!({}))}),
    ));
    let mut c = admin(&gw).await;
    servers_until(&mut c, |s| s.iter().all(|x| x["state"] == "ready")).await;
    chat_send(&mut c, "main", "grow", "g1").await;
    assert_eq!(final_text(&chat_until_done(&mut c, "g1").await), "done");
    let requests = fake.requests.lock().unwrap().clone();
    assert!(!offered(&requests[0].0).contains(&"changes__added".to_string()));
    assert!(
        offered(&requests[1].0).contains(&"changes__added".to_string()),
        "the same run's next call: {:?}",
        offered(&requests[1].0)
    );
    assert!(tool_results(&requests[2].0)[1].contains("added says new tool"));
}

#[tokio::test]
async fn garbage_floods_and_bad_names_never_hurt_the_gateway() {
    let dir = tempfile::tempdir().unwrap();
    let fake = FakeProvider::start().await;
    fake.set_default(Script::text(&["alive"]));
    let gw = TestGateway::with_config(fake_servers(
        &fake,
        json!({
            "garbage": fault(dir.path(), "garbage", json!({"connectionTimeoutMs": 2000})),
            "flood": fault(dir.path(), "flood", json!({})),
            "schemas": fault(dir.path(), "schemas", json!({})),
            "sche-mas": fault(dir.path(), "legacy", json!({"env": {"FAULT_LOG": dir.path().join("twin1.log")}})),
            "sche.mas": fault(dir.path(), "legacy", json!({"env": {"FAULT_LOG": dir.path().join("twin2.log")}})),
        }),
    ));
    let mut c = admin(&gw).await;
    let servers = servers_until(&mut c, |s| {
        s.len() == 5
            && by(s, "garbage")["state"] == "down"
            && ["flood", "schemas", "sche-mas", "sche.mas"]
                .iter()
                .all(|n| by(s, n)["state"] == "ready")
    })
    .await;
    assert!(
        by(&servers, "garbage")["lastError"].is_string(),
        "{servers:?}"
    );
    chat_send(&mut c, "main", "hello", "a1").await;
    assert_eq!(final_text(&chat_until_done(&mut c, "a1").await), "alive");
    let names = offered(&fake.requests.lock().unwrap()[0].0);
    // Unique names: a built-in's name stays the built-in's, one server's
    // duplicate and two servers whose safe names meet are told apart, and
    // the tool whose schema is not an object is skipped.
    let mut sorted = names.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted.len(), names.len(), "{names:?}");
    for n in [
        "schemas__ok",
        "schemas__exec",
        "schemas__dup",
        "schemas__dup-2",
        "sche-mas__ok",
        "sche-mas-2__ok",
    ] {
        assert!(names.contains(&n.to_string()), "{n}: {names:?}");
    }
    assert!(!names.iter().any(|n| n.ends_with("__bad")), "{names:?}");
    assert_eq!(names.iter().filter(|n| *n == "exec").count(), 1);
    // The flood did not grow the gateway without end, nor wedge it.
    let rss_kb = std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        .unwrap();
    assert!(rss_kb < 1_000_000, "test process RSS {rss_kb} KB");
    chat_send(&mut c, "main", "still there?", "a2").await;
    assert_eq!(final_text(&chat_until_done(&mut c, "a2").await), "alive");
}

#[tokio::test]
async fn a_100_mb_result_is_refused_and_the_server_keeps_answering() {
    let dir = tempfile::tempdir().unwrap();
    let gw = TestGateway::with_config(json!({"mcp": {"servers": {
        "huge": fault(dir.path(), "huge", json!({"requestTimeoutMs": 3000})),
    }}}));
    let mut c = admin(&gw).await;
    servers_until(&mut c, |s| s.iter().all(|x| x["state"] == "ready")).await;
    // rmcp drops a stdio line over 16 MiB unread; the call then times out.
    chat_send(&mut c, "s1", "@tool huge__huge {}", "h1").await;
    chat_until_done(&mut c, "h1").await;
    let history = c.call("chat.history", json!({"sessionKey": "s1"})).await;
    let text = history["payload"].to_string();
    assert!(
        text.contains("timed out after 3000 ms"),
        "{}",
        &text[..text.len().min(2000)]
    );
    assert!(
        text.len() < 1_000_000,
        "no 100 MB in the transcript: {} bytes",
        text.len()
    );
    chat_send(&mut c, "s2", "@tool huge__ok {\"text\":\"after\"}", "h2").await;
    chat_until_done(&mut c, "h2").await;
    let history = c.call("chat.history", json!({"sessionKey": "s2"})).await;
    assert!(
        history["payload"].to_string().contains("ok says after"),
        "{history}"
    );
}
