//! A cron job: its definition (`NewJob`, `cron.add`'s params read at the
//! edge, `protocol/cron.rs`; `JobPatch` for `cron.update`), checked here so
//! a bad job is refused with what is wrong, and the state the scheduler
//! keeps beside it. Clients see a `JobView` (rendered at the edge).
//! Reading a job never changes it.
//!
//! ferroclaw runs two payloads: `agentTurn` (a turn in the job's own
//! session `cron:<id>`, a named `session:<key>`, or the creator's
//! `current` one) and `systemEvent` (a line for the main session's next
//! turn; `wakeMode: "now"` runs a heartbeat turn at once). Delivery:
//! `announce` (the turn's reply to a chat, through the channel outbox) or
//! `none`.

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

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

/// `cron.add`'s params, each key's type checked where they are read (the
/// edge's `protocol::cron`); what they mean is checked by
/// [`CronJob::create`]. Strings are trimmed and not blank.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NewJob {
    pub name: Option<String>,
    pub display_name: Option<String>,
    pub declaration_key: Option<String>,
    pub description: Option<String>,
    pub enabled: Option<bool>,
    pub delete_after_run: Option<bool>,
    pub agent_id: Option<String>,
    pub session_key: Option<String>,
    /// `{kind: "at" | "every" | "cron", ...}` (`schedule.rs`).
    pub schedule: Option<Value>,
    /// `main`, `isolated`, `current` or `session:<key>`.
    pub session_target: Option<String>,
    /// `now` or `next-heartbeat`.
    pub wake_mode: Option<String>,
    /// `{kind: "agentTurn", message, ...}` or `{kind: "systemEvent", text}`.
    pub payload: Option<Value>,
    /// `{mode: "announce" | "none", channel, to, ...}`.
    pub delivery: Option<Value>,
    pub failure_alert: Option<Value>,
}

/// `cron.update`'s patch: per key, untouched (`None`), cleared
/// (`Some(None)`, a `null`) or set. `payload` and `delivery` merge key by
/// key (a `null` inside removes that key; a new payload `kind` starts
/// from nothing).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct JobPatch {
    pub name: Option<Option<String>>,
    pub display_name: Option<Option<String>>,
    pub declaration_key: Option<Option<String>>,
    pub description: Option<Option<String>>,
    pub enabled: Option<Option<bool>>,
    pub delete_after_run: Option<Option<bool>>,
    pub agent_id: Option<Option<String>>,
    pub session_key: Option<Option<String>>,
    pub schedule: Option<Option<Value>>,
    pub session_target: Option<Option<String>>,
    pub wake_mode: Option<Option<String>>,
    pub payload: Option<Option<Map<String, Value>>>,
    pub delivery: Option<Option<Map<String, Value>>>,
    pub failure_alert: Option<Option<Value>>,
}

fn pick<T>(patch: Option<Option<T>>, now: Option<T>) -> Option<T> {
    match patch {
        None => now,
        Some(v) => v,
    }
}

/// `now` with `patch`'s keys merged in (`payload`, `delivery`).
fn merge(
    patch: Option<Option<Map<String, Value>>>,
    now: Option<Value>,
    fresh: bool,
) -> Option<Value> {
    let changes = match patch {
        None => return now,
        Some(None) => return None,
        Some(Some(m)) => m,
    };
    let mut merged = match now {
        Some(Value::Object(m)) if !fresh => m,
        _ => Map::new(),
    };
    for (k, v) in changes {
        match v {
            Value::Null => merged.remove(&k),
            v => merged.insert(k, v),
        };
    }
    Some(Value::Object(merged))
}

impl JobPatch {
    /// `job` with this patch applied (not checked yet).
    pub fn apply(self, job: NewJob) -> NewJob {
        let new_kind = self
            .payload
            .as_ref()
            .and_then(|p| p.as_ref())
            .and_then(|p| p.get("kind"));
        let old_kind = job.payload.as_ref().and_then(|p| p.get("kind"));
        let fresh = new_kind.is_some() && new_kind != old_kind;
        NewJob {
            name: pick(self.name, job.name),
            display_name: pick(self.display_name, job.display_name),
            declaration_key: pick(self.declaration_key, job.declaration_key),
            description: pick(self.description, job.description),
            enabled: pick(self.enabled, job.enabled),
            delete_after_run: pick(self.delete_after_run, job.delete_after_run),
            agent_id: pick(self.agent_id, job.agent_id),
            session_key: pick(self.session_key, job.session_key),
            schedule: pick(self.schedule, job.schedule),
            session_target: pick(self.session_target, job.session_target),
            wake_mode: pick(self.wake_mode, job.wake_mode),
            payload: merge(self.payload, job.payload, fresh),
            delivery: merge(self.delivery, job.delivery, false),
            failure_alert: pick(self.failure_alert, job.failure_alert),
        }
    }
}

/// A job as clients see it: the job, its next run, and (in `cron.list`
/// rows) the agent it runs as. The edge renders OpenClaw's `CronJob`.
#[derive(Debug, Clone)]
pub struct JobView {
    pub job: CronJob,
    pub next_run_ms: Option<u64>,
    pub effective_agent: Option<String>,
}

/// A JSON value as its text.
fn raw(v: &Value) -> Box<RawValue> {
    RawValue::from_string(v.to_string())
        .unwrap_or_else(|_| RawValue::from_string("null".into()).unwrap_or_default())
}

fn parsed(r: &RawValue) -> Value {
    serde_json::from_str(r.get()).unwrap_or(Value::Null)
}

crate::reason_error! {
    /// Why a job was refused (`cron.add`, `cron.update` answer with it).
    pub struct InvalidJob;
}

impl From<super::schedule::ScheduleError> for InvalidJob {
    fn from(e: super::schedule::ScheduleError) -> Self {
        InvalidJob(e.to_string())
    }
}

fn bad(msg: impl std::fmt::Display) -> InvalidJob {
    InvalidJob(msg.to_string())
}

/// Checks a schedule; an `at` already past is refused on add.
pub fn check_schedule(v: &Value, now_ms: u64, adding: bool) -> Result<Schedule, InvalidJob> {
    let s = Schedule::parse(v)?;
    if let (true, Schedule::At { at_ms }) = (adding, &s) {
        if *at_ms + 1_000 < now_ms {
            return Err(bad("schedule.at is in the past"));
        }
    }
    Ok(s)
}

fn check_payload(p: &Value) -> Result<(), InvalidJob> {
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

fn check_target(target: &str, payload_kind: &str) -> Result<(), InvalidJob> {
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
pub fn target_of(delivery: Option<&Value>) -> Result<Option<Target>, InvalidJob> {
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
) -> Result<(), InvalidJob> {
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
fn check_agent(agent: &str, known: &Known) -> Result<(), InvalidJob> {
    let ok = agent.eq_ignore_ascii_case(known.default_agent)
        || known.agents.iter().any(|a| a.eq_ignore_ascii_case(agent));
    match ok {
        true => Ok(()),
        false => Err(bad(format!("unknown agent {agent:?}"))),
    }
}

impl CronJob {
    /// A new job from `cron.add`'s params, checked.
    pub fn create(
        id: &str,
        params: &NewJob,
        known: &Known,
    ) -> Result<(CronJob, Schedule), InvalidJob> {
        CronJob::build(id, params, known, true)
    }

    /// `create`, with a past `at` refused only when `new_schedule` (an
    /// update that leaves a fired one-shot's schedule alone is not wrong).
    fn build(
        id: &str,
        o: &NewJob,
        known: &Known,
        new_schedule: bool,
    ) -> Result<(CronJob, Schedule), InvalidJob> {
        let name = o.name.clone().ok_or("name is required")?;
        let payload = o.payload.clone().ok_or("payload is required")?;
        check_payload(&payload)?;
        let kind = payload["kind"].as_str().unwrap_or_default().to_string();
        let session_target = match &o.session_target {
            Some(t) => t.clone(),
            None if kind == "systemEvent" => "main".into(),
            None => "isolated".into(),
        };
        check_target(&session_target, &kind)?;
        let wake_mode = o.wake_mode.clone().unwrap_or_else(|| "now".into());
        if !matches!(wake_mode.as_str(), "now" | "next-heartbeat") {
            return Err(bad("wakeMode must be now or next-heartbeat"));
        }
        let raw_schedule = o.schedule.as_ref().ok_or("schedule is required")?;
        let schedule = check_schedule(raw_schedule, known.now_ms, new_schedule)
            .map_err(|e| format!("schedule: {e}"))?;
        check_delivery(o.delivery.as_ref(), &kind, known)?;
        if let Some(k) = &o.session_key {
            SessionKey::canonical(k, known.default_agent, "main")
                .map_err(|e| format!("sessionKey: {e}"))?;
        }
        let agent_id = o.agent_id.as_ref().map(|a| a.to_ascii_lowercase());
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
            display_name: o.display_name.clone(),
            declaration_key: o.declaration_key.clone(),
            description: o.description.clone(),
            enabled: o.enabled.unwrap_or(true),
            delete_after_run: o.delete_after_run,
            agent_id,
            session_key: o.session_key.clone(),
            created_at_ms: known.now_ms,
            updated_at_ms: known.now_ms,
            schedule: raw(raw_schedule),
            session_target,
            wake_mode,
            payload: raw(&payload),
            delivery: o.delivery.as_ref().map(raw),
            failure_alert: o.failure_alert.as_ref().map(raw),
            state: JobState::default(),
        };
        Ok((job, schedule))
    }

    /// The job's definition, as `cron.add` would give it.
    pub fn definition(&self) -> NewJob {
        NewJob {
            name: Some(self.name.clone()),
            display_name: self.display_name.clone(),
            declaration_key: self.declaration_key.clone(),
            description: self.description.clone(),
            enabled: Some(self.enabled),
            delete_after_run: self.delete_after_run,
            agent_id: self.agent_id.clone(),
            session_key: self.session_key.clone(),
            schedule: Some(self.schedule()),
            session_target: Some(self.session_target.clone()),
            wake_mode: Some(self.wake_mode.clone()),
            payload: Some(self.payload()),
            delivery: self.delivery(),
            failure_alert: self.failure_alert.as_deref().map(parsed),
        }
    }

    /// This job with `patch` (`cron.update`) applied, checked as a whole.
    pub fn patched(
        &self,
        patch: JobPatch,
        known: &Known,
    ) -> Result<(CronJob, Schedule), InvalidJob> {
        let changed_schedule = patch.schedule.is_some();
        let def = patch.apply(self.definition());
        let (mut job, schedule) = CronJob::build(&self.id, &def, known, changed_schedule)?;
        job.created_at_ms = self.created_at_ms;
        job.updated_at_ms = known.now_ms;
        job.state = self.state.clone();
        if changed_schedule {
            // A new schedule starts from now: slots before it are not missed.
            job.state.last_slot_ms = Some(known.now_ms);
        }
        Ok((job, schedule))
    }

    /// The session a run of this job goes to (`main`: the agent's main
    /// session, named by `session.mainKey`).
    pub fn session(&self, default_agent: &str, main_key: &str) -> Result<SessionKey, InvalidJob> {
        let agent = self.agent(default_agent);
        let raw = match self.session_target.as_str() {
            "main" => "main".to_string(),
            "current" if self.session_key.is_some() => self.session_key.clone().unwrap_or_default(),
            t => match t.strip_prefix("session:") {
                Some(k) => k.trim().to_string(),
                None => format!("agent:{agent}:cron:{}", self.id),
            },
        };
        SessionKey::canonical(&raw, agent, main_key).map_err(bad)
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn known<'a>(channels: &'a [String]) -> Known<'a> {
        Known {
            channels,
            agents: &[],
            default_agent: "main",
            now_ms: 1_790_000_000_000,
        }
    }

    fn add(job: NewJob) -> Result<CronJob, InvalidJob> {
        let ch = ["telegram".to_string()];
        let made = CronJob::create("j1", &job, &known(&ch));
        made.map(|(j, _)| j)
    }

    fn turn(message: &str) -> NewJob {
        NewJob {
            name: Some("x".into()),
            schedule: Some(json!({"kind": "every", "everyMs": 1000})),
            session_target: Some("isolated".into()),
            wake_mode: Some("now".into()),
            payload: Some(json!({"kind": "agentTurn", "message": message})),
            ..NewJob::default()
        }
    }

    #[test]
    fn openclaw_cli_shapes_are_accepted() {
        let j = add(NewJob {
            enabled: Some(true),
            schedule: Some(json!({"kind": "every", "everyMs": 600000})),
            payload: Some(
                json!({"kind": "agentTurn", "message": "sum up", "toolsAllow": ["read"]}),
            ),
            delivery: Some(json!({"mode": "announce", "channel": "telegram", "to": "42"})),
            ..turn("")
        })
        .unwrap();
        assert_eq!(
            j.session("main", "main").unwrap().as_str(),
            "agent:main:cron:j1"
        );
        let t = target_of(j.delivery().as_ref()).unwrap().unwrap();
        assert_eq!(
            (t.channel.as_str(), t.to.as_deref()),
            ("telegram", Some("42"))
        );
        let e = add(NewJob {
            name: Some("ping".into()),
            schedule: Some(json!({"kind": "cron", "expr": "0 9 * * *", "tz": "Europe/Lisbon"})),
            session_target: None,
            wake_mode: Some("next-heartbeat".into()),
            payload: Some(json!({"kind": "systemEvent", "text": "check mail"})),
            ..NewJob::default()
        })
        .unwrap();
        assert_eq!(e.session_target, "main", "a system event's default");
        assert_eq!(
            e.session("main", "home").unwrap().as_str(),
            "agent:main:home"
        );
        assert_eq!(e.definition().name.as_deref(), Some("ping"));
    }

    #[test]
    fn bad_jobs_say_what_is_wrong() {
        let with = |f: &dyn Fn(&mut NewJob)| {
            let mut j = turn("hi");
            f(&mut j);
            add(j).unwrap_err().to_string()
        };
        let schedule = |v: Value| move |j: &mut NewJob| j.schedule = Some(v.clone());
        assert!(
            with(&schedule(json!({"kind": "cron", "expr": "61 * * * *"})))
                .contains("cron expression")
        );
        assert!(with(&schedule(
            json!({"kind": "cron", "expr": "0 9 * * *", "tz": "Mars/Base"})
        ))
        .contains("unknown timezone"));
        assert!(with(&schedule(
            json!({"kind": "at", "at": "2020-01-01T00:00:00Z"})
        ))
        .contains("past"));
        let delivery = |v: Value| move |j: &mut NewJob| j.delivery = Some(v.clone());
        assert!(with(&delivery(
            json!({"mode": "announce", "channel": "irc", "to": "x"})
        ))
        .contains("unknown delivery channel"));
        assert!(with(&delivery(
            json!({"mode": "announce", "channel": "telegram"})
        ))
        .contains("needs `to`"));
        let target = |t: &'static str| move |j: &mut NewJob| j.session_target = Some(t.into());
        assert!(with(&target("main")).contains("systemEvent"));
        assert!(with(&target("elsewhere")).contains("invalid sessionTarget"));
        assert!(with(&target("session:agent:ghost:x")).contains("unknown agent"));
        let payload = |v: Value| move |j: &mut NewJob| j.payload = Some(v.clone());
        assert!(
            with(&payload(json!({"kind": "command", "argv": ["ls"]}))).contains("not supported")
        );
        assert!(with(&payload(json!({"kind": "agentTurn", "message": " "}))).contains("message"));
        assert!(with(&|j| j.agent_id = Some("ghost".into())).contains("unknown agent"));
        assert_eq!(with(&|j| j.name = None), "name is required");
        assert!(with(&|j| j.wake_mode = Some("later".into())).contains("wakeMode"));
    }

    #[test]
    fn patches_merge_clear_and_recheck() {
        let ch = ["telegram".to_string()];
        let k = known(&ch);
        let mut first = turn("hi");
        first.payload = Some(json!({"kind": "agentTurn", "message": "hi", "model": "m1"}));
        first.description = Some("old".into());
        let (j, _) = CronJob::create("j1", &first, &k).unwrap();
        let mut changes = Map::new();
        changes.insert("message".into(), json!("yo"));
        changes.insert("model".into(), Value::Null);
        let (p, _) = j
            .patched(
                JobPatch {
                    payload: Some(Some(changes)),
                    enabled: Some(Some(false)),
                    description: Some(None),
                    ..JobPatch::default()
                },
                &k,
            )
            .unwrap();
        assert_eq!(p.payload(), json!({"kind": "agentTurn", "message": "yo"}));
        assert!(!p.enabled);
        assert_eq!(p.description, None, "a null clears");
        assert_eq!(p.created_at_ms, j.created_at_ms);
        let bad = JobPatch {
            schedule: Some(Some(json!({"kind": "cron", "expr": "nope"}))),
            ..JobPatch::default()
        };
        assert!(j.patched(bad, &k).is_err());
        let (s, _) = j
            .patched(
                JobPatch {
                    schedule: Some(Some(json!({"kind": "every", "everyMs": 5000}))),
                    ..JobPatch::default()
                },
                &k,
            )
            .unwrap();
        assert_eq!(s.state.last_slot_ms, Some(k.now_ms));
        // A new payload kind starts from nothing (the old message goes).
        let mut event = Map::new();
        event.insert("kind".into(), json!("systemEvent"));
        event.insert("text".into(), json!("ping"));
        let (e, _) = j
            .patched(
                JobPatch {
                    payload: Some(Some(event)),
                    session_target: Some(Some("main".into())),
                    ..JobPatch::default()
                },
                &k,
            )
            .unwrap();
        assert_eq!(e.payload(), json!({"kind": "systemEvent", "text": "ping"}));
    }
}
