//! exec.approval.request / waitDecision / resolve (operator.approvals) and
//! exec.approvals.get / set (admin): the approvals actor's wire side.

use std::time::Duration;

use ferroclaw_actors::approvals::{
    ApprovalError, Decision, ExecPolicy, GetApprovals, Host, ListGrants, ListPending,
    RequestApproval, ResolveApproval, RevokeGrant, SetApprovals, WaitDecision,
};
use serde::Deserialize;
use serde_json::{json, Value};

use super::{json, params, Caller, MethodResult};
use crate::protocol::errors::ErrorShape;
use crate::state::SharedState;

fn down<E>(_: E) -> ErrorShape {
    ErrorShape::unavailable("the approvals service is unavailable")
}

/// An approvals error by the one table (`protocol::errors`).
fn failed(e: ApprovalError) -> ErrorShape {
    ErrorShape::from_error(&e)
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RequestParams {
    #[serde(default)]
    id: Option<String>,
    command: String,
    #[serde(default)]
    cwd: Option<String>,
    #[serde(default)]
    host: Option<String>,
    #[serde(default)]
    security: Option<String>,
    #[serde(default)]
    ask: Option<String>,
    #[serde(default)]
    agent_id: Option<String>,
    #[serde(default)]
    resolved_path: Option<String>,
    #[serde(default)]
    session_key: Option<String>,
    #[serde(default)]
    timeout_ms: Option<u64>,
}

/// Opens an approval, broadcasts `exec.approval.requested`, and answers
/// when it is resolved or expires (`decision: null`).
pub async fn request(state: &SharedState, p: &Value) -> MethodResult {
    let p: RequestParams = params("exec.approval.request", p)?;
    if p.command.trim().is_empty() {
        return Err(ErrorShape::invalid(
            "exec.approval.request: command must not be empty",
        ));
    }
    let request = json!({
        "command": p.command, "cwd": p.cwd, "host": p.host, "security": p.security, "ask": p.ask,
        "agentId": p.agent_id, "resolvedPath": p.resolved_path, "sessionKey": p.session_key,
    });
    let (id, decision, created, expires) = state
        .gateway
        .approvals
        .send(RequestApproval {
            id: p.id,
            request,
            timeout: p.timeout_ms.map(Duration::from_millis),
        })
        .await
        .map_err(down)?
        .map_err(failed)?;
    json(
        json!({ "id": id, "decision": decision.map(Decision::as_str), "createdAtMs": created, "expiresAtMs": expires }),
    )
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct IdParams {
    id: String,
}

pub async fn wait_decision(state: &SharedState, p: &Value) -> MethodResult {
    let p: IdParams = params("exec.approval.waitDecision", p)?;
    let d = state
        .gateway
        .approvals
        .send(WaitDecision { id: p.id.clone() })
        .await
        .map_err(down)?
        .map_err(failed)?;
    json(json!({ "id": p.id, "decision": d.map(Decision::as_str) }))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ResolveParams {
    id: String,
    decision: String,
}

pub async fn resolve(state: &SharedState, caller: &Caller, p: &Value) -> MethodResult {
    let p: ResolveParams = params("exec.approval.resolve", p)?;
    let decision = Decision::parse(&p.decision).map_err(|e| ErrorShape::invalid(e.to_string()))?;
    let by = caller
        .device_id
        .clone()
        .unwrap_or_else(|| caller.client_id.clone());
    state
        .gateway
        .approvals
        .send(ResolveApproval {
            id: p.id.clone(),
            decision,
            by: Some(by),
        })
        .await
        .map_err(down)?
        .map_err(failed)?;
    json(json!({ "ok": true, "id": p.id, "decision": decision.as_str() }))
}

/// The file and `resolvedDefaults`: what is in force by default, the
/// config's `tools.exec` met with the file's defaults.
async fn view(state: &SharedState) -> Result<Value, ErrorShape> {
    let d = &state.gateway.tool_policy.exec;
    let policy = ExecPolicy {
        host: d.host.unwrap_or(Host::Gateway),
        security: d.security,
        ask: d.ask,
        node: None,
    };
    let v = state
        .gateway
        .approvals
        .send(GetApprovals { policy })
        .await
        .map_err(down)?;
    Ok(json!({
        "path": v.path, "exists": v.exists, "hash": v.hash, "file": v.file,
        "resolvedDefaults": {
            "security": v.security.as_str(), "ask": v.ask.as_str(),
            "askFallback": v.ask_fallback.as_str(), "autoAllowSkills": false,
        },
    }))
}

pub async fn get(state: &SharedState) -> MethodResult {
    json(view(state).await?)
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct SetParams {
    file: Value,
    #[serde(default)]
    base_hash: Option<String>,
}

pub async fn set(state: &SharedState, p: &Value) -> MethodResult {
    let p: SetParams = params("exec.approvals.set", p)?;
    let hash = state
        .gateway
        .approvals
        .send(SetApprovals {
            file: p.file,
            base_hash: p.base_hash,
        })
        .await
        .map_err(down)?
        .map_err(failed)?;
    let mut out = view(state).await?;
    out["hash"] = json!(hash);
    json(out)
}

/// `exec.approval.list`: requests still waiting for an operator, oldest
/// first (`[{id, request, createdAtMs, expiresAtMs}]`).
pub async fn list(state: &SharedState, p: &Value) -> MethodResult {
    super::empty_params("exec.approval.list", p)?;
    let pending = state
        .gateway
        .approvals
        .send(ListPending)
        .await
        .map_err(down)?;
    let rows: Vec<Value> = pending
        .into_iter()
        .map(|a| {
            json!({ "id": a.id, "request": a.request, "createdAtMs": a.created_at_ms,
                     "expiresAtMs": a.expires_at_ms })
        })
        .collect();
    json(Value::Array(rows))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct GrantsListParams {
    #[serde(default)]
    limit: Option<u64>,
}

/// `exec.approval.grants.list`: the standing grants cron jobs were given
/// (`allow-always` on their own exec), newest first.
pub async fn grants_list(state: &SharedState, p: &Value) -> MethodResult {
    let p: GrantsListParams = params("exec.approval.grants.list", p)?;
    let limit = match p.limit {
        None => 200,
        Some(l @ 1..=500) => l as usize,
        Some(l) => {
            return Err(ErrorShape::invalid(format!(
                "invalid exec.approval.grants.list params: at /limit: must be 1..500 (got {l})"
            )))
        }
    };
    let grants = state
        .gateway
        .approvals
        .send(ListGrants { limit })
        .await
        .map_err(down)?;
    json(json!({ "grants": grants }))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct GrantRevokeParams {
    grant_id: String,
}

/// `exec.approval.grants.revoke`: the job asks again next time.
pub async fn grants_revoke(state: &SharedState, caller: &Caller, p: &Value) -> MethodResult {
    let p: GrantRevokeParams = params("exec.approval.grants.revoke", p)?;
    let outcome = state
        .gateway
        .approvals
        .send(RevokeGrant {
            grant_id: p.grant_id,
            by: caller.client_id.clone(),
        })
        .await
        .map_err(down)?;
    json(json!({ "outcome": outcome.as_str() }))
}
