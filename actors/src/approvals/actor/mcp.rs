//! Per-call approval of MCP tools (`mcp.servers.<name>.approval`): the
//! same pending approvals, events (`exec.approval.requested|resolved`,
//! `host: "mcp"`) and operator answers as exec; an allow-always under
//! `auto` is a durable grant for that agent, server and tool, with any
//! arguments, kept where OpenClaw keeps it (`agents.<id>.mcpTools` in
//! the approvals file). A turn holding a stranger's message never mints
//! or uses a grant: its allow-always runs the call once.

use super::super::{file, Decision, McpGate, Refused};
use super::ApprovalsActor;
use actix::prelude::*;

impl ApprovalsActor {
    fn mcp_granted(&self, agent: &str, server: &str, tool: &str) -> bool {
        file::mcp_granted(&self.file, agent, server, tool)
    }

    fn mcp_grant(&mut self, agent: &str, server: &str, tool: &str, ctx: &mut Context<Self>) {
        file::grant_mcp(&mut self.file, agent, server, tool);
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
        let request = file::mcp_request(&msg);
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
