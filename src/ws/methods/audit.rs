//! `audit.activity.list` and `audit.list` (`openclaw audit`): pages of the
//! audit ledger (`ferroclaw_actors::audit`), newest first, with OpenClaw's
//! params, filter rules, cursor and errors. ferroclaw also takes `kind:
//! "control"` (its control family; never listed otherwise).
//!
//! And the control records of the operator's own changes: after a
//! successful call of one of `CONTROL`'s methods, `record_control` writes
//! who (the caller's device, else its client id) did what to which
//! subject. Config changes are recorded by the config methods (they know
//! the changed paths).

use ferroclaw_actors::audit::{Activity, ControlActivity, End, ListAudit, Query, Who};
use serde::Deserialize;
use serde_json::{json, Value};

use super::{json as reply, params, MethodResult};
use crate::protocol::audit as wire;
use crate::protocol::errors::ErrorShape;
use crate::state::SharedState;
use crate::ws::caller::Caller;

const STATUSES: &[&str] = &[
    "started",
    "succeeded",
    "failed",
    "cancelled",
    "timed_out",
    "blocked",
    "unknown",
];

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ListParams {
    agent_id: Option<String>,
    session_key: Option<String>,
    run_id: Option<String>,
    kind: Option<String>,
    status: Option<String>,
    direction: Option<String>,
    channel: Option<String>,
    after: Option<u64>,
    before: Option<u64>,
    limit: Option<u64>,
    cursor: Option<String>,
}

/// `audit.activity.list`.
pub async fn activity_list(state: &SharedState, p: &Value) -> MethodResult {
    let method = "audit.activity.list";
    let p: ListParams = params(method, p)?;
    let kinds: &[&str] = &["agent_run", "tool_action", "message", "control"];
    check(method, &p, kinds)?;
    if let Some(why) = conflict(&p) {
        return Err(ErrorShape::invalid(format!(
            "invalid {method} filters: {why}"
        )));
    }
    let page = list(state, method, p, true).await?;
    let events: Vec<Value> = page.entries.iter().map(wire::activity).collect();
    reply(page_value(events, page.next))
}

/// `audit.list`: runs and tool actions only, OpenClaw's older shape.
pub async fn legacy_list(state: &SharedState, p: &Value) -> MethodResult {
    let method = "audit.list";
    let p: ListParams = params(method, p)?;
    if p.direction.is_some() || p.channel.is_some() {
        return Err(ErrorShape::invalid(format!(
            "invalid {method} params: direction and channel are audit.activity.list filters"
        )));
    }
    check(method, &p, &["agent_run", "tool_action"])?;
    let page = list(state, method, p, false).await?;
    let events: Vec<Value> = page.entries.iter().map(wire::legacy).collect();
    reply(page_value(events, page.next))
}

fn page_value(events: Vec<Value>, next: Option<u64>) -> Value {
    let mut v = json!({ "events": events });
    if let Some(n) = next {
        v["nextCursor"] = json!(n.to_string());
    }
    v
}

/// The schema's value rules (non-empty strings, the enums, 1..=500).
fn check(method: &str, p: &ListParams, kinds: &[&str]) -> Result<(), ErrorShape> {
    let bad = |what: String| ErrorShape::invalid(format!("invalid {method} params: {what}"));
    for (name, v) in [
        ("agentId", &p.agent_id),
        ("sessionKey", &p.session_key),
        ("runId", &p.run_id),
        ("channel", &p.channel),
        ("cursor", &p.cursor),
    ] {
        if v.as_deref().is_some_and(str::is_empty) {
            return Err(bad(format!("{name} must not be empty")));
        }
    }
    let one_of = |name: &str, v: &Option<String>, allowed: &[&str]| match v {
        Some(v) if !allowed.contains(&v.as_str()) => {
            Err(bad(format!("{name} must be one of {}", allowed.join(", "))))
        }
        _ => Ok(()),
    };
    one_of("kind", &p.kind, kinds)?;
    one_of("status", &p.status, STATUSES)?;
    one_of("direction", &p.direction, &["inbound", "outbound"])?;
    if let Some(l) = p.limit.filter(|l| !(1..=500).contains(l)) {
        return Err(bad(format!("limit must be between 1 and 500 (got {l})")));
    }
    Ok(())
}

/// OpenClaw's filter conflicts (`findAuditActivityFilterConflict`).
fn conflict(p: &ListParams) -> Option<String> {
    let message_field = if p.direction.is_some() {
        Some("direction")
    } else if p.channel.is_some() {
        Some("channel")
    } else {
        None
    };
    let session = p.session_key.is_some();
    match (p.kind.as_deref(), message_field) {
        (Some("message"), _) if session => {
            Some("sessionKey only applies to kind agent_run or tool_action".to_string())
        }
        (Some(k), Some(f)) if k != "message" => Some(format!("{f} only applies to kind message")),
        (None, Some(f)) if session => Some(format!("{f} cannot be combined with sessionKey")),
        _ => None,
    }
}

async fn list(
    state: &SharedState,
    method: &str,
    p: ListParams,
    messages: bool,
) -> Result<ferroclaw_actors::audit::Page, ErrorShape> {
    let invalid = || ErrorShape::invalid(format!("invalid {method} range or cursor"));
    let cursor = match p.cursor.as_deref().map(str::trim) {
        None => None,
        Some(c) => match c.parse::<u64>() {
            Ok(n) if n > 0 && c.bytes().all(|b| b.is_ascii_digit()) => Some(n),
            _ => return Err(invalid()),
        },
    };
    if let (Some(a), Some(b)) = (p.after, p.before) {
        if a > b {
            return Err(invalid());
        }
    }
    let Some(ledger) = &state.gateway.audit else {
        return Err(ErrorShape::from_error(
            &ferroclaw_actors::audit::DbError::Gone,
        ));
    };
    let q = Query {
        agent_id: p.agent_id,
        session_key: p.session_key,
        run_id: p.run_id,
        kind: p.kind,
        status: p.status,
        direction: p.direction,
        channel: p.channel,
        after: p.after,
        before: p.before,
        limit: p.limit.unwrap_or(100) as usize,
        cursor,
        messages,
    };
    ledger
        .send(ListAudit { query: q })
        .await
        .map_err(|_| ErrorShape::from_error(&ferroclaw_actors::audit::DbError::Gone))?
        .map_err(|e| ErrorShape::from_error(&e))
}

/// Methods whose success is a control record: (method, action, the param
/// naming the subject).
const CONTROL: &[(&str, &str, &str)] = &[
    ("exec.approval.resolve", "approval.resolved", "id"),
    ("exec.approvals.set", "exec.approvals.changed", ""),
    ("exec.approval.grants.revoke", "exec.grant.revoked", "id"),
    (
        "device.pair.approve",
        "device.pairing.approved",
        "requestId",
    ),
    ("device.pair.reject", "device.pairing.rejected", "requestId"),
    ("device.pair.remove", "device.removed", "deviceId"),
    ("device.token.rotate", "device.token.rotated", "deviceId"),
    ("device.token.revoke", "device.token.revoked", "deviceId"),
    (
        "channels.pairing.approve",
        "channel.pairing.approved",
        "channel",
    ),
    ("channels.logout", "channel.logged_out", "channel"),
    ("secrets.reload", "secrets.reloaded", ""),
];

/// Who a caller is in the ledger: its paired device, else its client id.
pub fn operator(caller: &Caller) -> Who {
    Who::Operator(
        caller
            .device_id
            .clone()
            .unwrap_or_else(|| format!("client:{}", caller.client_id)),
    )
}

/// Records a successful control method (see `CONTROL`).
pub fn record_control(state: &SharedState, caller: &Caller, method: &str, p: &Value) {
    let Some((_, action, subject)) = CONTROL.iter().find(|(m, _, _)| *m == method) else {
        return;
    };
    let decision = (method == "exec.approval.resolve")
        .then(|| {
            p.get("decision")
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .flatten();
    state
        .gateway
        .audit_log
        .record(Activity::Control(ControlActivity {
            action: action.to_string(),
            outcome: if decision.as_deref() == Some("deny") {
                End::Blocked
            } else {
                End::Succeeded
            },
            actor: operator(caller),
            subject: p.get(*subject).and_then(Value::as_str).map(str::to_string),
            decision,
            paths: Vec::new(),
        }));
}
