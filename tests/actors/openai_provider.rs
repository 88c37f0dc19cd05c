//! The openai-completions provider actor against a fake OpenAI server on
//! loopback: the real reqwest + SSE client code runs.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::time::Duration;

use actix::Actor;
use ferroclaw_actors::provider::openai::{OpenAiConfig, OpenAiProvider};
use ferroclaw_actors::provider::{
    ChatMessage, CompletionRequest, ProviderError, ProviderEvent, StopReason, StreamCompletion,
    ToolSpec, Usage,
};
use serde_json::json;

use crate::support::fake_provider::{FakeProvider, Script};

fn provider(
    fake: &FakeProvider,
) -> (
    actix::Addr<OpenAiProvider>,
    std::sync::Arc<std::sync::atomic::AtomicUsize>,
) {
    let p = OpenAiProvider::new(OpenAiConfig {
        base_url: fake.base_url(),
        api_key: Some("sk-test".into()),
        headers: BTreeMap::new(),
        model_compat: BTreeMap::new(),
        request_timeout: Duration::from_secs(30),
        limits: Default::default(),
    });
    let active = p.active();
    (p.start(), active)
}

fn request(text: &str) -> CompletionRequest {
    CompletionRequest {
        model: "qwen2.5-coder".into(),
        system: "You are helpful.".into(),
        messages: vec![ChatMessage::user(text).into()],
        tools: vec![ToolSpec {
            name: "exec".into(),
            description: "run a command".into(),
            parameters: json!({"type":"object"}),
        }]
        .into(),
        max_tokens: Some(256),
        ..Default::default()
    }
}

async fn collect(addr: &actix::Addr<OpenAiProvider>, req: CompletionRequest) -> Vec<ProviderEvent> {
    let mut rx = addr.send(StreamCompletion { request: req }).await.unwrap();
    let mut out = Vec::new();
    while let Some(e) = tokio::time::timeout(Duration::from_secs(15), rx.recv())
        .await
        .unwrap()
    {
        out.push(e);
    }
    out
}

fn text(events: &[ProviderEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            ProviderEvent::TextDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

#[actix_rt::test]
async fn streams_text_in_order_with_usage_from_an_openai_shaped_request() {
    let fake = FakeProvider::start().await;
    fake.push(Script::text(&["Hel", "lo", " world"]));
    let (p, _) = provider(&fake);
    let events = collect(&p, request("hi")).await;
    assert_eq!(text(&events), "Hello world");
    let deltas = events
        .iter()
        .filter(|e| matches!(e, ProviderEvent::TextDelta(_)))
        .count();
    assert_eq!(deltas, 3, "one event per upstream token");
    assert!(events.contains(&ProviderEvent::Usage(Usage {
        input: 12,
        output: 3,
        ..Usage::default()
    })));
    assert_eq!(events.last(), Some(&ProviderEvent::Done(StopReason::Stop)));
    let (body, headers) = fake.requests.lock().unwrap()[0].clone();
    assert!(headers
        .iter()
        .any(|(k, v)| k == "authorization" && v == "Bearer sk-test"));
    assert_eq!(body["stream"], true);
    assert_eq!(body["max_tokens"], 256, "local servers get max_tokens");
    assert!(body.get("store").is_none(), "vLLM rejects store");
    assert_eq!(body["messages"][0]["role"], "system");
    assert_eq!(body["tools"][0]["function"]["name"], "exec");
}

#[actix_rt::test]
async fn native_tool_calls_with_fragmented_arguments_and_embedded_calls_become_tool_calls() {
    let fake = FakeProvider::start().await;
    fake.push(Script::tool_call(
        "call_9",
        "exec",
        &json!({"command": "ls -la"}),
    ));
    fake.push(Script::text(&[
        "{\"name\": \"exec\", ",
        "\"arguments\": {\"command\": \"pwd\"}}",
    ]));
    let (p, _) = provider(&fake);
    let events = collect(&p, request("list")).await;
    assert_eq!(
        events[0],
        ProviderEvent::ToolCall(ferroclaw_actors::provider::ToolCall {
            id: "call_9".into(),
            name: "exec".into(),
            arguments: json!({"command": "ls -la"}),
        })
    );
    assert_eq!(
        events.last(),
        Some(&ProviderEvent::Done(StopReason::ToolUse))
    );
    let events = collect(&p, request("where")).await;
    assert_eq!(
        text(&events),
        "",
        "Qwen-style JSON content is not shown as text"
    );
    assert!(events.iter().any(|e| matches!(e, ProviderEvent::ToolCall(c) if c.name == "exec" && c.arguments == json!({"command": "pwd"}))));
}

#[actix_rt::test]
async fn a_non_streaming_json_answer_is_handled() {
    let fake = FakeProvider::start().await;
    fake.push(Script::json_answer("All done."));
    let (p, _) = provider(&fake);
    let events = collect(&p, request("x")).await;
    assert_eq!(text(&events), "All done.");
    assert_eq!(events.last(), Some(&ProviderEvent::Done(StopReason::Stop)));
}

#[actix_rt::test]
async fn rate_limits_are_retried_after_retry_after_and_then_succeed() {
    let fake = FakeProvider::start().await;
    fake.push(Script::rate_limited(0));
    fake.push(Script::text(&["ok"]));
    let (p, _) = provider(&fake);
    let events = collect(&p, request("x")).await;
    assert_eq!(text(&events), "ok");
    assert_eq!(fake.request_count(), 2);
}

#[actix_rt::test]
async fn errors_are_classified_and_only_transient_ones_are_retried() {
    let fake = FakeProvider::start().await;
    let (p, _) = provider(&fake);

    fake.push(Script::status(
        401,
        "{\"error\":{\"message\":\"Incorrect API key\"}}",
    ));
    let events = collect(&p, request("x")).await;
    assert!(
        matches!(&events[..], [ProviderEvent::Error(ProviderError::Auth(_))]),
        "{events:?}"
    );
    assert_eq!(fake.request_count(), 1, "auth errors are final");

    fake.push(Script::status(400, "{\"error\":{\"code\":\"context_length_exceeded\",\"message\":\"maximum context length is 8192 tokens\"}}"));
    let events = collect(&p, request("x")).await;
    assert!(
        matches!(
            &events[..],
            [ProviderEvent::Error(ProviderError::ContextOverflow(_))]
        ),
        "{events:?}"
    );

    for _ in 0..3 {
        fake.push(Script::status(500, "{\"error\":{\"message\":\"boom\"}}"));
    }
    let before = fake.request_count();
    let events = collect(&p, request("x")).await;
    assert!(
        matches!(&events[..], [ProviderEvent::Error(ProviderError::Unavailable(m))] if m.contains("500")),
        "{events:?}"
    );
    assert_eq!(fake.request_count() - before, 3, "3 attempts");

    fake.push(Script::raw(&["{not json"]));
    let events = collect(&p, request("x")).await;
    assert!(
        matches!(
            &events[..],
            [ProviderEvent::Error(ProviderError::Malformed(_))]
        ),
        "{events:?}"
    );
}

#[actix_rt::test]
async fn a_stream_cut_midway_ends_with_a_clear_error_not_a_retry() {
    let fake = FakeProvider::start().await;
    fake.push(Script::text(&["a ", "b ", "c"]).cut_after(2));
    let (p, _) = provider(&fake);
    let events = collect(&p, request("x")).await;
    assert_eq!(text(&events), "a b ");
    match events.last() {
        Some(ProviderEvent::Error(ProviderError::Unavailable(m))) => {
            assert!(m.contains("ended before"), "{m}")
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        fake.request_count(),
        1,
        "streamed text is never replayed by a retry"
    );
}

#[actix_rt::test]
async fn dropping_the_stream_aborts_the_upstream_request() {
    let fake = FakeProvider::start().await;
    let tokens: Vec<String> = (0..500).map(|i| format!("t{i} ")).collect();
    let refs: Vec<&str> = tokens.iter().map(String::as_str).collect();
    fake.push(Script::text(&refs).with_delay(Duration::from_millis(10)));
    let (p, active) = provider(&fake);
    let mut rx = p
        .send(StreamCompletion {
            request: request("long"),
        })
        .await
        .unwrap();
    assert!(matches!(rx.recv().await, Some(ProviderEvent::TextDelta(_))));
    drop(rx);
    for _ in 0..300 {
        if fake.aborted.load(Ordering::Relaxed) == 1 && active.load(Ordering::Relaxed) == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(
        active.load(Ordering::Relaxed),
        0,
        "the completion task ended"
    );
    assert_eq!(
        fake.aborted.load(Ordering::Relaxed),
        1,
        "the upstream connection was closed"
    );
}
