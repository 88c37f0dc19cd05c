//! The utility tools a server that has resources or prompts gets
//! (OpenClaw's names: `resources_list`, `resources_read`, `prompts_list`,
//! `prompts_get`), and their calls. What they return is outside data.

use std::time::Duration;

use rmcp::model::{GetPromptRequestParams, ReadResourceRequestParams};
use rmcp::service::RoleClient;
use rmcp::Peer;
use serde_json::Value;

use super::catalog::{ToolDef, ToolKind};
use crate::tool::ToolOutcome;

/// The utility tools of a server that has resources or prompts.
pub fn utility_tools(peer: &Peer<RoleClient>) -> Vec<ToolDef> {
    let Some(info) = peer.peer_info() else {
        return Vec::new();
    };
    let caps = &info.capabilities;
    let def = |name: &str, description: &str, schema: Value, kind| ToolDef {
        name: name.into(),
        description: description.into(),
        schema,
        kind,
        read_only: true,
    };
    let mut out = Vec::new();
    if caps.resources.is_some() {
        out.push(def(
            "resources_list",
            "List this MCP server's resources (uri, name, description, mimeType).",
            serde_json::json!({"type": "object", "properties": {}}),
            ToolKind::ResourcesList,
        ));
        out.push(def(
            "resources_read",
            "Read one of this MCP server's resources by its uri.",
            serde_json::json!({"type": "object", "properties": {"uri": {"type": "string"}}, "required": ["uri"]}),
            ToolKind::ResourcesRead,
        ));
    }
    if caps.prompts.is_some() {
        out.push(def(
            "prompts_list",
            "List this MCP server's prompts (name, description, arguments).",
            serde_json::json!({"type": "object", "properties": {}}),
            ToolKind::PromptsList,
        ));
        out.push(def(
            "prompts_get",
            "Fetch one of this MCP server's prompts, with its arguments filled in.",
            serde_json::json!({"type": "object", "properties": {
                "name": {"type": "string"},
                "arguments": {"type": "object", "additionalProperties": {"type": "string"}}
            }, "required": ["name"]}),
            ToolKind::PromptsGet,
        ));
    }
    out
}

/// Why a utility tool's call failed.
#[derive(Debug, thiserror::Error)]
enum UtilityError {
    #[error(transparent)]
    Service(#[from] rmcp::ServiceError),
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    #[error("{0} needs a {1}")]
    Missing(&'static str, &'static str),
    #[error("not a utility tool")]
    NotUtility,
    #[error("timed out after {0} ms")]
    Timeout(u128),
}

fn json<T: serde::Serialize>(v: Result<T, rmcp::ServiceError>) -> Result<Value, UtilityError> {
    Ok(serde_json::to_value(v?)?)
}

/// Calls a utility tool: lists or reads resources, lists or fetches prompts.
pub async fn utility(
    peer: &Peer<RoleClient>,
    server: &str,
    kind: ToolKind,
    args: &Value,
    limit: Duration,
) -> ToolOutcome {
    let arg = |k: &str| args.get(k).and_then(Value::as_str).map(str::to_string);
    let answer: Result<Value, UtilityError> = tokio::time::timeout(limit, async {
        match kind {
            ToolKind::ResourcesList => json(
                peer.list_all_resources()
                    .await
                    .map(|r| serde_json::json!({"resources": r})),
            ),
            ToolKind::ResourcesRead => match arg("uri") {
                Some(uri) => json(
                    peer.read_resource(ReadResourceRequestParams::new(uri))
                        .await,
                ),
                None => Err(UtilityError::Missing("resources_read", "uri")),
            },
            ToolKind::PromptsList => json(
                peer.list_all_prompts()
                    .await
                    .map(|p| serde_json::json!({"prompts": p})),
            ),
            ToolKind::PromptsGet => match arg("name") {
                Some(name) => {
                    let mut p = GetPromptRequestParams::new(name);
                    if let Some(Value::Object(a)) = args.get("arguments") {
                        p = p.with_arguments(a.clone());
                    }
                    json(peer.get_prompt(p).await)
                }
                None => Err(UtilityError::Missing("prompts_get", "name")),
            },
            ToolKind::Tool => Err(UtilityError::NotUtility),
        }
    })
    .await
    .unwrap_or_else(|_| Err(UtilityError::Timeout(limit.as_millis())));
    match answer {
        Ok(v) => ToolOutcome {
            text: crate::trust::wrap(
                &format!("MCP server {server}"),
                &serde_json::to_string_pretty(&v).unwrap_or_default(),
            ),
            is_error: false,
            blocked: false,
            images: Vec::new(),
            ends_turn: None,
        },
        Err(e) => crate::tool::error(format!("MCP server {server}: {e}")),
    }
}
