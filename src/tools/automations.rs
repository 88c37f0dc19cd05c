//! `automations` (and its alias `cron`): the scheduler as the agent uses
//! it. Each action is the `cron.*` method OpenClaw's tool calls, so a job
//! the agent makes is the job `openclaw cron list` shows. What the tool
//! adds is the caller's context, fixed when the job is made: a relative
//! `at` ("in 20m") becomes a time, an `agentTurn` runs for this
//! conversation (`sessionTarget: "current"` with the caller's session
//! key), and its answer is announced to the chat the request came from
//! (the turn's route, recorded in the job's `delivery`), so it lands
//! there even after a restart or when the session has moved on.

use ferroclaw_actors::tool::{ExecuteTool, ToolOutcome};
use serde_json::{json, Map, Value};

use super::{answer, fail, refused, text, ToolError};
use crate::state::SharedState;
use crate::ws::methods::{cron, outbound};

const TOOL: &str = "automations";

pub(super) async fn run(state: &SharedState, msg: &ExecuteTool) -> ToolOutcome {
    if msg.trust.untrusted {
        // Never offered to such a turn; refused here too.
        return refused("automations: a turn holding a message from outside schedules nothing");
    }
    let args = &msg.call.arguments;
    let Some(action) = text(args, "action") else {
        return fail("automations: `action` is required (status, list, get, add, update, remove, run, runs, wake)");
    };
    let id = text(args, "jobId").or_else(|| text(args, "id"));
    let r = match action {
        "status" => cron::status(state, &json!({})).await,
        "list" => {
            let mut p = Map::new();
            for k in ["includeDisabled", "limit", "offset", "agentId"] {
                if let Some(v) = args.get(k).filter(|v| !v.is_null()) {
                    p.insert(k.into(), v.clone());
                }
            }
            p.insert("compact".into(), json!(true));
            cron::list(state, &Value::Object(p)).await
        }
        "add" => match new_job(msg) {
            Ok(job) => cron::add(state, &job).await,
            Err(e) => return fail(format!("automations: {e}")),
        },
        "wake" => match wake_params(msg) {
            Ok(p) => outbound::wake(state, &p).await,
            Err(e) => return fail(format!("automations: {e}")),
        },
        "get" | "remove" | "runs" | "run" | "update" => {
            let Some(id) = id else {
                return fail(format!("automations: {action} needs jobId"));
            };
            match on_job(state, action, id, args).await {
                Ok(r) => r,
                Err(e) => return fail(format!("automations: {e}")),
            }
        }
        other => {
            return fail(format!(
                "automations: unknown action {other:?} (status, list, get, add, update, remove, run, runs, wake)"
            ))
        }
    };
    answer(TOOL, r)
}

/// An action on one job: `get`, `remove`, `runs`, `run` (`runMode`, due
/// by default), `update` (its `job` the fields to change).
async fn on_job(
    state: &SharedState,
    action: &str,
    id: &str,
    args: &Value,
) -> Result<crate::ws::methods::MethodResult, ToolError> {
    Ok(match action {
        "get" => cron::get(state, &json!({ "id": id })).await,
        "remove" => cron::remove(state, &json!({ "id": id })).await,
        "runs" => cron::runs(state, &json!({ "id": id })).await,
        "run" => {
            let mode = text(args, "runMode").unwrap_or("due");
            cron::run(state, &json!({ "id": id, "mode": mode })).await
        }
        _ => {
            let Some(patch) = args.get("job").filter(|j| j.is_object()) else {
                return Err(ToolError::Invalid(
                    "update needs job (the fields to change)".into(),
                ));
            };
            let mut patch = patch.clone();
            absolute_at(&mut patch, ferroclaw_actors::now_ms())?;
            cron::update(state, &json!({ "id": id, "patch": patch })).await
        }
    })
}

/// `wake`'s params: its text, on the caller's session and agent unless
/// named.
fn wake_params(msg: &ExecuteTool) -> Result<Value, ToolError> {
    let args = &msg.call.arguments;
    let Some(t) = text(args, "text") else {
        return Err(ToolError::Invalid("wake needs text".into()));
    };
    let mode = text(args, "mode").unwrap_or("next-heartbeat");
    let session = text(args, "sessionKey").unwrap_or(msg.session_key.as_str());
    let agent = text(args, "agentId").unwrap_or(&msg.agent_id);
    Ok(json!({ "mode": mode, "text": t, "sessionKey": session, "agentId": agent }))
}

/// `cron.add`'s params for the tool's `job`, with the caller's context.
fn new_job(msg: &ExecuteTool) -> Result<Value, ToolError> {
    let args = &msg.call.arguments;
    let mut job = match args.get("job") {
        Some(Value::Object(o)) => o.clone(),
        Some(_) => return Err(ToolError::Invalid("job must be an object".into())),
        None => {
            return Err(ToolError::Invalid(
                "add needs job (schedule and payload)".into(),
            ))
        }
    };
    let mut as_value = Value::Object(job.clone());
    absolute_at(&mut as_value, ferroclaw_actors::now_ms())?;
    if let Value::Object(o) = as_value {
        job = o;
    }
    let kind = payload_kind(&mut job)?;
    if !job.contains_key("name") {
        let payload = &job["payload"];
        let words = payload["message"]
            .as_str()
            .or(payload["text"].as_str())
            .unwrap_or("job");
        let name: String = words.chars().take(48).collect();
        job.insert("name".into(), json!(name.trim()));
    }
    if kind == "agentTurn" {
        if !job.contains_key("sessionTarget") {
            job.insert("sessionTarget".into(), json!("current"));
        }
        if job.get("sessionTarget").and_then(Value::as_str) == Some("current")
            && job.get("sessionKey").is_none_or(Value::is_null)
        {
            job.insert("sessionKey".into(), json!(msg.session_key.as_str()));
        }
    }
    if !job.contains_key("agentId") {
        job.insert("agentId".into(), json!(msg.agent_id));
    }
    // Announced where it was asked from: the route is recorded now.
    if let Some(origin) = &msg.origin {
        announce_to(&mut job, origin);
    }
    Ok(Value::Object(job))
}

/// The payload's kind; a payload given without one is a `systemEvent` when
/// it has only `text`, else an `agentTurn`.
fn payload_kind(job: &mut Map<String, Value>) -> Result<String, ToolError> {
    let Some(Value::Object(p)) = job.get_mut("payload") else {
        return Err(ToolError::Invalid(
            "job.payload is required: {kind: \"agentTurn\", message} or {kind: \"systemEvent\", text}".into(),
        ));
    };
    if p.get("kind").is_none() {
        let k = if p.contains_key("text") && !p.contains_key("message") {
            "systemEvent"
        } else {
            "agentTurn"
        };
        p.insert("kind".into(), json!(k));
    }
    Ok(p.get("kind")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string())
}

/// An announcing job that names no chat announces to `origin`'s.
fn announce_to(job: &mut Map<String, Value>, origin: &ferroclaw_actors::tool::Route) {
    let delivery = job
        .entry("delivery")
        .or_insert_with(|| json!({ "mode": "announce" }));
    let Value::Object(d) = delivery else {
        return;
    };
    let announce = d.get("mode").and_then(Value::as_str).unwrap_or("announce") == "announce";
    if announce
        && d.get("channel").is_none_or(Value::is_null)
        && d.get("to").is_none_or(Value::is_null)
    {
        d.insert("channel".into(), json!(origin.channel));
        d.insert("to".into(), json!(origin.to));
        d.insert("accountId".into(), json!(origin.account_id));
        if let Some(t) = &origin.thread_id {
            d.insert("threadId".into(), json!(t));
        }
    }
}

/// A relative `schedule.at` ("in 20m", "+20m", "20m", "in 2 seconds")
/// made a time from `now_ms`; an absolute one is left as written.
fn absolute_at(job: &mut Value, now_ms: u64) -> Result<(), ToolError> {
    let Some(at) = job.pointer_mut("/schedule/at") else {
        return Ok(());
    };
    let Some(raw) = at.as_str() else {
        return Ok(());
    };
    let Some(delay) = relative(raw) else {
        return Ok(());
    };
    let when = now_ms + delay;
    let iso = chrono::DateTime::from_timestamp_millis(when as i64)
        .ok_or_else(|| ToolError::Invalid(format!("schedule.at {raw:?} is too far away")))?
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    *at = json!(iso);
    Ok(())
}

/// Milliseconds of a relative time, or None for anything else.
fn relative(raw: &str) -> Option<u64> {
    let s = raw.trim().to_ascii_lowercase();
    let s = s
        .strip_prefix("in ")
        .or_else(|| s.strip_prefix('+'))
        .unwrap_or(&s)
        .trim()
        .to_string();
    // "2 seconds", "20 min", "1 hour": the unit spelled out.
    let compact: String = s.split_whitespace().collect();
    let (num, unit) = compact.split_at(compact.find(|c: char| !c.is_ascii_digit() && c != '.')?);
    let unit = match unit {
        "s" | "sec" | "secs" | "second" | "seconds" => "s",
        "m" | "min" | "mins" | "minute" | "minutes" => "m",
        "h" | "hr" | "hrs" | "hour" | "hours" => "h",
        "d" | "day" | "days" => "d",
        "ms" => "ms",
        _ => return None,
    };
    ferroclaw_actors::settings::parse_duration(&format!("{num}{unit}"))
        .map(|d| d.as_millis() as u64)
        .filter(|ms| *ms > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_times_become_absolute_and_absolute_ones_stay() {
        for (raw, ms) in [
            ("in 20m", 1_200_000),
            ("+2h", 7_200_000),
            ("90s", 90_000),
            ("in 2 seconds", 2_000),
            ("in 1 day", 86_400_000),
        ] {
            assert_eq!(relative(raw), Some(ms), "{raw}");
        }
        for raw in ["2026-12-01T09:00:00Z", "tomorrow", "in", "0s"] {
            assert_eq!(relative(raw), None, "{raw}");
        }
        let mut job = json!({"schedule": {"kind": "at", "at": "in 2s"}});
        absolute_at(&mut job, 1_800_000_000_000).unwrap();
        assert_eq!(job["schedule"]["at"], "2027-01-15T08:00:02.000Z");
    }
}
