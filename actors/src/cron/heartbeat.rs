//! The heartbeat's pure decisions, as OpenClaw makes them: whether a
//! heartbeat turn runs at all (no model call when `HEARTBEAT.md` is
//! missing or holds nothing actionable and no system event waits) and
//! when it may run (active hours). Whether its reply is only the
//! `HEARTBEAT_OK` acknowledgement is the run's decision (`run::reply`).
//! Also the heartbeat's settings (`HeartbeatConfig`), a beat's record
//! (`Beat`) and its view for `status` and `health`.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::job::Target;
use crate::ids::RunId;

/// `agents.defaults.heartbeat`, read.
#[derive(Debug, Clone, PartialEq)]
pub struct HeartbeatConfig {
    /// None: no scheduled heartbeats (`every: "0m"`).
    pub every: Option<Duration>,
    pub model: Option<String>,
    pub prompt: String,
    /// None: `target: "none"`.
    pub target: Option<Target>,
    pub active_hours: Option<Value>,
    pub ack_max_chars: usize,
}

impl HeartbeatConfig {
    /// The typed section, checked: an unreadable `every` is refused with
    /// its key.
    pub fn from_settings(
        h: &crate::settings::HeartbeatSettings,
    ) -> Result<HeartbeatConfig, crate::settings::BadSetting> {
        let text = |s: &Option<String>| {
            s.as_deref()
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
        };
        let every = crate::settings::parse_duration(&h.every).ok_or_else(|| {
            crate::settings::BadSetting::new(
                "agents.defaults.heartbeat.every",
                format!("unreadable duration {:?} (e.g. 30m)", h.every),
            )
        })?;
        let target = match h.target.trim() {
            "none" | "" => None,
            t => Some(Target {
                channel: t.to_string(),
                to: text(&h.to),
                account_id: text(&h.account_id),
                thread_id: None,
                best_effort: true,
            }),
        };
        Ok(HeartbeatConfig {
            every: (!every.is_zero()).then_some(every.max(Duration::from_secs(1))),
            model: text(&h.model),
            prompt: h.prompt.clone(),
            target,
            active_hours: h.active_hours.clone().filter(|a| a.is_object()),
            ack_max_chars: h.ack_max_chars as usize,
        })
    }
}

/// How a heartbeat went: OpenClaw's `heartbeat` event (the field names
/// are its), kept as the last one for `last-heartbeat` and stored.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Beat {
    pub status: BeatStatus,
    /// Why it was skipped or failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<RunId>,
    /// The reply's first 200 characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preview: Option<String>,
    /// Why no route was found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub has_media: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivery_status: Option<String>,
    /// When it was reported (ms).
    #[serde(default)]
    pub ts: u64,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BeatStatus {
    /// Delivered to its target.
    Sent,
    #[default]
    Skipped,
    Failed,
    /// The model answered nothing.
    OkEmpty,
    /// The model answered `HEARTBEAT_OK`.
    OkToken,
}

impl Beat {
    pub(super) fn skipped(reason: &str) -> Beat {
        Beat {
            status: BeatStatus::Skipped,
            reason: Some(reason.into()),
            ..Beat::default()
        }
    }

    pub(super) fn failed(reason: impl Into<String>) -> Beat {
        Beat {
            status: BeatStatus::Failed,
            reason: Some(reason.into()),
            ..Beat::default()
        }
    }
}

/// The heartbeat as `status` and `health` report it.
#[derive(Debug, Clone, PartialEq)]
pub struct HeartbeatView {
    pub agent_id: String,
    /// None: no scheduled beats (`every: "0m"` or `set-heartbeats` off).
    pub every: Option<Duration>,
    pub prompt: String,
    /// `none`, `last` or a channel id.
    pub target: String,
    pub model: Option<String>,
    pub ack_max_chars: usize,
    /// When the next scheduled beat is due (ms).
    pub next_due_at: Option<u64>,
}

impl HeartbeatView {
    /// `every` as OpenClaw prints it (`30m`, `disabled`).
    pub fn every_text(&self) -> String {
        self.every
            .map_or("disabled".into(), crate::settings::format_duration)
    }

    /// `every` in milliseconds (None: disabled).
    pub fn every_ms(&self) -> Option<u64> {
        self.every.map(|d| d.as_millis() as u64)
    }

    /// `health`'s per-agent heartbeat.
    pub fn health_row(&self) -> HeartbeatHealth {
        HeartbeatHealth {
            enabled: self.every.is_some(),
            every: self.every_text(),
            every_ms: self.every_ms(),
            prompt: self.prompt.clone(),
            target: self.target.clone(),
            ack_max_chars: self.ack_max_chars,
            model: self.model.clone(),
        }
    }
}

/// `health`'s per-agent heartbeat (OpenClaw's closed shape; `everyMs` is
/// null when disabled).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HeartbeatHealth {
    pub enabled: bool,
    pub every: String,
    pub every_ms: Option<u64>,
    pub prompt: String,
    pub target: String,
    pub ack_max_chars: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

/// Lines of `content` with HTML comments taken out (they may span lines).
fn without_comments(content: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_comment = false;
    for line in content.lines() {
        let mut rest = line.to_string();
        let mut kept = String::new();
        loop {
            if in_comment {
                match rest.find("-->") {
                    Some(i) => {
                        rest = rest[i + 3..].to_string();
                        in_comment = false;
                    }
                    None => break,
                }
            } else {
                match rest.find("<!--") {
                    Some(i) => {
                        kept.push_str(&rest[..i]);
                        rest = rest[i + 4..].to_string();
                        in_comment = true;
                    }
                    None => {
                        kept.push_str(&rest);
                        break;
                    }
                }
            }
        }
        out.push(kept);
    }
    out
}

/// Whether a `HEARTBEAT.md` holds nothing to act on: only blank lines,
/// comments, headings, code fence markers and empty list items.
pub fn is_effectively_empty(content: &str) -> bool {
    without_comments(content).iter().all(|line| {
        let t = line.trim();
        let heading = t.starts_with('#')
            && t.trim_start_matches('#')
                .chars()
                .next()
                .is_none_or(char::is_whitespace);
        let fence = t.strip_prefix("```").is_some_and(|rest| {
            rest.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        });
        let stub = t
            .strip_prefix(['-', '*', '+'])
            .map(str::trim)
            .is_some_and(|rest| matches!(rest, "" | "[]" | "[ ]" | "[x]" | "[X]"));
        t.is_empty() || heading || fence || stub
    })
}

/// Whether a heartbeat turn runs: something in `HEARTBEAT.md` to act on,
/// or a system event waiting. A missing file with no event costs nothing.
pub fn should_run(heartbeat_md: Option<&str>, queued_events: usize) -> bool {
    queued_events > 0 || heartbeat_md.is_some_and(|t| !is_effectively_empty(t))
}

/// `agents.defaults.heartbeat.activeHours`: `{start: "HH:MM", end:
/// "HH:MM" (or "24:00"), timezone?}`, OpenClaw's rules: end exclusive, a
/// window past midnight wraps, start equal to end is never active, and an
/// unreadable window (bad times) does not restrict. `timezone` is an IANA
/// name; none, `local` or `user` (and an unknown name): the gateway's.
pub fn in_active_hours(active: &serde_json::Value, now_ms: u64) -> bool {
    use chrono::{TimeZone, Timelike};
    fn minutes(raw: Option<&str>, allow_24: bool) -> Option<u32> {
        let (h, m) = raw?.split_once(':')?;
        if h.len() != 2 || m.len() != 2 {
            return None;
        }
        let (h, m): (u32, u32) = (h.parse().ok()?, m.parse().ok()?);
        match (h, m) {
            (24, 0) if allow_24 => Some(1440),
            (0..=23, 0..=59) => Some(h * 60 + m),
            _ => None,
        }
    }
    if active.is_null() {
        return true;
    }
    let start = minutes(active.get("start").and_then(|v| v.as_str()), false);
    let end = minutes(active.get("end").and_then(|v| v.as_str()), true);
    let (Some(start), Some(end)) = (start, end) else {
        return true;
    };
    if start == end {
        return false;
    }
    let Some(at) = chrono::Utc.timestamp_millis_opt(now_ms as i64).single() else {
        return true;
    };
    let zone = active
        .get("timezone")
        .and_then(|v| v.as_str())
        .and_then(|t| t.parse::<chrono_tz::Tz>().ok());
    let (h, m) = match zone {
        Some(tz) => {
            let t = at.with_timezone(&tz);
            (t.hour(), t.minute())
        }
        None => {
            let t = at.with_timezone(&chrono::Local);
            (t.hour(), t.minute())
        }
    };
    let now = h * 60 + m;
    if end > start {
        now >= start && now < end
    } else {
        now >= start || now < end
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_actionable_content_runs_a_heartbeat() {
        let empty = "# Heartbeat\n\n<!-- add tasks below\n  one per line -->\n- [ ]\n* \n```markdown\n```\n## Later\n";
        assert!(is_effectively_empty(empty));
        assert!(!is_effectively_empty("# Tasks\n- check the server disk\n"));
        assert!(!is_effectively_empty("<!-- note --> water the plants"));
        assert!(!is_effectively_empty("#hashtag is text"));
        assert!(!should_run(None, 0), "missing file: no model call");
        assert!(!should_run(Some(empty), 0));
        assert!(should_run(Some(empty), 1), "a queued system event runs it");
        assert!(should_run(Some("- check mail"), 0));
    }

    #[test]
    fn active_hours_follow_openclaws_window_rules() {
        use serde_json::json;
        // 2026-07-01 in Lisbon is UTC+1.
        let at = |hm: &str| {
            chrono::DateTime::parse_from_rfc3339(&format!("2026-07-01T{hm}:00+01:00"))
                .unwrap()
                .timestamp_millis() as u64
        };
        let day = json!({"start": "08:00", "end": "22:00", "timezone": "Europe/Lisbon"});
        assert!(in_active_hours(&day, at("08:00")));
        assert!(in_active_hours(&day, at("21:59")));
        assert!(!in_active_hours(&day, at("22:00")), "end exclusive");
        assert!(!in_active_hours(&day, at("07:59")));
        let night = json!({"start": "22:00", "end": "06:00", "timezone": "Europe/Lisbon"});
        assert!(in_active_hours(&night, at("23:30")) && in_active_hours(&night, at("05:59")));
        assert!(!in_active_hours(&night, at("12:00")));
        let to_midnight = json!({"start": "18:00", "end": "24:00", "timezone": "Europe/Lisbon"});
        assert!(in_active_hours(&to_midnight, at("23:59")));
        assert!(!in_active_hours(
            &json!({"start": "09:00", "end": "09:00"}),
            at("09:00")
        ));
        assert!(
            in_active_hours(&json!({"start": "9am", "end": "22:00"}), at("03:00")),
            "unreadable: no restriction"
        );
        assert!(
            in_active_hours(&json!({"start": "24:00", "end": "06:00"}), at("12:00")),
            "24:00 only as an end"
        );
        assert!(in_active_hours(&serde_json::Value::Null, at("03:00")));
    }
}
