//! `McpServer`: one actor per configured server and per connection. It
//! connects when it starts, reports its tools to the hub, answers tool
//! calls, refreshes its tools on `tools/list_changed`, and stops when the
//! connection ends (the hub restarts it with backoff). Stopping closes the
//! connection and kills a stdio server's whole process group.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix::prelude::*;
use rmcp::service::RoleClient;
use rmcp::Peer;

use super::catalog::ToolDef;
use super::client::{self, Connection, Note};
use super::error::McpError;
use super::messages::{CallTool, HubLink, Retire, ServerDown, ServerTools, ServerUp};
use crate::settings::{McpServerSettings, McpTimeouts};
use crate::tool::ToolOutcome;

/// Notifications a server may have queued before the rest are dropped.
const MAILBOX: usize = 64;

pub struct McpServer {
    span: tracing::Span,
    name: String,
    /// Which start of this server this is (reports of older ones are stale).
    generation: u64,
    settings: McpServerSettings,
    timeouts: McpTimeouts,
    hub: HubLink,
    http: reqwest::Client,
    live: Option<Live>,
    /// A tools refresh is running (another notification adds nothing).
    refreshing: bool,
    /// Set by the transport when `tools/list_changed` arrives; whoever
    /// clears it refreshes: a completing call (before its run's next model
    /// call), or the notification itself when no call is in flight.
    changed: Arc<AtomicBool>,
    /// Tool calls in flight.
    in_flight: Arc<AtomicUsize>,
    /// Calls in flight by progress token: where their progress goes.
    progress: Progress,
}

type Progress = Arc<Mutex<HashMap<String, (crate::tool::ProgressSink, crate::provider::ToolCall)>>>;

struct Live {
    peer: Peer<RoleClient>,
    pid: Option<u32>,
    stop: rmcp::service::RunningServiceCancellationToken,
}

impl McpServer {
    pub fn new(
        name: String,
        generation: u64,
        settings: McpServerSettings,
        timeouts: McpTimeouts,
        hub: HubLink,
        http: reqwest::Client,
    ) -> McpServer {
        McpServer {
            span: tracing::info_span!("mcp_server", server = %name),
            name,
            generation,
            settings,
            timeouts,
            hub,
            http,
            live: None,
            refreshing: false,
            changed: Arc::default(),
            in_flight: Arc::default(),
            progress: Arc::default(),
        }
    }

    fn down(&self, ctx: &mut Context<Self>, error: String) {
        self.hub.down.do_send(ServerDown {
            name: self.name.clone(),
            generation: self.generation,
            error,
        });
        ctx.stop();
    }
}

impl Actor for McpServer {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        let _span = self.span.clone().entered();
        ctx.set_mailbox_capacity(MAILBOX);
        let (name, settings, http) = (self.name.clone(), self.settings.clone(), self.http.clone());
        let notes = Some(ctx.address().recipient());
        let changed = self.changed.clone();
        let timeouts = self.timeouts;
        let connecting =
            async move { client::open(&name, &settings, timeouts, notes, changed, http).await };
        ctx.wait(actix::fut::wrap_future(connecting).map(
            |r: Result<(Connection, Vec<ToolDef>), McpError>, act: &mut Self, ctx| match r {
                Ok((conn, tools)) => {
                    let (protocol, server_info) = (conn.protocol.clone(), conn.server_info.clone());
                    act.live = Some(Live {
                        peer: conn.peer(),
                        pid: conn.pid,
                        stop: conn.service.cancellation_token(),
                    });
                    tracing::info!(server = %act.name, %protocol, %server_info, tools = tools.len(), "mcp server connected");
                    act.hub.up.do_send(ServerUp {
                        name: act.name.clone(),
                        generation: act.generation,
                        tools,
                        protocol,
                        server_info,
                        pid: conn.pid,
                    });
                    // The connection's end (the child exited, the peer hung up).
                    let ended = conn.service.waiting();
                    ctx.spawn(actix::fut::wrap_future(ended).map(
                        |r, act: &mut Self, ctx| {
                            let why = match r {
                                Ok(reason) => format!("connection ended ({reason:?})"),
                                Err(e) => format!("connection task failed: {e}"),
                            };
                            act.down(ctx, why);
                        },
                    ));
                }
                Err(e) => act.down(ctx, e.to_string()),
            },
        ));
    }

    fn stopped(&mut self, _: &mut Context<Self>) {
        if let Some(live) = self.live.take() {
            live.stop.cancel();
            crate::tool::kill_group(live.pid);
        }
    }
}

impl Handler<Retire> for McpServer {
    type Result = ();
    fn handle(&mut self, _: Retire, ctx: &mut Context<Self>) {
        ctx.stop();
    }
}

impl Handler<Note> for McpServer {
    type Result = ();
    fn handle(&mut self, note: Note, ctx: &mut Context<Self>) {
        let _span = self.span.clone().entered();
        match note {
            Note::ToolsChanged => {
                let Some(live) = &self.live else { return };
                // A call in flight refreshes when it completes (so its run's
                // next model call has the new list), the last one included.
                if self.in_flight.load(Ordering::Acquire) > 0 {
                    return;
                }
                if self.refreshing || !self.changed.swap(false, Ordering::AcqRel) {
                    return;
                }
                self.refreshing = true;
                let peer = live.peer.clone();
                let limit = self.timeouts.request;
                ctx.spawn(
                    actix::fut::wrap_future(async move { client::all_tools(&peer, limit).await })
                        .map(|r, act: &mut Self, _| {
                            act.refreshing = false;
                            match r {
                                Ok(tools) => act.hub.tools.do_send(ServerTools {
                                    name: act.name.clone(),
                                    generation: act.generation,
                                    tools,
                                }),
                                Err(e) => tracing::warn!(server = %act.name, error = %e, "mcp tools refresh failed"),
                            }
                        }),
                );
            }
            Note::Progress {
                token,
                progress,
                total,
                message,
            } => {
                let routes = self.progress.lock().unwrap_or_else(|e| e.into_inner());
                if let Some((to, call)) = routes.get(&token) {
                    to.sink.do_send(crate::tool::ToolProgress {
                        run_id: to.run_id.clone(),
                        call: call.clone(),
                        progress,
                        total,
                        message,
                        approval: None,
                    });
                }
            }
        }
    }
}

/// What a completed call owes its run: the server's new tool list when
/// the call changed it.
struct AfterCall {
    changed: Arc<AtomicBool>,
    hub: HubLink,
    name: String,
    generation: u64,
}

impl AfterCall {
    /// The run's next model call is offered the new list. No await between
    /// leaving and the swap: a notification handled meanwhile (same thread)
    /// cannot take the flag from this call.
    async fn refresh(self, flight: Option<InFlight>, peer: &Peer<RoleClient>, limit: Duration) {
        drop(flight);
        if !self.changed.swap(false, Ordering::AcqRel) {
            return;
        }
        match client::all_tools(peer, limit).await {
            Ok(tools) => {
                let refreshed = ServerTools {
                    name: self.name,
                    generation: self.generation,
                    tools,
                };
                let _ = self.hub.tools.send(refreshed).await;
            }
            Err(e) => tracing::warn!(server = %self.name, error = %e, "mcp tools refresh failed"),
        }
    }
}

/// Counts a tool call in flight until dropped.
struct InFlight(Arc<AtomicUsize>);

impl InFlight {
    fn enter(count: &Arc<AtomicUsize>) -> InFlight {
        count.fetch_add(1, Ordering::AcqRel);
        InFlight(count.clone())
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Handler<CallTool> for McpServer {
    type Result = ResponseFuture<ToolOutcome>;
    fn handle(&mut self, msg: CallTool, _: &mut Context<Self>) -> Self::Result {
        let Some(live) = &self.live else {
            let name = self.name.clone();
            return Box::pin(async move {
                crate::tool::error(format!("MCP server {name} is still connecting; try again"))
            });
        };
        let (peer, name, limit) = (live.peer.clone(), self.name.clone(), self.timeouts.request);
        let (changed, hub, generation) = (self.changed.clone(), self.hub.clone(), self.generation);
        let routes = self.progress.clone();
        // Utility calls (resources, prompts) never refresh: not counted.
        let flight =
            (msg.kind == super::catalog::ToolKind::Tool).then(|| InFlight::enter(&self.in_flight));
        Box::pin(async move {
            let mut cancel = msg.cancel;
            if msg.kind != super::catalog::ToolKind::Tool {
                return super::utility::utility(&peer, &name, msg.kind, &msg.args, limit).await;
            }
            let mut token = None;
            let sink = msg.progress;
            let outcome =
                client::call(&peer, &name, &msg.tool, msg.args, limit, &mut cancel, |t| {
                    if let Some(sink) = sink {
                        routes
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .insert(t.clone(), sink);
                        token = Some(t);
                    }
                })
                .await;
            if let Some(t) = token {
                routes.lock().unwrap_or_else(|e| e.into_inner()).remove(&t);
            }
            let after = AfterCall {
                changed,
                hub,
                name,
                generation,
            };
            after.refresh(flight, &peer, limit).await;
            outcome
        })
    }
}
