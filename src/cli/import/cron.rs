//! OpenClaw's cron jobs (`<state>/cron/jobs.json`: `{version, jobs}` or a
//! bare array) into the scheduler's store, checked as `cron.add` checks
//! them. A job is kept with its id, creation time and last run, so a slot
//! it already ran is not run again and one it missed is caught up once.

use std::path::Path;

use ferroclaw_actors::cron::job::{CronJob, Known};
use ferroclaw_actors::cron::record;
use ferroclaw_actors::store::{Store, Tree};
use serde_json::Value;

use super::Failure;

const FIELDS: &[&str] = &[
    "name",
    "description",
    "enabled",
    "deleteAfterRun",
    "agentId",
    "sessionKey",
    "schedule",
    "sessionTarget",
    "wakeMode",
    "payload",
    "delivery",
    "displayName",
];

/// An OpenClaw job as ferroclaw's: its fields checked as `cron.add` checks
/// them, its times and last run kept.
fn job_of(
    j: &Value,
    id: &str,
    agents: &[String],
    now: u64,
) -> Result<CronJob, ferroclaw::protocol::cron::CronParamsError> {
    let params: serde_json::Map<String, Value> = FIELDS
        .iter()
        .filter_map(|k| {
            j.get(*k)
                .filter(|v| !v.is_null())
                .map(|v| (k.to_string(), v.clone()))
        })
        .collect();
    // Channels are checked when the gateway sends; the import keeps the target.
    let channels: Vec<String> = j["delivery"]["channel"]
        .as_str()
        .map(str::to_string)
        .into_iter()
        .collect();
    let known = Known {
        channels: &channels,
        agents,
        default_agent: "main",
        now_ms: now,
    };
    let params = ferroclaw::protocol::cron::new_job(&Value::Object(params))?;
    let (mut job, _) = CronJob::create(id, &params, &known).map_err(|e| e.to_string())?;
    let st = &j["state"];
    job.created_at_ms = j["createdAtMs"].as_u64().unwrap_or(now);
    job.updated_at_ms = j["updatedAtMs"].as_u64().unwrap_or(now);
    job.state.last_run_at_ms = st["lastRunAtMs"].as_u64();
    job.state.last_slot_ms = Some(st["lastRunAtMs"].as_u64().unwrap_or(now));
    job.state.last_run_status = st["lastRunStatus"]
        .as_str()
        .or(st["lastStatus"].as_str())
        .map(str::to_string);
    Ok(job)
}

/// Imports the jobs; returns how many, and a note per job left out.
pub fn import_jobs(
    from: &Path,
    store: &Store,
    force: bool,
    agents: &[String],
) -> Result<(usize, Vec<String>), Failure> {
    let path = from.join("cron").join("jobs.json");
    let Ok(text) = std::fs::read_to_string(&path) else {
        return Ok((0, Vec::new()));
    };
    let doc: Value = serde_json::from_str(&text)
        .map_err(|e| Failure::new(1, format!("{}: {e}; nothing was imported", path.display())))?;
    let jobs = doc
        .get("jobs")
        .unwrap_or(&doc)
        .as_array()
        .cloned()
        .unwrap_or_default();
    let now = ferroclaw_actors::now_ms();
    let (mut done, mut notes) = (0, Vec::new());
    for j in jobs {
        let name = j["name"].as_str().unwrap_or("(unnamed)").to_string();
        let Some(id) = j["id"]
            .as_str()
            .filter(|i| !i.is_empty() && !i.contains(['/', '\\']))
        else {
            notes.push(format!(
                "cron job {name:?} not imported: it has no usable id"
            ));
            continue;
        };
        let job = match job_of(&j, id, agents, now) {
            Ok(job) => job,
            Err(e) => {
                notes.push(format!("cron job {name:?} ({id}) not imported: {e}"));
                continue;
            }
        };
        let exists = store
            .get::<Value>(Tree::CronJobs, id)
            .ok()
            .flatten()
            .is_some();
        if exists && !force {
            notes.push(format!(
                "cron job {name:?} ({id}) already exists; kept (pass --force to replace it)"
            ));
            continue;
        }
        record::save_job(store, &job).map_err(|e| Failure::new(1, e.to_string()))?;
        done += 1;
    }
    if done > 0 {
        notes.push(format!(
            "{done} cron job(s) imported from {}",
            path.display()
        ));
    }
    Ok((done, notes))
}
