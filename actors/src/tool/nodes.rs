//! The agent on nodes: `exec` with host `node` (`system.run` on the node
//! `tools.exec.node` or the session's `execNode` names, after the gateway's
//! own approvals; the node host's approvals file decides too), and
//! OpenClaw's `nodes` tool (status, describe, run, invoke, notify, and the
//! camera, screen and location commands where a node offers them).
//!
//! Trust: a node is the operator's machine. A turn holding a stranger's
//! message never reaches one: both paths refuse before anything is sent.
//! What a node answers is a command's output, returned as the tool's text.

use serde_json::{json, Value};

use super::{blocked, error, ok, str_arg};
use crate::nodes::{InvokeNode, ListNodes, NodeAnswer, NodeRegistry};
use crate::tool::ToolOutcome;

/// Where a node call comes from: the session, its turn's trust, the call.
pub struct NodeCall<'a> {
    pub nodes: Option<&'a actix::Addr<NodeRegistry>>,
    pub session_key: &'a str,
    pub call_id: &'a str,
    pub untrusted: bool,
}

impl<'a> NodeCall<'a> {
    pub fn of(msg: &'a super::ExecuteTool, nodes: Option<&'a actix::Addr<NodeRegistry>>) -> Self {
        NodeCall {
            nodes,
            session_key: msg.session_key.as_str(),
            call_id: &msg.call.id,
            untrusted: msg.trust.untrusted,
        }
    }
}

const STRANGER: &str = "not run: a turn that holds a message from someone who is not the operator never reaches a node";

impl NodeCall<'_> {
    /// Sends one command; the call id keys it, so a run restarted from
    /// its last step never runs it twice.
    async fn invoke(
        &self,
        node: &str,
        command: &str,
        params: Value,
        timeout_ms: u64,
    ) -> Result<Value, NodeCallError> {
        let Some(nodes) = self.nodes else {
            return Err(NodeCallError::NoRegistry);
        };
        let msg = InvokeNode {
            node_id: node.to_string(),
            command: command.to_string(),
            params: Some(params),
            timeout_ms: Some(timeout_ms),
            idempotency_key: Some(format!("tool:{}:{}", self.session_key, self.call_id)),
            session_key: Some(self.session_key.to_string()),
            internal: false,
        };
        match nodes.send(msg).await {
            Ok(Ok(a)) => payload(&a),
            Ok(Err(e)) => Err(NodeCallError::Invoke(e)),
            Err(_) => Err(NodeCallError::Unavailable),
        }
    }
}

/// Why a node command gave no payload.
#[derive(Debug, thiserror::Error)]
pub enum NodeCallError {
    #[error("no node registry")]
    NoRegistry,
    #[error("the node registry is unavailable")]
    Unavailable,
    #[error(transparent)]
    Invoke(crate::nodes::InvokeError),
    /// The node's own error: `code: message` (the code when it gave one).
    #[error("{}{message}", if code.is_empty() { String::new() } else { format!("{code}: ") })]
    Failed { code: String, message: String },
}

/// A node's answer: its payload (parsed), or its `code: message`.
fn payload(a: &NodeAnswer) -> Result<Value, NodeCallError> {
    if !a.ok {
        let e = a.error.clone().unwrap_or(Value::Null);
        let text = |k: &str, or: &str| e.get(k).and_then(Value::as_str).unwrap_or(or).to_string();
        return Err(NodeCallError::Failed {
            code: text("code", ""),
            message: text("message", "node invoke failed"),
        });
    }
    Ok(match (&a.payload, &a.payload_json) {
        (Some(p), _) => p.clone(),
        (None, Some(j)) => serde_json::from_str(j).unwrap_or(Value::String(j.clone())),
        (None, None) => Value::Null,
    })
}

/// `system.run`'s payload as a tool result, like a local command's.
fn run_outcome(node: &str, p: &Value) -> ToolOutcome {
    let out = p.get("stdout").and_then(Value::as_str).unwrap_or("");
    let err = p.get("stderr").and_then(Value::as_str).unwrap_or("");
    let mut text = out.to_string();
    if !err.is_empty() {
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(err);
    }
    if p.get("timedOut").and_then(Value::as_bool) == Some(true) {
        return error(format!("{text}\n[timed out on node {node}]"));
    }
    if let Some(e) = p.get("error").and_then(Value::as_str) {
        return error(format!("{text}\n[{e}]"));
    }
    match p.get("exitCode").and_then(Value::as_i64) {
        Some(0) => ok(text),
        Some(c) => error(format!("{text}\n[exit code {c}]")),
        None if p.get("success").and_then(Value::as_bool) == Some(true) => ok(text),
        None => error(format!("{text}\n[no exit code from node {node}]")),
    }
}

/// `exec` with host `node`: `sh -c <command>` on the session's node.
pub async fn exec(
    call: &NodeCall<'_>,
    node: Option<&str>,
    command: &str,
    timeout_ms: u64,
) -> ToolOutcome {
    if call.untrusted {
        return blocked(format!("exec: {STRANGER}"));
    }
    let Some(node) = node else {
        return blocked("exec: not run: host is node but no node is chosen (set tools.exec.node, or execNode with sessions.patch)");
    };
    let params = json!({
        "command": ["sh", "-c", command],
        "rawCommand": command,
        "timeoutMs": timeout_ms,
        "sessionKey": call.session_key,
    });
    match call
        .invoke(node, "system.run", params, timeout_ms + 5_000)
        .await
    {
        Ok(p) => run_outcome(node, &p),
        Err(e) => error(format!("exec on node {node}: {e}")),
    }
}

/// OpenClaw's `nodes` tool.
pub async fn tool(call: &NodeCall<'_>, args: &Value) -> ToolOutcome {
    if call.untrusted {
        return blocked(format!("nodes: {STRANGER}"));
    }
    let action = match str_arg("nodes", args, "action") {
        Ok(a) => a.to_string(),
        Err(e) => return e,
    };
    if action == "status" || action == "list" {
        return status(call, None).await;
    }
    let node = match str_arg("nodes", args, "node") {
        Ok(n) => n.to_string(),
        Err(e) => return e,
    };
    let (command, params): (String, Value) = match action.as_str() {
        "describe" => return status(call, Some(&node)).await,
        "run" => {
            let argv = match args.get("command") {
                Some(Value::Array(a)) if !a.is_empty() => Value::Array(a.clone()),
                Some(Value::String(s)) if !s.is_empty() => json!(["sh", "-c", s]),
                _ => return error("nodes: `command` (an argv array or a shell line) is required for run"),
            };
            let timeout = args.get("commandTimeoutMs").and_then(Value::as_u64).unwrap_or(30_000);
            let p = json!({ "command": argv, "timeoutMs": timeout, "sessionKey": call.session_key });
            return match call.invoke(&node, "system.run", p, timeout + 5_000).await {
                Ok(p) => run_outcome(&node, &p),
                Err(e) => error(format!("nodes run on {node}: {e}")),
            };
        }
        "notify" => (
            "system.notify".into(),
            json!({ "title": args.get("title").cloned().unwrap_or(json!("OpenClaw")),
                    "body": args.get("body").cloned().unwrap_or(Value::Null) }),
        ),
        "invoke" => {
            let command = match str_arg("nodes", args, "invokeCommand") {
                Ok(c) => c.to_string(),
                Err(e) => return e,
            };
            (command, args.get("invokeParams").cloned().unwrap_or(json!({})))
        }
        "camera_list" => ("camera.list".into(), json!({})),
        "camera_snap" => ("camera.snap".into(), args.get("params").cloned().unwrap_or(json!({}))),
        "screen_snapshot" => ("screen.snapshot".into(), json!({})),
        "location_get" => ("location.get".into(), json!({})),
        other => return error(format!("nodes: unknown action {other:?} (status, describe, run, invoke, notify, camera_list, camera_snap, screen_snapshot, location_get)")),
    };
    let timeout = args
        .get("invokeTimeoutMs")
        .and_then(Value::as_u64)
        .unwrap_or(30_000);
    match call.invoke(&node, &command, params, timeout).await {
        Ok(p) => ok(p.to_string()),
        Err(e) => error(format!("nodes {action} on {node}: {e}")),
    }
}

/// The nodes the agent may use: name, id, connected, commands.
async fn status(call: &NodeCall<'_>, only: Option<&str>) -> ToolOutcome {
    let Some(nodes) = call.nodes else {
        return error("nodes: no node registry");
    };
    let views = match nodes.send(ListNodes).await {
        Ok(Ok(v)) => v,
        _ => return error("nodes: the node registry is unavailable"),
    };
    let rows: Vec<Value> = views
        .iter()
        .filter(|v| {
            only.is_none_or(|n| v.node_id == n || v.declared.display_name.as_deref() == Some(n))
        })
        .map(|v| {
            json!({
                "nodeId": v.node_id, "displayName": v.declared.display_name,
                "platform": v.declared.platform, "connected": v.connected,
                "approvalState": v.approval_state, "commands": v.declared.commands,
                "caps": v.declared.caps,
            })
        })
        .collect();
    if only.is_some() && rows.is_empty() {
        return error(format!("nodes: unknown node {:?}", only.unwrap_or("")));
    }
    ok(json!({ "nodes": rows }).to_string())
}
