//! The Anthropic Messages wire format: the request body, the stream's
//! events folded into `ProviderEvent`s, and failures classified.

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use super::super::*;
use super::DEFAULT_MAX_TOKENS;

/// An image as a base64 `image` block.
fn image_block(img: &Image) -> Value {
    json!({ "type": "image", "source": {
        "type": "base64", "media_type": img.mime_type, "data": img.data } })
}

/// A user message: its text, then its images.
fn user_message(m: &ChatMessage) -> Value {
    let mut content = vec![json!({ "type": "text", "text": m.text })];
    content.extend(m.loaded_images().map(image_block));
    json!({ "role": "user", "content": content })
}

/// An assistant message: its text (when any), then its tool calls.
fn assistant_message(m: &ChatMessage) -> Value {
    let mut content = Vec::new();
    if !m.text.is_empty() {
        content.push(json!({ "type": "text", "text": m.text }));
    }
    for c in &m.tool_calls {
        content
            .push(json!({ "type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments }));
    }
    json!({ "role": "assistant", "content": content })
}

/// A tool's result as a `tool_result` block; images it returned go inside.
fn tool_result(m: &ChatMessage) -> Value {
    let content = match m.loaded_images().next() {
        None => json!(m.text),
        Some(_) => {
            let mut blocks = vec![json!({ "type": "text", "text": m.text })];
            blocks.extend(m.loaded_images().map(image_block));
            json!(blocks)
        }
    };
    json!({
        "type": "tool_result",
        "tool_use_id": m.tool_call_id.clone().unwrap_or_default(),
        "content": content,
        "is_error": m.is_error,
    })
}

/// Adds a tool result to the user message of results before it, or
/// starts one.
fn push_tool_result(messages: &mut Vec<Value>, block: Value) {
    let merge = messages.last().is_some_and(|last| {
        last["role"] == "user"
            && last["content"]
                .as_array()
                .is_some_and(|c| c.iter().all(|b| b["type"] == "tool_result"))
    });
    match messages.last_mut() {
        Some(last) if merge => {
            if let Some(arr) = last["content"].as_array_mut() {
                arr.push(block);
            }
        }
        _ => messages.push(json!({ "role": "user", "content": [block] })),
    }
}

/// The request body. Consecutive tool results become one user message of
/// `tool_result` blocks, as the API requires.
pub fn build_body(req: &CompletionRequest) -> Value {
    let mut messages: Vec<Value> = Vec::new();
    for m in &req.messages {
        match m.role {
            MessageRole::User => messages.push(user_message(m)),
            MessageRole::Assistant => messages.push(assistant_message(m)),
            MessageRole::Tool => push_tool_result(&mut messages, tool_result(m)),
        }
    }
    let max_tokens = req.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS);
    let mut body = json!({
        "model": req.model,
        "max_tokens": max_tokens,
        "messages": messages,
        "stream": true,
    });
    if !req.system.is_empty() {
        body["system"] = json!([{ "type": "text", "text": &*req.system, "cache_control": { "type": "ephemeral" } }]);
    }
    if !req.tools.is_empty() {
        body["tools"] = req
            .tools
            .iter()
            .map(|t| json!({ "name": t.name, "description": t.description, "input_schema": t.parameters }))
            .collect();
    }
    if let Some(budget) = req.thinking_budget {
        body["thinking"] = json!({ "type": "enabled", "budget_tokens": budget });
        // The API requires max_tokens > budget_tokens.
        if max_tokens <= budget {
            body["max_tokens"] = json!(budget + DEFAULT_MAX_TOKENS);
        }
    }
    body
}

/// Maps an HTTP failure (or an in-stream `error` event's type) to a kind.
pub fn classify(status: u16, body: &str, retry_after: Option<u64>) -> ProviderError {
    let lower = body.to_ascii_lowercase();
    let short: String = body.chars().take(300).collect();
    if lower.contains("credit balance") || lower.contains("billing") {
        return ProviderError::Billing(short);
    }
    if status != 429 && super::overflow::is_context_overflow(body) {
        return ProviderError::ContextOverflow(short);
    }
    match status {
        429 => ProviderError::RateLimited {
            retry_after_ms: retry_after,
        },
        401 | 403 => ProviderError::Auth(short),
        413 => ProviderError::ContextOverflow(short),
        400..=499 => ProviderError::BadRequest(format!("HTTP {status}: {short}")),
        _ => ProviderError::Unavailable(format!("HTTP {status}: {short}")),
    }
}

fn error_event(v: &Value) -> ProviderError {
    let kind = v["error"]["type"].as_str().unwrap_or("api_error");
    let msg = v["error"]["message"].as_str().unwrap_or("provider error");
    let status = match kind {
        "rate_limit_error" => 429,
        "authentication_error" | "permission_error" => 401,
        "invalid_request_error" => 400,
        _ => 529,
    };
    classify(status, &format!("{kind}: {msg}"), None)
}

/// Stream state: open content blocks by index.
#[derive(Debug, Default)]
pub(super) struct Blocks {
    /// index -> (tool id, tool name, partial JSON) for tool_use blocks.
    tools: BTreeMap<u64, (String, String, String)>,
    usage: Usage,
    stop: Option<StopReason>,
    pub(super) finished: bool,
}

impl Blocks {
    /// Folds one stream event (`kind`, its data `v`) in; returns the
    /// events to emit now.
    pub(super) fn absorb(
        &mut self,
        kind: &str,
        v: &Value,
    ) -> Result<Vec<ProviderEvent>, ProviderError> {
        let mut out = Vec::new();
        let index = || v["index"].as_u64().unwrap_or(0);
        match kind {
            "message_start" => self.started(&v["message"]["usage"]),
            "content_block_start" => self.block_start(index(), &v["content_block"], &mut out),
            "content_block_delta" => self.block_delta(index(), &v["delta"], &mut out),
            "content_block_stop" => out.extend(self.block_stop(index())?),
            "message_delta" => self.message_delta(v),
            "message_stop" => {
                self.finished = true;
                out.push(ProviderEvent::Usage(self.usage));
                out.push(ProviderEvent::Done(self.stop.unwrap_or(StopReason::Stop)));
            }
            "error" => return Err(error_event(v)),
            _ => {} // ping and future event types
        }
        Ok(out)
    }

    /// `message_start`: the usage so far (input and cache tokens).
    fn started(&mut self, u: &Value) {
        self.usage.input = u["input_tokens"].as_u64().unwrap_or(0);
        self.usage.cache_read = u["cache_read_input_tokens"].as_u64().unwrap_or(0);
        self.usage.cache_write = u["cache_creation_input_tokens"].as_u64().unwrap_or(0);
        self.usage.output = u["output_tokens"].as_u64().unwrap_or(0);
    }

    /// `content_block_start`: a tool call opens, or text starts (a block
    /// may open with some).
    fn block_start(&mut self, index: u64, block: &Value, out: &mut Vec<ProviderEvent>) {
        match block["type"].as_str() {
            Some("tool_use") => {
                let id = block["id"].as_str().unwrap_or("").to_string();
                let name = block["name"].as_str().unwrap_or("").to_string();
                self.tools.insert(index, (id, name, String::new()));
            }
            Some("text") => {
                if let Some(t) = block["text"].as_str().filter(|t| !t.is_empty()) {
                    out.push(ProviderEvent::TextDelta(t.to_string()));
                }
            }
            _ => {}
        }
    }

    /// `content_block_delta`: text and thinking go out, a tool call's JSON
    /// is gathered.
    fn block_delta(&mut self, index: u64, d: &Value, out: &mut Vec<ProviderEvent>) {
        let s = |k: &str| d[k].as_str().unwrap_or("").to_string();
        match d["type"].as_str() {
            Some("text_delta") => out.push(ProviderEvent::TextDelta(s("text"))),
            Some("thinking_delta") => out.push(ProviderEvent::ThinkingDelta(s("thinking"))),
            Some("input_json_delta") => {
                if let Some(t) = self.tools.get_mut(&index) {
                    t.2.push_str(d["partial_json"].as_str().unwrap_or(""));
                }
            }
            _ => {}
        }
    }

    /// `content_block_stop`: a tool call is whole (its input must be JSON).
    fn block_stop(&mut self, index: u64) -> Result<Option<ProviderEvent>, ProviderError> {
        let Some((id, name, json)) = self.tools.remove(&index) else {
            return Ok(None);
        };
        let arguments = if json.trim().is_empty() {
            Value::Object(Map::new())
        } else {
            serde_json::from_str(&json)
                .map_err(|e| ProviderError::Malformed(format!("tool_use input is not JSON: {e}")))?
        };
        Ok(Some(ProviderEvent::ToolCall(ToolCall {
            id,
            name,
            arguments,
        })))
    }

    /// `message_delta`: the output tokens and the stop reason.
    fn message_delta(&mut self, v: &Value) {
        if let Some(n) = v["usage"]["output_tokens"].as_u64() {
            self.usage.output = n;
        }
        self.stop = match v["delta"]["stop_reason"].as_str() {
            Some("tool_use") => Some(StopReason::ToolUse),
            Some("max_tokens") => Some(StopReason::Length),
            Some(_) => Some(StopReason::Stop),
            None => self.stop,
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn body_caches_the_system_prompt_merges_tool_results_and_budgets_thinking() {
        let call = ToolCall {
            id: "tu_1".into(),
            name: "exec".into(),
            arguments: json!({"command": "ls"}),
        };
        let req = CompletionRequest {
            model: "claude".into(),
            system: "stable prefix".into(),
            messages: vec![
                ChatMessage::user("list"),
                ChatMessage {
                    role: MessageRole::Assistant,
                    text: String::new(),
                    tool_calls: vec![
                        call.clone(),
                        ToolCall {
                            id: "tu_2".into(),
                            ..call
                        },
                    ],
                    tool_call_id: None,
                    is_error: false,
                    images: Vec::new(),
                },
                ChatMessage::tool_result("tu_1", "a b", false),
                ChatMessage::tool_result("tu_2", "boom", true),
            ]
            .into_iter()
            .map(Into::into)
            .collect(),
            tools: vec![ToolSpec {
                name: "exec".into(),
                description: "run".into(),
                parameters: json!({"type": "object"}),
            }]
            .into(),
            max_tokens: Some(1000),
            thinking_budget: thinking_budget("medium"),
            ..Default::default()
        };
        let b = build_body(&req);
        assert_eq!(
            b["system"][0]["cache_control"],
            json!({"type": "ephemeral"})
        );
        assert_eq!(
            b["messages"].as_array().unwrap().len(),
            3,
            "tool results merged into one user turn"
        );
        assert_eq!(
            b["messages"][2]["content"][1],
            json!({"type":"tool_result","tool_use_id":"tu_2","content":"boom","is_error":true})
        );
        assert_eq!(b["messages"][1]["content"][0]["type"], "tool_use");
        assert_eq!(b["tools"][0]["input_schema"], json!({"type": "object"}));
        assert_eq!(
            b["thinking"],
            json!({"type": "enabled", "budget_tokens": 8192})
        );
        assert!(b["max_tokens"].as_u64().unwrap() > 8192);
    }

    #[test]
    fn errors_are_classified() {
        assert_eq!(
            classify(429, "", Some(5)),
            ProviderError::RateLimited {
                retry_after_ms: Some(5)
            }
        );
        assert!(matches!(
            classify(
                400,
                "prompt is too long: 210000 tokens > 200000 maximum",
                None
            ),
            ProviderError::ContextOverflow(_)
        ));
        assert!(matches!(
            classify(400, "Your credit balance is too low", None),
            ProviderError::Billing(_)
        ));
        assert!(matches!(
            classify(529, "overloaded", None),
            ProviderError::Unavailable(_)
        ));
        assert!(matches!(
            error_event(
                &json!({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}})
            ),
            ProviderError::Unavailable(_)
        ));
    }
}
