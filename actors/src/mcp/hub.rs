//! `McpHub`: the supervisor of the MCP server actors. Starts one per
//! enabled `mcp.servers` entry at boot, restarts one whose connection ended
//! (1 s, doubling to 60 s; back to 1 s after a minute up), publishes every
//! ready server's tools into the catalog, routes the runs' calls of MCP
//! tools to their server, and stops every server (and its children) when
//! it stops.

use std::collections::{BTreeMap, HashSet};
use std::time::{Duration, Instant};

use actix::prelude::*;
use serde::Serialize;

use super::catalog::{McpCatalog, Route, ToolDef};
use super::messages::{HubLink, ServerDown, ServerTools, ServerUp};
use super::server::{CallTool, McpServer};
use crate::settings::McpSettings;
use crate::tool::{ExecuteTool, ToolOutcome};

const FIRST_BACKOFF: Duration = Duration::from_secs(1);
/// How long a server stays up before its restart backoff starts over.
const STABLE: Duration = Duration::from_secs(60);
const MAX_BACKOFF: Duration = Duration::from_secs(60);

/// One server's state, as `tools.catalog`, `health` and the CLI show it.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ServerStatus {
    pub name: String,
    /// `stdio` | `streamable-http` | `sse`.
    pub transport: String,
    /// `connecting` | `ready` | `down` | `disabled`.
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

struct Slot {
    settings: crate::settings::McpServerSettings,
    addr: Option<Addr<McpServer>>,
    generation: u64,
    state: &'static str,
    tools: Vec<ToolDef>,
    protocol: String,
    server_info: String,
    pid: Option<u32>,
    restarts: u32,
    backoff: Duration,
    up_since: Option<Instant>,
    last_error: Option<String>,
}

pub struct McpHub {
    span: tracing::Span,
    slots: BTreeMap<String, Slot>,
    catalog: McpCatalog,
    /// The built-in tools' names (an MCP tool never takes one).
    reserved: HashSet<String>,
    http: reqwest::Client,
    /// Where a call that needs an operator is decided (`approval`).
    approvals: Recipient<crate::approvals::McpGate>,
}

impl McpHub {
    pub fn new(
        settings: &McpSettings,
        catalog: McpCatalog,
        reserved: HashSet<String>,
        approvals: Recipient<crate::approvals::McpGate>,
    ) -> McpHub {
        let slots = settings
            .servers
            .iter()
            .map(|(name, s)| {
                let state = match (s.is_enabled(), s.transport()) {
                    (false, _) => "disabled",
                    (true, Err(_)) => "down",
                    (true, Ok(_)) => "connecting",
                };
                let slot = Slot {
                    settings: s.clone(),
                    addr: None,
                    generation: 0,
                    state,
                    tools: Vec::new(),
                    protocol: String::new(),
                    server_info: String::new(),
                    pid: None,
                    restarts: 0,
                    backoff: FIRST_BACKOFF,
                    up_since: None,
                    last_error: s.transport().err(),
                };
                (name.clone(), slot)
            })
            .collect();
        McpHub {
            span: tracing::info_span!("mcp_hub"),
            slots,
            catalog,
            reserved,
            http: reqwest::Client::new(),
            approvals,
        }
    }

    fn spawn(&mut self, name: &str, ctx: &mut Context<Self>) {
        let http = self.http.clone();
        let Some(slot) = self.slots.get_mut(name) else {
            return;
        };
        slot.generation += 1;
        slot.state = "connecting";
        slot.addr = Some(
            McpServer::new(
                name.to_string(),
                slot.generation,
                slot.settings.clone(),
                HubLink {
                    up: ctx.address().recipient(),
                    tools: ctx.address().recipient(),
                    down: ctx.address().recipient(),
                },
                http,
            )
            .start(),
        );
    }

    fn publish(&self) {
        let _span = self.span.clone().entered();
        let safe = super::names::server_names(self.slots.keys().map(String::as_str));
        let ready: Vec<(String, String, Vec<ToolDef>)> = self
            .slots
            .iter()
            .zip(safe)
            .filter(|((_, s), _)| s.state == "ready")
            .map(|((name, s), safe)| {
                let tools = s
                    .tools
                    .iter()
                    .filter(|t| s.settings.tool_filter.admits(&t.name))
                    .cloned()
                    .collect();
                (name.clone(), safe, tools)
            })
            .collect();
        for (tool, why) in self.catalog.publish(&ready, &self.reserved) {
            tracing::warn!(%tool, "mcp tool skipped: {why}");
        }
    }

    fn status(&self) -> Vec<ServerStatus> {
        let mut by_server: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for t in self.catalog.specs().iter() {
            if let Some(r) = self.catalog.route(&t.name) {
                by_server.entry(r.server).or_default().push(t.name.clone());
            }
        }
        self.slots
            .iter()
            .map(|(name, s)| {
                let tool_names = by_server.remove(name).unwrap_or_default();
                ServerStatus {
                    name: name.clone(),
                    transport: s.settings.transport_name().into(),
                    state: s.state.into(),
                    tools: tool_names.len(),
                    tool_names,
                    protocol: s.protocol.clone(),
                    server_info: s.server_info.clone(),
                    restarts: s.restarts,
                    last_error: s.last_error.clone(),
                    pid: s.pid,
                }
            })
            .collect()
    }
}

impl Actor for McpHub {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        let names: Vec<String> = self
            .slots
            .iter()
            .filter(|(_, s)| s.state == "connecting")
            .map(|(n, _)| n.clone())
            .collect();
        for name in names {
            self.spawn(&name, ctx);
        }
    }

    fn stopped(&mut self, _: &mut Context<Self>) {
        for slot in self.slots.values_mut() {
            // Dropping the last address stops the server actor, which
            // closes its connection and kills its process group.
            slot.addr = None;
        }
    }
}

impl Handler<ServerUp> for McpHub {
    type Result = ();
    fn handle(&mut self, msg: ServerUp, _: &mut Context<Self>) {
        let Some(slot) = self.slots.get_mut(&msg.name) else {
            return;
        };
        if slot.generation != msg.generation {
            return;
        }
        slot.state = "ready";
        slot.tools = msg.tools;
        slot.protocol = msg.protocol;
        slot.server_info = msg.server_info;
        slot.pid = msg.pid;
        slot.up_since = Some(Instant::now());
        slot.last_error = None;
        self.publish();
    }
}

impl Handler<ServerTools> for McpHub {
    type Result = ();
    fn handle(&mut self, msg: ServerTools, _: &mut Context<Self>) {
        let _span = self.span.clone().entered();
        let Some(slot) = self.slots.get_mut(&msg.name) else {
            return;
        };
        if slot.generation != msg.generation || slot.state != "ready" {
            return;
        }
        tracing::info!(server = %msg.name, tools = msg.tools.len(), "mcp tools changed");
        slot.tools = msg.tools;
        self.publish();
    }
}

impl Handler<ServerDown> for McpHub {
    type Result = ();
    fn handle(&mut self, msg: ServerDown, ctx: &mut Context<Self>) {
        let _span = self.span.clone().entered();
        let Some(slot) = self.slots.get_mut(&msg.name) else {
            return;
        };
        if slot.generation != msg.generation {
            return;
        }
        if slot.up_since.is_some_and(|t| t.elapsed() >= STABLE) {
            slot.backoff = FIRST_BACKOFF;
        }
        let wait = slot.backoff;
        slot.backoff = (slot.backoff * 2).min(MAX_BACKOFF);
        slot.state = "down";
        slot.addr = None;
        slot.pid = None;
        slot.up_since = None;
        slot.restarts += 1;
        tracing::warn!(server = %msg.name, error = %msg.error, retry_in_ms = wait.as_millis() as u64, "mcp server down");
        slot.last_error = Some(msg.error);
        let was_offered = !slot.tools.is_empty();
        slot.tools.clear();
        if was_offered {
            self.publish();
        }
        let name = msg.name;
        ctx.run_later(wait, move |act, ctx| {
            if act.slots.get(&name).is_some_and(|s| s.state == "down") {
                act.spawn(&name, ctx);
            }
        });
    }
}

/// The state of every configured server.
#[derive(Message)]
#[rtype(result = "Vec<ServerStatus>")]
pub struct McpStatus;

impl Handler<McpStatus> for McpHub {
    type Result = MessageResult<McpStatus>;
    fn handle(&mut self, _: McpStatus, _: &mut Context<Self>) -> Self::Result {
        MessageResult(self.status())
    }
}

/// A run's call of an MCP tool (by its offered name).
impl Handler<ExecuteTool> for McpHub {
    type Result = ResponseFuture<ToolOutcome>;
    fn handle(&mut self, msg: ExecuteTool, _: &mut Context<Self>) -> Self::Result {
        let name = msg.call.name.clone();
        let target = self.catalog.route(&name).and_then(|r| {
            let slot = self.slots.get(&r.server)?;
            let gate = gate_for(&r, &slot.settings, &msg);
            Some((
                r,
                slot.addr.clone(),
                slot.state,
                slot.last_error.clone(),
                gate,
            ))
        });
        let approvals = self.approvals.clone();
        Box::pin(async move {
            let Some((route, addr, state, last_error, gate)) = target else {
                return crate::tool::error(format!("unknown MCP tool {name}"));
            };
            let Some(addr) = addr.filter(|_| state == "ready") else {
                return crate::tool::error(format!(
                    "MCP server {} is not available ({state}{})",
                    route.server,
                    last_error.map(|e| format!(": {e}")).unwrap_or_default()
                ));
            };
            if let Some(gate) = gate {
                match approvals.send(gate).await {
                    Ok(Ok(())) => {}
                    Ok(Err(refused)) => return crate::tool::error(refused.0),
                    Err(_) => return crate::tool::error("the approvals actor stopped"),
                }
            }
            let call = CallTool {
                tool: route.tool,
                kind: route.kind,
                progress: msg.progress.clone().map(|p| (p, msg.call.clone())),
                args: msg.call.arguments.clone(),
                cancel: msg.cancel,
            };
            addr.send(call).await.unwrap_or_else(|_| {
                crate::tool::error(format!(
                    "MCP server {} stopped during the call (it is being restarted)",
                    route.server
                ))
            })
        })
    }
}

/// The operator's question a call needs first, if any (`approval`:
/// `prompt` always; `auto` unless the tool is read-only).
fn gate_for(
    route: &Route,
    settings: &crate::settings::McpServerSettings,
    msg: &ExecuteTool,
) -> Option<crate::approvals::McpGate> {
    use crate::settings::McpApproval;
    let mode = settings.approval_mode();
    let ask = match mode {
        McpApproval::Approve => false,
        McpApproval::Prompt => true,
        McpApproval::Auto => !route.read_only,
    };
    if !ask {
        return None;
    }
    let args = msg.call.arguments.to_string();
    Some(crate::approvals::McpGate {
        agent_id: msg.agent_id.clone(),
        session_key: msg.session_key.clone(),
        server: route.server.clone(),
        tool: route.tool.clone(),
        arguments: args.chars().take(2000).collect(),
        grantable: mode == McpApproval::Auto,
        untrusted: msg.trust.untrusted,
    })
}
