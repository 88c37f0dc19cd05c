//! Long sessions over the real gateway, against a fake OpenAI-compatible
//! provider that answers by looking at each request: automatic compaction
//! crossing the threshold again and again, the silent memory flush, the
//! deterministic summary when the model's fails, times out or would
//! overflow, overflow recovery, and pruning that never touches the
//! transcript. The SIGKILL case is in `crash.rs`.

mod crash;
mod long;
mod recovery;

use serde_json::{json, Value};

use crate::support::fake_provider::{last_text, FakeProvider, Script};
use crate::support::Client;

/// What the summary and the flush requests end with.
pub const SUMMARY_ASK: &str = "Write the summary of the conversation above now.";
pub const FLUSH_ASK: &str = "Session nearing compaction.";

/// Characters of a request's messages.
pub fn body_chars(body: &Value) -> usize {
    body["messages"].to_string().len()
}

/// A streamed answer whose usage counts the request like a provider
/// would (about 4 characters a token).
pub fn answer(body: &Value, text: &str) -> Script {
    let prompt = body_chars(body) / 4;
    let chunks = vec![
        json!({"choices":[{"index":0,"delta":{"content":text}}]}).to_string(),
        json!({"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}).to_string(),
        json!({"choices":[],"usage":{"prompt_tokens":prompt,"completion_tokens":text.len() / 4 + 1}}).to_string(),
    ];
    Script::Stream {
        chunks,
        first_delay: std::time::Duration::ZERO,
        delay: std::time::Duration::ZERO,
        cut_after: None,
    }
}

/// `s` with its first chunk held back `first` (a hanging call).
pub fn delayed(s: Script, first: std::time::Duration) -> Script {
    match s {
        Script::Stream {
            chunks,
            delay,
            cut_after,
            ..
        } => Script::Stream {
            chunks,
            first_delay: first,
            delay,
            cut_after,
        },
        other => other,
    }
}

/// A summary in the required shape, naming the turns it saw.
pub fn good_summary(body: &Value) -> String {
    let seen: Vec<String> = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["content"].as_str())
        .filter_map(|t| t.split_whitespace().find(|w| w.starts_with("turn-")))
        .map(str::to_string)
        .collect();
    format!(
        "## Decisions\n- keep counting\n## Open TODOs\n- None.\n## Constraints/Rules\n- None.\n## Pending user asks\n- None.\n## Exact identifiers\n- {}\n",
        seen.join(", ")
    )
}

/// The number in the user's `turn-N` of the last message.
pub fn turn_of(body: &Value) -> String {
    last_text(body)
        .split_whitespace()
        .find(|w| w.starts_with("turn-"))
        .unwrap_or("turn-?")
        .to_string()
}

/// A gateway config with the fake provider's model `m` and its window.
pub fn config(fake: &FakeProvider, window: u64, extra: Value) -> Value {
    let mut cfg = json!({
        "models": { "providers": { "fake": {
            "baseUrl": fake.base_url(), "api": "openai-completions", "apiKey": "k",
            "models": [{ "id": "m", "contextWindow": window }] } } },
        "agents": { "defaults": { "model": { "primary": "fake/m", "fallbacks": [] },
            "runRestarts": { "max": 0, "backoffMs": 10 } } },
    });
    ferroclaw::config::merge_patch(&mut cfg, &extra);
    cfg
}

/// The session row of `main`.
pub async fn main_row(c: &mut Client) -> Value {
    let list = c.call("sessions.list", json!({})).await;
    list["payload"]["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["key"] == "agent:main:main")
        .cloned()
        .unwrap_or(Value::Null)
}

/// Every transcript entry of `main` (all export pages).
pub async fn transcript(c: &mut Client) -> Vec<Value> {
    let mut out = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut p = json!({"key": "main"});
        if let Some(cur) = &cursor {
            p["cursor"] = json!(cur);
        }
        let r = c.call("sessions.export", p).await["payload"].clone();
        out.extend(r["entries"].as_array().cloned().unwrap_or_default());
        match r["cursor"].as_str() {
            Some(cur) => cursor = Some(cur.to_string()),
            None => return out,
        }
    }
}

/// A user message of about `chars` characters for turn `n`.
pub fn filler(n: usize, chars: usize) -> String {
    let pad = "lorem ipsum dolor sit amet ".repeat(chars / 27 + 1);
    format!("turn-{n} {}", &pad[..chars])
}
