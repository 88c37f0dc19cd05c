//! The offline model's script: what it answers (and streams, calls or
//! fails with) for a request, decided before anything streams.

use std::time::Duration;

use serde_json::{json, Value};

use super::super::*;

/// How much of a tool result the offline model repeats (the rest is
/// counted, never silently dropped).
const RESULT_CHARS: usize = 4_000;

/// What the offline model will do for a request.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub events: Vec<ProviderEvent>,
    /// Delay before each event.
    pub delay: Duration,
}

fn words(text: &str) -> Vec<ProviderEvent> {
    let mut out = Vec::new();
    let mut current = String::new();
    for c in text.chars() {
        current.push(c);
        if c == ' ' {
            out.push(ProviderEvent::TextDelta(std::mem::take(&mut current)));
        }
    }
    if !current.is_empty() {
        out.push(ProviderEvent::TextDelta(current));
    }
    out
}

fn error_kind(kind: &str) -> ProviderError {
    let msg = "offline provider scripted error".to_string();
    match kind {
        "rate_limit" => ProviderError::RateLimited {
            retry_after_ms: Some(10),
        },
        "auth" => ProviderError::Auth(msg),
        "billing" => ProviderError::Billing(msg),
        "overflow" => ProviderError::ContextOverflow(msg),
        "bad_request" => ProviderError::BadRequest(msg),
        _ => ProviderError::Unavailable(msg),
    }
}

fn estimate_tokens(chars: usize) -> u64 {
    chars.div_ceil(4) as u64
}

/// The deterministic plan for a request (pure: the actor only plays it out).
pub fn plan(req: &CompletionRequest) -> Plan {
    let input_chars = req.system.len() + req.messages.iter().map(|m| m.text.len()).sum::<usize>();
    let usage = |output: usize| Usage {
        input: estimate_tokens(input_chars),
        output: output as u64,
        ..Usage::default()
    };
    if let Some(text) = tool_summary(req) {
        let mut events = words(&text);
        let n = events.len();
        events.push(ProviderEvent::Usage(usage(n)));
        events.push(ProviderEvent::Done(StopReason::Stop));
        return Plan {
            events,
            delay: Duration::ZERO,
        };
    }
    // It reads a message as written: an untrusted-content block's text is
    // read (and obeyed) like any other, so tests prove the gateway, not the
    // model, keeps a stranger's turn in bounds.
    let last_user_text = req
        .messages
        .iter()
        .rev()
        .find(|m| m.role == MessageRole::User)
        .map(|m| crate::trust::unwrap(&m.text).into_owned())
        .unwrap_or_default();
    let last_user = crate::inbound::msg_context::strip_envelope(&last_user_text);
    let prior_calls = req
        .messages
        .iter()
        .map(|m| m.tool_calls.len())
        .sum::<usize>();
    let script = match Script::read(last_user, prior_calls) {
        Ok(s) => s,
        Err(failed) => return failed,
    };
    let delay = script.delay;
    let mut events = script.events(req.messages.len());
    // Reasoning counts toward output usage, as with real providers.
    let streamed = events
        .iter()
        .filter(|e| !matches!(e, ProviderEvent::ToolCall(_)))
        .count();
    let stop = if streamed == events.len() {
        StopReason::Stop
    } else {
        StopReason::ToolUse
    };
    events.push(ProviderEvent::Usage(usage(streamed)));
    events.push(ProviderEvent::Done(stop));
    Plan { events, delay }
}

/// The tool results since the last assistant message, summarised (None
/// when the request does not end with any).
fn tool_summary(req: &CompletionRequest) -> Option<String> {
    let trailing_results: Vec<&ChatMessage> = req
        .messages
        .iter()
        .rev()
        .take_while(|m| m.role == MessageRole::Tool)
        .map(|m| &**m)
        .collect();
    if trailing_results.is_empty() {
        return None;
    }
    let names: std::collections::HashMap<&str, &str> = req
        .messages
        .iter()
        .flat_map(|m| m.tool_calls.iter())
        .map(|c| (c.id.as_str(), c.name.as_str()))
        .collect();
    let lines: Vec<String> = trailing_results
        .iter()
        .rev()
        .map(|r| {
            let id = r.tool_call_id.as_deref().unwrap_or("");
            let name = names.get(id).copied().unwrap_or("tool");
            let body: String = r.text.chars().take(RESULT_CHARS).collect();
            let more = r.text.chars().count().saturating_sub(RESULT_CHARS);
            match more {
                0 => format!("Tool {name} returned: {body}"),
                n => format!("Tool {name} returned: {body}… ({n} more characters)"),
            }
        })
        .collect();
    Some(lines.join("\n"))
}

/// What the last user message asks the offline model for: its `@`
/// directives and the rest of its text.
struct Script {
    delay: Duration,
    calls: Vec<ToolCall>,
    tokens: Option<usize>,
    thinking: String,
    text: String,
    wants_context: bool,
}

impl Script {
    /// The message's lines read; `@error <kind>` is the plan itself.
    fn read(message: &str, prior_calls: usize) -> Result<Script, Plan> {
        let mut s = Script {
            delay: Duration::ZERO,
            calls: Vec::new(),
            tokens: None,
            thinking: String::new(),
            text: String::new(),
            wants_context: message.lines().any(|l| l.trim() == "@context"),
        };
        let mut text_lines = Vec::new();
        for line in message.lines() {
            let trimmed = line.trim();
            let mut parts = trimmed.splitn(3, ' ');
            match parts.next() {
                Some("@delay") => {
                    if let Some(ms) = parts.next().and_then(|v| v.parse().ok()) {
                        s.delay = Duration::from_millis(ms);
                    }
                }
                Some("@tokens") => s.tokens = parts.next().and_then(|v| v.parse::<usize>().ok()),
                Some("@think") => {
                    if !s.thinking.is_empty() {
                        s.thinking.push('\n');
                    }
                    s.thinking.push_str(trimmed["@think".len()..].trim());
                }
                Some("@error") => {
                    let kind = parts.next().unwrap_or("unavailable");
                    return Err(Plan {
                        events: vec![ProviderEvent::Error(error_kind(kind))],
                        delay: s.delay,
                    });
                }
                Some("@tool") => {
                    let id = format!("offline_{}", prior_calls + s.calls.len() + 1);
                    s.calls.push(tool_call(id, parts.next(), parts.next()));
                }
                _ => text_lines.push(line),
            }
        }
        s.text = text_lines.join("\n").trim().to_string();
        Ok(s)
    }

    /// The streamed thinking and text, then the tool calls.
    fn events(self, messages: usize) -> Vec<ProviderEvent> {
        let reply = match (self.tokens, self.calls.is_empty()) {
            _ if self.wants_context => format!("context: {messages} messages"),
            (Some(n), _) => (1..=n)
                .map(|i| format!("w{i}"))
                .collect::<Vec<_>>()
                .join(" "),
            (None, true) => format!("You said: {}", self.text),
            (None, false) => self.text,
        };
        let mut events: Vec<ProviderEvent> = words(&self.thinking)
            .into_iter()
            .map(|e| match e {
                ProviderEvent::TextDelta(t) => ProviderEvent::ThinkingDelta(t),
                other => other,
            })
            .collect();
        events.extend(words(&reply));
        events.extend(self.calls.into_iter().map(ProviderEvent::ToolCall));
        events
    }
}

/// `@tool <name> <json>`: arguments that are not a JSON object are given
/// as `{"input": ...}`.
fn tool_call(id: String, name: Option<&str>, raw: Option<&str>) -> ToolCall {
    let raw = raw.unwrap_or("").trim();
    let arguments = match serde_json::from_str::<Value>(raw) {
        Ok(v @ Value::Object(_)) => v,
        _ if raw.is_empty() => json!({}),
        _ => json!({ "input": raw }),
    };
    ToolCall {
        id,
        name: name.unwrap_or("").to_string(),
        arguments,
    }
}

#[cfg(test)]
mod tests {
    use super::super::OfflineProvider;
    use super::*;
    use actix::Actor;
    use std::sync::atomic::Ordering;

    fn req(messages: Vec<ChatMessage>) -> CompletionRequest {
        CompletionRequest {
            model: "echo".into(),
            system: "sys".into(),
            messages: messages.into_iter().map(Into::into).collect(),
            ..Default::default()
        }
    }

    fn text_of(events: &[ProviderEvent]) -> String {
        events
            .iter()
            .filter_map(|e| match e {
                ProviderEvent::TextDelta(t) => Some(t.as_str()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn think_lines_are_reasoned_before_the_answer() {
        let p = plan(&req(vec![ChatMessage::user(
            "@think first look\n@think then answer\nhi",
        )]));
        let thinking: String = p
            .events
            .iter()
            .filter_map(|e| match e {
                ProviderEvent::ThinkingDelta(t) => Some(t.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(thinking, "first look\nthen answer");
        assert!(matches!(p.events[0], ProviderEvent::ThinkingDelta(_)));
        assert_eq!(text_of(&p.events), "You said: hi");
        assert!(matches!(
            p.events[p.events.len() - 2],
            ProviderEvent::Usage(Usage { output: 6, .. })
        ));
    }

    #[test]
    fn plain_messages_are_echoed_word_by_word() {
        let p = plan(&req(vec![ChatMessage::user("hello there world")]));
        assert_eq!(text_of(&p.events), "You said: hello there world");
        let deltas = p
            .events
            .iter()
            .filter(|e| matches!(e, ProviderEvent::TextDelta(_)))
            .count();
        assert_eq!(deltas, 5);
        assert_eq!(
            p.events.last(),
            Some(&ProviderEvent::Done(StopReason::Stop))
        );
        assert!(matches!(
            p.events[p.events.len() - 2],
            ProviderEvent::Usage(Usage { output: 5, .. })
        ));
    }

    #[test]
    fn tool_lines_become_tool_calls_and_results_are_summarised() {
        let msg = "let me look\n@tool exec {\"command\":\"ls\"}\n@tool read not-json\n@delay 5";
        let p = plan(&req(vec![ChatMessage::user(msg)]));
        assert_eq!(p.delay, Duration::from_millis(5));
        assert_eq!(text_of(&p.events), "let me look");
        let calls: Vec<&ToolCall> = p
            .events
            .iter()
            .filter_map(|e| match e {
                ProviderEvent::ToolCall(c) => Some(c),
                _ => None,
            })
            .collect();
        assert_eq!(calls.len(), 2);
        assert_eq!(
            (calls[0].id.as_str(), calls[0].name.as_str()),
            ("offline_1", "exec")
        );
        assert_eq!(calls[0].arguments, json!({"command": "ls"}));
        assert_eq!(calls[1].arguments, json!({"input": "not-json"}));
        assert_eq!(
            p.events.last(),
            Some(&ProviderEvent::Done(StopReason::ToolUse))
        );

        let assistant = ChatMessage {
            role: MessageRole::Assistant,
            text: "let me look".into(),
            tool_calls: calls.into_iter().cloned().collect(),
            tool_call_id: None,
            is_error: false,
            images: Vec::new(),
        };
        let follow = plan(&req(vec![
            ChatMessage::user(msg),
            assistant,
            ChatMessage::tool_result("offline_1", "a.txt b.txt", false),
            ChatMessage::tool_result("offline_2", "no such file", true),
        ]));
        assert_eq!(
            text_of(&follow.events),
            "Tool exec returned: a.txt b.txt\nTool read returned: no such file"
        );
    }

    #[test]
    fn a_long_tool_result_is_quoted_to_its_bound_and_the_rest_counted() {
        let call = ToolCall {
            id: "offline_1".into(),
            name: "read".into(),
            arguments: json!({}),
        };
        let assistant = ChatMessage {
            role: MessageRole::Assistant,
            text: String::new(),
            tool_calls: vec![call],
            tool_call_id: None,
            is_error: false,
            images: Vec::new(),
        };
        let long = "x".repeat(RESULT_CHARS + 250);
        let follow = plan(&req(vec![
            ChatMessage::user("@tool read {}"),
            assistant,
            ChatMessage::tool_result("offline_1", &long, false),
        ]));
        let said = text_of(&follow.events);
        assert!(said.starts_with("Tool read returned: xxx"), "{said}");
        assert!(said.ends_with("\u{2026} (250 more characters)"), "{said}");
        assert_eq!(said.matches('x').count(), RESULT_CHARS);
    }

    #[test]
    fn token_counts_and_scripted_errors() {
        let p = plan(&req(vec![ChatMessage::user("@tokens 3")]));
        assert_eq!(text_of(&p.events), "w1 w2 w3");
        let p = plan(&req(vec![ChatMessage::user("@error rate_limit")]));
        assert!(matches!(
            p.events[..],
            [ProviderEvent::Error(ProviderError::RateLimited { .. })]
        ));
    }

    #[actix::test]
    async fn streams_in_order_and_stops_when_the_reader_drops() {
        let provider = OfflineProvider::new();
        let active = provider.active();
        let addr = provider.start();
        let mut rx = addr
            .send(StreamCompletion {
                request: req(vec![ChatMessage::user("@tokens 4")]),
            })
            .await
            .unwrap();
        let mut got = Vec::new();
        while let Some(e) = rx.recv().await {
            got.push(e);
        }
        assert_eq!(text_of(&got), "w1 w2 w3 w4");
        assert_eq!(got.last(), Some(&ProviderEvent::Done(StopReason::Stop)));

        let mut rx = addr
            .send(StreamCompletion {
                request: req(vec![ChatMessage::user("@tokens 1000\n@delay 20")]),
            })
            .await
            .unwrap();
        assert!(matches!(rx.recv().await, Some(ProviderEvent::TextDelta(_))));
        assert_eq!(active.load(Ordering::Relaxed), 1);
        drop(rx); // abort
        for _ in 0..100 {
            if active.load(Ordering::Relaxed) == 0 {
                break;
            }
            actix::clock::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(
            active.load(Ordering::Relaxed),
            0,
            "the completion was cancelled"
        );
    }
}
