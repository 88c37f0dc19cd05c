//! The gateway's conversations as MCP tools, for Claude Code, Codex or any
//! MCP client, answered with the official SDK's server side (`rmcp`), which
//! speaks both revisions: `server/discover` (2026-07-28) and `initialize`
//! (2025-11-25). Two ways in, one tool set ([`Bridge`]):
//! - `ferroclaw mcp serve` (stdio): a process like OpenClaw's
//!   `openclaw mcp serve` that reaches the running gateway over its
//!   WebSocket (the gateway secret, operator scopes);
//! - `/mcp` on the gateway's port (Streamable HTTP, [`http`]): behind the
//!   gateway secret, calling the same methods in process.
//!
//! Tools (OpenClaw's bridge names where it has them): `conversations_list`,
//! `conversation_get`, `messages_read`, `permissions_list_open` (read-only,
//! the default allowlist), and `chat_send` (a message to a session, waiting
//! for its reply) and `permissions_respond`, offered only when `--allow`
//! names them. An MCP client is the operator's tool here: what it sends is
//! an operator's message (it holds the gateway secret).

use std::sync::Arc;

use futures_util::future::BoxFuture;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler};
use serde_json::{json, Map, Value};

pub mod http;

/// How the tools reach the gateway's methods: the WebSocket (stdio bridge)
/// or in process (`/mcp`). An error is the method's message.
pub trait Calls: Send + Sync + 'static {
    fn call<'a>(&'a self, method: &'a str, params: Value) -> BoxFuture<'a, Result<Value, String>>;
}

/// The tools offered when `--allow` is not given: nothing that acts.
pub const READ_ONLY: &[&str] = &[
    "conversations_list",
    "conversation_get",
    "messages_read",
    "permissions_list_open",
];

const ALL: &[&str] = &[
    "conversations_list",
    "conversation_get",
    "messages_read",
    "permissions_list_open",
    "chat_send",
    "permissions_respond",
];

fn schema(props: Value, required: &[&str]) -> Arc<Map<String, Value>> {
    let mut m = Map::new();
    m.insert("type".into(), json!("object"));
    m.insert("properties".into(), props);
    if !required.is_empty() {
        m.insert("required".into(), json!(required));
    }
    Arc::new(m)
}

fn tool(name: &str) -> Option<Tool> {
    let key = json!({"session_key": {"type": "string", "description": "The session key (conversations_list gives them)."}});
    Some(match name {
        "conversations_list" => Tool::new(
            "conversations_list",
            "List the gateway's conversations (sessions), newest first.",
            schema(
                json!({"limit": {"type": "integer", "minimum": 1, "maximum": 500}, "search": {"type": "string"}, "channel": {"type": "string"}}),
                &[],
            ),
        ),
        "conversation_get" => Tool::new(
            "conversation_get",
            "Get one conversation by session key.",
            schema(key, &["session_key"]),
        ),
        "messages_read" => Tool::new(
            "messages_read",
            "Read a conversation's recent messages (limit: default 20, at most 200).",
            schema(
                json!({"session_key": {"type": "string"}, "limit": {"type": "integer", "minimum": 1, "maximum": 200}}),
                &["session_key"],
            ),
        ),
        "permissions_list_open" => Tool::new(
            "permissions_list_open",
            "List the exec approvals waiting for an operator.",
            schema(json!({}), &[]),
        ),
        "chat_send" => Tool::new(
            "chat_send",
            "Send a message to a conversation as the operator and wait for the agent's reply.",
            schema(
                json!({"session_key": {"type": "string"}, "message": {"type": "string"}, "timeout_ms": {"type": "integer", "minimum": 1000, "maximum": 600000}}),
                &["session_key", "message"],
            ),
        ),
        "permissions_respond" => Tool::new(
            "permissions_respond",
            "Answer a waiting exec approval: allow-once, allow-always or deny.",
            schema(
                json!({"id": {"type": "string"}, "decision": {"type": "string", "enum": ["allow-once", "allow-always", "deny"]}}),
                &["id", "decision"],
            ),
        ),
        _ => return None,
    })
}

/// The MCP server: the allowed tools over the gateway's methods.
#[derive(Clone)]
pub struct Bridge {
    gateway: Arc<dyn Calls>,
    allowed: Arc<Vec<String>>,
}

impl Bridge {
    pub fn new(gateway: Arc<dyn Calls>, allowed: Vec<String>) -> Bridge {
        Bridge {
            gateway,
            allowed: Arc::new(allowed),
        }
    }

    async fn call(&self, method: &str, params: Value) -> Result<Value, String> {
        self.gateway.call(method, params).await
    }

    async fn run(&self, name: &str, a: &Map<String, Value>) -> Result<Value, String> {
        let s = |k: &str| a.get(k).and_then(Value::as_str).map(str::to_string);
        let n = |k: &str| a.get(k).and_then(Value::as_u64);
        let need = |k: &str| s(k).ok_or_else(|| format!("{name} needs `{k}`"));
        match name {
            "conversations_list" => {
                let mut p = json!({"limit": n("limit").unwrap_or(50).min(500)});
                if let Some(q) = s("search") {
                    p["search"] = json!(q);
                }
                let v = self.call("sessions.list", p).await?;
                let channel = s("channel").map(|c| c.to_ascii_lowercase());
                let rows: Vec<Value> = v["sessions"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default()
                    .into_iter()
                    .filter(|r| {
                        channel.as_deref().is_none_or(|c| {
                            r["channel"].as_str().or(r["lastChannel"].as_str()) == Some(c)
                        })
                    })
                    .collect();
                Ok(json!({ "conversations": rows }))
            }
            "conversation_get" => {
                let key = need("session_key")?;
                self.call("sessions.describe", json!({ "key": key })).await
            }
            "messages_read" => {
                let key = need("session_key")?;
                let limit = n("limit").unwrap_or(20).clamp(1, 200);
                let v = self
                    .call("sessions.get", json!({ "key": key, "limit": limit }))
                    .await?;
                Ok(json!({ "session_key": key, "messages": v["messages"] }))
            }
            "permissions_list_open" => self.call("exec.approval.list", json!({})).await,
            "chat_send" => {
                let key = need("session_key")?;
                let message = need("message")?;
                let timeout = n("timeout_ms").unwrap_or(120_000).clamp(1000, 600_000);
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
                Ok(
                    json!({ "session_key": key, "runId": run, "status": done["status"], "reply": reply }),
                )
            }
            "permissions_respond" => {
                let id = need("id")?;
                let decision = need("decision")?;
                self.call(
                    "exec.approval.resolve",
                    json!({ "id": id, "decision": decision }),
                )
                .await
            }
            _ => Err(format!("unknown tool {name}")),
        }
    }
}

impl ServerHandler for Bridge {
    fn get_info(&self) -> ServerConfig {
        let mut caps = ServerCapabilities::default();
        caps.tools = Some(Default::default());
        let mut info = ServerConfig::new(caps);
        info.server_info = Implementation::new("ferroclaw", crate::VERSION);
        info.instructions = Some(
            "The conversations of a ferroclaw gateway: list them, read their messages, and (when allowed) send a message and wait for the reply.".into(),
        );
        info
    }

    async fn list_tools(
        &self,
        _: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let tools = self.allowed.iter().filter_map(|n| tool(n)).collect();
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = request.name.to_string();
        if !self.allowed.contains(&name) {
            let why = match tool(&name) {
                Some(_) => format!("{name} is not allowed (ferroclaw mcp serve --allow {name})"),
                None => format!("unknown tool {name}"),
            };
            return Ok(CallToolResponse::Complete(CallToolResult::error(vec![
                ContentBlock::text(why),
            ])));
        }
        let args = request.arguments.unwrap_or_default();
        let result = match self.run(&name, &args).await {
            Ok(v) => {
                let text = serde_json::to_string_pretty(&v).unwrap_or_default();
                let mut r = CallToolResult::success(vec![ContentBlock::text(text)]);
                r.structured_content = Some(v);
                r
            }
            Err(e) => CallToolResult::error(vec![ContentBlock::text(e)]),
        };
        Ok(CallToolResponse::Complete(result))
    }
}

/// Which tools `--allow` names (`all`, or a comma list); None: read-only.
pub fn allowlist(allow: Option<&str>) -> Result<Vec<String>, String> {
    let Some(list) = allow else {
        return Ok(READ_ONLY.iter().map(|s| s.to_string()).collect());
    };
    let mut out: Vec<String> = READ_ONLY.iter().map(|s| s.to_string()).collect();
    for item in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        if item == "all" {
            return Ok(ALL.iter().map(|s| s.to_string()).collect());
        }
        if !ALL.contains(&item) {
            return Err(format!(
                "--allow: unknown tool {item:?} (one of {})",
                ALL.join(", ")
            ));
        }
        if !out.iter().any(|o| o == item) {
            out.push(item.to_string());
        }
    }
    Ok(out)
}
