//! A cron job in OpenClaw's shape (`cron.add` params, `cron.list` rows):
//! its definition as the client gave it (checked here, so a bad job is
//! refused at `cron.add`/`cron.update` with what is wrong) and the state
//! the scheduler keeps beside it. Reading a job never changes it.
//!
//! ferroclaw runs two payloads: `agentTurn` (a turn in the job's own
//! session `cron:<id>`, a named `session:<key>`, or the creator's
//! `current` one) and `systemEvent` (a line for the main session's next
//! turn; `wakeMode: "now"` runs a heartbeat turn at once). Delivery:
//! `announce` (the turn's reply to a chat, through the channel outbox) or
//! `none`.

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};

use super::schedule::Schedule;
use crate::inbound::SessionKey;

/// The scheduler's state of a job (OpenClaw's `state`, minus what is
/// computed: `nextRunAtMs` is derived from the schedule, never stored).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct JobState {
    /// The latest slot accounted for (run, skipped or caught up): the
    /// exactly-once guard, written in the same transaction as the run
    /// record of that slot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_slot_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub running_at_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_run_at_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_run_status: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_duration_ms: Option<u64>,
    #[serde(default)]
    pub consecutive_errors: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_delivered: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_delivery_status: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_delivery_error: Option<String>,
}

/// A stored job. Its schedule, payload and delivery are kept as the JSON
/// text they came as (read when a run needs them): a parsed JSON tree
/// costs about ten times as much memory, and the scheduler holds every job.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CronJob {
    pub id: String,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub declaration_key: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub enabled: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delete_after_run: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_key: Option<String>,
    pub created_at_ms: u64,
    pub updated_at_ms: u64,
    pub schedule: Box<RawValue>,
    pub session_target: String,
    pub wake_mode: String,
    pub payload: Box<RawValue>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivery: Option<Box<RawValue>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_alert: Option<Box<RawValue>>,
    #[serde(default)]
    pub state: JobState,
}

/// Where an announce goes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Target {
    /// A channel id, or `last` (the main session's last route).
    pub channel: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_id: Option<String>,
    #[serde(default)]
    pub best_effort: bool,
}

/// What `cron.add`/`cron.update` are checked against.
pub struct Known<'a> {
    /// Configured channel ids (`last` is always accepted).
    pub channels: &'a [String],
    /// Configured agent ids (empty: only the default agent is checked).
    pub agents: &'a [String],
    pub default_agent: &'a str,
    pub now_ms: u64,
}

const ADD_KEYS: &[&str] = &[
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

/// A JSON value as its text.
fn raw(v: &Value) -> Box<RawValue> {
    RawValue::from_string(v.to_string())
        .unwrap_or_else(|_| RawValue::from_string("null".into()).unwrap_or_default())
}

fn parsed(r: &RawValue) -> Value {
    serde_json::from_str(r.get()).unwrap_or(Value::Null)
}

fn bad(msg: impl std::fmt::Display) -> String {
    msg.to_string()
}

fn opt_str(v: &Map<String, Value>, key: &str) -> Result<Option<String>, String> {
    match v.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.trim().is_empty() => {
            Err(bad(format!("{key} must not be blank")))
        }
        Some(Value::String(s)) => Ok(Some(s.trim().to_string())),
        Some(_) => Err(bad(format!("{key} must be a string"))),
    }
}

fn opt_bool(v: &Map<String, Value>, key: &str) -> Result<Option<bool>, String> {
    match v.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(_) => Err(bad(format!("{key} must be a boolean"))),
    }
}

/// Checks a schedule; an `at` already past is refused on add.
pub fn check_schedule(v: &Value, now_ms: u64, adding: bool) -> Result<Schedule, String> {
    let s = Schedule::parse(v)?;
    if let (true, Schedule::At { at_ms }) = (adding, &s) {
        if *at_ms + 1_000 < now_ms {
            return Err(bad("schedule.at is in the past"));
        }
    }
    Ok(s)
}

fn check_payload(p: &Value) -> Result<(), String> {
    let o = p.as_object().ok_or("payload must be an object")?;
    match o.get("kind").and_then(Value::as_str) {
        Some("agentTurn") => {
            let msg = o.get("message").and_then(Value::as_str).unwrap_or("");
            if msg.trim().is_empty() {
                return Err(bad("payload.message must not be empty"));
            }
            if let Some(t) = o.get("timeoutSeconds") {
                if !t.as_f64().is_some_and(|t| t >= 0.0) {
                    return Err(bad("payload.timeoutSeconds must be a number >= 0"));
                }
            }
            Ok(())
        }
        Some("systemEvent") => {
            let text = o.get("text").and_then(Value::as_str).unwrap_or("");
            if text.trim().is_empty() {
                return Err(bad("payload.text must not be empty"));
            }
            Ok(())
        }
        Some(k @ ("command" | "script")) => Err(bad(format!(
            "payload kind {k:?} is not supported by ferroclaw (agentTurn or systemEvent)"
        ))),
        Some(k) => Err(bad(format!(
            "unknown payload kind {k:?} (agentTurn or systemEvent)"
        ))),
        None => Err(bad("payload.kind is required (agentTurn or systemEvent)")),
    }
}

fn check_target(target: &str, payload_kind: &str) -> Result<(), String> {
    let custom = target
        .strip_prefix("session:")
        .is_some_and(|k| !k.trim().is_empty());
    match (target, payload_kind) {
        ("main", "systemEvent") => Ok(()),
        ("main", _) => Err(bad(
            "main jobs require a systemEvent payload (sessionTarget main)",
        )),
        ("isolated" | "current", "agentTurn") => Ok(()),
        (t, "agentTurn") if custom || t.starts_with("session:") => {
            if custom {
                Ok(())
            } else {
                Err(bad("sessionTarget session:<key> needs a key"))
            }
        }
        ("isolated" | "current", _) => Err(bad("isolated jobs require an agentTurn payload")),
        (t, _) if custom => Err(bad(format!(
            "{t}: session jobs require an agentTurn payload"
        ))),
        (t, _) => Err(bad(format!(
            "invalid sessionTarget {t:?} (main, isolated, current or session:<key>)"
        ))),
    }
}

/// The announce target of a delivery object (None: nothing to deliver).
pub fn target_of(delivery: Option<&Value>) -> Result<Option<Target>, String> {
    let Some(d) = delivery.and_then(Value::as_object) else {
        return Ok(None);
    };
    let text = |k: &str| {
        d.get(k).and_then(|v| match v {
            Value::String(s) if !s.trim().is_empty() => Some(s.trim().to_string()),
            Value::Number(n) => Some(n.to_string()),
            _ => None,
        })
    };
    match d.get("mode").and_then(Value::as_str).unwrap_or("announce") {
        "none" => Ok(None),
        "announce" => Ok(Some(Target {
            channel: text("channel").unwrap_or_else(|| "last".into()),
            to: text("to"),
            account_id: text("accountId"),
            thread_id: text("threadId"),
            best_effort: d.get("bestEffort").and_then(Value::as_bool) == Some(true),
        })),
        "webhook" => Err(bad(
            "delivery mode \"webhook\" is not supported by ferroclaw (announce or none)",
        )),
        m => Err(bad(format!(
            "unknown delivery mode {m:?} (announce or none)"
        ))),
    }
}

fn check_delivery(
    delivery: Option<&Value>,
    payload_kind: &str,
    known: &Known,
) -> Result<(), String> {
    if let Some(d) = delivery {
        if !d.is_object() {
            return Err(bad("delivery must be an object"));
        }
    }
    let Some(t) = target_of(delivery)? else {
        return Ok(());
    };
    if payload_kind != "agentTurn" {
        return Err(bad("announce delivery needs an agentTurn payload"));
    }
    let channel = t.channel.to_ascii_lowercase();
    if channel != "last" && !known.channels.contains(&channel) {
        return Err(bad(format!(
            "unknown delivery channel {:?} (configured: {})",
            t.channel,
            match known.channels.is_empty() {
                true => "none".to_string(),
                false => known.channels.join(", "),
            }
        )));
    }
    if channel != "last" && t.to.is_none() {
        return Err(bad(format!("delivery to {channel} needs `to` (a chat id)")));
    }
    Ok(())
}

/// An agent the gateway has.
fn check_agent(agent: &str, known: &Known) -> Result<(), String> {
    let ok = agent.eq_ignore_ascii_case(known.default_agent)
        || known.agents.iter().any(|a| a.eq_ignore_ascii_case(agent));
    match ok {
        true => Ok(()),
        false => Err(bad(format!("unknown agent {agent:?}"))),
    }
}

impl CronJob {
    /// A new job from `cron.add` params, checked.
    pub fn create(id: &str, params: &Value, known: &Known) -> Result<(CronJob, Schedule), String> {
        CronJob::build(id, params, known, true)
    }

    /// `create`, with a past `at` refused only when `new_schedule` (an
    /// update that leaves a fired one-shot's schedule alone is not wrong).
    fn build(
        id: &str,
        params: &Value,
        known: &Known,
        new_schedule: bool,
    ) -> Result<(CronJob, Schedule), String> {
        let o = params.as_object().ok_or("params must be an object")?;
        if let Some(k) = o.keys().find(|k| !ADD_KEYS.contains(&k.as_str())) {
            return Err(bad(format!("unexpected property {k:?}")));
        }
        if o.get("trigger").is_some_and(|t| !t.is_null()) {
            return Err(bad("trigger scripts are not supported by ferroclaw"));
        }
        let name = opt_str(o, "name")?.ok_or("name is required")?;
        let payload = o.get("payload").cloned().ok_or("payload is required")?;
        check_payload(&payload)?;
        let kind = payload["kind"].as_str().unwrap_or_default().to_string();
        let session_target = match o.get("sessionTarget") {
            Some(Value::String(t)) => t.trim().to_string(),
            None | Some(Value::Null) if kind == "systemEvent" => "main".into(),
            None | Some(Value::Null) => "isolated".into(),
            Some(_) => return Err(bad("sessionTarget must be a string")),
        };
        check_target(&session_target, &kind)?;
        let wake_mode = opt_str(o, "wakeMode")?.unwrap_or_else(|| "now".into());
        if !matches!(wake_mode.as_str(), "now" | "next-heartbeat") {
            return Err(bad("wakeMode must be now or next-heartbeat"));
        }
        let raw_schedule = o.get("schedule").ok_or("schedule is required")?;
        let schedule = check_schedule(raw_schedule, known.now_ms, new_schedule)
            .map_err(|e| format!("schedule: {e}"))?;
        let delivery = o.get("delivery").filter(|d| !d.is_null()).cloned();
        check_delivery(delivery.as_ref(), &kind, known)?;
        let session_key = opt_str(o, "sessionKey")?;
        if let Some(k) = &session_key {
            SessionKey::canonical(k, known.default_agent, "main")
                .map_err(|e| format!("sessionKey: {e}"))?;
        }
        let agent_id = opt_str(o, "agentId")?.map(|a| a.to_ascii_lowercase());
        let agent = agent_id.as_deref().unwrap_or(known.default_agent);
        if let Some(k) = session_target.strip_prefix("session:") {
            let key = SessionKey::canonical(k, agent, "main")
                .map_err(|e| format!("sessionTarget: {e}"))?;
            check_agent(key.agent_id(), known).map_err(|e| format!("sessionTarget: {e}"))?;
        }
        check_agent(agent, known)?;
        let job = CronJob {
            id: id.to_string(),
            name,
            display_name: opt_str(o, "displayName")?,
            declaration_key: opt_str(o, "declarationKey")?,
            description: o
                .get("description")
                .and_then(Value::as_str)
                .map(str::to_string),
            enabled: opt_bool(o, "enabled")?.unwrap_or(true),
            delete_after_run: opt_bool(o, "deleteAfterRun")?,
            agent_id,
            session_key,
            created_at_ms: known.now_ms,
            updated_at_ms: known.now_ms,
            schedule: raw(raw_schedule),
            session_target,
            wake_mode,
            payload: raw(&payload),
            delivery: delivery.as_ref().map(raw),
            failure_alert: o.get("failureAlert").filter(|v| !v.is_null()).map(raw),
            state: JobState::default(),
        };
        Ok((job, schedule))
    }

    /// This job with `patch` (`cron.update`) applied, checked as a whole.
    /// A `null` clears an optional field; `payload` and `delivery` merge.
    pub fn patched(&self, patch: &Value, known: &Known) -> Result<(CronJob, Schedule), String> {
        let p = patch.as_object().ok_or("patch must be an object")?;
        let mut def = serde_json::to_value(self).map_err(bad)?;
        let state = def
            .as_object_mut()
            .and_then(|o| o.remove("state"))
            .unwrap_or(Value::Null);
        let o = def.as_object_mut().ok_or("job is not an object")?;
        for key in ["id", "createdAtMs", "updatedAtMs"] {
            o.remove(key);
        }
        for (k, v) in p {
            match k.as_str() {
                "state" => continue,
                "payload" | "delivery" => {
                    let mut merged = o.get(k).cloned().unwrap_or_else(|| json!({}));
                    if v.is_null() {
                        o.remove(k);
                        continue;
                    }
                    let changes_kind = k == "payload"
                        && v.get("kind").is_some()
                        && v.get("kind") != merged.get("kind");
                    if changes_kind {
                        merged = json!({});
                    }
                    if let (Some(m), Some(pv)) = (merged.as_object_mut(), v.as_object()) {
                        for (pk, pv) in pv {
                            match pv {
                                Value::Null => m.remove(pk),
                                other => m.insert(pk.clone(), other.clone()),
                            };
                        }
                    }
                    o.insert(k.clone(), merged);
                }
                _ if v.is_null() => {
                    o.remove(k);
                }
                _ => {
                    o.insert(k.clone(), v.clone());
                }
            }
        }
        let changed_schedule = p.contains_key("schedule");
        let (mut job, schedule) = CronJob::build(&self.id, &def, known, changed_schedule)?;
        job.created_at_ms = self.created_at_ms;
        job.updated_at_ms = known.now_ms;
        job.state = serde_json::from_value(state).unwrap_or_default();
        if changed_schedule {
            // A new schedule starts from now: slots before it are not missed.
            job.state.last_slot_ms = Some(known.now_ms);
        }
        Ok((job, schedule))
    }

    /// The session a run of this job talks to (None for main-session
    /// system events).
    pub fn session(&self, default_agent: &str) -> Result<SessionKey, String> {
        let agent = self.agent(default_agent);
        let raw = match self.session_target.as_str() {
            "main" => "main".to_string(),
            "current" if self.session_key.is_some() => self.session_key.clone().unwrap_or_default(),
            t => match t.strip_prefix("session:") {
                Some(k) => k.trim().to_string(),
                None => format!("agent:{agent}:cron:{}", self.id),
            },
        };
        SessionKey::canonical(&raw, agent, "main").map_err(|e| e.to_string())
    }

    pub fn agent<'a>(&'a self, default_agent: &'a str) -> &'a str {
        self.agent_id.as_deref().unwrap_or(default_agent)
    }

    pub fn payload(&self) -> Value {
        parsed(&self.payload)
    }

    pub fn schedule(&self) -> Value {
        parsed(&self.schedule)
    }

    pub fn delivery(&self) -> Option<Value> {
        self.delivery.as_deref().map(parsed)
    }

    pub fn payload_kind(&self) -> String {
        self.payload()["kind"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    /// The job as clients see it (OpenClaw's `CronJob`): `nextRunAtMs`
    /// computed, the state's fields mirrored at the top level.
    pub fn public(&self, next_run_ms: Option<u64>) -> Value {
        let mut v = serde_json::to_value(self).unwrap_or_default();
        let st = &self.state;
        if let Some(state) = v.get_mut("state").and_then(Value::as_object_mut) {
            state.remove("lastSlotMs");
            if let Some(n) = next_run_ms {
                state.insert("nextRunAtMs".into(), json!(n));
            }
            if let Some(s) = &st.last_run_status {
                state.insert("lastStatus".into(), json!(s));
            }
        }
        let Some(o) = v.as_object_mut() else {
            return v;
        };
        let mut put = |k: &str, val: Option<Value>| {
            if let Some(val) = val {
                o.insert(k.to_string(), val);
            }
        };
        put("nextRunAtMs", next_run_ms.map(|n| json!(n)));
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
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn known<'a>(channels: &'a [String]) -> Known<'a> {
        Known {
            channels,
            agents: &[],
            default_agent: "main",
            now_ms: 1_790_000_000_000,
        }
    }

    fn add(v: Value) -> Result<CronJob, String> {
        let ch = ["telegram".to_string()];
        CronJob::create("j1", &v, &known(&ch)).map(|(j, _)| j)
    }

    #[test]
    fn openclaw_cli_shapes_are_accepted() {
        let j = add(json!({
            "name": "digest", "enabled": true, "schedule": {"kind": "every", "everyMs": 600000},
            "sessionTarget": "isolated", "wakeMode": "now",
            "payload": {"kind": "agentTurn", "message": "sum up", "toolsAllow": ["read"]},
            "delivery": {"mode": "announce", "channel": "telegram", "to": "42"}
        }))
        .unwrap();
        assert_eq!(j.session("main").unwrap().as_str(), "agent:main:cron:j1");
        let t = target_of(j.delivery().as_ref()).unwrap().unwrap();
        assert_eq!(
            (t.channel.as_str(), t.to.as_deref()),
            ("telegram", Some("42"))
        );
        let e = add(json!({
            "name": "ping", "schedule": {"kind": "cron", "expr": "0 9 * * *", "tz": "Europe/Lisbon"},
            "sessionTarget": "main", "wakeMode": "next-heartbeat",
            "payload": {"kind": "systemEvent", "text": "check mail"}
        }))
        .unwrap();
        assert_eq!(e.session("main").unwrap().as_str(), "agent:main:main");
        let pub_view = j.public(Some(5));
        assert_eq!(pub_view["state"]["nextRunAtMs"], 5);
        assert_eq!(pub_view["nextRunAtMs"], 5);
        assert!(pub_view["state"].get("lastSlotMs").is_none());
    }

    #[test]
    fn bad_jobs_say_what_is_wrong() {
        let base = json!({
            "name": "x", "schedule": {"kind": "every", "everyMs": 1000}, "sessionTarget": "isolated",
            "wakeMode": "now", "payload": {"kind": "agentTurn", "message": "hi"}
        });
        let with = |k: &str, v: Value| {
            let mut b = base.clone();
            b[k] = v;
            add(b).unwrap_err()
        };
        assert!(
            with("schedule", json!({"kind": "cron", "expr": "61 * * * *"}))
                .contains("cron expression")
        );
        assert!(with(
            "schedule",
            json!({"kind": "cron", "expr": "0 9 * * *", "tz": "Mars/Base"})
        )
        .contains("unknown timezone"));
        assert!(with(
            "schedule",
            json!({"kind": "at", "at": "2020-01-01T00:00:00Z"})
        )
        .contains("past"));
        assert!(with(
            "delivery",
            json!({"mode": "announce", "channel": "irc", "to": "x"})
        )
        .contains("unknown delivery channel"));
        assert!(with(
            "delivery",
            json!({"mode": "announce", "channel": "telegram"})
        )
        .contains("needs `to`"));
        assert!(with("sessionTarget", json!("main")).contains("systemEvent"));
        assert!(with("sessionTarget", json!("elsewhere")).contains("invalid sessionTarget"));
        assert!(
            with("payload", json!({"kind": "command", "argv": ["ls"]})).contains("not supported")
        );
        assert!(with("payload", json!({"kind": "agentTurn", "message": " "})).contains("message"));
        assert!(with("bogus", json!(1)).contains("unexpected property"));
        assert!(with("agentId", json!("ghost")).contains("unknown agent"));
        assert!(with("sessionTarget", json!("session:agent:ghost:x")).contains("unknown agent"));
        assert!(with("name", json!("  ")).contains("blank"));
    }

    #[test]
    fn patches_merge_clear_and_recheck() {
        let ch = ["telegram".to_string()];
        let k = known(&ch);
        let (j, _) = CronJob::create(
            "j1",
            &json!({"name": "a", "schedule": {"kind": "every", "everyMs": 1000},
                "sessionTarget": "isolated", "wakeMode": "now",
                "payload": {"kind": "agentTurn", "message": "hi", "model": "m1"}}),
            &k,
        )
        .unwrap();
        let (p, _) = j
            .patched(&json!({"payload": {"kind": "agentTurn", "message": "yo", "model": null}, "enabled": false}), &k)
            .unwrap();
        assert_eq!(p.payload(), json!({"kind": "agentTurn", "message": "yo"}));
        assert!(!p.enabled);
        assert_eq!(p.created_at_ms, j.created_at_ms);
        assert!(j
            .patched(&json!({"schedule": {"kind": "cron", "expr": "nope"}}), &k)
            .is_err());
        let (s, _) = j
            .patched(&json!({"schedule": {"kind": "every", "everyMs": 5000}}), &k)
            .unwrap();
        assert_eq!(s.state.last_slot_ms, Some(k.now_ms));
    }
}
