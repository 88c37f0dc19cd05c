//! The OpenAI-compatible HTTP API and /tools/invoke over real loopback HTTP
//! (reqwest as the client): off by default, bearer auth, non-streamed and
//! SSE-streamed completions on the offline model, agents from `model`,
//! sessions from `user` and `x-openclaw-session-key`, /v1/models, and tool
//! calls with the tool policy.

use serde_json::{json, Value};

use crate::support::process::{Within, CHILD_LIMIT};
use crate::support::{TestGateway, TOKEN};

fn enabled_gateway(extra: Value) -> TestGateway {
    let mut cfg = json!({
        "gateway": { "http": { "endpoints": { "chatCompletions": { "enabled": true } } } },
        "agents": { "list": [{ "id": "main", "default": true }, { "id": "ops" }] },
    });
    ferroclaw::config::merge_patch(&mut cfg, &extra);
    TestGateway::with_config(cfg)
}

fn url(gw: &TestGateway, path: &str) -> String {
    format!("http://{}{path}", gw.addr)
}

async fn complete(gw: &TestGateway, body: Value, headers: &[(&str, &str)]) -> (u16, Value) {
    let mut req = reqwest::Client::new()
        .post(url(gw, "/v1/chat/completions"))
        .bearer_auth(TOKEN)
        .json(&body);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let res = req.send().await.unwrap();
    let status = res.status().as_u16();
    (status, res.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn chat_completions_are_off_by_default_and_need_the_token() {
    let gw = TestGateway::start();
    let r = reqwest::Client::new()
        .post(url(&gw, "/v1/chat/completions"))
        .bearer_auth(TOKEN)
        .json(&json!({"model": "ferroclaw:main", "messages": [{"role": "user", "content": "hi"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    let gw = enabled_gateway(json!({}));
    let r = reqwest::Client::new()
        .post(url(&gw, "/v1/chat/completions"))
        .bearer_auth("wrong")
        .json(&json!({"messages": [{"role": "user", "content": "hi"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    let r = reqwest::Client::new()
        .get(url(&gw, "/v1/chat/completions"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 405);
    assert_eq!(r.headers()["allow"], "POST");
    let (status, body) = complete(&gw, json!({"messages": []}), &[]).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"]["type"], "invalid_request_error");
    let (status, body) = complete(
        &gw,
        json!({"model": "agent:nobody", "messages": [{"role": "user", "content": "x"}]}),
        &[],
    )
    .await;
    assert_eq!(status, 400);
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("unknown agent"),
        "{body}"
    );
}

#[tokio::test]
async fn a_completion_answers_and_the_user_field_keeps_a_session() {
    let gw = enabled_gateway(json!({}));
    let (status, body) = complete(
        &gw,
        json!({"model": "ferroclaw:main", "messages": [{"role": "system", "content": "be nice"}, {"role": "user", "content": "hello there"}], "user": "ann"}),
        &[],
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["object"], "chat.completion");
    assert_eq!(body["choices"][0]["message"]["role"], "assistant");
    let text = body["choices"][0]["message"]["content"].as_str().unwrap();
    assert!(
        text.ends_with("[Current message]\nhello there"),
        "a new session gets the earlier messages: {text}"
    );
    assert_eq!(body["choices"][0]["finish_reason"], "stop");
    assert!(body["usage"]["completion_tokens"].as_u64().unwrap() > 0);
    // Same user: same session (its history grows).
    let (_, body) = complete(
        &gw,
        json!({"model": "ferroclaw:main", "messages": [{"role": "user", "content": "@context"}], "user": "ann"}),
        &[],
    )
    .await;
    assert_eq!(
        body["choices"][0]["message"]["content"], "context: 3 messages",
        "{body}"
    );
    // An explicit session key and the agent header.
    let (_, body) = complete(
        &gw,
        json!({"messages": [{"role": "user", "content": [{"type": "text", "text": "via header"}]}]}),
        &[("x-openclaw-session-key", "agent:ops:http-test"), ("x-openclaw-agent-id", "ops")],
    )
    .await;
    assert_eq!(
        body["choices"][0]["message"]["content"],
        "You said: via header"
    );
    let models: Value = reqwest::Client::new()
        .get(url(&gw, "/v1/models"))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let ids: Vec<&str> = models["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["ferroclaw:main", "ferroclaw:ops"]);
}

#[tokio::test]
async fn a_streamed_completion_is_sse_chunks_then_done() {
    let gw = enabled_gateway(json!({}));
    let res = reqwest::Client::new()
        .post(url(&gw, "/v1/chat/completions"))
        .bearer_auth(TOKEN)
        .json(&json!({"model": "agent:main", "stream": true, "messages": [{"role": "user", "content": "@tokens 30"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    assert!(res.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/event-stream"));
    let body = res.text().await.unwrap();
    let events: Vec<&str> = body.split("\n\n").filter(|e| !e.is_empty()).collect();
    assert_eq!(*events.last().unwrap(), "data: [DONE]");
    let chunks: Vec<Value> = events[..events.len() - 1]
        .iter()
        .map(|e| serde_json::from_str(e.strip_prefix("data: ").unwrap()).unwrap())
        .collect();
    assert_eq!(chunks[0]["choices"][0]["delta"]["role"], "assistant");
    assert!(chunks.len() > 3, "several content chunks: {body}");
    let text: String = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
        .collect();
    let words: Vec<String> = (1..=30).map(|i| format!("w{i}")).collect();
    assert_eq!(text.trim_end(), words.join(" "));
    let last = chunks.last().unwrap();
    assert_eq!(last["choices"][0]["finish_reason"], "stop");
    assert!(chunks
        .iter()
        .all(|c| c["object"] == "chat.completion.chunk" && c["id"] == chunks[0]["id"]));
}

#[tokio::test]
async fn tools_invoke_runs_allowed_tools_only() {
    let gw = enabled_gateway(json!({"tools": {"deny": ["web_fetch"]}}));
    std::fs::write(
        gw.state_dir().join("workspace/hello.txt"),
        "hi from a file\n",
    )
    .unwrap();
    let invoke = |body: Value| {
        let u = url(&gw, "/tools/invoke");
        async move {
            let r = reqwest::Client::new()
                .post(u)
                .bearer_auth(TOKEN)
                .json(&body)
                .send()
                .await
                .unwrap();
            let status = r.status().as_u16();
            (status, r.json::<Value>().await.unwrap())
        }
    };
    let (status, body) = invoke(json!({"tool": "read", "args": {"path": "hello.txt"}})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body,
        json!({"ok": true, "result": {"content": [{"type": "text", "text": "hi from a file"}]}})
    );
    let (status, body) = invoke(json!({"tool": "process", "action": "list"})).await;
    assert_eq!(
        (status, body["result"]["content"][0]["text"].as_str()),
        (200, Some("No background sessions."))
    );
    let (status, body) =
        invoke(json!({"tool": "web_fetch", "args": {"url": "http://example.com"}})).await;
    assert_eq!(status, 404, "{body}");
    assert_eq!(body["error"]["type"], "not_found");
    let (status, body) =
        invoke(json!({"tool": "read", "args": {"path": "../../etc/passwd"}})).await;
    assert_eq!(status, 400);
    assert_eq!(body["error"]["type"], "tool_error");
    let (status, body) =
        invoke(json!({"tool": "exec", "args": {"command": "touch x"}, "dryRun": true})).await;
    assert_eq!(status, 200);
    assert_eq!(body["result"]["dryRun"], true);
    assert!(!gw.state_dir().join("workspace/x").exists());
    let (status, _) = invoke(json!({"args": {}})).await;
    assert_eq!(status, 400);
    let r = reqwest::Client::new()
        .post(url(&gw, "/tools/invoke"))
        .json(&json!({"tool": "read"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
}

#[tokio::test]
async fn the_official_openai_python_client_works() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/openai");
    let python = dir.join(".venv/bin/python");
    assert!(
        python.exists(),
        "the openai Python package is not installed: run `bash tests/openai/setup.sh` (tests/run.sh does)"
    );
    let gw = enabled_gateway(json!({}));
    let base = format!("http://{}", gw.addr);
    let mut cmd = std::process::Command::new(python);
    cmd.arg(dir.join("client.py")).arg(&base).arg(TOKEN);
    let out = tokio::task::spawn_blocking(move || cmd.within(CHILD_LIMIT))
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "client failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let seen: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(seen["text"], "You said: hello from python", "{seen}");
    assert_eq!(seen["finish_reason"], "stop");
    assert!(seen["completion_tokens"].as_u64().unwrap() > 0);
    let words: Vec<String> = (1..=12).map(|i| format!("w{i}")).collect();
    assert_eq!(
        seen["streamed"].as_str().unwrap().trim_end(),
        words.join(" ")
    );
    assert!(seen["stream_chunks"].as_u64().unwrap() > 1, "{seen}");
    assert_eq!(seen["stream_finish"], "stop");
    assert_eq!(seen["models"], json!(["ferroclaw:main", "ferroclaw:ops"]));
    assert_eq!(seen["bad_token"], "AuthenticationError");
}
