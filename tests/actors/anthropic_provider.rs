//! The anthropic-messages provider actor against the fake server speaking
//! Anthropic's streaming events.

use std::collections::BTreeMap;
use std::time::Duration;

use actix::Actor;
use ferroclaw_actors::provider::anthropic::{AnthropicConfig, AnthropicProvider};
use ferroclaw_actors::provider::{
    ChatMessage, CompletionRequest, ProviderError, ProviderEvent, StopReason, StreamCompletion,
    ToolCall, Usage,
};
use serde_json::json;

use crate::support::fake_provider::{FakeProvider, Script};

fn provider(fake: &FakeProvider) -> actix::Addr<AnthropicProvider> {
    AnthropicProvider::new(AnthropicConfig {
        base_url: format!("http://{}", fake.addr.unwrap()),
        api_key: Some("sk-ant-test".into()),
        headers: BTreeMap::new(),
        request_timeout: Duration::from_secs(30),
        limits: Default::default(),
    })
    .start()
}

async fn collect(p: &actix::Addr<AnthropicProvider>) -> Vec<ProviderEvent> {
    let req = CompletionRequest {
        model: "claude-sonnet".into(),
        system: "You are helpful.".into(),
        messages: vec![ChatMessage::user("hi").into()],
        thinking_budget: Some(2048),
        ..Default::default()
    };
    let mut rx = p.send(StreamCompletion { request: req }).await.unwrap();
    let mut out = Vec::new();
    while let Some(e) = tokio::time::timeout(Duration::from_secs(15), rx.recv())
        .await
        .unwrap()
    {
        out.push(e);
    }
    out
}

#[actix_rt::test]
async fn thinking_text_and_tool_use_stream_in_order_with_cache_usage() {
    let fake = FakeProvider::start().await;
    fake.push(Script::anthropic(
        Some("let me think"),
        &["Hello", " there"],
        Some(("tu_1", "exec", json!({"command": "ls -la"}))),
    ));
    let p = provider(&fake);
    let events = collect(&p).await;
    assert_eq!(
        events,
        vec![
            ProviderEvent::ThinkingDelta("let me think".into()),
            ProviderEvent::TextDelta("Hello".into()),
            ProviderEvent::TextDelta(" there".into()),
            ProviderEvent::ToolCall(ToolCall {
                id: "tu_1".into(),
                name: "exec".into(),
                arguments: json!({"command": "ls -la"})
            }),
            ProviderEvent::Usage(Usage {
                input: 20,
                output: 3,
                cache_read: 100,
                cache_write: 0,
                context: 0,
            }),
            ProviderEvent::Done(StopReason::ToolUse),
        ]
    );
    let (body, headers) = fake.requests.lock().unwrap()[0].clone();
    let h = |k: &str| headers.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
    assert_eq!(h(":path").as_deref(), Some("/v1/messages"));
    assert_eq!(h("x-api-key").as_deref(), Some("sk-ant-test"));
    assert_eq!(h("anthropic-version").as_deref(), Some("2023-06-01"));
    assert_eq!(body["stream"], true);
    assert_eq!(body["thinking"]["budget_tokens"], 2048);
    assert_eq!(body["system"][0]["cache_control"]["type"], "ephemeral");
}

#[actix_rt::test]
async fn overload_is_retried_and_a_cut_stream_is_a_clear_error() {
    let fake = FakeProvider::start().await;
    fake.push(Script::status(
        529,
        "{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}",
    ));
    fake.push(Script::anthropic(None, &["ok"], None));
    let p = provider(&fake);
    let events = collect(&p).await;
    assert_eq!(events.last(), Some(&ProviderEvent::Done(StopReason::Stop)));
    assert_eq!(fake.request_count(), 2);

    fake.push(Script::anthropic(None, &["a", "b", "c"], None).cut_events(5));
    let events = collect(&p).await;
    match events.last() {
        Some(ProviderEvent::Error(ProviderError::Unavailable(m))) => {
            assert!(m.contains("message_stop"), "{m}")
        }
        other => panic!("{other:?}"),
    }

    fake.push(Script::status(401, "{\"type\":\"error\",\"error\":{\"type\":\"authentication_error\",\"message\":\"invalid x-api-key\"}}"));
    let events = collect(&p).await;
    assert!(
        matches!(&events[..], [ProviderEvent::Error(ProviderError::Auth(_))]),
        "{events:?}"
    );
}
