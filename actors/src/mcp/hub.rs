//! `McpHub`: the supervisor of the MCP server actors. Starts one per
//! enabled `mcp.servers` entry at boot, restarts one whose connection ended
//! (1 s, doubling to 60 s; back to 1 s after a minute up), publishes every
//! ready server's tools into the catalog, routes the runs' calls of MCP
//! tools to their server, and stops every server (and its children) when
//! it stops. Lazy servers (`lazy.rs`) start with their first call and stop
//! when idle.

use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use actix::prelude::*;

use super::catalog::{McpCatalog, Route, ToolDef};
use super::error::McpError;
use super::messages::{CallTool, HubLink, McpReconfigure, McpStatus, Retire, ServerStatus};
use super::messages::{ServerDown, ServerTools, ServerUp};
use super::server::McpServer;
use crate::settings::McpSettings;
use crate::tool::{ExecuteTool, ToolOutcome};
use tokio::sync::oneshot;

const FIRST_BACKOFF: Duration = Duration::from_secs(1);
/// How long a server stays up before its restart backoff starts over.
const STABLE: Duration = Duration::from_secs(60);
const MAX_BACKOFF: Duration = Duration::from_secs(60);

struct Slot {
    settings: crate::settings::McpServerSettings,
    timeouts: crate::settings::McpTimeouts,
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
    /// Calls waiting for a lazy server to be up.
    waiters: Vec<oneshot::Sender<Result<Addr<McpServer>, McpError>>>,
    /// Calls in flight, and when the last one ended (a lazy server's idle clock).
    calls: usize,
    last_used: Instant,
}

/// Where a call's server is.
enum Reach {
    Ready(Addr<McpServer>),
    /// A lazy server being started.
    Starting(oneshot::Receiver<Result<Addr<McpServer>, McpError>>),
    Unavailable(McpError),
}

impl Slot {
    fn new(
        name: &str,
        s: &crate::settings::McpServerSettings,
        defaults: &crate::settings::McpServerDefaults,
        cache_dir: Option<&std::path::Path>,
    ) -> Slot {
        let cached = cache_dir
            .filter(|_| s.is_lazy() && s.is_enabled())
            .and_then(|d| super::lazy::read(d, name, s));
        let state = match (s.is_enabled(), s.transport(), &cached) {
            (false, _, _) => "disabled",
            (true, Err(_), _) => "down",
            (true, Ok(_), Some(_)) => "idle",
            (true, Ok(_), None) => "connecting",
        };
        let cached = cached.unwrap_or_default();
        Slot {
            settings: s.clone(),
            timeouts: s.timeouts(defaults),
            addr: None,
            generation: 0,
            state,
            tools: cached.tools,
            protocol: cached.protocol,
            server_info: cached.server_info,
            pid: None,
            restarts: 0,
            backoff: FIRST_BACKOFF,
            up_since: None,
            last_error: s.transport().err().map(|e| e.to_string()),
            waiters: Vec::new(),
            calls: 0,
            last_used: Instant::now(),
        }
    }

    /// Stops its server for good (the slot is going away).
    fn retire(&mut self) {
        if let Some(addr) = self.addr.take() {
            addr.do_send(Retire);
        }
        for w in self.waiters.drain(..) {
            let _ = w.send(Err(McpError::Reconfigured));
        }
    }
}

impl Reach {
    /// The server's address once it is up (a lazy one: within `connect`).
    async fn addr(self, server: &str, connect: Duration) -> Result<Addr<McpServer>, McpError> {
        match self {
            Reach::Ready(a) => Ok(a),
            Reach::Unavailable(why) => Err(why),
            Reach::Starting(rx) => match tokio::time::timeout(connect, rx).await {
                Ok(Ok(r)) => r.map_err(|e| McpError::NotStarted {
                    server: server.to_string(),
                    cause: Box::new(e),
                }),
                _ => Err(McpError::StartTimeout {
                    server: server.to_string(),
                    ms: connect.as_millis(),
                }),
            },
        }
    }
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
    /// Lazy servers' tool caches (None: no cache; lazy servers list at boot).
    cache_dir: Option<PathBuf>,
    /// The last server actor's generation (unique across reconfigurations:
    /// what a retired actor reports never lands on its successor).
    generations: u64,
}

impl McpHub {
    pub fn new(
        settings: &McpSettings,
        catalog: McpCatalog,
        reserved: HashSet<String>,
        approvals: Recipient<crate::approvals::McpGate>,
        cache_dir: Option<PathBuf>,
    ) -> McpHub {
        let slots = settings
            .servers
            .iter()
            .map(|(name, s)| {
                let slot = Slot::new(name, s, &settings.defaults, cache_dir.as_deref());
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
            cache_dir,
            generations: 0,
        }
    }

    fn spawn(&mut self, name: &str, ctx: &mut Context<Self>) {
        let http = self.http.clone();
        let Some(slot) = self.slots.get_mut(name) else {
            return;
        };
        self.generations += 1;
        slot.generation = self.generations;
        slot.state = "connecting";
        slot.addr = Some(
            McpServer::new(
                name.to_string(),
                slot.generation,
                slot.settings.clone(),
                slot.timeouts,
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
            .filter(|((_, s), _)| s.state == "ready" || s.state == "idle")
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
        self.catalog.set_agents(
            self.slots
                .iter()
                .filter_map(|(name, s)| Some((name.clone(), s.settings.agent_ids()?)))
                .collect(),
        );
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
        if self.slots.values().any(|s| s.state == "idle") {
            self.publish();
        }
    }

    fn stopped(&mut self, _: &mut Context<Self>) {
        for slot in self.slots.values_mut() {
            // The server actor closes its connection and kills its
            // process group as it stops.
            slot.retire();
        }
    }
}

impl Handler<ServerUp> for McpHub {
    type Result = ();
    fn handle(&mut self, msg: ServerUp, ctx: &mut Context<Self>) {
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
        if let Some(addr) = &slot.addr {
            for w in slot.waiters.drain(..) {
                let _ = w.send(Ok(addr.clone()));
            }
        }
        if slot.settings.is_lazy() {
            slot.last_used = Instant::now();
            self.cache(&msg.name);
            self.idle_later(&msg.name, ctx);
        }
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
        self.cache(&msg.name);
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
        for w in slot.waiters.drain(..) {
            let _ = w.send(Err(McpError::Down(msg.error.clone())));
        }
        if slot.settings.is_lazy() && !slot.tools.is_empty() {
            // Back to idle, its tools still offered: the next call tries again.
            tracing::warn!(server = %msg.name, error = %msg.error, "lazy mcp server down");
            slot.generation = u64::MAX;
            slot.state = "idle";
            slot.addr = None;
            slot.pid = None;
            slot.up_since = None;
            slot.restarts += 1;
            slot.last_error = Some(msg.error);
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

impl Handler<McpReconfigure> for McpHub {
    type Result = ();
    fn handle(&mut self, msg: McpReconfigure, ctx: &mut Context<Self>) {
        let _span = self.span.clone().entered();
        let (new, defaults) = (msg.settings.servers, msg.settings.defaults);
        let same = |s: &Slot, n: &crate::settings::McpServerSettings| {
            *n == s.settings && n.timeouts(&defaults) == s.timeouts
        };
        let gone: Vec<String> = self
            .slots
            .iter()
            .filter(|(name, s)| !new.get(*name).is_some_and(|n| same(s, n)))
            .map(|(name, _)| name.clone())
            .collect();
        for name in &gone {
            if let Some(mut slot) = self.slots.remove(name) {
                slot.retire();
            }
        }
        let mut started = Vec::new();
        for (name, s) in &new {
            if self.slots.contains_key(name) {
                continue;
            }
            let slot = Slot::new(name, s, &defaults, self.cache_dir.as_deref());
            if slot.state == "connecting" {
                started.push(name.clone());
            }
            self.slots.insert(name.clone(), slot);
        }
        if gone.is_empty() && started.is_empty() && self.slots.len() == new.len() {
            return;
        }
        tracing::info!(stopped = ?gone, started = ?started, "mcp servers reconfigured");
        for name in &started {
            self.spawn(name, ctx);
        }
        self.publish();
    }
}

impl Handler<McpStatus> for McpHub {
    type Result = MessageResult<McpStatus>;
    fn handle(&mut self, _: McpStatus, _: &mut Context<Self>) -> Self::Result {
        MessageResult(self.status())
    }
}

/// A run's call of an MCP tool (by its offered name).
impl Handler<ExecuteTool> for McpHub {
    type Result = ResponseActFuture<Self, ToolOutcome>;
    fn handle(&mut self, msg: ExecuteTool, ctx: &mut Context<Self>) -> Self::Result {
        let name = msg.call.name.clone();
        let target = self.catalog.route(&name).and_then(|r| {
            let slot = self.slots.get(&r.server)?;
            let gate = gate_for(&r, &slot.settings, &msg);
            Some((r, gate, slot.timeouts.connection))
        });
        let Some((route, gate, connect)) =
            target.filter(|_| self.catalog.serves_agent(&name, &msg.agent_id))
        else {
            let e = crate::tool::error(format!("unknown MCP tool {name}"));
            return Box::pin(actix::fut::ready(e));
        };
        let reach = self.reach(&route.server, ctx);
        if let Some(slot) = self.slots.get_mut(&route.server) {
            slot.calls += 1;
        }
        let (approvals, server) = (self.approvals.clone(), route.server.clone());
        let done = route.server.clone();
        let call = async move {
            let addr = match reach.addr(&server, connect).await {
                Ok(a) => a,
                Err(why) => return crate::tool::error(why.to_string()),
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
                    "MCP server {server} stopped during the call (it is being restarted)"
                ))
            })
        };
        Box::pin(call.into_actor(self).map(move |outcome, act, ctx| {
            act.call_done(&done, ctx);
            outcome
        }))
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

impl McpHub {
    /// Where `server` is for a call: ready, being started (a lazy server,
    /// started now if idle), or not available.
    fn reach(&mut self, server: &str, ctx: &mut Context<Self>) -> Reach {
        let Some(slot) = self.slots.get_mut(server) else {
            return Reach::Unavailable(McpError::UnknownServer(server.to_string()));
        };
        match (slot.state, &slot.addr) {
            ("ready", Some(a)) => return Reach::Ready(a.clone()),
            ("idle" | "connecting", _) if slot.settings.is_lazy() => {}
            (state, _) => {
                return Reach::Unavailable(McpError::NotAvailable {
                    server: server.to_string(),
                    state,
                    detail: slot
                        .last_error
                        .as_ref()
                        .map(|e| format!(": {e}"))
                        .unwrap_or_default(),
                })
            }
        }
        let (tx, rx) = oneshot::channel();
        slot.waiters.push(tx);
        if slot.state == "idle" {
            tracing::info!(server, "lazy mcp server: starting for a call");
            self.spawn(server, ctx);
        }
        Reach::Starting(rx)
    }

    /// A call ended: a lazy server's idle clock starts over.
    fn call_done(&mut self, server: &str, ctx: &mut Context<Self>) {
        let Some(slot) = self.slots.get_mut(server) else {
            return;
        };
        slot.calls = slot.calls.saturating_sub(1);
        slot.last_used = Instant::now();
        if slot.settings.is_lazy() {
            self.idle_later(server, ctx);
        }
    }

    /// Stops a lazy server that is still unused `idleTimeoutMs` from now.
    fn idle_later(&self, server: &str, ctx: &mut Context<Self>) {
        let Some(slot) = self.slots.get(server) else {
            return;
        };
        let (name, generation) = (server.to_string(), slot.generation);
        ctx.run_later(slot.timeouts.idle, move |act, _| {
            let Some(s) = act.slots.get_mut(&name) else {
                return;
            };
            let idle = s.last_used.elapsed() >= s.timeouts.idle;
            if s.state != "ready" || s.generation != generation || s.calls > 0 || !idle {
                return;
            }
            // A newer generation: what the stopping actor reports is ignored.
            s.generation = u64::MAX;
            if let Some(addr) = s.addr.take() {
                addr.do_send(Retire);
            }
            s.pid = None;
            s.up_since = None;
            s.state = "idle";
            tracing::info!(server = %name, "lazy mcp server: idle, stopped");
        });
    }

    /// A lazy server's list, kept for the next boot.
    fn cache(&self, server: &str) {
        let (Some(dir), Some(slot)) = (&self.cache_dir, self.slots.get(server)) else {
            return;
        };
        if !slot.settings.is_lazy() {
            return;
        }
        let cache = super::lazy::ToolCache {
            identity: super::lazy::identity(&slot.settings),
            protocol: slot.protocol.clone(),
            server_info: slot.server_info.clone(),
            tools: slot.tools.clone(),
        };
        super::lazy::write(dir, server, cache);
    }
}
