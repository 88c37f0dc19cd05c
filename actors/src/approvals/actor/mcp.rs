//! Per-call approval of MCP tools (`mcp.servers.<name>.approval`): the
//! same pending approvals, events (`exec.approval.requested|resolved`,
//! `host: "mcp"`) and operator answers as exec; an allow-always under
//! `auto` is a durable grant for that agent, server and tool, with any
//! arguments, kept where OpenClaw keeps it (`agents.<id>.mcpTools` in
//! the approvals file). A turn holding a stranger's message never mints
//! or uses a grant: its allow-always runs the call once.

use actix::prelude::*;
use serde_json::{json, Value};

use super::super::{Decision, Refused};
use super::ApprovalsActor;
use crate::ids::SessionKey;

/// Decides one MCP tool call that needs an operator. Reply: Ok to call.
#[derive(Debug, Message)]
#[rtype(result = "Result<(), Refused>")]
pub struct McpGate {
    pub agent_id: String,
    pub session_key: SessionKey,
    pub server: String,
    pub tool: String,
    /// The call's arguments as the operator sees them (capped).
    pub arguments: String,
    /// `auto`: a grant answers, and allow-always mints one; `prompt`:
    /// every call asks.
    pub grantable: bool,
    pub untrusted: bool,
}

impl ApprovalsActor {
    fn mcp_granted(&self, agent: &str, server: &str, tool: &str) -> bool {
        self.file["agents"][agent]["mcpTools"]
            .as_array()
            .is_some_and(|l| l.iter().any(|g| g["server"] == server && g["tool"] == tool))
    }

    fn mcp_grant(&mut self, agent: &str, server: &str, tool: &str, ctx: &mut Context<Self>) {
        if !self.file["agents"].is_object() {
            self.file["agents"] = json!({});
        }
        let a = &mut self.file["agents"][agent];
        if !a.is_object() {
            *a = json!({});
        }
        if !a["mcpTools"].is_array() {
            a["mcpTools"] = json!([]);
        }
        if let Some(list) = a["mcpTools"].as_array_mut() {
            list.push(
                json!({ "server": server, "tool": tool, "source": "allow-always",
                "addedAt": crate::now_ms() }),
            );
        }
        self.save_then(ctx, |_, r| {
            if let Err(e) = r {
                tracing::error!(error = %e, "cannot store the MCP tool grant");
            }
        });
    }
}

impl Handler<McpGate> for ApprovalsActor {
    type Result = ResponseActFuture<Self, Result<(), Refused>>;
    fn handle(&mut self, msg: McpGate, ctx: &mut Context<Self>) -> Self::Result {
        let _span = self.span.clone().entered();
        let usable = msg.grantable && !msg.untrusted;
        if usable && self.mcp_granted(&msg.agent_id, &msg.server, &msg.tool) {
            return Box::pin(actix::fut::ready(Ok(())));
        }
        let request: Value = json!({
            "command": format!("{}__{} {}", msg.server, msg.tool, msg.arguments),
            "host": "mcp",
            "agentId": msg.agent_id,
            "sessionKey": msg.session_key.as_str(),
            "mcpServer": msg.server,
            "mcpTool": msg.tool,
        });
        let timeout = self.timeout;
        let (id, _, _, rx) = match self.open(None, request, timeout, ctx) {
            Ok(x) => x,
            Err(e) => return Box::pin(actix::fut::ready(Err(Refused(e.to_string())))),
        };
        tracing::info!(approval = %id, server = %msg.server, tool = %msg.tool, untrusted = msg.untrusted, "mcp tool approval requested");
        Box::pin(async move { rx.await.ok().flatten() }.into_actor(self).map(
            move |decision, act, ctx| match decision {
                Some(Decision::AllowOnce) => Ok(()),
                Some(Decision::AllowAlways) => {
                    if usable && !act.mcp_granted(&msg.agent_id, &msg.server, &msg.tool) {
                        act.mcp_grant(&msg.agent_id, &msg.server, &msg.tool, ctx);
                    }
                    Ok(())
                }
                Some(Decision::Deny) => Err(Refused(format!(
                    "the operator denied this call of {}__{} (approval {id})",
                    msg.server, msg.tool
                ))),
                None => Err(Refused(format!(
                    "no operator answered approval {id} within {}s, so the call was denied",
                    timeout.as_secs()
                ))),
            },
        ))
    }
}
