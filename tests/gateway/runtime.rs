//! The agent runtime over the real WebSocket: model calls to a fake
//! provider over loopback HTTP (retry, profile rotation, fallback models,
//! cut streams, supervision, Qwen-style embedded tool calls) and the
//! session's queue modes, abort, timeouts, lanes and tool events on the
//! built-in offline provider.

use std::collections::HashSet;
use std::time::Duration;

use serde_json::{json, Value};

use super::chat::chat_until_done;
use crate::support::fake_provider::{FakeProvider, Script};
use crate::support::{admin, connect_params, Client, TestGateway, TOKEN};

/// A gateway whose default model is `fake/m1` on the fake provider.
fn fake_gateway(fake: &FakeProvider, extra: Value) -> TestGateway {
    let mut cfg = json!({
        "models": { "providers": {
            "fake": { "baseUrl": fake.base_url(), "api": "openai-completions", "apiKey": "k0" },
        }},
        "agents": { "defaults": { "model": { "primary": "fake/m1", "fallbacks": [] },
                                  "runRestarts": { "max": 3, "backoffMs": 50 } } },
    });
    ferroclaw::config::merge_patch(&mut cfg, &extra);
    TestGateway::with_config(cfg)
}

fn final_text(events: &[Value]) -> String {
    let last = &events.last().unwrap()["payload"];
    assert_eq!(last["state"], "final", "{last}");
    last["message"]["content"][0]["text"]
        .as_str()
        .unwrap_or("")
        .to_string()
}

async fn send(c: &mut Client, key: &str, text: &str, id: &str) -> Value {
    c.call(
        "chat.send",
        json!({"sessionKey": key, "message": text, "idempotencyKey": id}),
    )
    .await
}

pub(crate) fn auth_headers(fake: &FakeProvider) -> Vec<String> {
    fake.requests
        .lock()
        .unwrap()
        .iter()
        .map(|(_, h)| {
            h.iter()
                .find(|(k, _)| k == "authorization")
                .map(|(_, v)| v.clone())
                .unwrap_or_default()
        })
        .collect()
}

fn models_asked(fake: &FakeProvider) -> Vec<String> {
    fake.requests
        .lock()
        .unwrap()
        .iter()
        .map(|(b, _)| b["model"].as_str().unwrap_or("").to_string())
        .collect()
}

#[tokio::test]
async fn a_rate_limited_call_is_retried_and_answers() {
    let fake = FakeProvider::start().await;
    fake.push(Script::rate_limited(0));
    fake.push(Script::text(&["after ", "the ", "wait"]));
    let gw = fake_gateway(&fake, json!({}));
    let mut c = admin(&gw).await;
    send(&mut c, "main", "hi", "r1").await;
    let events = chat_until_done(&mut c, "r1").await;
    assert_eq!(final_text(&events), "after the wait");
    assert_eq!(fake.request_count(), 2, "one 429, one success");
    assert_eq!(auth_headers(&fake), ["Bearer k0", "Bearer k0"]);
}

#[tokio::test]
async fn profiles_rotate_then_the_fallback_model_answers_and_the_session_sticks_to_it() {
    let fake = FakeProvider::start().await;
    let profiles = json!({"version": 1, "profiles": {
        "fake:a": {"type": "api_key", "provider": "fake", "key": "ka"},
        "fake:b": {"type": "api_key", "provider": "fake", "key": "kb"},
    }})
    .to_string();
    let cfg = json!({
        "models": { "providers": {
            "fake": { "baseUrl": fake.base_url(), "api": "openai-completions" },
            "spare": { "baseUrl": fake.base_url(), "api": "openai-completions", "apiKey": "k-spare" },
        }},
        "auth": { "order": { "fake": ["fake:a", "fake:b"] } },
        "agents": { "defaults": { "model": { "primary": "fake/m1", "fallbacks": ["spare/m2"] } } },
    });
    let gw = TestGateway::with_files(cfg, &[("agents/main/agent/auth-profiles.json", &profiles)]);
    fake.push(Script::rate_limited(0));
    fake.push(Script::rate_limited(0));
    fake.push(Script::text(&["from ", "the ", "fallback"]));
    let mut c = admin(&gw).await;
    send(&mut c, "main", "hello", "f1").await;
    let events = chat_until_done(&mut c, "f1").await;
    assert_eq!(final_text(&events), "from the fallback");
    assert_eq!(
        auth_headers(&fake),
        ["Bearer ka", "Bearer kb", "Bearer k-spare"],
        "profile a, then b (a cools down), then the fallback model's key"
    );
    assert_eq!(models_asked(&fake), ["m1", "m1", "m2"]);
    // The session remembers what answered; both fake profiles now cool
    // down, so the next message goes straight to the fallback.
    let list = c.call("sessions.list", json!({})).await["payload"].clone();
    let row = &list["sessions"][0];
    assert_eq!(
        (row["modelProvider"].as_str(), row["model"].as_str()),
        (Some("spare"), Some("m2")),
        "{list}"
    );
    fake.push(Script::text(&["again"]));
    send(&mut c, "main", "more", "f2").await;
    assert_eq!(final_text(&chat_until_done(&mut c, "f2").await), "again");
    assert_eq!(auth_headers(&fake).last().unwrap(), "Bearer k-spare");
    // The transcript names the model change.
    let h = c.call("chat.history", json!({"sessionKey": "main"})).await;
    assert_eq!(h["payload"]["messages"].as_array().unwrap().len(), 4);
}

#[tokio::test]
async fn a_cut_stream_is_a_clear_error_and_the_session_answers_next() {
    let fake = FakeProvider::start().await;
    fake.push(Script::text(&["partial ", "answer ", "that ", "breaks"]).cut_after(2));
    let gw = fake_gateway(
        &fake,
        json!({"agents": {"defaults": {"runRestarts": {"max": 0}}}}),
    );
    let mut c = admin(&gw).await;
    send(&mut c, "main", "go", "c1").await;
    let events = chat_until_done(&mut c, "c1").await;
    let last = &events.last().unwrap()["payload"];
    assert_eq!(last["state"], "error", "{last}");
    let msg = last["errorMessage"].as_str().unwrap();
    assert!(msg.contains("stream"), "a clear message: {msg}");
    fake.push(Script::text(&["fine ", "now"]));
    send(&mut c, "main", "again", "c2").await;
    assert_eq!(final_text(&chat_until_done(&mut c, "c2").await), "fine now");
}

#[tokio::test]
async fn a_failed_run_restarts_from_its_last_step_and_never_reruns_a_finished_tool() {
    let fake = FakeProvider::start().await;
    fake.push(Script::tool_call(
        "call_1",
        "exec",
        &json!({"command": "echo ran >> count.txt"}),
    ));
    for _ in 0..3 {
        fake.push(Script::status(
            502,
            "{\"error\":{\"message\":\"bad gateway\"}}",
        ));
    }
    fake.push(Script::text(&["recovered"]));
    let gw = fake_gateway(&fake, json!({}));
    let mut c = admin(&gw).await;
    send(&mut c, "main", "count", "s1").await;
    let events = chat_until_done(&mut c, "s1").await;
    assert_eq!(final_text(&events), "recovered");
    let count = std::fs::read_to_string(gw.state_dir().join("workspace/count.txt")).unwrap();
    assert_eq!(count, "ran\n", "the tool ran exactly once");
    assert_eq!(
        fake.request_count(),
        5,
        "tool call, 3 x 502, then the restart"
    );
    // The restarted call carried the tool result from the first try.
    let last_body = fake.requests.lock().unwrap().last().unwrap().0.clone();
    let roles: Vec<&str> = last_body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        ["system", "user", "assistant", "tool"],
        "{last_body}"
    );
}

#[tokio::test]
async fn qwen_style_embedded_tool_calls_run_through_a_session() {
    let fake = FakeProvider::start().await;
    fake.push(Script::text(&[
        "Let me check.\n<tools>\n{\"name\": \"exec\", ",
        "\"arguments\": {\"command\": \"echo qwen-was-here\"}}\n</tools>",
    ]));
    fake.push(Script::text(&["done"]));
    let gw = fake_gateway(&fake, json!({}));
    let mut c = admin(&gw).await;
    send(&mut c, "main", "check", "q1").await;
    assert_eq!(final_text(&chat_until_done(&mut c, "q1").await), "done");
    let h = c.call("chat.history", json!({"sessionKey": "main"})).await["payload"].clone();
    let msgs = h["messages"].as_array().unwrap();
    assert!(
        msgs[1]["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("Let me check."),
        "{h}"
    );
    assert_eq!(msgs[1]["content"][1]["type"], "toolCall");
    assert_eq!(msgs[2]["role"], "toolResult");
    assert!(msgs[2]["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains("qwen-was-here"));
}

#[tokio::test]
async fn steer_mode_skips_the_remaining_tools_and_answers_the_new_message() {
    let gw = TestGateway::start();
    let mut c = admin(&gw).await;
    send(&mut c, "main", "/queue steer", "d1").await;
    let answer = final_text(&chat_until_done(&mut c, "d1").await);
    assert!(answer.starts_with("queue mode: steer"), "{answer}");
    send(
        &mut c,
        "main",
        "@tool exec {\"command\":\"sleep 1\"}\n@tool exec {\"command\":\"echo never > never.txt\"}",
        "s1",
    )
    .await;
    loop {
        let ev = c.event("session.tool").await;
        if ev["payload"]["state"] == "running" {
            break;
        }
    }
    send(&mut c, "main", "stop, do this instead", "s2").await;
    let events = chat_until_done(&mut c, "s1").await;
    assert_eq!(final_text(&events), "You said: stop, do this instead");
    assert!(!gw.state_dir().join("workspace/never.txt").exists());
    let h = c.call("chat.history", json!({"sessionKey": "main"})).await["payload"].clone();
    let skipped = h["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| {
            m["role"] == "toolResult"
                && m["content"][0]["text"]
                    .as_str()
                    .unwrap_or("")
                    .starts_with("Skipped")
        })
        .count();
    assert_eq!(skipped, 1, "{h}");
}

#[tokio::test]
async fn collect_coalesces_followup_runs_each_and_interrupt_aborts() {
    let gw = TestGateway::start();
    let mut c = admin(&gw).await;
    // collect (default): two messages during a run become one turn after it.
    send(&mut c, "a", "/queue collect debounce:50ms", "q0").await;
    chat_until_done(&mut c, "q0").await;
    send(&mut c, "a", "@tokens 20\n@delay 20", "a1").await;
    send(&mut c, "a", "first extra", "a2").await;
    send(&mut c, "a", "second extra", "a3").await;
    chat_until_done(&mut c, "a1").await;
    let next = loop {
        let ev = c.event("chat").await;
        if ev["payload"]["sessionKey"] == "agent:main:a" && ev["payload"]["state"] == "final" {
            break ev["payload"]["message"]["content"][0]["text"]
                .as_str()
                .unwrap()
                .to_string();
        }
    };
    assert!(
        next.contains("first extra") && next.contains("second extra"),
        "{next}"
    );
    // followup: each queued message is its own turn, in order.
    send(&mut c, "b", "/queue followup", "q1").await;
    chat_until_done(&mut c, "q1").await;
    send(&mut c, "b", "@tokens 20\n@delay 20", "b1").await;
    send(&mut c, "b", "one", "b2").await;
    send(&mut c, "b", "two", "b3").await;
    let mut finals = Vec::new();
    while finals.len() < 3 {
        let ev = c.event("chat").await;
        if ev["payload"]["sessionKey"] == "agent:main:b" && ev["payload"]["state"] == "final" {
            finals.push(
                ev["payload"]["message"]["content"][0]["text"]
                    .as_str()
                    .unwrap()
                    .to_string(),
            );
        }
    }
    assert_eq!(&finals[1..], ["You said: one", "You said: two"]);
    // interrupt: the running turn is aborted, the newest message runs.
    send(&mut c, "i", "/queue interrupt", "q2").await;
    chat_until_done(&mut c, "q2").await;
    send(&mut c, "i", "@tokens 500\n@delay 20", "i1").await;
    send(&mut c, "i", "newest", "i2").await;
    let first = chat_until_done(&mut c, "i1").await;
    assert_eq!(first.last().unwrap()["payload"]["state"], "aborted");
    assert_eq!(
        final_text(&chat_until_done(&mut c, "i2").await),
        "You said: newest"
    );
}

#[tokio::test]
async fn abort_kills_a_running_child_process_and_a_timeout_is_reported() {
    let gw = TestGateway::start();
    let mut c = admin(&gw).await;
    send(
        &mut c,
        "main",
        "@tool exec {\"command\":\"echo $$ > sleeper.pid; exec sleep 30\"}",
        "k1",
    )
    .await;
    loop {
        let ev = c.event("session.tool").await;
        if ev["payload"]["state"] == "running" {
            break;
        }
    }
    let pid_file = gw.state_dir().join("workspace/sleeper.pid");
    let mut pid = String::new();
    for _ in 0..200 {
        pid = std::fs::read_to_string(&pid_file).unwrap_or_default();
        if !pid.trim().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let proc_dir = format!("/proc/{}", pid.trim());
    assert!(std::path::Path::new(&proc_dir).exists(), "sleep is running");
    let r = c
        .call("chat.abort", json!({"sessionKey": "main", "runId": "k1"}))
        .await;
    assert_eq!(r["payload"]["aborted"], true, "{r}");
    let events = chat_until_done(&mut c, "k1").await;
    assert_eq!(events.last().unwrap()["payload"]["state"], "aborted");
    let mut gone = false;
    for _ in 0..200 {
        let stat = std::fs::read_to_string(format!("{proc_dir}/stat")).unwrap_or_default();
        // Gone, or a zombie waiting for its reaper.
        if stat.is_empty() || stat.split_whitespace().nth(2) == Some("Z") {
            gone = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(gone, "the child was killed");

    c.call(
        "chat.send",
        json!({"sessionKey": "t", "message": "@tokens 200\n@delay 50", "idempotencyKey": "t1", "timeoutMs": 300}),
    )
    .await;
    let events = chat_until_done(&mut c, "t1").await;
    let last = &events.last().unwrap()["payload"];
    assert_eq!(
        (last["state"].as_str(), last["errorKind"].as_str()),
        (Some("error"), Some("timeout")),
        "{last}"
    );
}

#[tokio::test]
async fn two_sends_to_one_session_run_one_after_the_other() {
    let gw = TestGateway::start();
    let mut c = admin(&gw).await;
    send(&mut c, "main", "/queue followup", "q").await;
    chat_until_done(&mut c, "q").await;
    send(&mut c, "main", "@tokens 10\n@delay 20", "one").await;
    send(&mut c, "main", "@tokens 10\n@delay 20", "two").await;
    let mut phases = Vec::new();
    while phases
        .iter()
        .filter(|p: &&String| p.ends_with("end"))
        .count()
        < 2
    {
        let ev = c.event("agent").await;
        if ev["payload"]["stream"] == "lifecycle" {
            phases.push(ev["payload"]["data"]["phase"].as_str().unwrap().to_string());
        }
    }
    assert_eq!(
        phases,
        ["start", "finishing", "end", "start", "finishing", "end"],
        "never overlapping"
    );
}

#[tokio::test]
async fn a_hundred_sessions_in_parallel_never_exceed_the_lane() {
    let gw = TestGateway::with_config(json!({"agents": {"defaults": {"maxConcurrent": 3}}}));
    let mut c = admin(&gw).await;
    for i in 0..100 {
        c.send_req(
            "chat.send",
            json!({"sessionKey": format!("p-{i}"), "message": "@tokens 3\n@delay 5", "idempotencyKey": format!("p{i}")}),
        )
        .await;
    }
    let (mut running, mut peak, mut done) = (HashSet::new(), 0, 0);
    while done < 100 {
        let ev = c.event("agent").await;
        if ev["payload"]["stream"] != "lifecycle" {
            continue;
        }
        let id = ev["payload"]["runId"].as_str().unwrap().to_string();
        match ev["payload"]["data"]["phase"].as_str() {
            Some("start") => {
                running.insert(id);
                peak = peak.max(running.len());
            }
            Some("end") | Some("error") => {
                running.remove(&id);
                done += 1;
            }
            _ => {}
        }
    }
    assert!(peak <= 3, "at most maxConcurrent runs at once: {peak}");
    assert!(peak >= 2, "runs did overlap: {peak}");
}

#[tokio::test]
async fn tool_events_go_only_to_clients_that_asked_and_follow_the_verbose_level() {
    let gw = TestGateway::start();
    let mut tooled = Client::connect(&gw.ws_url()).await;
    let mut p = connect_params(
        "cli",
        "cli",
        &["operator.admin", "operator.read", "operator.write"],
        Some(TOKEN),
    );
    p["caps"] = json!(["tool-events"]);
    assert_eq!(tooled.handshake(p).await["ok"], true);
    let mut plain = admin(&gw).await;
    tooled
        .call(
            "chat.send",
            json!({"sessionKey": "main", "message": "@tool exec {\"command\":\"echo visible\"}", "idempotencyKey": "v1"}),
        )
        .await;
    chat_until_done(&mut tooled, "v1").await;
    chat_until_done(&mut plain, "v1").await;
    let tool_events = |c: &mut Client| -> Vec<Value> {
        let mut out = Vec::new();
        c.backlog_events("agent")
            .into_iter()
            .filter(|e| e["payload"]["stream"] == "tool")
            .for_each(|e| out.push(e));
        out
    };
    let mine = tool_events(&mut tooled);
    assert_eq!(mine.len(), 2, "start and result: {mine:?}");
    assert!(
        mine.iter().all(|e| e.get("seq").is_none()),
        "targeted: no seq"
    );
    assert!(
        mine[1]["payload"]["data"].get("result").is_none(),
        "verbose on: no result text"
    );
    assert!(tool_events(&mut plain).is_empty(), "not asked, not sent");
    let done = plain
        .backlog_events("session.tool")
        .into_iter()
        .find(|e| e["payload"]["state"] == "done")
        .unwrap();
    assert_eq!(done["payload"]["toolName"], "exec");
    // verbose full: the result is sent too.
    let r = plain
        .call(
            "sessions.patch",
            json!({"key": "main", "verboseLevel": "full"}),
        )
        .await;
    assert_eq!(r["ok"], true, "{r}");
    tooled
        .call(
            "chat.send",
            json!({"sessionKey": "main", "message": "@tool exec {\"command\":\"echo full\"}", "idempotencyKey": "v2"}),
        )
        .await;
    chat_until_done(&mut tooled, "v2").await;
    let mine = tool_events(&mut tooled);
    let result = mine
        .iter()
        .find(|e| e["payload"]["data"]["phase"] == "result")
        .unwrap();
    assert!(result["payload"]["data"]["result"]
        .as_str()
        .unwrap()
        .contains("full"));
}

#[tokio::test]
async fn an_image_sent_while_the_agent_is_busy_reaches_the_model_with_the_queued_turn() {
    let fake = FakeProvider::start().await;
    fake.push(Script::words(10).with_delay(Duration::from_millis(100)));
    fake.set_default(Script::text(&["seen ", "it"]));
    let gw = fake_gateway(&fake, json!({"messages": {"queue": {"debounceMs": 0}}}));
    let mut c = admin(&gw).await;
    send(&mut c, "main", "first", "q1").await;
    use base64::Engine;
    let png = base64::engine::general_purpose::STANDARD.encode(b"\x89PNG\r\n\x1a\nqueued-pixels");
    let queued = c
        .call(
            "chat.send",
            json!({"sessionKey": "main", "message": "and this picture", "idempotencyKey": "q2",
                   "attachments": [{"type": "image", "mimeType": "image/png", "content": png}]}),
        )
        .await;
    assert_eq!(queued["ok"], true, "{queued}");
    chat_until_done(&mut c, "q1").await;
    // The queued turn runs under its own run id.
    loop {
        let ev = c.event("chat").await;
        if ev["payload"]["state"] == "final" && ev["payload"]["runId"] != "q1" {
            break;
        }
    }
    let requests = fake.requests.lock().unwrap().clone();
    assert_eq!(requests.len(), 2, "one model call per turn");
    let last_user = requests[1].0["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .cloned()
        .unwrap();
    let body = last_user.to_string();
    assert!(body.contains("and this picture"), "{body}");
    assert!(
        body.contains(&format!("data:image/png;base64,{png}")),
        "the image goes to the model with the queued text: {body}"
    );
}
