//! `cron.*` on the wire, in OpenClaw's shapes: `cron.add` params read into
//! a `NewJob` and `cron.update`'s patch into a `JobPatch` (each key's type
//! checked here, with the error texts OpenClaw's clients show; what the
//! values mean is the scheduler's to check), and the scheduler's typed
//! answers rendered: a job (OpenClaw's `CronJob`, its state mirrored at the
//! top level), a run (`CronRunLogEntry`), pages, `cron.run`, `cron.status`,
//! a heartbeat.
//! Pure functions.

use ferroclaw_actors::cron::beat::{Beat, HeartbeatView};
use ferroclaw_actors::cron::job::{JobPatch, JobView, NewJob};
use ferroclaw_actors::cron::record::RunEntry;
use ferroclaw_actors::cron::{Added, JobPage, Page, RunPage, RunStart, SchedulerStatus};
use serde_json::{json, Map, Value};

ferroclaw_actors::reason_error! {
    /// What is wrong with `cron.add`'s or `cron.update`'s params (INVALID_REQUEST says it).
    pub struct CronParamsError;
}

/// The keys `cron.add` takes (OpenClaw's `CronAddParams`).
const JOB_KEYS: &[&str] = &[
    "name",
    "declarationKey",
    "displayName",
    "owner",
    "agentId",
    "sessionKey",
    "description",
    "enabled",
    "deleteAfterRun",
    "schedule",
    "pacing",
    "trigger",
    "sessionTarget",
    "wakeMode",
    "payload",
    "delivery",
    "failureAlert",
];

/// A trimmed string that is not blank (None: absent or null).
fn text(key: &str, v: &Value) -> Result<Option<String>, CronParamsError> {
    match v {
        Value::Null => Ok(None),
        Value::String(s) if s.trim().is_empty() => {
            Err(CronParamsError::from(format!("{key} must not be blank")))
        }
        Value::String(s) => Ok(Some(s.trim().to_string())),
        _ => Err(CronParamsError::from(format!("{key} must be a string"))),
    }
}

fn flag(key: &str, v: &Value) -> Result<Option<bool>, CronParamsError> {
    match v {
        Value::Null => Ok(None),
        Value::Bool(b) => Ok(Some(*b)),
        _ => Err(CronParamsError::from(format!("{key} must be a boolean"))),
    }
}

fn object(key: &str, v: &Value) -> Result<Map<String, Value>, CronParamsError> {
    v.as_object()
        .cloned()
        .ok_or_else(|| format!("{key} must be an object").into())
}

fn known_keys(o: &Map<String, Value>, also: &[&str]) -> Result<(), CronParamsError> {
    match o
        .keys()
        .find(|k| !JOB_KEYS.contains(&k.as_str()) && !also.contains(&k.as_str()))
    {
        Some(k) => Err(CronParamsError::from(format!("unexpected property {k:?}"))),
        None => Ok(()),
    }
}

/// Reads one `cron.add` key into `job` (a null leaves it unset).
fn read(job: &mut NewJob, key: &str, v: &Value) -> Result<(), CronParamsError> {
    let some = |v: &Value| (!v.is_null()).then(|| v.clone());
    match key {
        "name" => job.name = text(key, v)?,
        "displayName" => job.display_name = text(key, v)?,
        "declarationKey" => job.declaration_key = text(key, v)?,
        "agentId" => job.agent_id = text(key, v)?,
        "sessionKey" => job.session_key = text(key, v)?,
        "wakeMode" => job.wake_mode = text(key, v)?,
        // Kept as OpenClaw keeps it: any string, as written.
        "description" => job.description = v.as_str().map(str::to_string),
        "enabled" => job.enabled = flag(key, v)?,
        "deleteAfterRun" => job.delete_after_run = flag(key, v)?,
        "sessionTarget" => {
            job.session_target = match v {
                Value::Null => None,
                Value::String(t) => Some(t.trim().to_string()),
                _ => return Err("sessionTarget must be a string".into()),
            }
        }
        // What a schedule and a payload say is checked by the scheduler,
        // a null included ("payload must be an object").
        "schedule" => job.schedule = Some(v.clone()),
        "payload" => job.payload = Some(v.clone()),
        "delivery" => job.delivery = some(v),
        "failureAlert" => job.failure_alert = some(v),
        "trigger" if !v.is_null() => {
            return Err("trigger scripts are not supported by ferroclaw".into())
        }
        // `owner`, `pacing`: OpenClaw's, kept by nothing here.
        _ => {}
    }
    Ok(())
}

/// `cron.add`'s params.
pub fn new_job(params: &Value) -> Result<NewJob, CronParamsError> {
    let o = params.as_object().ok_or("params must be an object")?;
    known_keys(o, &[])?;
    let mut job = NewJob::default();
    for (k, v) in o {
        read(&mut job, k, v)?;
    }
    Ok(job)
}

/// `cron.update`'s `patch`: a key set to null clears it; `state` is the
/// scheduler's and ignored.
pub fn job_patch(patch: &Value) -> Result<JobPatch, CronParamsError> {
    let o = patch.as_object().ok_or("patch must be an object")?;
    known_keys(o, &["state"])?;
    let mut p = JobPatch::default();
    for (k, v) in o {
        if k == "payload" || k == "delivery" {
            let merge = match v {
                Value::Null => None,
                v => Some(object(k, v)?),
            };
            match k.as_str() {
                "payload" => p.payload = Some(merge),
                _ => p.delivery = Some(merge),
            }
            continue;
        }
        let mut set = NewJob::default();
        read(&mut set, k, v)?;
        match k.as_str() {
            "name" => p.name = Some(set.name),
            "displayName" => p.display_name = Some(set.display_name),
            "declarationKey" => p.declaration_key = Some(set.declaration_key),
            "agentId" => p.agent_id = Some(set.agent_id),
            "sessionKey" => p.session_key = Some(set.session_key),
            "wakeMode" => p.wake_mode = Some(set.wake_mode),
            "description" => p.description = Some(set.description),
            "enabled" => p.enabled = Some(set.enabled),
            "deleteAfterRun" => p.delete_after_run = Some(set.delete_after_run),
            "sessionTarget" => p.session_target = Some(set.session_target),
            "schedule" => p.schedule = Some(set.schedule.filter(|s| !s.is_null())),
            "failureAlert" => p.failure_alert = Some(set.failure_alert),
            _ => {}
        }
    }
    Ok(p)
}

/// `status`'s heartbeat row: `{agentId, enabled, every, everyMs}`.
pub fn heartbeat_status(view: &HeartbeatView) -> Value {
    json!({
        "agentId": view.agent_id, "enabled": view.every.is_some(), "every": view.every_text(),
        "everyMs": view.every_ms(),
    })
}

/// Sets `key` when there is a value (OpenClaw leaves absent fields out).
fn put_some(o: &mut Map<String, Value>, key: &str, val: Option<Value>) {
    if let Some(val) = val {
        o.insert(key.to_string(), val);
    }
}

/// A job as clients see it (OpenClaw's `CronJob`): `nextRunAtMs`
/// computed, the state's fields mirrored at the top level.
pub fn job(view: &JobView) -> Value {
    let job = &view.job;
    let mut v = serde_json::to_value(job).unwrap_or_default();
    let st = &job.state;
    if let Some(state) = v.get_mut("state").and_then(Value::as_object_mut) {
        state.remove("lastSlotMs");
        if let Some(n) = view.next_run_ms {
            state.insert("nextRunAtMs".into(), json!(n));
        }
        if let Some(s) = &st.last_run_status {
            state.insert("lastStatus".into(), json!(s));
        }
    }
    let Some(o) = v.as_object_mut() else {
        return v;
    };
    let mut put = |k: &str, val: Option<Value>| put_some(o, k, val);
    put("nextRunAtMs", view.next_run_ms.map(|n| json!(n)));
    put("lastRunAtMs", st.last_run_at_ms.map(|n| json!(n)));
    put(
        "lastRunStatus",
        st.last_run_status.as_ref().map(|s| json!(s)),
    );
    put("lastRunError", st.last_error.as_ref().map(|s| json!(s)));
    put("lastDelivered", st.last_delivered.map(|b| json!(b)));
    put(
        "lastDeliveryStatus",
        st.last_delivery_status.as_ref().map(|s| json!(s)),
    );
    put(
        "lastDeliveryError",
        st.last_delivery_error.as_ref().map(|s| json!(s)),
    );
    put(
        "effectiveAgentId",
        view.effective_agent.as_ref().map(|a| json!(a)),
    );
    v
}

/// A finished run as `cron.runs` and the `cron` event show it: OpenClaw's
/// `CronRunLogEntry`, a closed shape. The slot a run was for is in its
/// `runId` (`cron:<job>:<slot>`, `...:retry`, `cron:<job>:manual-<ulid>`);
/// a run a stop cut off says so in `diagnostics`, as OpenClaw reports what
/// went wrong around a run.
pub fn run(entry: &RunEntry, job_name: Option<&str>) -> Value {
    let mut v = json!({
        "ts": entry.ts(),
        "jobId": entry.job_id,
        "action": "finished",
        "runId": entry.run_id,
        "runAtMs": entry.run_at_ms,
        "deliveryStatus": entry.delivery_shown(),
    });
    let Some(o) = v.as_object_mut() else {
        return v;
    };
    let mut put = |k: &str, val: Option<Value>| put_some(o, k, val);
    put("status", entry.status.as_ref().map(|s| json!(s)));
    put("completionStatus", entry.completion().map(|c| json!(c)));
    put("error", entry.error.as_ref().map(|s| json!(s)));
    put("summary", entry.summary.as_ref().map(|s| json!(s)));
    put("sessionKey", entry.session_key.as_ref().map(|s| json!(s)));
    put("delivered", entry.delivered.map(|b| json!(b)));
    put(
        "deliveryError",
        entry.delivery_error.as_ref().map(|s| json!(s)),
    );
    put(
        "deliverySuppressionReason",
        entry.delivery_suppression_reason.as_ref().map(|s| json!(s)),
    );
    put(
        "durationMs",
        entry
            .ended_at_ms
            .map(|e| json!(e.saturating_sub(entry.run_at_ms))),
    );
    put("nextRunAtMs", entry.next_run_at_ms.map(|n| json!(n)));
    put("diagnostics", entry.interrupted.then(|| interrupted(entry)));
    put("jobName", job_name.map(|n| json!(n)));
    v
}

/// The diagnostics of a run a stop cut off (the agent run did not end).
fn interrupted(entry: &RunEntry) -> Value {
    let message = entry
        .error
        .clone()
        .unwrap_or_else(|| "interrupted: the gateway stopped during the run".into());
    json!({
        "summary": "interrupted",
        "entries": [{"ts": entry.ts(), "source": "agent-run", "severity": "error", "message": message}],
    })
}

fn page(p: &Page) -> Map<String, Value> {
    let v = json!({
        "total": p.total, "offset": p.offset, "limit": p.limit,
        "hasMore": p.next_offset.is_some(), "nextOffset": p.next_offset,
    });
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

/// `cron.list`'s answer (without the delivery previews the method adds).
pub fn job_page(p: &JobPage) -> Value {
    let mut o = page(&p.page);
    o.insert("jobs".into(), p.jobs.iter().map(job).collect());
    o.insert("snapshotRevision".into(), json!(p.revision));
    Value::Object(o)
}

/// `cron.runs`' answer.
pub fn run_page(p: &RunPage) -> Value {
    let mut o = page(&p.page);
    let entries = p
        .entries
        .iter()
        .map(|r| run(&r.entry, r.job_name.as_deref()))
        .collect();
    o.insert("entries".into(), entries);
    Value::Object(o)
}

/// `cron.add`'s answer: the job, or for a declared job OpenClaw's
/// declarative shape (`{created, updated?, job}`).
pub fn added(a: &Added) -> Value {
    let shown = job(&a.job);
    match a.declared {
        None => shown,
        Some(d) if d.created => json!({"created": true, "job": shown}),
        Some(d) => json!({"created": false, "updated": d.updated, "job": shown}),
    }
}

/// `cron.run`'s answer.
pub fn run_start(r: &RunStart) -> Value {
    match r {
        RunStart::Started { run_id } => {
            json!({"ok": true, "enqueued": true, "ran": true, "runId": run_id})
        }
        RunStart::NotRun { reason } => json!({"ok": true, "ran": false, "reason": reason}),
    }
}

/// The `heartbeat` event and `last-heartbeat`'s answer (OpenClaw's
/// field names are `Beat`'s own).
pub fn beat(b: &Beat) -> Value {
    serde_json::to_value(b).unwrap_or(Value::Null)
}

/// `cron.status`' answer.
pub fn status(s: &SchedulerStatus) -> Value {
    json!({
        "enabled": s.enabled,
        "storage": "sled",
        "storePath": s.store_path,
        "jobs": s.jobs,
        "running": s.running,
        "nextWakeAtMs": s.next_wake_at_ms,
        "triggersEnabled": false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn add_params_are_read_with_openclaws_error_texts() {
        let j = new_job(&json!({
            "name": " digest ", "enabled": true, "schedule": {"kind": "every", "everyMs": 600000},
            "sessionTarget": "isolated", "wakeMode": "now", "owner": "cli", "trigger": null,
            "payload": {"kind": "agentTurn", "message": "sum up"}, "delivery": null
        }))
        .unwrap();
        assert_eq!(j.name.as_deref(), Some("digest"));
        assert_eq!(j.enabled, Some(true));
        assert_eq!(j.delivery, None);
        assert_eq!(j.payload.unwrap()["message"], "sum up");
        let err = |v: Value| new_job(&v).unwrap_err().to_string();
        assert_eq!(err(json!({"bogus": 1})), "unexpected property \"bogus\"");
        assert_eq!(err(json!({"name": "  "})), "name must not be blank");
        assert_eq!(err(json!({"name": 3})), "name must be a string");
        assert_eq!(err(json!({"enabled": "yes"})), "enabled must be a boolean");
        assert_eq!(
            err(json!({"sessionTarget": 1})),
            "sessionTarget must be a string"
        );
        assert!(err(json!({"trigger": {"script": "x"}})).contains("not supported"));
        assert_eq!(err(json!([1])), "params must be an object");
    }

    #[test]
    fn patches_say_what_they_set_clear_and_merge() {
        let p = job_patch(&json!({
            "enabled": false, "description": null, "state": {"x": 1},
            "payload": {"message": "yo", "model": null}
        }))
        .unwrap();
        assert_eq!(p.enabled, Some(Some(false)));
        assert_eq!(p.description, Some(None));
        assert_eq!(p.name, None, "untouched");
        let merge = p.payload.unwrap().unwrap();
        assert_eq!(merge["model"], Value::Null, "a null inside removes the key");
        assert_eq!(
            job_patch(&json!({"id": "x"})).unwrap_err().to_string(),
            "unexpected property \"id\""
        );
        assert_eq!(
            job_patch(&json!({"delivery": "telegram"}))
                .unwrap_err()
                .to_string(),
            "delivery must be an object"
        );
        assert_eq!(
            job_patch(&json!({"wakeMode": ""})).unwrap_err().to_string(),
            "wakeMode must not be blank"
        );
    }
}
