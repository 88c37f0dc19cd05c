//! `LspHub`: the language servers in force and their tools. A server
//! starts on its first call (for the agent's workspace), is stopped after
//! `tools.lsp.idleTimeoutMs` without one, and is started again after it
//! died; a changed or removed server is stopped. Tool calls from a turn
//! holding a stranger's message are refused (the tools are never offered
//! to one either: `tool/untrusted.rs`).

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use actix::prelude::*;

use super::messages::{LspReconfigure, LspStatus, StopServer};
use super::ops::{self, Budgets};
use super::server::{launch, LspServer};
use super::{LspError, LspServerStatus};
use crate::settings::{LspServerSettings, LspSettings};
use crate::tool::{ExecuteTool, ToolOutcome};

struct Live {
    addr: Addr<LspServer>,
    last_use: Instant,
}

pub struct LspHub {
    servers: BTreeMap<String, LspServerSettings>,
    live: HashMap<String, Live>,
    last_error: HashMap<String, String>,
    workspace: PathBuf,
    budgets: Budgets,
    startup: Duration,
    idle: Duration,
    /// Where its tools are offered (its part of the servers' catalog).
    catalog: crate::mcp::McpCatalog,
    span: tracing::Span,
}

impl Actor for LspHub {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        let every = (self.idle / 4).clamp(Duration::from_secs(1), Duration::from_secs(60));
        ctx.run_interval(every, |act, _| act.stop_idle());
    }
}

impl LspHub {
    pub fn new(
        settings: &LspSettings,
        workspace: PathBuf,
        catalog: crate::mcp::McpCatalog,
    ) -> LspHub {
        let mut hub = LspHub {
            servers: BTreeMap::new(),
            live: HashMap::new(),
            last_error: HashMap::new(),
            workspace,
            budgets: Budgets {
                request: Duration::from_millis(settings.request_timeout_ms.max(1)),
                diagnostics: Duration::from_millis(settings.diagnostics_wait_ms),
            },
            startup: Duration::from_millis(settings.startup_timeout_ms.max(1)),
            idle: Duration::from_millis(settings.idle_timeout_ms.max(1000)),
            catalog,
            span: tracing::info_span!("lsp_hub"),
        };
        hub.set(settings.servers.clone());
        hub
    }

    fn set(&mut self, servers: BTreeMap<String, LspServerSettings>) {
        for (name, live) in std::mem::take(&mut self.live) {
            match servers.get(&name) == self.servers.get(&name) {
                true => {
                    self.live.insert(name, live);
                }
                false => live.addr.do_send(StopServer),
            }
        }
        self.catalog
            .publish_lsp(servers.keys().flat_map(|n| ops::specs(n)).collect());
        self.servers = servers;
    }

    fn stop_idle(&mut self) {
        let idle = self.idle;
        self.live.retain(|name, l| {
            let keep = l.last_use.elapsed() < idle && l.addr.connected();
            if !keep {
                tracing::info!(server = %name, "language server stopped (idle or gone)");
                l.addr.do_send(StopServer);
            }
            keep
        });
    }
}

impl Handler<LspReconfigure> for LspHub {
    type Result = ();
    fn handle(&mut self, msg: LspReconfigure, _: &mut Context<Self>) {
        let _span = self.span.clone().entered();
        self.set(msg.servers);
    }
}

impl LspHub {
    /// The running server `name`, its use noted (None: start one).
    fn running(&mut self, name: &str) -> Option<Addr<LspServer>> {
        let live = self.live.get_mut(name).filter(|l| l.addr.connected())?;
        live.last_use = Instant::now();
        Some(live.addr.clone())
    }

    /// Keeps a server that started, or its failure for `status`.
    fn note_start(
        &mut self,
        name: &str,
        started: Result<(Addr<LspServer>, bool), LspError>,
    ) -> Result<Addr<LspServer>, LspError> {
        match started {
            Ok((addr, fresh)) => {
                if fresh {
                    let last_use = Instant::now();
                    let live = Live {
                        addr: addr.clone(),
                        last_use,
                    };
                    self.live.insert(name.to_string(), live);
                }
                self.last_error.remove(name);
                Ok(addr)
            }
            Err(e) => {
                self.last_error.insert(name.to_string(), e.to_string());
                Err(e)
            }
        }
    }
}

impl Handler<ExecuteTool> for LspHub {
    type Result = ResponseActFuture<Self, ToolOutcome>;
    fn handle(&mut self, msg: ExecuteTool, _: &mut Context<Self>) -> Self::Result {
        let _span = self.span.clone().entered();
        let name = msg.call.name.clone();
        let fail = |text: String| -> Self::Result {
            Box::pin(actix::fut::ready(ToolOutcome::refused(text)))
        };
        if msg.trust.untrusted {
            let why = "language servers are not for a turn holding a stranger's message";
            return fail(format!("{name}: {why}"));
        }
        let Some((op, server)) = ops::parse(&name) else {
            return fail(format!("{name}: no such LSP tool"));
        };
        let Some(settings) = self.servers.get(server).cloned() else {
            return fail(format!("{name}: no language server {server} is configured"));
        };
        let server = server.to_string();
        let live = self.running(&server);
        let (root, startup, budgets) = (self.workspace.clone(), self.startup, self.budgets);
        let (args, srv, map) = (
            msg.call.arguments.clone(),
            server.clone(),
            settings.extension_to_language.clone(),
        );
        let start = async move {
            match live {
                Some(a) => Ok((a, false)),
                None => launch(&srv, &settings, &root, startup)
                    .await
                    .map(|a| (a, true)),
            }
        };
        let root = self.workspace.clone();
        Box::pin(start.into_actor(self).then(move |started, act, _| {
            let addr = act.note_start(&server, started);
            async move {
                let addr = addr?;
                let target = ops::target(op, &args, &root, &map).await?;
                ops::run(op, &addr, target, &args, &root, budgets).await
            }
            .into_actor(act)
            .map(|r, _, _| match r {
                // The server reads files that may hold anyone's text.
                Ok(text) => ToolOutcome::ok(crate::trust::wrap("a language server", &text)),
                Err(e) => ToolOutcome::error(e.to_string()),
            })
        }))
    }
}

impl Handler<LspStatus> for LspHub {
    type Result = MessageResult<LspStatus>;
    fn handle(&mut self, _: LspStatus, _: &mut Context<Self>) -> Self::Result {
        let rows = self
            .servers
            .iter()
            .map(|(name, s)| LspServerStatus {
                name: name.clone(),
                command: std::iter::once(s.command.clone())
                    .chain(s.args.iter().cloned())
                    .collect::<Vec<_>>()
                    .join(" "),
                running: self.live.get(name).is_some_and(|l| l.addr.connected()),
                last_error: self.last_error.get(name).cloned(),
            })
            .collect();
        MessageResult(rows)
    }
}
