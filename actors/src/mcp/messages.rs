//! What a server actor tells its supervisor (`hub.rs`): the hub hands each
//! server a `HubLink` of recipients, so a server knows no hub type.

use actix::prelude::*;
use serde::Serialize;

use super::catalog::ToolDef;
use crate::settings::McpSettings;
use crate::tool::ToolOutcome;
use tokio::sync::watch;

/// A server connected and listed its tools.
#[derive(Message)]
#[rtype(result = "()")]
pub struct ServerUp {
    pub name: String,
    pub generation: u64,
    pub tools: Vec<ToolDef>,
    pub protocol: String,
    pub server_info: String,
    pub pid: Option<u32>,
}

/// A server's tools changed (`tools/list_changed`, then `tools/list`).
#[derive(Message)]
#[rtype(result = "()")]
pub struct ServerTools {
    pub name: String,
    pub generation: u64,
    pub tools: Vec<ToolDef>,
}

/// A server's connection failed or ended; its actor has stopped.
#[derive(Message)]
#[rtype(result = "()")]
pub struct ServerDown {
    pub name: String,
    pub generation: u64,
    pub error: String,
}

/// The hub's inbox, as a server sees it.
#[derive(Clone)]
pub struct HubLink {
    pub up: Recipient<ServerUp>,
    pub tools: Recipient<ServerTools>,
    pub down: Recipient<ServerDown>,
}

/// `mcp` changed in the config: servers removed or changed are stopped,
/// added or changed ones started; the others keep running.
#[derive(Message)]
#[rtype(result = "()")]
pub struct McpReconfigure {
    pub settings: McpSettings,
}

/// The state of every configured server.
#[derive(Message)]
#[rtype(result = "Vec<ServerStatus>")]
pub struct McpStatus;

/// Stops the server (a lazy one gone idle): its connection closes and its
/// process group is killed.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Retire;

/// Calls one of this server's tools.
#[derive(Message)]
#[rtype(result = "ToolOutcome")]
pub struct CallTool {
    pub tool: String,
    pub kind: super::catalog::ToolKind,
    /// Where the call's `notifications/progress` go, and the run's call.
    pub progress: Option<(crate::tool::ProgressSink, crate::provider::ToolCall)>,
    pub args: serde_json::Value,
    pub cancel: watch::Receiver<bool>,
}

/// One server's state, as `tools.catalog`, `health` and the CLI show it.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ServerStatus {
    pub name: String,
    /// `stdio` | `streamable-http` | `sse`.
    pub transport: String,
    /// `connecting` | `ready` | `down` | `disabled` | `idle` (a lazy
    /// server not running; its tools offered).
    pub state: String,
    pub tools: usize,
    /// The offered names of its tools.
    pub tool_names: Vec<String>,
    pub protocol: String,
    pub server_info: String,
    pub restarts: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
}

/// What a server told us on its own.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub enum Note {
    ToolsChanged,
    Progress {
        token: String,
        progress: f64,
        total: Option<f64>,
        message: Option<String>,
    },
}
