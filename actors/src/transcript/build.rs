//! The entries a session writes, built in one place (OpenClaw's JSONL
//! shapes): a delivered message, a turn's input, a run's step, its usage,
//! a model change, an injected note. The session decides what to write;
//! this module says how it reads on disk.

use serde_json::{json, Value};

use super::{from_chat, mark_pending, message_entry, reply_key};
use crate::inbound::msg_context::Attached;
use crate::provider::{ChatMessage, MessageRole, Usage};

/// A message the session accepted, as its transcript entry names it.
pub struct Accepted<'a> {
    pub chat: &'a ChatMessage,
    pub timestamp_ms: u64,
    /// The originals, kept in the media store (OpenClaw's context names).
    pub media: &'a [Attached],
    /// What the model reads when it differs from the text (system events
    /// prepended, an envelope).
    pub body_for_agent: Option<String>,
    pub run_id: &'a str,
    pub message_id: &'a str,
    /// Out of the model context until its turn (not the run's input yet).
    pub pending: bool,
    /// A stranger's text: outside data to whoever reads it later.
    pub untrusted: bool,
}

/// A message's entry: the run's input when it starts one, else pending.
pub fn accepted(a: Accepted) -> Value {
    let mut user = from_chat(a.chat);
    user["timestamp"] = json!(a.timestamp_ms);
    if !a.media.is_empty() {
        let m = a.media;
        user["MediaPaths"] = json!(m.iter().map(|a| &a.path).collect::<Vec<_>>());
        user["MediaUrls"] = json!(m
            .iter()
            .map(|a| a.url.as_deref().unwrap_or(""))
            .collect::<Vec<_>>());
        user["MediaTypes"] = json!(m.iter().map(|a| &a.content_type).collect::<Vec<_>>());
        user["media"] = json!(m);
    }
    if let Some(body) = a.body_for_agent {
        user["bodyForAgent"] = json!(body);
    }
    let mut entry = message_entry(None, user);
    entry["runId"] = json!(a.run_id);
    entry["messageId"] = json!(a.message_id);
    if a.pending {
        mark_pending(&mut entry);
    }
    if a.untrusted {
        entry["message"]["untrusted"] = json!(true);
    }
    entry
}

/// A queued turn's input: the messages it delivers, coalesced.
pub fn turn_input(
    chat: &ChatMessage,
    body_for_agent: Option<String>,
    run_id: &str,
    delivers: &[&str],
) -> Value {
    let mut message = from_chat(chat);
    if let Some(body) = body_for_agent {
        message["bodyForAgent"] = json!(body);
    }
    let mut input = message_entry(None, message);
    input["runId"] = json!(run_id);
    input["messageId"] = json!(run_id);
    input["delivers"] = json!(delivers);
    input
}

/// A run's step: its message, the thinking before it (OpenClaw's shape: a
/// thinking block first), and a final reply's idempotency key.
pub fn step(message: &ChatMessage, thinking: &str, run_id: &str) -> Value {
    let mut entry = from_chat(message);
    if message.role == MessageRole::Assistant && message.tool_calls.is_empty() {
        entry["idempotencyKey"] = json!(reply_key(run_id));
    }
    if !thinking.is_empty() {
        if let Some(blocks) = entry.get_mut("content").and_then(|c| c.as_array_mut()) {
            blocks.insert(0, json!({ "type": "thinking", "thinking": thinking }));
        }
    }
    entry
}

/// The model a run chose, when it changed.
pub fn model_change(provider: &str, model_id: &str) -> Value {
    json!({ "type": "model_change", "id": ulid::Ulid::generate().to_string(),
        "timestamp": crate::now_ms(), "provider": provider, "modelId": model_id })
}

/// A run's tokens (`custom` entry of type `usage`).
pub fn usage(run_id: &str, provider: Option<&str>, model: Option<&str>, usage: &Usage) -> Value {
    let total = usage.input + usage.output + usage.cache_read + usage.cache_write;
    json!({
        "type": "custom", "customType": "usage", "id": ulid::Ulid::generate().to_string(),
        "timestamp": crate::now_ms(),
        "data": { "runId": run_id, "provider": provider, "model": model,
                  "input": usage.input, "output": usage.output, "cacheRead": usage.cache_read,
                  "cacheWrite": usage.cache_write, "totalTokens": total },
    })
}

/// A note injected as the assistant's (`chat.inject`), never a turn.
pub fn injected(text: &str) -> Value {
    let message = json!({ "role": "assistant", "content": [{ "type": "text", "text": text }],
                          "stopReason": "injected" });
    let mut entry = message_entry(None, message);
    entry["injected"] = Value::Bool(true);
    entry
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_accepted_message_reads_as_openclaw_writes_it() {
        let chat = ChatMessage::user("hi");
        let media = [Attached {
            id: "m1".into(),
            path: "/m/1".into(),
            content_type: "image/png".into(),
            name: None,
            size: 3,
            url: None,
        }];
        let e = accepted(Accepted {
            chat: &chat,
            timestamp_ms: 7,
            media: &media,
            body_for_agent: Some("[event]\n\nhi".into()),
            run_id: "r1",
            message_id: "m1",
            pending: false,
            untrusted: true,
        });
        assert_eq!(e["type"], "message");
        assert_eq!(
            (e["runId"].as_str(), e["messageId"].as_str()),
            (Some("r1"), Some("m1"))
        );
        let m = &e["message"];
        assert_eq!(m["timestamp"], 7);
        assert_eq!(m["MediaPaths"], json!(["/m/1"]));
        assert_eq!(m["MediaUrls"], json!([""]));
        assert_eq!(m["bodyForAgent"], "[event]\n\nhi");
        assert_eq!(m["untrusted"], true);
    }

    #[test]
    fn a_final_reply_carries_its_key_and_thinking_comes_first() {
        let reply = ChatMessage::assistant("done");
        let e = step(&reply, "hm", "r1");
        assert_eq!(e["idempotencyKey"], json!(reply_key("r1")));
        assert_eq!(e["content"][0]["type"], "thinking");
        assert_eq!(e["content"][1]["text"], "done");
        let u = usage(
            "r1",
            Some("p"),
            None,
            &Usage {
                input: 2,
                output: 3,
                ..Usage::default()
            },
        );
        assert_eq!(u["data"]["totalTokens"], 5);
        assert_eq!(injected("note")["injected"], true);
        assert_eq!(model_change("p", "m")["modelId"], "m");
    }
}
