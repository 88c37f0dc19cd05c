//! The conversation tools: their definitions (names and arguments as
//! OpenClaw's bridge has them) and what each calls on the gateway.

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::Tool;
use serde_json::{json, Map, Value};
use tokio_util::sync::CancellationToken;

use super::events::{guarded_text, POLL_MAX, WAIT_MAX_MS};
use super::{Bridge, BridgeError};

/// The tools offered when `--allow` is not given: nothing that acts.
pub const READ_ONLY: &[&str] = &[
    "conversations_list",
    "conversation_get",
    "messages_read",
    "attachments_fetch",
    "events_poll",
    "events_wait",
    "permissions_list_open",
];

/// The tools that act: offered only when the operator opts in.
pub const ACTING: &[&str] = &["messages_send", "chat_send", "permissions_respond"];

fn schema(props: Value, required: &[&str]) -> Arc<Map<String, Value>> {
    let mut m = Map::new();
    m.insert("type".into(), json!("object"));
    m.insert("properties".into(), props);
    if !required.is_empty() {
        m.insert("required".into(), json!(required));
    }
    Arc::new(m)
}

/// A tool's definition (None: no such tool); a declared table.
pub fn tool(name: &str) -> Option<Tool> {
    let key = json!({"type": "string", "description": "The session key (conversations_list gives them)."});
    let (description, props, required): (&str, Value, &[&str]) = match name {
        "conversations_list" => (
            "List the gateway's conversations (sessions), newest first.",
            json!({"limit": {"type": "integer", "minimum": 1, "maximum": 500}, "search": {"type": "string"}, "channel": {"type": "string"}}),
            &[],
        ),
        "conversation_get" => (
            "Get one conversation by session key.",
            json!({"session_key": key}),
            &["session_key"],
        ),
        "messages_read" => (
            "Read a conversation's recent messages (limit: default 20, at most 200). A message from a sender who is not the owner is marked `untrusted` and its text wrapped as outside data.",
            json!({"session_key": key, "limit": {"type": "integer", "minimum": 1, "maximum": 200}}),
            &["session_key"],
        ),
        "attachments_fetch" => (
            "List the non-text content (images, files) of one message of a conversation.",
            json!({"session_key": key, "message_id": {"type": "string"}, "limit": {"type": "integer", "minimum": 1, "maximum": 200}}),
            &["session_key", "message_id"],
        ),
        "events_poll" => (
            "Read queued live events (messages, approvals) after a cursor, without consuming them.",
            json!({"after_cursor": {"type": "integer", "minimum": 0}, "session_key": {"type": "string"}, "limit": {"type": "integer", "minimum": 1, "maximum": POLL_MAX}}),
            &[],
        ),
        "events_wait" => (
            "Wait for the next queued live event after a cursor (timeout_ms: default 30000, at most 300000).",
            json!({"after_cursor": {"type": "integer", "minimum": 0}, "session_key": {"type": "string"}, "timeout_ms": {"type": "integer", "minimum": 1, "maximum": WAIT_MAX_MS}}),
            &[],
        ),
        "permissions_list_open" => (
            "List the exec approvals waiting for an operator.",
            json!({}),
            &[],
        ),
        "messages_send" => (
            "Send a text back through the conversation's own channel route (the chat it came from).",
            json!({"session_key": key, "text": {"type": "string", "minLength": 1}}),
            &["session_key", "text"],
        ),
        "chat_send" => (
            "Send a message to a conversation as the operator and wait for the agent's reply.",
            json!({"session_key": key, "message": {"type": "string"}, "timeout_ms": {"type": "integer", "minimum": 1000, "maximum": 600000}}),
            &["session_key", "message"],
        ),
        "permissions_respond" => (
            "Answer a waiting exec approval: allow-once, allow-always or deny.",
            json!({"id": {"type": "string"}, "decision": {"type": "string", "enum": ["allow-once", "allow-always", "deny"]}}),
            &["id", "decision"],
        ),
        _ => return None,
    };
    Some(Tool::new(
        name.to_string(),
        description,
        schema(props, required),
    ))
}

/// A tool call's arguments.
struct Args<'a> {
    tool: &'a str,
    a: &'a Map<String, Value>,
}

impl Args<'_> {
    fn s(&self, k: &str) -> Option<String> {
        self.a.get(k).and_then(Value::as_str).map(str::to_string)
    }
    fn n(&self, k: &str) -> Option<u64> {
        self.a.get(k).and_then(Value::as_u64)
    }
    fn need(&self, k: &str) -> Result<String, BridgeError> {
        self.s(k)
            .filter(|v| !v.is_empty())
            .ok_or_else(|| BridgeError::Missing {
                tool: self.tool.to_string(),
                key: k.to_string(),
            })
    }
}

/// Messages as the MCP client reads them: a stranger's text wrapped.
fn guarded(messages: &Value) -> Value {
    let Some(list) = messages.as_array() else {
        return json!([]);
    };
    let out: Vec<Value> = list
        .iter()
        .map(|m| {
            let mut m = m.clone();
            if m["untrusted"] != json!(true) {
                return m;
            }
            let original = m.clone();
            if let Some(parts) = m["content"].as_array_mut() {
                for p in parts.iter_mut().filter(|p| p["type"] == "text") {
                    let text = p["text"].as_str().unwrap_or_default().to_string();
                    p["text"] = json!(guarded_text(&original, &text));
                }
            } else if let Some(text) = m["content"].as_str().map(str::to_string) {
                m["content"] = json!(guarded_text(&original, &text));
            }
            m
        })
        .collect();
    Value::Array(out)
}

impl Bridge {
    pub(super) async fn run(
        &self,
        tool: &str,
        a: &Map<String, Value>,
        cancel: CancellationToken,
    ) -> Result<Value, BridgeError> {
        let args = Args { tool, a };
        match tool {
            "conversations_list" => self.conversations(&args).await,
            "conversation_get" => {
                let key = args.need("session_key")?;
                self.call("sessions.describe", json!({ "key": key })).await
            }
            "messages_read" => {
                let key = args.need("session_key")?;
                let limit = args.n("limit").unwrap_or(20).clamp(1, 200);
                let v = self
                    .call("sessions.get", json!({ "key": key, "limit": limit }))
                    .await?;
                Ok(json!({ "session_key": key, "messages": guarded(&v["messages"]) }))
            }
            "attachments_fetch" => self.attachments(&args).await,
            "events_poll" => {
                let after = args.n("after_cursor").unwrap_or(0);
                let limit = args.n("limit").unwrap_or(20) as usize;
                Ok(self
                    .events
                    .poll(after, args.s("session_key").as_deref(), limit))
            }
            "events_wait" => {
                let after = args.n("after_cursor").unwrap_or(0);
                let wait = Duration::from_millis(args.n("timeout_ms").unwrap_or(30_000).max(1));
                let key = args.s("session_key");
                tokio::select! {
                    v = self.events.wait(after, key.as_deref(), wait) => Ok(v),
                    // A cancelled request releases its wait at once.
                    _ = cancel.cancelled() => Ok(json!({ "event": null, "cancelled": true })),
                }
            }
            "permissions_list_open" => self.call("exec.approval.list", json!({})).await,
            "messages_send" => self.send_on_route(&args).await,
            "chat_send" => self.chat(&args).await,
            "permissions_respond" => {
                let id = args.need("id")?;
                let decision = args.need("decision")?;
                self.call(
                    "exec.approval.resolve",
                    json!({ "id": id, "decision": decision }),
                )
                .await
            }
            _ => Err(BridgeError::UnknownTool(tool.to_string())),
        }
    }

    async fn conversations(&self, args: &Args<'_>) -> Result<Value, BridgeError> {
        let mut p = json!({"limit": args.n("limit").unwrap_or(50).min(500)});
        if let Some(q) = args.s("search") {
            p["search"] = json!(q);
        }
        let v = self.call("sessions.list", p).await?;
        let channel = args.s("channel").map(|c| c.to_ascii_lowercase());
        let rows: Vec<Value> = v["sessions"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .into_iter()
            .filter(|r| {
                channel
                    .as_deref()
                    .is_none_or(|c| r["channel"].as_str().or(r["lastChannel"].as_str()) == Some(c))
            })
            .collect();
        Ok(json!({ "conversations": rows }))
    }

    /// `attachments_fetch`: the message (by transcript id or message id)
    /// among the conversation's last `limit`, and its non-text blocks.
    async fn attachments(&self, args: &Args<'_>) -> Result<Value, BridgeError> {
        let key = args.need("session_key")?;
        let id = args.need("message_id")?;
        let limit = args.n("limit").unwrap_or(100).clamp(1, 200);
        let v = self
            .call("sessions.get", json!({ "key": key, "limit": limit }))
            .await?;
        let messages = guarded(&v["messages"]);
        let found = messages.as_array().and_then(|ms| {
            ms.iter().find(|m| {
                let meta = &m["__openclaw"];
                meta["id"].as_str() == Some(&id) || meta["idempotencyKey"].as_str() == Some(&id)
            })
        });
        let Some(message) = found else {
            return Err(BridgeError::NoMessage(id));
        };
        let attachments: Vec<Value> = message["content"]
            .as_array()
            .map(|parts| {
                parts
                    .iter()
                    .filter(|p| p["type"] != "text")
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        Ok(json!({ "attachments": attachments, "message": message }))
    }

    /// `messages_send`: a text to the chat the conversation came from (its
    /// last route), never anywhere else.
    async fn send_on_route(&self, args: &Args<'_>) -> Result<Value, BridgeError> {
        let key = args.need("session_key")?;
        let text = args.need("text")?;
        let row = self
            .call("sessions.describe", json!({ "key": key }))
            .await?;
        let s = &row["session"];
        let (Some(channel), Some(to)) = (s["lastChannel"].as_str(), s["lastTo"].as_str()) else {
            return Err(BridgeError::NoRoute(key));
        };
        let mut p = json!({
            "to": to,
            "channel": channel,
            "message": text,
            "sessionKey": key,
            "idempotencyKey": format!("mcp-{}", ulid::Ulid::generate()),
        });
        if let Some(account) = s["lastAccountId"].as_str() {
            p["accountId"] = json!(account);
        }
        if let Some(thread) = s["lastThreadId"].as_str() {
            p["threadId"] = json!(thread);
        } else if let Some(thread) = s["lastThreadId"].as_i64() {
            p["threadId"] = json!(thread.to_string());
        }
        let result = self.call("send", p).await?;
        Ok(json!({ "result": result }))
    }

    /// `chat_send`: an operator's message to the session, and the reply.
    async fn chat(&self, args: &Args<'_>) -> Result<Value, BridgeError> {
        let key = args.need("session_key")?;
        let message = args.need("message")?;
        let timeout = args.n("timeout_ms").unwrap_or(120_000).clamp(1000, 600_000);
        let id = format!("mcp-{}", ulid::Ulid::generate());
        let ack = self
            .call(
                "chat.send",
                json!({ "sessionKey": key, "message": message, "idempotencyKey": id }),
            )
            .await?;
        let run = ack["runId"].as_str().unwrap_or(&id).to_string();
        let done = self
            .call("agent.wait", json!({ "runId": run, "timeoutMs": timeout }))
            .await?;
        // The reply: the session's newest assistant text.
        let recent = self
            .call("sessions.get", json!({ "key": key, "limit": 10 }))
            .await?;
        let reply = recent["messages"]
            .as_array()
            .and_then(|ms| ms.iter().rev().find(|m| m["role"] == "assistant"))
            .and_then(|m| m["content"].as_array())
            .map(|parts| {
                parts
                    .iter()
                    .filter_map(|p| p["text"].as_str())
                    .collect::<Vec<_>>()
                    .join("")
            })
            .unwrap_or_default();
        Ok(json!({ "session_key": key, "runId": run, "status": done["status"], "reply": reply }))
    }
}
