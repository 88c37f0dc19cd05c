//! `cron.*` (OpenClaw's shapes, so its CLI and Control UI work unchanged)
//! and the heartbeat's `last-heartbeat` and `set-heartbeats`. The
//! scheduler actor does the work; this checks params and shapes replies.

use ferroclaw_actors::cron::beat::{LastHeartbeat, SetHeartbeats};
use ferroclaw_actors::cron::job::target_of;
use ferroclaw_actors::cron::{
    AddJob, CronError, CronStatus, GetJob, ListJobs, ListRuns, RemoveJob, RunJob, UpdateJob,
};
use serde_json::{json, Map, Value};

use super::down;
use super::{json, MethodResult};
use crate::protocol::cron as wire;
use crate::protocol::errors::ErrorShape;
use crate::state::SharedState;

fn invalid(method: &str, reason: impl std::fmt::Display) -> ErrorShape {
    ErrorShape::invalid(format!("invalid {method} params: {reason}"))
}

fn obj<'a>(method: &str, p: &'a Value) -> Result<&'a Map<String, Value>, ErrorShape> {
    match p {
        Value::Object(o) => Ok(o),
        _ => Err(invalid(method, "params must be an object")),
    }
}

fn only(method: &str, o: &Map<String, Value>, allowed: &[&str]) -> Result<(), ErrorShape> {
    match o.keys().find(|k| !allowed.contains(&k.as_str())) {
        Some(k) => Err(invalid(method, format!("unexpected property {k:?}"))),
        None => Ok(()),
    }
}

fn text(method: &str, o: &Map<String, Value>, key: &str) -> Result<Option<String>, ErrorShape> {
    match o.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if !s.trim().is_empty() => Ok(Some(s.trim().to_string())),
        Some(_) => Err(invalid(method, format!("{key} must be a non-empty string"))),
    }
}

fn count(
    method: &str,
    o: &Map<String, Value>,
    key: &str,
    max: u64,
) -> Result<Option<usize>, ErrorShape> {
    match o.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => match v.as_u64() {
            Some(n) if n <= max => Ok(Some(n as usize)),
            _ => Err(invalid(
                method,
                format!("{key} must be an integer from 0 to {max}"),
            )),
        },
    }
}

/// `id` or the legacy `jobId`.
fn job_id(method: &str, o: &Map<String, Value>) -> Result<String, ErrorShape> {
    text(method, o, "id")?
        .or(text(method, o, "jobId")?)
        .ok_or_else(|| invalid(method, "missing id"))
}

fn cron_err(method: &str, e: CronError) -> ErrorShape {
    match e {
        CronError::NotFound(id) => ErrorShape::invalid(format!(
            "cron job not found: {id}. List automations and retry with a current job id."
        ))
        .with_details(json!({"code": "CRON_JOB_NOT_FOUND", "jobId": id})),
        CronError::Invalid(why) => invalid(method, why),
        e => super::store_err(e),
    }
}

/// Configured channel ids (delivery targets are checked against them).
fn channels(state: &SharedState) -> Vec<String> {
    state
        .live
        .settings()
        .channels
        .keys()
        .filter(|k| !matches!(k.as_str(), "modelByChannel" | "defaults"))
        .cloned()
        .collect()
}

/// Configured agents.
fn agents(state: &SharedState) -> Vec<String> {
    state
        .live
        .settings()
        .agents
        .list
        .iter()
        .map(|a| a.id.clone())
        .collect()
}

/// Where a job's result goes, in a line (OpenClaw's `deliveryPreviews`).
fn preview(job: &Value) -> Value {
    match target_of(job.get("delivery")) {
        Ok(Some(t)) => json!({
            "label": format!("{} {}", t.channel, t.to.as_deref().unwrap_or("(last chat)")),
            "detail": "announce",
        }),
        _ if job["sessionTarget"] == "main" => {
            json!({"label": "main session", "detail": "system event"})
        }
        _ => json!({"label": "none", "detail": "kept in the job's session"}),
    }
}

pub async fn list(state: &SharedState, p: &Value) -> MethodResult {
    let m = "cron.list";
    let o = obj(m, p)?;
    only(
        m,
        o,
        &[
            "sessionKey",
            "sessionAgentId",
            "includeDisabled",
            "limit",
            "offset",
            "query",
            "enabled",
            "scheduleKind",
            "lastRunStatus",
            "trigger",
            "sortBy",
            "sortDir",
            "agentId",
            "compact",
            "includeDeliveryPreviews",
        ],
    )?;
    let limit = count(m, o, "limit", 200)?;
    if limit == Some(0) {
        return Err(invalid(m, "limit must be at least 1"));
    }
    let page = state
        .gateway
        .cron
        .send(ListJobs {
            include_disabled: o.get("includeDisabled").and_then(Value::as_bool) == Some(true),
            enabled: text(m, o, "enabled")?,
            query: text(m, o, "query")?,
            agent_id: text(m, o, "agentId")?,
            schedule_kind: text(m, o, "scheduleKind")?,
            sort_by: text(m, o, "sortBy")?,
            sort_dir: text(m, o, "sortDir")?,
            limit,
            offset: count(m, o, "offset", u32::MAX as u64)?,
        })
        .await
        .map_err(down)?;
    let mut page = wire::job_page(&page);
    let wants_previews = o.get("compact").and_then(Value::as_bool) != Some(true)
        && o.get("includeDeliveryPreviews").and_then(Value::as_bool) != Some(false);
    if wants_previews {
        let previews: Map<String, Value> = page["jobs"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|j| Some((j["id"].as_str()?.to_string(), preview(j))))
            .collect();
        page["deliveryPreviews"] = Value::Object(previews);
    }
    json(page)
}

pub async fn get(state: &SharedState, p: &Value) -> MethodResult {
    let o = obj("cron.get", p)?;
    only("cron.get", o, &["id", "jobId"])?;
    let id = job_id("cron.get", o)?;
    match state
        .gateway
        .cron
        .send(GetJob { id: id.clone() })
        .await
        .map_err(down)?
    {
        Some(job) => json(wire::job(&job)),
        None => Err(cron_err("cron.get", CronError::NotFound(id))),
    }
}

pub async fn add(state: &SharedState, p: &Value) -> MethodResult {
    obj("cron.add", p)?;
    let msg = AddJob {
        job: wire::new_job(p).map_err(|e| invalid("cron.add", e))?,
        channels: channels(state),
        agents: agents(state),
    };
    let added = state
        .gateway
        .cron
        .send(msg)
        .await
        .map_err(down)?
        .map_err(|e| cron_err("cron.add", e))?;
    let mut job = wire::added(&added);
    let shown = match job.get("job") {
        Some(declared) => preview(declared),
        None => preview(&job),
    };
    job["deliveryPreview"] = shown;
    json(job)
}

pub async fn update(state: &SharedState, p: &Value) -> MethodResult {
    let m = "cron.update";
    let o = obj(m, p)?;
    only(m, o, &["id", "jobId", "patch", "expectedConfigRevision"])?;
    let id = job_id(m, o)?;
    let patch = o
        .get("patch")
        .filter(|v| v.is_object())
        .ok_or_else(|| invalid(m, "patch must be an object"))?;
    let msg = UpdateJob {
        id,
        patch: wire::job_patch(patch).map_err(|e| invalid(m, e))?,
        channels: channels(state),
        agents: agents(state),
    };
    let job = state.gateway.cron.send(msg).await.map_err(down)?;
    json(wire::job(&job.map_err(|e| cron_err(m, e))?))
}

pub async fn remove(state: &SharedState, p: &Value) -> MethodResult {
    let o = obj("cron.remove", p)?;
    only("cron.remove", o, &["id", "jobId"])?;
    let id = job_id("cron.remove", o)?;
    let r = state
        .gateway
        .cron
        .send(RemoveJob { id })
        .await
        .map_err(down)?;
    r.map_err(|e| cron_err("cron.remove", e))?;
    json(json!({"ok": true, "removed": true}))
}

pub async fn run(state: &SharedState, p: &Value) -> MethodResult {
    let m = "cron.run";
    let o = obj(m, p)?;
    only(m, o, &["id", "jobId", "mode", "expectedProcessInstanceId"])?;
    let id = job_id(m, o)?;
    let mode = text(m, o, "mode")?.unwrap_or_else(|| "force".into());
    let r = state
        .gateway
        .cron
        .send(RunJob { id, mode })
        .await
        .map_err(down)?;
    json(wire::run_start(&r.map_err(|e| cron_err(m, e))?))
}

fn list_of(
    method: &str,
    o: &Map<String, Value>,
    many: &str,
    one: &str,
) -> Result<Vec<String>, ErrorShape> {
    let mut out: Vec<String> = match o.get(many) {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(a)) => a
            .iter()
            .map(|v| v.as_str().map(str::to_string))
            .collect::<Option<_>>()
            .ok_or_else(|| invalid(method, format!("{many} must be strings")))?,
        Some(_) => return Err(invalid(method, format!("{many} must be an array"))),
    };
    if let Some(s) = text(method, o, one)?.filter(|s| s != "all") {
        out.push(s);
    }
    Ok(out)
}

pub async fn runs(state: &SharedState, p: &Value) -> MethodResult {
    let m = "cron.runs";
    let o = obj(m, p)?;
    only(
        m,
        o,
        &[
            "agentId",
            "scope",
            "id",
            "jobId",
            "runId",
            "limit",
            "offset",
            "statuses",
            "status",
            "deliveryStatuses",
            "deliveryStatus",
            "query",
            "sortDir",
        ],
    )?;
    let limit = count(m, o, "limit", 200)?;
    if limit == Some(0) {
        return Err(invalid(m, "limit must be at least 1"));
    }
    let job_id = text(m, o, "id")?.or(text(m, o, "jobId")?);
    let scope = text(m, o, "scope")?;
    if scope.as_deref() == Some("job") && job_id.is_none() {
        return Err(invalid(m, "missing id"));
    }
    let filters = ListRuns {
        job_id,
        run_id: text(m, o, "runId")?,
        statuses: list_of(m, o, "statuses", "status")?,
        delivery_statuses: list_of(m, o, "deliveryStatuses", "deliveryStatus")?,
        query: text(m, o, "query")?,
        sort_dir: text(m, o, "sortDir")?,
        limit,
        offset: count(m, o, "offset", u32::MAX as u64)?,
    };
    let r = state.gateway.cron.send(filters).await.map_err(down)?;
    json(wire::run_page(&r.map_err(|e| cron_err(m, e))?))
}

pub async fn status(state: &SharedState, p: &Value) -> MethodResult {
    let o = obj("cron.status", p)?;
    only("cron.status", o, &[])?;
    let s = state.gateway.cron.send(CronStatus).await.map_err(down)?;
    json(wire::status(&s))
}

/// `last-heartbeat`: the last heartbeat event (null before the first).
pub async fn last_heartbeat(state: &SharedState, p: &Value) -> MethodResult {
    let o = obj("last-heartbeat", p)?;
    only("last-heartbeat", o, &[])?;
    let last = state
        .gateway
        .heartbeat
        .send(LastHeartbeat)
        .await
        .map_err(down)?;
    json(last.as_ref().map_or(Value::Null, wire::beat))
}

/// `set-heartbeats {enabled}`: scheduled heartbeats on or off (this run of
/// the gateway; the config's `every` decides after a restart).
pub async fn set_heartbeats(state: &SharedState, p: &Value) -> MethodResult {
    let o = obj("set-heartbeats", p)?;
    only("set-heartbeats", o, &["enabled"])?;
    let enabled = o
        .get("enabled")
        .and_then(Value::as_bool)
        .ok_or_else(|| invalid("set-heartbeats", "enabled must be a boolean"))?;
    let on = state
        .gateway
        .heartbeat
        .send(SetHeartbeats { enabled })
        .await
        .map_err(down)?;
    json(json!({"ok": true, "enabled": on}))
}
