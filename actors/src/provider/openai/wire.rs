//! The OpenAI chat-completions wire format: the request body serialized
//! straight from the request, the stream's chunks assembled into
//! `ProviderEvent`s (native and embedded tool calls, a non-streaming
//! answer), per-server quirks, and failures classified.

use std::collections::BTreeMap;

use serde::ser::{SerializeMap, SerializeSeq, Serializer};
use serde::Serialize;
use serde_json::{json, Map, Value};

use super::super::embedded::extract_tool_calls;
use super::super::*;

/// Which `max_tokens` field the server understands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MaxTokensField {
    MaxTokens,
    MaxCompletionTokens,
}

/// Per-server quirks, detected from the base URL and overridable per model
/// (`compat: {supportsStore, maxTokensField, supportsStrictMode}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Compat {
    pub supports_store: bool,
    pub max_tokens_field: MaxTokensField,
    pub supports_strict_mode: bool,
}

/// OpenAI itself takes `store` and `max_completion_tokens`; everything else
/// (OpenRouter, vLLM, Ollama, LM Studio, unknown proxies) gets the widely
/// accepted `max_tokens` and no `store` (vLLM rejects `store`, seed 003).
pub fn detect_compat(base_url: &str) -> Compat {
    let openai = base_url.contains("api.openai.com");
    Compat {
        supports_store: openai,
        max_tokens_field: if openai {
            MaxTokensField::MaxCompletionTokens
        } else {
            MaxTokensField::MaxTokens
        },
        supports_strict_mode: openai,
    }
}

/// Applies a model's `compat` object over the detected flags.
pub fn apply_overrides(mut c: Compat, overrides: Option<&Value>) -> Compat {
    let Some(o) = overrides else { return c };
    if let Some(b) = o.get("supportsStore").and_then(Value::as_bool) {
        c.supports_store = b;
    }
    if let Some(b) = o.get("supportsStrictMode").and_then(Value::as_bool) {
        c.supports_strict_mode = b;
    }
    match o.get("maxTokensField").and_then(Value::as_str) {
        Some("max_tokens") => c.max_tokens_field = MaxTokensField::MaxTokens,
        Some("max_completion_tokens") => c.max_tokens_field = MaxTokensField::MaxCompletionTokens,
        _ => {}
    }
    c
}

/// The request body for a completion, serialized straight from the
/// request's messages (no intermediate JSON tree: with a long session that
/// tree was a deep copy of the whole history per model call). The bytes are
/// shared by every retry of the call.
pub fn build_body(req: &CompletionRequest, compat: Compat) -> Result<bytes::Bytes, ProviderError> {
    let (max_tokens, max_completion_tokens) = match compat.max_tokens_field {
        MaxTokensField::MaxTokens => (req.max_tokens, None),
        MaxTokensField::MaxCompletionTokens => (None, req.max_tokens),
    };
    let body = Body {
        model: &req.model,
        messages: WireMessages(req),
        stream: true,
        stream_options: StreamOptions {
            include_usage: true,
        },
        tools: (!req.tools.is_empty()).then(|| WireTools {
            tools: &req.tools,
            strict: compat.supports_strict_mode,
        }),
        max_tokens,
        max_completion_tokens,
        store: compat.supports_store.then_some(false),
    };
    serde_json::to_vec(&body)
        .map(bytes::Bytes::from)
        .map_err(|e| ProviderError::BadRequest(format!("cannot encode the request: {e}")))
}

#[derive(Serialize)]
struct Body<'a> {
    model: &'a str,
    messages: WireMessages<'a>,
    stream: bool,
    stream_options: StreamOptions,
    #[serde(skip_serializing_if = "Option::is_none")]
    tools: Option<WireTools<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_completion_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    store: Option<bool>,
}

#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

/// The system prompt, then every message in chat-completions form.
struct WireMessages<'a>(&'a CompletionRequest);

impl Serialize for WireMessages<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let req = self.0;
        let system = usize::from(!req.system.is_empty());
        let mut seq = s.serialize_seq(None)?;
        if system == 1 {
            seq.serialize_element(&TextMessage {
                role: "system",
                content: &req.system,
            })?;
        }
        // A tool message holds text only: the images a tool returned
        // follow the run of tool results, as one user message.
        let mut pending: Vec<&ChatMessage> = Vec::new();
        for m in req.messages.iter() {
            if m.role != MessageRole::Tool && !pending.is_empty() {
                seq.serialize_element(&ToolImages(&pending))?;
                pending.clear();
            }
            seq.serialize_element(&WireMessage(m))?;
            if m.role == MessageRole::Tool && m.loaded_images().next().is_some() {
                pending.push(m);
            }
        }
        if !pending.is_empty() {
            seq.serialize_element(&ToolImages(&pending))?;
        }
        seq.end()
    }
}

#[derive(Serialize)]
struct TextMessage<'a> {
    role: &'static str,
    content: &'a str,
}

struct WireMessage<'a>(&'a ChatMessage);

impl Serialize for WireMessage<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let m = self.0;
        match m.role {
            MessageRole::User if m.loaded_images().next().is_none() => TextMessage {
                role: "user",
                content: &m.text,
            }
            .serialize(s),
            MessageRole::User => {
                let mut map = s.serialize_map(Some(2))?;
                map.serialize_entry("role", "user")?;
                map.serialize_entry("content", &UserParts(m))?;
                map.end()
            }
            MessageRole::Tool => {
                let mut map = s.serialize_map(Some(3))?;
                map.serialize_entry("role", "tool")?;
                map.serialize_entry("tool_call_id", m.tool_call_id.as_deref().unwrap_or(""))?;
                map.serialize_entry("content", &m.text)?;
                map.end()
            }
            MessageRole::Assistant => {
                let calls = !m.tool_calls.is_empty();
                let mut map = s.serialize_map(Some(2 + usize::from(calls)))?;
                map.serialize_entry("role", "assistant")?;
                map.serialize_entry("content", &m.text)?;
                if calls {
                    map.serialize_entry("tool_calls", &WireCalls(&m.tool_calls))?;
                }
                map.end()
            }
        }
    }
}

/// The images of tool results, as the user message after them.
struct ToolImages<'a>(&'a [&'a ChatMessage]);

impl Serialize for ToolImages<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut parts = Vec::new();
        for m in self.0 {
            let id = m.tool_call_id.as_deref().unwrap_or("");
            parts.push(
                json!({ "type": "text", "text": format!("Image(s) returned by tool call {id}:") }),
            );
            for img in m.loaded_images() {
                let url = format!("data:{};base64,{}", img.mime_type, img.data);
                parts.push(json!({ "type": "image_url", "image_url": { "url": url } }));
            }
        }
        let mut map = s.serialize_map(Some(2))?;
        map.serialize_entry("role", "user")?;
        map.serialize_entry("content", &parts)?;
        map.end()
    }
}

/// A user message with images: a text part, then one `image_url` part each.
struct UserParts<'a>(&'a ChatMessage);

impl Serialize for UserParts<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let m = self.0;
        let mut seq = s.serialize_seq(Some(1 + m.loaded_images().count()))?;
        seq.serialize_element(&json!({ "type": "text", "text": m.text }))?;
        for img in m.loaded_images() {
            let url = format!("data:{};base64,{}", img.mime_type, img.data);
            seq.serialize_element(&json!({ "type": "image_url", "image_url": { "url": url } }))?;
        }
        seq.end()
    }
}

struct WireCalls<'a>(&'a [ToolCall]);

impl Serialize for WireCalls<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for c in self.0 {
            seq.serialize_element(&json!({
                "id": c.id, "type": "function",
                "function": { "name": c.name, "arguments": c.arguments.to_string() },
            }))?;
        }
        seq.end()
    }
}

/// Tool specs as functions (`strict: false` where the endpoint knows it).
struct WireTools<'a> {
    tools: &'a [ToolSpec],
    strict: bool,
}

impl Serialize for WireTools<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Function<'a> {
            name: &'a str,
            description: &'a str,
            parameters: &'a Value,
            #[serde(skip_serializing_if = "Option::is_none")]
            strict: Option<bool>,
        }
        #[derive(Serialize)]
        struct Tool<'a> {
            r#type: &'static str,
            function: Function<'a>,
        }
        let mut seq = s.serialize_seq(Some(self.tools.len()))?;
        for t in self.tools {
            seq.serialize_element(&Tool {
                r#type: "function",
                function: Function {
                    name: &t.name,
                    description: &t.description,
                    parameters: &t.parameters,
                    strict: self.strict.then_some(false),
                },
            })?;
        }
        seq.end()
    }
}

/// Accumulates one streamed answer.
#[derive(Debug, Default)]
pub(super) struct Assembly {
    content: String,
    /// index -> (id, name, argument fragments)
    calls: BTreeMap<u64, (String, String, String)>,
    pub(super) finish: Option<String>,
    usage: Option<Usage>,
    /// Content that looks like embedded tool calls is held back, not streamed.
    holding: bool,
}

fn thinking(t: &str, out: &mut Vec<ProviderEvent>) {
    if !t.is_empty() {
        out.push(ProviderEvent::ThinkingDelta(t.to_string()));
    }
}

/// A streamed chunk as most are (text, reasoning, a finish reason), read
/// without building a JSON tree: its strings are borrowed from the line.
/// The rest of a chunk is only noticed, and such a chunk is read again as
/// `Value` (`Assembly::absorb_text`).
#[derive(serde::Deserialize)]
pub(super) struct TextChunk<'a> {
    #[serde(borrow, default)]
    choices: Vec<TextChoice<'a>>,
    #[serde(default)]
    usage: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    error: Option<serde::de::IgnoredAny>,
}

#[derive(serde::Deserialize)]
struct TextChoice<'a> {
    #[serde(borrow, default)]
    delta: Option<TextDelta<'a>>,
    #[serde(default)]
    message: Option<serde::de::IgnoredAny>,
    #[serde(borrow, default)]
    finish_reason: Option<std::borrow::Cow<'a, str>>,
}

#[derive(serde::Deserialize)]
struct TextDelta<'a> {
    #[serde(borrow, default)]
    content: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow, default)]
    reasoning_content: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow, default)]
    reasoning: Option<std::borrow::Cow<'a, str>>,
    #[serde(default)]
    tool_calls: Option<serde::de::IgnoredAny>,
}

fn usage_of(v: &Value) -> Option<Usage> {
    let u = v.get("usage")?.as_object()?;
    let n = |k: &str| u.get(k).and_then(Value::as_u64).unwrap_or(0);
    let cached = u
        .get("prompt_tokens_details")
        .and_then(|d| d.get("cached_tokens"))
        .and_then(Value::as_u64)
        .unwrap_or(0);
    Some(Usage {
        input: n("prompt_tokens").saturating_sub(cached),
        output: n("completion_tokens"),
        cache_read: cached,
        cache_write: 0,
        context: 0,
    })
}

fn parse_args(raw: &str) -> Value {
    if raw.trim().is_empty() {
        return Value::Object(Map::new());
    }
    serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.to_string()))
}

impl Assembly {
    /// Folds one chunk (streamed `delta` or whole `message`) in; returns the
    /// events to emit now.
    pub(super) fn absorb(&mut self, chunk: &Value) -> Vec<ProviderEvent> {
        let mut out = Vec::new();
        if let Some(u) = usage_of(chunk) {
            self.usage = Some(u);
        }
        let Some(choice) = chunk.get("choices").and_then(|c| c.get(0)) else {
            return out;
        };
        let delta = choice
            .get("delta")
            .or_else(|| choice.get("message"))
            .unwrap_or(&Value::Null);
        for key in ["reasoning_content", "reasoning"] {
            if let Some(t) = delta.get(key).and_then(Value::as_str) {
                thinking(t, &mut out);
            }
        }
        if let Some(t) = delta.get("content").and_then(Value::as_str) {
            self.text(t, &mut out);
        }
        if let Some(calls) = delta.get("tool_calls").and_then(Value::as_array) {
            for (pos, c) in calls.iter().enumerate() {
                let index = c.get("index").and_then(Value::as_u64).unwrap_or(pos as u64);
                let entry = self.calls.entry(index).or_default();
                if let Some(id) = c.get("id").and_then(Value::as_str) {
                    entry.0 = id.to_string();
                }
                if let Some(f) = c.get("function") {
                    if let Some(n) = f.get("name").and_then(Value::as_str) {
                        entry.1.push_str(n);
                    }
                    match f.get("arguments") {
                        Some(Value::String(a)) => entry.2.push_str(a),
                        Some(v @ Value::Object(_)) => entry.2.push_str(&v.to_string()),
                        _ => {}
                    }
                }
            }
        }
        if let Some(f) = choice.get("finish_reason").and_then(Value::as_str) {
            self.finish = Some(f.to_string());
        }
        out
    }

    /// Streamed text: held back while it looks like embedded tool calls.
    fn text(&mut self, t: &str, out: &mut Vec<ProviderEvent>) {
        if t.is_empty() {
            return;
        }
        let was_empty = self.content.trim().is_empty();
        self.content.push_str(t);
        if was_empty {
            let start = self.content.trim_start();
            self.holding = start.starts_with('{') || start.starts_with("<tools>");
        }
        if !self.holding {
            out.push(ProviderEvent::TextDelta(t.to_string()));
        }
    }

    /// Folds in a chunk read the quick way (`TextChunk`): the same as
    /// `absorb` for a chunk of text, reasoning and a finish reason. None:
    /// the chunk holds more (tool calls, usage, an error, a whole message,
    /// several choices), read it as `Value`.
    pub(super) fn absorb_text(&mut self, chunk: &TextChunk) -> Option<Vec<ProviderEvent>> {
        if chunk.usage.is_some() || chunk.error.is_some() || chunk.choices.len() > 1 {
            return None;
        }
        let mut out = Vec::new();
        let Some(choice) = chunk.choices.first() else {
            return Some(out);
        };
        if choice.message.is_some() {
            return None;
        }
        if let Some(d) = &choice.delta {
            if d.tool_calls.is_some() {
                return None;
            }
            for t in [&d.reasoning_content, &d.reasoning].into_iter().flatten() {
                thinking(t, &mut out);
            }
            if let Some(t) = &d.content {
                self.text(t, &mut out);
            }
        }
        if let Some(f) = &choice.finish_reason {
            self.finish = Some(f.to_string());
        }
        Some(out)
    }

    /// The closing events: held-back text, tool calls, usage, Done.
    pub(super) fn finish(self) -> Vec<ProviderEvent> {
        let mut out = Vec::new();
        let mut calls: Vec<ToolCall> = self
            .calls
            .into_values()
            .enumerate()
            .map(|(i, (id, name, args))| ToolCall {
                id: if id.is_empty() {
                    format!("call_{i}")
                } else {
                    id
                },
                name,
                arguments: parse_args(&args),
            })
            .collect();
        if self.holding || calls.is_empty() {
            let (text, embedded) = extract_tool_calls(&self.content);
            if self.holding && !text.is_empty() {
                out.push(ProviderEvent::TextDelta(text));
            }
            let base = calls.len();
            calls.extend(embedded.into_iter().enumerate().map(|(i, c)| ToolCall {
                id: format!("call_embedded_{}", base + i),
                name: c.name,
                arguments: c.arguments,
            }));
        }
        let stop = if !calls.is_empty() {
            StopReason::ToolUse
        } else if self.finish.as_deref() == Some("length") {
            StopReason::Length
        } else {
            StopReason::Stop
        };
        out.extend(calls.into_iter().map(ProviderEvent::ToolCall));
        if let Some(u) = self.usage {
            out.push(ProviderEvent::Usage(u));
        }
        out.push(ProviderEvent::Done(stop));
        out
    }
}

/// Maps an HTTP failure to an error kind.
pub fn classify(status: u16, body: &str, retry_after: Option<u64>) -> ProviderError {
    let lower = body.to_ascii_lowercase();
    let short: String = body.chars().take(300).collect();
    if status != 429 && super::overflow::is_context_overflow(body) {
        return ProviderError::ContextOverflow(short);
    }
    match status {
        429 if lower.contains("insufficient_quota") || lower.contains("billing") => {
            ProviderError::Billing(short)
        }
        429 => ProviderError::RateLimited {
            retry_after_ms: retry_after,
        },
        401 | 403 => ProviderError::Auth(short),
        402 => ProviderError::Billing(short),
        413 => ProviderError::ContextOverflow(short),
        400..=499 => ProviderError::BadRequest(format!("HTTP {status}: {short}")),
        _ => ProviderError::Unavailable(format!("HTTP {status}: {short}")),
    }
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
