//! Webhooks against a real gateway: auth (header tokens, a query token
//! refused, lockout), methods, body limits, wake, agent turns delivered to
//! the last chat route, mappings with templates, replay dedupe.

use std::time::Duration;

use serde_json::{json, Value};

use super::telegram::telegram_config;
use crate::support::fake_telegram::FakeTelegram;
use crate::support::process::{Within, CHILD_LIMIT};
use crate::support::{admin, TestGateway};

const HOOK_TOKEN: &str = "hook-secret-0123";

fn hooks_config() -> Value {
    json!({ "hooks": {
        "enabled": true, "token": HOOK_TOKEN, "maxBodyBytes": 2048,
        "mappings": [
            { "match": { "path": "gmail" }, "messageTemplate": "Mail from {{from.name}}: {{subject}}", "deliver": false },
            { "match": { "path": "quiet" }, "messageTemplate": "{{nothing}}" },
        ],
    } })
}

async fn post(
    gw: &TestGateway,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, reqwest::header::HeaderMap, Value) {
    let mut req = reqwest::Client::new()
        .post(format!("http://{}{path}", gw.addr))
        .body(body.to_string());
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let resp = req.send().await.unwrap();
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let text = resp.text().await.unwrap();
    (
        status,
        headers,
        serde_json::from_str(&text).unwrap_or(Value::Null),
    )
}

const BEARER: (&str, &str) = ("authorization", "Bearer hook-secret-0123");

#[tokio::test]
async fn hook_auth_methods_and_limits() {
    let gw = TestGateway::with_config(hooks_config());
    let (s, _, b) = post(
        &gw,
        "/hooks/wake",
        &[BEARER],
        r#"{"text":"disk almost full","mode":"next-heartbeat"}"#,
    )
    .await;
    assert_eq!(
        (s, b.clone()),
        (200, json!({ "ok": true, "mode": "next-heartbeat" })),
        "{b}"
    );
    let (s, _, _) = post(
        &gw,
        "/hooks/wake",
        &[("x-openclaw-token", HOOK_TOKEN)],
        r#"{"text":"x","mode":"next-heartbeat"}"#,
    )
    .await;
    assert_eq!(s, 200);
    let (s, _, b) = post(
        &gw,
        &format!("/hooks/wake?token={HOOK_TOKEN}"),
        &[],
        r#"{"text":"x"}"#,
    )
    .await;
    assert_eq!(s, 400, "{b}");
    let get = reqwest::Client::new()
        .get(format!("http://{}/hooks/wake", gw.addr))
        .header("authorization", BEARER.1)
        .send()
        .await
        .unwrap();
    assert_eq!(get.status().as_u16(), 405);
    assert_eq!(get.headers()["allow"], "POST");
    let (s, _, _) = post(&gw, "/hooks/wake", &[BEARER], "not json").await;
    assert_eq!(s, 400);
    let (s, _, _) = post(
        &gw,
        "/hooks/wake",
        &[BEARER],
        &format!(r#"{{"text":"{}"}}"#, "x".repeat(4000)),
    )
    .await;
    assert_eq!(s, 413);
    let (s, _, _) = post(&gw, "/hooks/nope", &[BEARER], "{}").await;
    assert_eq!(s, 404);
    // The gateway's own token is not the hook token.
    let (s, _, _) = post(
        &gw,
        "/hooks/wake",
        &[("authorization", "Bearer test-token-0123456789")],
        r#"{"text":"x"}"#,
    )
    .await;
    assert_eq!(s, 401);
    for _ in 0..19 {
        let (s, _, _) = post(
            &gw,
            "/hooks/wake",
            &[("authorization", "Bearer wrong")],
            r#"{"text":"x"}"#,
        )
        .await;
        assert_eq!(s, 401);
    }
    let (s, h, _) = post(&gw, "/hooks/wake", &[BEARER], r#"{"text":"x"}"#).await;
    assert_eq!(
        s, 429,
        "locked out after 20 failures, even with the right token"
    );
    assert!(h.get("retry-after").is_some());
}

#[tokio::test]
async fn agent_hooks_run_turns_replays_answer_once_and_mappings_render() {
    let gw = TestGateway::with_config(hooks_config());
    let mut c = admin(&gw).await;
    let body = r#"{"message":"summarise the inbox","name":"Email","idempotencyKey":"evt-1"}"#;
    let (s, _, first) = post(&gw, "/hooks/agent", &[BEARER], body).await;
    assert_eq!(s, 200, "{first}");
    let run = first["runId"].as_str().unwrap().to_string();
    let (_, _, again) = post(&gw, "/hooks/agent", &[BEARER], body).await;
    assert_eq!(
        again["runId"],
        json!(run),
        "a replay answers with the first dispatch"
    );
    let waited = c
        .call("agent.wait", json!({ "runId": run, "timeoutMs": 10000 }))
        .await;
    assert_eq!(waited["payload"]["status"], "ok", "{waited}");
    let list = c.call("sessions.list", json!({})).await;
    let hook_sessions: Vec<&Value> = list["payload"]["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["key"].as_str().unwrap().starts_with("agent:main:hook:"))
        .collect();
    assert_eq!(hook_sessions.len(), 1, "{list}");
    let key = hook_sessions[0]["key"].as_str().unwrap().to_string();
    let history = c.call("chat.history", json!({ "sessionKey": key })).await;
    let text = history["payload"]["messages"].to_string();
    assert!(text.contains("[Email] summarise the inbox"), "{text}");
    // A request may not pick its session unless allowed.
    let (_, _, chosen) = post(
        &gw,
        "/hooks/agent",
        &[BEARER],
        r#"{"message":"x","sessionKey":"agent:main:main"}"#,
    )
    .await;
    let r = c
        .call(
            "agent.wait",
            json!({ "runId": chosen["runId"], "timeoutMs": 10000 }),
        )
        .await;
    assert_eq!(r["payload"]["status"], "ok");
    let main = c
        .call("chat.history", json!({ "sessionKey": "main" }))
        .await;
    assert_eq!(
        main["payload"]["messages"],
        json!([]),
        "the caller's sessionKey was ignored"
    );
    // Mappings.
    let (s, _, mapped) = post(
        &gw,
        "/hooks/gmail",
        &[BEARER],
        r#"{"from":{"name":"Ann"},"subject":"Lunch?"}"#,
    )
    .await;
    assert_eq!(s, 200, "{mapped}");
    let r = c
        .call(
            "agent.wait",
            json!({ "runId": mapped["runId"], "timeoutMs": 10000 }),
        )
        .await;
    assert_eq!(r["payload"]["status"], "ok");
    let (s, _, _) = post(&gw, "/hooks/quiet", &[BEARER], r#"{"x":1}"#).await;
    assert_eq!(s, 204, "an empty rendering drops the event");
    let (s, _, _) = post(&gw, "/hooks/agent", &[BEARER], r#"{"name":"no message"}"#).await;
    assert_eq!(s, 400);
    let (s, _, _) = post(
        &gw,
        "/hooks/agent",
        &[BEARER],
        r#"{"message":"x","agentId":"ops"}"#,
    )
    .await;
    assert_eq!(s, 200, "no allowedAgentIds: any agent");
}

#[tokio::test]
async fn an_agent_hook_reply_reaches_the_last_telegram_chat() {
    let fake = FakeTelegram::start(super::telegram::BOT_TOKEN);
    let mut cfg = telegram_config(&fake, json!({ "streamMode": "off" }));
    ferroclaw::config::merge_patch(&mut cfg, &hooks_config());
    let gw = TestGateway::with_config(cfg);
    fake.dm(42, 1, "hello");
    assert!(
        fake.until(Duration::from_secs(20), |f| f.sent_to(42).len() == 1)
            .await
    );
    let (s, _, b) = post(
        &gw,
        "/hooks/agent",
        &[BEARER],
        r#"{"message":"build is green"}"#,
    )
    .await;
    assert_eq!(s, 200, "{b}");
    assert!(
        fake.until(Duration::from_secs(20), |f| f
            .sent_to(42)
            .iter()
            .any(|m| m.text == "You said: build is green"))
            .await,
        "{:?}",
        fake.sent()
    );
    let (s, _, b) = post(
        &gw,
        "/hooks/agent",
        &[BEARER],
        r#"{"message":"keep this quiet","deliver":false}"#,
    )
    .await;
    assert_eq!(s, 200);
    // Its run ended and the channels owe nothing: no reply is on its way.
    let mut c = crate::support::admin(&gw).await;
    let w = c
        .call(
            "agent.wait",
            json!({"runId": b["runId"], "timeoutMs": 20000}),
        )
        .await;
    assert_eq!(w["payload"]["status"], "ok", "{w}");
    crate::support::ledger::until_quiet(gw.store()).await;
    assert_eq!(fake.sent_to(42).len(), 2);
}

#[tokio::test]
async fn hooks_are_off_unless_enabled_and_a_bad_section_stops_the_start() {
    let gw = TestGateway::start();
    let (s, _, _) = post(&gw, "/hooks/wake", &[BEARER], r#"{"text":"x"}"#).await;
    assert_ne!(s, 200);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("ferroclaw.json"),
        r#"{ "hooks": { "enabled": true } }"#,
    )
    .unwrap();
    let out = crate::support::process::ferroclaw(dir.path())
        .args(["gateway", "--port", "0"])
        .within(CHILD_LIMIT);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("hooks.token"), "{err}");
    std::fs::write(
        dir.path().join("ferroclaw.json"),
        r#"{ "channels": { "telegram": { "botToken": "1:a", "dmPolicy": "open" } } }"#,
    )
    .unwrap();
    let out = crate::support::process::ferroclaw(dir.path())
        .args(["gateway", "--port", "0"])
        .within(CHILD_LIMIT);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("channels.telegram.allowFrom"), "{err}");
}

/// A loopback HTTP server that records each request's headers and body.
async fn capture_server() -> (
    String,
    std::sync::Arc<std::sync::Mutex<Vec<(String, Value)>>>,
) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/received", listener.local_addr().unwrap());
    let seen: std::sync::Arc<std::sync::Mutex<Vec<(String, Value)>>> = Default::default();
    let out = seen.clone();
    tokio::spawn(async move {
        loop {
            let Ok((mut s, _)) = listener.accept().await else {
                return;
            };
            let seen = seen.clone();
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                loop {
                    let n = s.read(&mut chunk).await.unwrap_or(0);
                    if n == 0 {
                        break;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                    let text = String::from_utf8_lossy(&buf).to_string();
                    if let Some(end) = text.find("\r\n\r\n") {
                        let len = text[..end]
                            .lines()
                            .find_map(|l| {
                                l.to_ascii_lowercase()
                                    .strip_prefix("content-length:")
                                    .map(|v| v.trim().parse::<usize>().unwrap_or(0))
                            })
                            .unwrap_or(0);
                        if buf.len() >= end + 4 + len {
                            let body = serde_json::from_slice(&buf[end + 4..end + 4 + len])
                                .unwrap_or(Value::Null);
                            seen.lock().unwrap().push((text[..end].to_string(), body));
                            let _ = s
                                .write_all(b"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n")
                                .await;
                            break;
                        }
                    }
                }
            });
        }
    });
    (url, out)
}

#[tokio::test]
async fn message_received_hooks_see_every_allowed_channel_message() {
    let (url, seen) = capture_server().await;
    let fake = FakeTelegram::start(super::telegram::BOT_TOKEN);
    let mut cfg = telegram_config(&fake, json!({ "streamMode": "off" }));
    cfg["hooks"] = json!({ "messageReceived": { "url": url, "token": "observer-secret" } });
    let _gw = TestGateway::with_config(cfg);
    fake.dm(42, 7, "remember the milk");
    fake.dm(31337, 8, "a stranger, not allowed");
    assert!(
        fake.until(Duration::from_secs(20), |f| !f.sent_to(42).is_empty())
            .await
    );
    let mut got = Vec::new();
    for _ in 0..100 {
        got = seen.lock().unwrap().clone();
        if !got.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(got.len(), 1, "only the allowed message: {got:?}");
    let (head, body) = &got[0];
    assert!(
        head.to_ascii_lowercase()
            .contains("authorization: bearer observer-secret"),
        "{head}"
    );
    assert_eq!(body["text"], "remember the milk");
    assert_eq!(body["from"], "42");
    assert_eq!(body["channel"], "telegram");
    assert_eq!(body["sessionKey"], "agent:main:main");
    assert_eq!(body["matchedBy"], "default");
    assert_eq!(body["messageId"], "7");
}
