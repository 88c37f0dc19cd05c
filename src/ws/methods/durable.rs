//! `durable.*` (OpenClaw's read-only durable inspection) and
//! `gateway.restore.status`, answered from ferroclaw's own records: the
//! inbound ledger, the outbox and its attempts, the run records
//! (`ferroclaw_actors::durable` says what each OpenClaw name is here).
//! OpenClaw keeps these off unless `durable.mode` is set; ferroclaw's
//! ledger and outbox are always on, so they always answer.
//! `durable.coordination.get` is not offered (an unknown method): ferroclaw
//! records no parent/child steps for a run (`agent.wait` and `tasks.get`
//! answer a run's state).

use ferroclaw_actors::backup::receipt as restore;
use ferroclaw_actors::channels::inspect::Records;
use ferroclaw_actors::channels::messages::InspectDurable;
use serde::Deserialize;
use serde_json::{json, Value};

use super::{json, MethodResult};
use crate::protocol::errors::ErrorShape;
use crate::state::SharedState;

/// A list's length when the caller names none.
const DEFAULT_LIMIT: usize = 100;

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct LimitParams {
    #[serde(default)]
    limit: Option<i64>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct WakeParams {
    wake_id: String,
    #[serde(default)]
    limit: Option<i64>,
}

fn limit_of(limit: Option<i64>) -> Result<usize, ErrorShape> {
    match limit {
        None => Ok(DEFAULT_LIMIT),
        Some(n @ 1..=500) => Ok(n as usize),
        Some(_) => Err(ErrorShape::invalid("Invalid durable limit.")),
    }
}

fn parsed<T: serde::de::DeserializeOwned + Default>(p: &Value, why: &str) -> Result<T, ErrorShape> {
    if p.is_null() {
        return Ok(T::default());
    }
    serde_json::from_value(p.clone()).map_err(|_| ErrorShape::invalid(why))
}

fn wake_params(p: &Value) -> Result<WakeParams, ErrorShape> {
    serde_json::from_value::<WakeParams>(p.clone())
        .ok()
        .filter(|w| !w.wake_id.is_empty() && w.wake_id.len() <= 2000)
        .ok_or_else(|| ErrorShape::invalid("wakeId is required."))
}

async fn records(state: &SharedState) -> Result<Records, ErrorShape> {
    let gw = &state.gateway;
    let started_ms = ferroclaw_actors::now_ms().saturating_sub(gw.metrics.uptime_ms());
    gw.channels
        .send(InspectDurable { started_ms })
        .await
        .map_err(|_| ErrorShape::unavailable("the channel supervisor is not running"))?
        .map_err(|e| {
            tracing::warn!(error = %e, "durable inspection cannot read the store");
            ErrorShape::unavailable("the durable records cannot be read")
        })
}

/// What `status` shows of it (the Control UI's Debug page prints `status`):
/// the open replies and the uncertain items, newest first (10 of them).
pub(super) async fn summary(state: &SharedState) -> Value {
    match records(state).await {
        Ok(r) => {
            let stats = r.stats();
            json!({
                "pendingWakes": stats.pending_wakes,
                "unresolvedUncertaintyFacts": stats.unresolved_uncertainty_facts,
                "uncertain": first(r.facts(), 10),
            })
        }
        Err(e) => json!({ "error": e.message }),
    }
}

pub async fn dispatch(state: &SharedState, method: &str, p: &Value) -> MethodResult {
    match method {
        "durable.health.get" => health(state, p).await,
        "durable.obligations.list" => {
            let limit = limit_of(parsed::<LimitParams>(p, "Invalid durable limit.")?.limit)?;
            let all = records(state).await?.obligations();
            json(json!({ "obligations": first(all, limit) }))
        }
        "durable.wakes.list" => {
            let limit = limit_of(parsed::<LimitParams>(p, "Invalid durable limit.")?.limit)?;
            json(json!({ "wakes": first(records(state).await?.wakes(), limit) }))
        }
        "durable.uncertainty.list" => {
            let limit = limit_of(parsed::<LimitParams>(p, "Invalid durable limit.")?.limit)?;
            let facts = records(state).await?.facts();
            json(json!({ "uncertaintyFacts": first(facts, limit) }))
        }
        "durable.deliveryAttempts.list" => {
            let w = wake_params(p)?;
            let limit = limit_of(w.limit)?;
            let attempts = records(state).await?.attempts(&w.wake_id);
            json(json!({ "deliveryAttemptEvidence": first(attempts, limit) }))
        }
        "durable.wakes.inspect" => inspect(state, p).await,
        _ => restore_status(state, p).await,
    }
}

fn first<T>(mut all: Vec<T>, limit: usize) -> Vec<T> {
    all.truncate(limit);
    all
}

async fn health(state: &SharedState, p: &Value) -> MethodResult {
    if !(p.is_null() || p.as_object().is_some_and(|o| o.is_empty())) {
        return Err(ErrorShape::invalid("Invalid health request."));
    }
    match records(state).await {
        Ok(r) => json(json!({
            "enabled": true, "authority": true, "ready": true,
            "process": { "status": "healthy", "lastSuccessAt": ferroclaw_actors::now_ms() },
            "store": r.stats(),
        })),
        Err(e) => json(json!({
            "enabled": true, "authority": true, "ready": false,
            "storeError": e.message,
            "process": { "status": "degraded", "lastFailure": {
                "component": "store", "operation": "inspect", "message": e.message,
                "failedAt": ferroclaw_actors::now_ms(), "failureCount": 1,
            } },
        })),
    }
}

async fn inspect(state: &SharedState, p: &Value) -> MethodResult {
    let w = wake_params(p)?;
    let r = records(state).await?;
    let Some(wake) = r.wakes().into_iter().find(|x| x.wake_id == w.wake_id) else {
        return Err(ErrorShape::invalid(format!(
            "wake obligation not found: {}",
            w.wake_id
        )));
    };
    let facts: Vec<_> = r
        .facts()
        .into_iter()
        .filter(|f| f.wake_id.as_deref() == Some(wake.wake_id.as_str()))
        .collect();
    let attempts = first(r.attempts(&wake.wake_id), 500);
    json(json!({ "inspection": {
        "targetResolution": {
            "status": wake.target_resolution_status, "targetKind": wake.target_kind,
            "targetRef": wake.target_ref, "ownerKind": wake.owner_kind,
            "ownerRef": wake.owner_ref, "sourceRunId": wake.source_run_id,
        },
        "deliveryAttempts": attempts,
        "unresolvedUncertainty": first(facts, 500),
        "source": {
            "sourceOwner": wake.source_owner, "sourceRef": wake.source_ref,
            "sourceRunId": wake.source_run_id,
        },
        "wake": wake,
    } }))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RestoreParams {
    restore_operation_id: String,
}

/// OpenClaw's restore token: what an id may look like on the wire.
fn token_ok(s: &str) -> bool {
    let mut chars = s.chars();
    (1..=255).contains(&s.len())
        && chars.next().is_some_and(|c| c.is_ascii_alphanumeric())
        && chars.all(|c| c.is_ascii_alphanumeric() || "._:/-".contains(c))
}

/// `gateway.restore.status`: `not-restored` unless this state dir was
/// restored by that operation and has not cleanly stopped since; `held`
/// while what the restored ledger owed is still being worked off; `ready`
/// after (latched: new traffic never makes it `held` again).
async fn restore_status(state: &SharedState, p: &Value) -> MethodResult {
    let op = serde_json::from_value::<RestoreParams>(p.clone())
        .ok()
        .filter(|r| token_ok(&r.restore_operation_id))
        .ok_or_else(|| ErrorShape::invalid("invalid gateway.restore.status params"))?
        .restore_operation_id;
    let Some(restored) = state
        .restored
        .as_ref()
        .filter(|r| r.receipt.operation_id == op)
    else {
        return json(json!(restore::Status::NotRestored));
    };
    if restored
        .ready_at_ms
        .load(std::sync::atomic::Ordering::Acquire)
        == 0
    {
        let backlog = state
            .gateway
            .channels
            .send(ferroclaw_actors::channels::messages::ChannelsBacklog)
            .await
            .map_err(|_| ErrorShape::unavailable("the channel supervisor is not running"))?
            .map_err(|_| ErrorShape::unavailable("the durable records cannot be read"))?;
        if backlog.dispatch + backlog.deliveries + backlog.outbox_pending == 0 {
            let now = ferroclaw_actors::now_ms();
            let _ = restored.ready_at_ms.compare_exchange(
                0,
                now,
                std::sync::atomic::Ordering::AcqRel,
                std::sync::atomic::Ordering::Acquire,
            );
        }
    }
    json(json!(restored.status()))
}
