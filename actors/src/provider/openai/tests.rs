//! `openai/wire.rs`'s unit tests: compat detection, request shapes, stream assembly.

use super::*;

/// The quick reading of a streamed chunk gives what the `Value` reading
/// gives, and hands back every chunk it does not cover.
#[test]
fn text_chunks_read_quickly_give_the_same_events() {
    let chunks = [
        r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"reasoning_content":"hm"}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"reasoning":"so"}}],"usage":null}"#,
        r#"{"choices":[{"index":0,"delta":{"content":"a \"quoted\"\nline \u00e9"}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"content":null},"finish_reason":null}]}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","function":{"name":"f","arguments":"{}"}}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#,
        r#"{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2}}"#,
        r#"{"choices":[{"index":0,"delta":{"reasoning":{"summary":"x"}}}]}"#,
    ];
    let (mut slow, mut quick) = (Assembly::default(), Assembly::default());
    let mut fallbacks = 0;
    for c in chunks {
        let v: Value = serde_json::from_str(c).unwrap();
        let want = slow.absorb(&v);
        let got = match serde_json::from_str::<TextChunk>(c)
            .ok()
            .and_then(|t| quick.absorb_text(&t))
        {
            Some(events) => events,
            None => {
                fallbacks += 1;
                quick.absorb(&v)
            }
        };
        assert_eq!(got, want, "{c}");
    }
    assert_eq!(fallbacks, 3, "tool calls, usage and an object reasoning");
    assert_eq!(quick.finish(), slow.finish());
}

#[test]
fn compat_is_detected_from_the_url_and_overridable() {
    let oa = detect_compat("https://api.openai.com/v1");
    assert!(oa.supports_store && oa.supports_strict_mode);
    assert_eq!(oa.max_tokens_field, MaxTokensField::MaxCompletionTokens);
    let vllm = detect_compat("http://127.0.0.1:8000/v1");
    assert!(!vllm.supports_store);
    assert_eq!(vllm.max_tokens_field, MaxTokensField::MaxTokens);
    let o = apply_overrides(
        vllm,
        Some(&json!({"supportsStore": true, "maxTokensField": "max_completion_tokens"})),
    );
    assert!(o.supports_store);
    assert_eq!(o.max_tokens_field, MaxTokensField::MaxCompletionTokens);
}

#[test]
fn body_follows_compat() {
    let req = CompletionRequest {
        model: "m".into(),
        system: "sys".into(),
        messages: vec![ChatMessage::user("hi").into()],
        tools: vec![ToolSpec {
            name: "exec".into(),
            description: "run".into(),
            parameters: json!({"type":"object"}),
        }]
        .into(),
        max_tokens: Some(100),
        ..Default::default()
    };
    let parse = |b: bytes::Bytes| serde_json::from_slice::<Value>(&b).unwrap();
    let b = parse(build_body(&req, detect_compat("http://vllm/v1")).unwrap());
    assert_eq!(b["stream"], true);
    assert_eq!(b["max_tokens"], 100);
    assert!(b.get("store").is_none() && b.get("max_completion_tokens").is_none());
    assert!(b["tools"][0]["function"].get("strict").is_none());
    assert_eq!(b["messages"][0], json!({"role":"system","content":"sys"}));
    let b = parse(build_body(&req, detect_compat("https://api.openai.com/v1")).unwrap());
    assert_eq!(b["store"], false);
    assert_eq!(b["max_completion_tokens"], 100);
    assert_eq!(b["tools"][0]["function"]["strict"], false);
}

#[test]
fn every_kind_of_message_is_sent_in_chat_completions_form() {
    let mut user = ChatMessage::user("look");
    user.images.push(Image::inline("image/png", "iVBO".into()));
    let assistant = ChatMessage {
        role: MessageRole::Assistant,
        text: "running".into(),
        tool_calls: vec![ToolCall {
            id: "c1".into(),
            name: "exec".into(),
            arguments: json!({"command": "ls"}),
        }],
        tool_call_id: None,
        is_error: false,
        images: Vec::new(),
    };
    let req = CompletionRequest {
        model: "m".into(),
        messages: [
            ChatMessage::user("hi \"there\"\n"),
            user,
            assistant,
            ChatMessage::tool_result("c1", "a b", false),
        ]
        .into_iter()
        .map(Into::into)
        .collect(),
        ..Default::default()
    };
    let body = build_body(&req, detect_compat("http://vllm/v1")).unwrap();
    let b: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(
        b,
        json!({
            "model": "m", "stream": true, "stream_options": {"include_usage": true},
            "messages": [
                {"role": "user", "content": "hi \"there\"\n"},
                {"role": "user", "content": [
                    {"type": "text", "text": "look"},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBO"}},
                ]},
                {"role": "assistant", "content": "running", "tool_calls": [
                    {"id": "c1", "type": "function",
                     "function": {"name": "exec", "arguments": "{\"command\":\"ls\"}"}},
                ]},
                {"role": "tool", "tool_call_id": "c1", "content": "a b"},
            ],
        })
    );
}

#[test]
fn http_failures_are_classified() {
    assert_eq!(
        classify(429, "", Some(2000)),
        ProviderError::RateLimited {
            retry_after_ms: Some(2000)
        }
    );
    assert!(matches!(
        classify(401, "bad key", None),
        ProviderError::Auth(_)
    ));
    assert!(matches!(classify(402, "", None), ProviderError::Billing(_)));
    assert!(matches!(
        classify(
            400,
            "{\"error\":{\"code\":\"context_length_exceeded\"}}",
            None
        ),
        ProviderError::ContextOverflow(_)
    ));
    assert!(matches!(
        classify(400, "bad", None),
        ProviderError::BadRequest(_)
    ));
    assert!(matches!(
        classify(503, "", None),
        ProviderError::Unavailable(_)
    ));
}

#[test]
fn fragmented_native_tool_calls_are_assembled() {
    let mut a = Assembly::default();
    let chunks = [
        json!({"choices":[{"delta":{"tool_calls":[{"index":0,"id":"c1","function":{"name":"exec","arguments":"{\"comm"}}]}}]}),
        json!({"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"and\":\"ls\"}"}}]}}]}),
        json!({"choices":[{"delta":{},"finish_reason":"tool_calls"}]}),
        json!({"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":3,"prompt_tokens_details":{"cached_tokens":4}}}),
    ];
    for c in &chunks {
        assert!(a.absorb(c).is_empty());
    }
    let out = a.finish();
    assert_eq!(
        out[0],
        ProviderEvent::ToolCall(ToolCall {
            id: "c1".into(),
            name: "exec".into(),
            arguments: json!({"command":"ls"})
        })
    );
    assert_eq!(
        out[1],
        ProviderEvent::Usage(Usage {
            input: 6,
            output: 3,
            cache_read: 4,
            cache_write: 0,
            context: 0,
        })
    );
    assert_eq!(out[2], ProviderEvent::Done(StopReason::ToolUse));
}

#[test]
fn content_that_is_a_tool_call_is_held_back_and_converted() {
    let mut a = Assembly::default();
    let first =
        a.absorb(&json!({"choices":[{"delta":{"content":"<tools>\n{\"name\": \"read\", "}}]}));
    let second = a.absorb(&json!({"choices":[{"delta":{"content":"\"arguments\": {\"path\": \"a\"}}\n</tools>"},"finish_reason":"stop"}]}));
    assert!(
        first.is_empty() && second.is_empty(),
        "not streamed as text"
    );
    let out = a.finish();
    assert!(
        matches!(&out[0], ProviderEvent::ToolCall(c) if c.name == "read" && c.arguments == json!({"path":"a"}))
    );
    assert_eq!(out.last(), Some(&ProviderEvent::Done(StopReason::ToolUse)));
}
