//! Nodes: `node.list|describe`, `node.pair.list|approve|reject|remove`,
//! `node.rename`, `node.invoke` (operators); `node.invoke.result|progress`,
//! `node.event`, `node.skills.update`, `node.pluginTools.update`,
//! `node.runnerInventory.update` (the node itself); and
//! `exec.approvals.node.get|set` (the node host's own approvals file,
//! through `system.execApprovals.*`).

use ferroclaw_actors::devices::{ask_devices, RemoveDeviceRole};
use ferroclaw_actors::nodes::{
    ApproveNode, InvokeNode, InvokeResult, ListNodePairing, ListNodes, NodeAnswer, NodeEventIn,
    NodeUpdate, NodeView, PairRefusal, RejectNode, RemoveNode, RenameNode, UpdateKind,
};
use ferroclaw_actors::scopes::{self, scope_allows};
use serde::Deserialize;
use serde_json::{json, Value};

use super::{json, params, store_err, Caller, MethodResult};
use crate::protocol::errors::{ErrorCode, ErrorShape};
use crate::protocol::nodes as wire;
use crate::state::SharedState;

fn down<E>(_: E) -> ErrorShape {
    ErrorShape::unavailable("node registry unavailable").retry_after(1000)
}

/// A node row for this caller: what waits for approval is shown to
/// those who may approve it.
fn shown(v: &NodeView, caller: &Caller) -> Value {
    let mut row = serde_json::to_value(v).unwrap_or(Value::Null);
    if !scope_allows(&caller.scopes, scopes::PAIRING) {
        if let Some(o) = row.as_object_mut() {
            o.remove("pendingDeclaredCommands");
            o.remove("pendingDeclaredCaps");
            o.remove("pendingRequestId");
        }
    }
    row
}

pub(crate) async fn nodes(state: &SharedState) -> Result<Vec<NodeView>, ErrorShape> {
    state
        .gateway
        .nodes
        .send(ListNodes)
        .await
        .map_err(down)?
        .map_err(store_err)
}

pub async fn list(state: &SharedState, caller: &Caller, p: &Value) -> MethodResult {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct P {}
    let _: P = params(
        "node.list",
        &if p.is_null() { json!({}) } else { p.clone() },
    )?;
    let rows: Vec<Value> = nodes(state)
        .await?
        .iter()
        .map(|v| shown(v, caller))
        .collect();
    json(json!({ "ts": ferroclaw_actors::now_ms(), "nodes": rows }))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct NodeRef {
    node_id: String,
}

pub async fn describe(state: &SharedState, caller: &Caller, p: &Value) -> MethodResult {
    let p: NodeRef = params("node.describe", p)?;
    let id = p.node_id.trim();
    if id.is_empty() {
        return Err(ErrorShape::invalid("nodeId required"));
    }
    let all = nodes(state).await?;
    let Some(v) = all.iter().find(|v| v.node_id == id) else {
        return Err(ErrorShape::invalid("unknown nodeId"));
    };
    let mut row = shown(v, caller);
    row["ts"] = json!(ferroclaw_actors::now_ms());
    json(row)
}

pub async fn pair_list(state: &SharedState) -> MethodResult {
    let (pending, paired) = state
        .gateway
        .nodes
        .send(ListNodePairing)
        .await
        .map_err(down)?
        .map_err(store_err)?;
    json(json!({ "pending": pending, "paired": paired }))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RequestRef {
    request_id: String,
}

pub async fn pair_approve(state: &SharedState, caller: &Caller, p: &Value) -> MethodResult {
    let p: RequestRef = params("node.pair.approve", p)?;
    let msg = ApproveNode {
        request_id: p.request_id.clone(),
        caller_scopes: caller.scopes.clone(),
    };
    let approved = state
        .gateway
        .nodes
        .send(msg)
        .await
        .map_err(down)?
        .map_err(store_err)?;
    match approved {
        Ok(node) => json(json!({ "requestId": p.request_id, "node": node })),
        Err(PairRefusal::UnknownRequest) => Err(ErrorShape::invalid("unknown requestId")),
        Err(PairRefusal::MissingScope(scope, required)) => Err(ErrorShape::new(
            ErrorCode::Forbidden,
            format!("missing scope: {scope}"),
        )
        .with_details(json!({
            "code": "MISSING_SCOPE", "missingScope": scope, "requiredScopes": required,
        }))),
    }
}

pub async fn pair_reject(state: &SharedState, p: &Value) -> MethodResult {
    let p: RequestRef = params("node.pair.reject", p)?;
    let msg = RejectNode {
        request_id: p.request_id.clone(),
    };
    match state
        .gateway
        .nodes
        .send(msg)
        .await
        .map_err(down)?
        .map_err(store_err)?
    {
        Some(node_id) => json(json!({ "requestId": p.request_id, "nodeId": node_id })),
        None => Err(ErrorShape::invalid("unknown requestId")),
    }
}

pub async fn pair_remove(state: &SharedState, p: &Value) -> MethodResult {
    let p: NodeRef = params("node.pair.remove", p)?;
    let gw = &state.gateway;
    let node_id = p.node_id.trim().to_string();
    let known = gw
        .nodes
        .send(RemoveNode {
            node_id: node_id.clone(),
        })
        .await
        .map_err(down)?
        .map_err(store_err)?;
    // The device keeps its other roles; its node token goes.
    let msg = RemoveDeviceRole {
        device_id: node_id.clone(),
        role: "node".into(),
    };
    let had_role = ask_devices(&gw.devices, &gw.metrics, msg)
        .await
        .map_err(down)?
        .map_err(store_err)?;
    if !known && !had_role {
        return Err(ErrorShape::invalid("unknown nodeId"));
    }
    json(json!({ "nodeId": node_id }))
}

pub async fn rename(state: &SharedState, p: &Value) -> MethodResult {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    struct P {
        node_id: String,
        display_name: String,
    }
    let p: P = params("node.rename", p)?;
    if p.display_name.trim().is_empty() {
        return Err(ErrorShape::invalid("displayName required"));
    }
    let msg = RenameNode {
        node_id: p.node_id.clone(),
        display_name: p.display_name,
    };
    match state
        .gateway
        .nodes
        .send(msg)
        .await
        .map_err(down)?
        .map_err(store_err)?
    {
        Some(name) => json(json!({ "nodeId": p.node_id, "displayName": name })),
        None => Err(ErrorShape::invalid("unknown nodeId")),
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct InvokeParams {
    node_id: String,
    command: String,
    #[serde(default)]
    params: Option<Value>,
    #[serde(default)]
    timeout_ms: Option<u64>,
    idempotency_key: String,
    #[serde(default)]
    session_key: Option<String>,
    #[serde(default)]
    turn_source_channel: Option<String>,
    #[serde(default)]
    turn_source_to: Option<String>,
    #[serde(default)]
    turn_source_account_id: Option<String>,
    #[serde(default)]
    turn_source_thread_id: Option<Value>,
}

/// Runs a call through the registry and renders its answer.
pub async fn call(state: &SharedState, msg: InvokeNode) -> MethodResult {
    let command = msg.command.clone();
    let answer: Result<NodeAnswer, _> =
        state.gateway.nodes.send(msg.clone()).await.map_err(down)?;
    let answer = answer.map_err(|e| wire::invoke_error(&e))?;
    json(wire::answer(&msg.node_id, &command, &answer)?)
}

pub async fn invoke(state: &SharedState, caller: &Caller, p: &Value) -> MethodResult {
    let p: InvokeParams = params("node.invoke", p)?;
    if ferroclaw_actors::nodes::policy::admin_only(p.command.trim())
        && !scope_allows(&caller.scopes, scopes::ADMIN)
    {
        return Err(ErrorShape::missing_scope(scopes::ADMIN));
    }
    if p.idempotency_key.trim().is_empty() {
        return Err(ErrorShape::invalid(
            "invalid node.invoke params: at /idempotencyKey: must NOT have fewer than 1 characters",
        ));
    }
    let _ = (&p.turn_source_channel, &p.turn_source_to);
    let _ = (&p.turn_source_account_id, &p.turn_source_thread_id);
    call(
        state,
        InvokeNode {
            node_id: p.node_id.trim().to_string(),
            command: p.command.trim().to_string(),
            params: p.params,
            timeout_ms: p.timeout_ms,
            idempotency_key: Some(p.idempotency_key),
            session_key: p.session_key,
            internal: false,
        },
    )
    .await
}

/// The node's own id: its device.
fn own_id(caller: &Caller) -> Result<String, ErrorShape> {
    caller
        .device_id
        .clone()
        .ok_or_else(|| ErrorShape::invalid("nodeId required"))
}

pub async fn invoke_result(state: &SharedState, caller: &Caller, p: &Value) -> MethodResult {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    struct P {
        id: String,
        node_id: String,
        ok: bool,
        #[serde(default)]
        payload: Option<Value>,
        #[serde(default, rename = "payloadJSON")]
        payload_json: Option<String>,
        #[serde(default)]
        error: Option<Value>,
    }
    let p: P = params("node.invoke.result", p)?;
    if own_id(caller)? != p.node_id {
        return Err(ErrorShape::invalid("nodeId mismatch"));
    }
    let msg = InvokeResult {
        conn_id: caller.conn_id.clone(),
        node_id: p.node_id,
        id: p.id,
        answer: NodeAnswer {
            ok: p.ok,
            payload: p.payload,
            payload_json: p.payload_json,
            error: p.error,
        },
    };
    let matched = state.gateway.nodes.send(msg).await.map_err(down)?;
    if matched {
        json(json!({ "ok": true }))
    } else {
        json(json!({ "ok": true, "ignored": true }))
    }
}

/// `node.invoke.progress`: streamed output is not relayed (a call's answer
/// carries its whole output); accepted and said to be ignored.
pub fn invoke_progress(caller: &Caller, p: &Value) -> MethodResult {
    let node_id = p.get("nodeId").and_then(Value::as_str).unwrap_or("");
    if own_id(caller)? != node_id {
        return Err(ErrorShape::invalid("nodeId mismatch"));
    }
    json(json!({ "ok": true, "ignored": true }))
}

pub async fn event(state: &SharedState, caller: &Caller, p: &Value) -> MethodResult {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    struct P {
        event: String,
        #[serde(default)]
        payload: Option<Value>,
        #[serde(default, rename = "payloadJSON")]
        payload_json: Option<String>,
    }
    let p: P = params("node.event", p)?;
    let node_id = own_id(caller)?;
    let payload = p.payload.or_else(|| {
        p.payload_json
            .as_deref()
            .and_then(|j| serde_json::from_str(j).ok())
    });
    let gw = &state.gateway;
    if matches!(
        p.event.as_str(),
        "node.hostStats" | "host.stats" | "hostStats"
    ) {
        let msg = NodeUpdate {
            conn_id: caller.conn_id.clone(),
            node_id: node_id.clone(),
            kind: UpdateKind::HostStats,
            value: payload.clone().unwrap_or(Value::Null),
        };
        gw.nodes.send(msg).await.map_err(down)?;
    }
    let msg = NodeEventIn {
        conn_id: caller.conn_id.clone(),
        node_id,
        event: p.event,
        payload,
    };
    gw.nodes.send(msg).await.map_err(down)?;
    json(json!({ "ok": true }))
}

/// `node.skills.update`, `node.pluginTools.update`,
/// `node.runnerInventory.update`: kept while the node is connected.
pub async fn update(state: &SharedState, caller: &Caller, method: &str, p: &Value) -> MethodResult {
    let node_id = own_id(caller)?;
    let (kind, field) = match method {
        "node.skills.update" => (UpdateKind::Skills, Some("skills")),
        "node.pluginTools.update" => (UpdateKind::PluginTools, Some("tools")),
        _ => (UpdateKind::RunnerInventory, None),
    };
    let value = match field {
        Some(f) => match p.get(f) {
            Some(v @ Value::Array(_)) => v.clone(),
            _ => {
                return Err(ErrorShape::invalid(format!(
                    "invalid {method} params: must have required property '{f}'"
                )))
            }
        },
        None if p.is_object() => p.clone(),
        None => return Err(ErrorShape::invalid("invalid node runner inventory")),
    };
    let msg = NodeUpdate {
        conn_id: caller.conn_id.clone(),
        node_id: node_id.clone(),
        kind,
        value: value.clone(),
    };
    if !state.gateway.nodes.send(msg).await.map_err(down)? {
        return Err(ErrorShape::invalid("unknown nodeId"));
    }
    match field {
        Some("skills") => json(json!({ "nodeId": node_id, "skills": value })),
        Some(_) => json(json!({ "nodeId": node_id, "tools": value })),
        None => json(json!({ "nodeId": node_id })),
    }
}

/// `exec.approvals.node.get|set`: the node host's approvals file, read and
/// written on the node (`system.execApprovals.get|set`).
pub async fn approvals(state: &SharedState, method: &str, p: &Value) -> MethodResult {
    let node_id = p
        .get("nodeId")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| {
            ErrorShape::invalid(format!(
                "invalid {method} params: must have required property 'nodeId'"
            ))
        })?;
    let (command, params) = if method == "exec.approvals.node.get" {
        ("system.execApprovals.get", json!({}))
    } else {
        let mut rest = p.clone();
        if let Some(o) = rest.as_object_mut() {
            o.remove("nodeId");
        }
        ("system.execApprovals.set", rest)
    };
    let msg = InvokeNode {
        node_id: node_id.to_string(),
        command: command.into(),
        params: Some(params),
        timeout_ms: Some(15_000),
        idempotency_key: None,
        session_key: None,
        internal: true,
    };
    let answer = state.gateway.nodes.send(msg).await.map_err(down)?;
    let answer = answer.map_err(|e| wire::invoke_error(&e))?;
    let v = wire::answer(node_id, command, &answer)?;
    json(v.get("payload").cloned().unwrap_or(Value::Null))
}

/// The node methods' answers (None: not one of them).
pub async fn route(
    state: &SharedState,
    caller: &Caller,
    method: &str,
    p: &Value,
) -> Option<MethodResult> {
    Some(match method {
        "node.list" => list(state, caller, p).await,
        "node.describe" => describe(state, caller, p).await,
        "node.pair.list" => pair_list(state).await,
        "node.pair.approve" => pair_approve(state, caller, p).await,
        "node.pair.reject" => pair_reject(state, p).await,
        "node.pair.remove" => pair_remove(state, p).await,
        "node.rename" => rename(state, p).await,
        "node.invoke" => invoke(state, caller, p).await,
        "node.invoke.result" => invoke_result(state, caller, p).await,
        "node.invoke.progress" => invoke_progress(caller, p),
        "node.event" => event(state, caller, p).await,
        "node.skills.update" | "node.pluginTools.update" | "node.runnerInventory.update" => {
            update(state, caller, method, p).await
        }
        "exec.approvals.node.get" | "exec.approvals.node.set" => approvals(state, method, p).await,
        _ => return None,
    })
}
