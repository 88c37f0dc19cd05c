//! `ToolExecutor`: answers `ExecuteTool` for the built-in tools, each call
//! on its own future (a slow tool never holds up another), and kills the
//! background processes it started when it stops.

use std::path::PathBuf;

use actix::prelude::*;
use tracing::Instrument;

use super::messages::{ExecuteTool, ToolOutcome};
use super::{
    error, exec, files, memory, patch, read, search, web_fetch, ToolLimits, Workspace,
    SESSION_TOOLS,
};
use crate::provider::ToolSpec;

pub struct ToolExecutor {
    workspace: Workspace,
    limits: ToolLimits,
    /// Commands running in the background (`exec` + `process`).
    processes: exec::Processes,
    /// Where session tools go: the session tools actor (set once the
    /// router exists).
    sessions: std::sync::Arc<std::sync::OnceLock<Recipient<ExecuteTool>>>,
    /// Exec security and approvals (None: only `security=deny` is enforced).
    approvals: Option<Addr<crate::approvals::ApprovalsActor>>,
    /// Every agent's memory (`memory_search`, `memory_get`).
    memories: crate::memory::Memories,
    /// Where MCP tools (`<server>__<tool>`) go: the MCP hub.
    mcp: Option<Recipient<ExecuteTool>>,
    /// Paired nodes (`nodes`, `exec` with host `node`).
    nodes: Option<Addr<crate::nodes::NodeRegistry>>,
    /// Where the gateway's own tools go (`GATEWAY_TOOLS`): the edge.
    edge: super::EdgeTools,
    /// Where `view_image` and `pdf` go: the media tools actor.
    media: Option<Recipient<ExecuteTool>>,
    /// Where `browser` goes (None: not offered).
    browser: Option<Recipient<ExecuteTool>>,
    /// Where the `lsp_*` tools go: the LSP hub.
    lsp: Option<Recipient<ExecuteTool>>,
}

impl ToolExecutor {
    /// The tools this executor offers, with their JSON schemas.
    pub fn specs() -> Vec<ToolSpec> {
        super::specs::specs()
    }

    pub fn new(workspace: PathBuf, limits: ToolLimits) -> ToolExecutor {
        ToolExecutor {
            workspace: Workspace {
                root: workspace,
                only: limits.workspace_only,
                untrusted: false,
            },
            limits,
            processes: exec::Processes::default(),
            sessions: Default::default(),
            approvals: None,
            memories: Default::default(),
            mcp: None,
            nodes: None,
            edge: Default::default(),
            media: None,
            browser: None,
            lsp: None,
        }
    }

    /// Background commands are kept in `processes` (shared with the task
    /// list, which reads and cancels them).
    pub fn with_processes(mut self, processes: exec::Processes) -> ToolExecutor {
        self.processes = processes;
        self
    }

    /// The `lsp_*` tools go to this hub.
    pub fn with_lsp(mut self, lsp: Recipient<ExecuteTool>) -> ToolExecutor {
        self.lsp = Some(lsp);
        self
    }

    /// `browser` goes to this actor (`browser::BrowserTools`; None: the
    /// browser is not available).
    pub fn with_browser(mut self, browser: Option<Recipient<ExecuteTool>>) -> ToolExecutor {
        self.browser = browser;
        self
    }

    /// `view_image` and `pdf` go to this actor (`media::tools`).
    pub fn with_media(mut self, media: Recipient<ExecuteTool>) -> ToolExecutor {
        self.media = Some(media);
        self
    }

    /// Where the gateway's own tools go (the edge sets it once it runs).
    pub fn with_edge(mut self, edge: super::EdgeTools) -> ToolExecutor {
        self.edge = edge;
        self
    }

    /// `nodes` and exec with host `node` go to this registry.
    pub fn with_nodes(mut self, nodes: Addr<crate::nodes::NodeRegistry>) -> ToolExecutor {
        self.nodes = Some(nodes);
        self
    }

    /// MCP tools go to this hub.
    pub fn with_mcp(mut self, hub: Recipient<ExecuteTool>) -> ToolExecutor {
        self.mcp = Some(hub);
        self
    }

    /// Exec calls go through this approvals actor first.
    pub fn with_approvals(
        mut self,
        approvals: Addr<crate::approvals::ApprovalsActor>,
    ) -> ToolExecutor {
        self.approvals = Some(approvals);
        self
    }

    /// The memory tools search these agents' memories.
    pub fn with_memories(mut self, memories: crate::memory::Memories) -> ToolExecutor {
        self.memories = memories;
        self
    }

    /// Where session tools go (the gateway sets it after the router starts).
    pub fn with_sessions(
        mut self,
        sessions: std::sync::Arc<std::sync::OnceLock<Recipient<ExecuteTool>>>,
    ) -> ToolExecutor {
        self.sessions = sessions;
        self
    }
}

impl Actor for ToolExecutor {
    type Context = Context<Self>;

    fn stopped(&mut self, _: &mut Context<Self>) {
        self.processes.kill_all();
    }
}

/// A call another actor answers (the session tools, the MCP hub).
fn forward(
    to: Option<Recipient<ExecuteTool>>,
    msg: ExecuteTool,
    unavailable: &'static str,
    span: tracing::Span,
) -> ResponseFuture<ToolOutcome> {
    Box::pin(
        async move {
            let why = format!("{}: {unavailable}", msg.call.name);
            match to {
                Some(t) => t.send(msg).await.unwrap_or_else(|_| error(why)),
                None => error(why),
            }
        }
        .instrument(span),
    )
}

impl ToolExecutor {
    /// Where a tool another actor answers goes (None: this executor runs it).
    fn elsewhere(&self, name: &str) -> Option<(Option<Recipient<ExecuteTool>>, &'static str)> {
        if crate::tool::is_mcp(name) {
            Some((self.mcp.clone(), "no MCP servers are configured"))
        } else if name == "browser" {
            Some((self.browser.clone(), "the browser is not available"))
        } else if crate::tool::is_lsp(name) {
            Some((self.lsp.clone(), "no language servers are configured"))
        } else if super::MEDIA_TOOLS.contains(&name) {
            Some((self.media.clone(), "the media store is unavailable"))
        } else if super::GATEWAY_TOOLS.contains(&name) {
            Some((
                self.edge.get().cloned(),
                "the gateway's tools are unavailable",
            ))
        } else if SESSION_TOOLS.contains(&name) {
            // The session tools actor answers the same message.
            Some((
                self.sessions.get().cloned(),
                "session tools are unavailable",
            ))
        } else {
            None
        }
    }
}

/// What a built-in tool call works with (copied out of the executor).
struct Bench {
    workspace: Workspace,
    limits: ToolLimits,
    processes: exec::Processes,
    approvals: Option<Addr<crate::approvals::ApprovalsActor>>,
    nodes: Option<Addr<crate::nodes::NodeRegistry>>,
    memory: Option<crate::memory::AgentMemory>,
}

impl Handler<ExecuteTool> for ToolExecutor {
    type Result = ResponseFuture<ToolOutcome>;
    fn handle(&mut self, msg: ExecuteTool, _: &mut Context<Self>) -> Self::Result {
        let span = tracing::info_span!(
            "tool",
            tool = %msg.call.name,
            session_key = %msg.session_key,
            agent_id = %msg.agent_id
        );
        if let Some((to, unavailable)) = self.elsewhere(&msg.call.name) {
            return forward(to, msg, unavailable, span);
        }
        let bench = Bench {
            workspace: self.workspace.for_turn(&msg.trust),
            limits: self.limits.clone(),
            processes: self.processes.clone(),
            approvals: self.approvals.clone(),
            nodes: self.nodes.clone(),
            memory: self.memories.get(Some(&msg.agent_id)).cloned(),
        };
        Box::pin(run_builtin(bench, msg).instrument(span))
    }
}

/// One call of a tool this executor runs.
async fn run_builtin(b: Bench, msg: ExecuteTool) -> ToolOutcome {
    let (workspace, limits, processes) = (&b.workspace, &b.limits, &b.processes);
    let args = &msg.call.arguments;
    let node_call = super::nodes::NodeCall::of(&msg, b.nodes.as_ref());
    match msg.call.name.as_str() {
        "exec" | "bash" => {
            let cx = exec::ExecCtx {
                workspace,
                limits,
                processes,
                env: &msg.env,
                session_key: &msg.session_key,
                agent_id: &msg.agent_id,
                untrusted: msg.trust.untrusted,
                policy: msg.exec.clone(),
                approvals: b.approvals.clone(),
                node_call: &node_call,
                waiting: msg.progress.clone().map(|p| (p, msg.call.clone())),
            };
            exec::run(&cx, args, msg.cancel.clone()).await
        }
        "nodes" => super::nodes::tool(&node_call, args).await,
        "process" => exec::process(processes, &exec::Owner::of(&msg), args).await,
        "read" => read::run(workspace, limits, args).await,
        "web_fetch" => web_fetch::run(&limits.fetch, args).await,
        "web_search" => super::web_search::run(&limits.search, args).await,
        "sessions_yield" => super::turn_end::sessions_yield(args),
        "heartbeat_respond" => super::turn_end::heartbeat_respond(args),
        "write" => files::write(workspace, args).await,
        "edit" => files::edit(workspace, args).await,
        "apply_patch" => patch::run(workspace, args).await,
        "ls" => search::ls(workspace, args).await,
        "find" => search::find(workspace, args).await,
        "grep" => search::grep(workspace, args).await,
        "memory_search" => memory::search(b.memory.clone(), &msg, args).await,
        "memory_get" => memory::get(b.memory.clone(), &msg, args).await,
        other => error(format!("unknown tool: {other}")),
    }
}
