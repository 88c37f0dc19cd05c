//! A job's schedule, in OpenClaw's shape (`{kind: "at", at}`,
//! `{kind: "every", everyMs, anchorMs?}`, `{kind: "cron", expr, tz?,
//! staggerMs?}`), and when it runs next. Pure: time is passed in.
//!
//! - `at`: once, at an ISO-8601 time (or `atMs`); nothing after it.
//! - `every`: `anchor + k * everyMs`, the first after now (the anchor is
//!   `anchorMs`, else the job's creation time).
//! - `cron`: 5 or 6 fields (seconds optional) parsed by croner, the Rust
//!   port of the library OpenClaw uses, evaluated in `tz` (an IANA name;
//!   none: the gateway's local time), so imported jobs fire at the same
//!   instants across daylight-saving changes. `staggerMs` shifts every run
//!   by a stable per-job offset (the first four bytes of SHA-256 of the job
//!   id, modulo the stagger: OpenClaw's), so top-of-hour jobs spread out.

use std::str::FromStr;

use chrono::{DateTime, TimeZone, Utc};
use croner::parser::{CronParser, Seconds};
use croner::Cron;
use serde_json::Value;
use sha2::{Digest, Sha256};

/// Where a cron expression is evaluated.
#[derive(Debug, Clone, PartialEq)]
pub enum Zone {
    Local,
    Named(chrono_tz::Tz),
}

#[derive(Debug, Clone)]
pub enum Schedule {
    At {
        at_ms: u64,
    },
    Every {
        every_ms: u64,
        anchor_ms: Option<u64>,
    },
    /// The expression is kept as text and parsed when a run is computed:
    /// a parsed one holds croner's 5 KB year table, too much for 10,000 jobs.
    Cron {
        expr: String,
        zone: Zone,
        stagger_ms: u64,
    },
}

crate::reason_error! {
    /// What is wrong with a schedule (`cron.add`'s error text says it).
    pub struct ScheduleError;
}

fn parse_at(v: &Value) -> Result<u64, ScheduleError> {
    if let Some(ms) = v.get("atMs").and_then(Value::as_u64) {
        return Ok(ms);
    }
    let at = v
        .get("at")
        .ok_or("an `at` schedule needs `at` (an ISO-8601 time)")?;
    if let Some(ms) = at.as_u64() {
        return Ok(ms);
    }
    let s = at.as_str().ok_or("`at` must be an ISO-8601 time")?;
    DateTime::parse_from_rfc3339(s)
        .map(|t| t.timestamp_millis().max(0) as u64)
        .or_else(|_| {
            // A time without an offset is the gateway's local time.
            chrono::NaiveDateTime::parse_from_str(s, "%Y-%m-%dT%H:%M:%S")
                .or_else(|_| chrono::NaiveDateTime::parse_from_str(s, "%Y-%m-%dT%H:%M"))
                .ok()
                .and_then(|n| chrono::Local.from_local_datetime(&n).earliest())
                .map(|t| t.timestamp_millis().max(0) as u64)
                .ok_or(())
        })
        .map_err(|_| {
            let why = format!("invalid `at` time {s:?} (ISO-8601, e.g. 2026-12-01T09:00:00Z)");
            ScheduleError(why)
        })
}

/// Parses a cron expression as OpenClaw's croner does: 5 or 6 fields.
pub fn parse_cron(expr: &str) -> Result<Cron, ScheduleError> {
    let fields = expr.split_whitespace().count();
    if !(5..=6).contains(&fields) && !expr.trim().starts_with('@') {
        return Err(ScheduleError::from(format!(
            "invalid cron expression {expr:?}: 5 or 6 fields expected, found {fields}"
        )));
    }
    CronParser::builder()
        .seconds(Seconds::Optional)
        .build()
        .parse(expr.trim())
        .map_err(|e| ScheduleError(format!("invalid cron expression {expr:?}: {e}")))
}

fn parse_zone(tz: Option<&str>) -> Result<Zone, ScheduleError> {
    match tz.map(str::trim).filter(|t| !t.is_empty()) {
        None => Ok(Zone::Local),
        Some(name) => chrono_tz::Tz::from_str(name).map(Zone::Named).map_err(|_| {
            let why = format!("unknown timezone {name:?} (an IANA name, e.g. Europe/Lisbon)");
            ScheduleError(why)
        }),
    }
}

impl Schedule {
    /// From a job's `schedule` object; the error says what is wrong.
    pub fn parse(v: &Value) -> Result<Schedule, ScheduleError> {
        match v.get("kind").and_then(Value::as_str) {
            Some("at") => Ok(Schedule::At {
                at_ms: parse_at(v)?,
            }),
            Some("every") => {
                let every_ms = v
                    .get("everyMs")
                    .and_then(Value::as_f64)
                    .filter(|n| n.is_finite() && *n >= 1.0)
                    .ok_or("an `every` schedule needs `everyMs` of at least 1")?
                    as u64;
                let anchor_ms = match v.get("anchorMs") {
                    None | Some(Value::Null) => None,
                    Some(a) => Some(a.as_u64().ok_or("`anchorMs` must be a time in ms")?),
                };
                Ok(Schedule::Every {
                    every_ms,
                    anchor_ms,
                })
            }
            Some("cron") => {
                let expr = v
                    .get("expr")
                    .or_else(|| v.get("cron"))
                    .and_then(Value::as_str)
                    .ok_or("a `cron` schedule needs `expr`")?;
                parse_cron(expr)?;
                let zone = parse_zone(v.get("tz").and_then(Value::as_str))?;
                Ok(Schedule::Cron {
                    expr: expr.trim().to_string(),
                    zone,
                    stagger_ms: v.get("staggerMs").and_then(Value::as_u64).unwrap_or(0),
                })
            }
            Some(other) => Err(ScheduleError::from(format!(
                "unknown schedule kind {other:?} (at, every or cron)"
            ))),
            None => Err("a schedule needs `kind` (at, every or cron)".into()),
        }
    }

    /// The latest run at or before `now_ms` (None: none yet), computed
    /// directly, however long ago the previous one was.
    pub fn latest_at_or_before(&self, now_ms: u64, job_id: &str, created_ms: u64) -> Option<u64> {
        match self {
            Schedule::At { at_ms } => (*at_ms <= now_ms).then_some(*at_ms),
            Schedule::Every {
                every_ms,
                anchor_ms,
            } => {
                let anchor = anchor_ms.unwrap_or(created_ms);
                (now_ms >= anchor).then(|| anchor + (now_ms - anchor) / every_ms * every_ms)
            }
            Schedule::Cron {
                expr,
                zone,
                stagger_ms,
            } => {
                let cron = parse_cron(expr).ok()?;
                let offset = stagger_offset(job_id, *stagger_ms);
                let base = occurrence(&cron, zone, now_ms.checked_sub(offset)?, false)?;
                Some(base + offset)
            }
        }
    }

    /// After a stop: the one run to catch up, if slots fell between the
    /// last slot the job accounted for (run or skipped; None: its
    /// creation) and now. The latest missed slot, once, however many were
    /// missed, and only with `run_missed` (OpenClaw's `runMissedJobs`).
    pub fn catch_up(
        &self,
        last_slot: Option<u64>,
        now_ms: u64,
        job_id: &str,
        created_ms: u64,
        run_missed: bool,
    ) -> Option<u64> {
        let since = last_slot.unwrap_or(created_ms);
        let latest = self.latest_at_or_before(now_ms, job_id, created_ms)?;
        (run_missed && latest > since).then_some(latest)
    }

    /// The first run strictly after `now_ms`, for job `job_id` created at
    /// `created_ms`; None when there is none (a past `at`).
    pub fn next_after(&self, now_ms: u64, job_id: &str, created_ms: u64) -> Option<u64> {
        match self {
            Schedule::At { at_ms } => (*at_ms > now_ms).then_some(*at_ms),
            Schedule::Every {
                every_ms,
                anchor_ms,
            } => {
                let anchor = anchor_ms.unwrap_or(created_ms);
                if now_ms < anchor {
                    return Some(anchor);
                }
                let steps = (now_ms - anchor) / every_ms + 1;
                anchor.checked_add(steps.checked_mul(*every_ms)?)
            }
            Schedule::Cron {
                expr,
                zone,
                stagger_ms,
            } => {
                let cron = parse_cron(expr).ok()?;
                let offset = stagger_offset(job_id, *stagger_ms);
                // The base occurrence whose shifted time is after now.
                let mut cursor = now_ms.saturating_sub(offset);
                for _ in 0..4 {
                    let base = occurrence(&cron, zone, cursor, true)?;
                    let shifted = base + offset;
                    if shifted > now_ms {
                        return Some(shifted);
                    }
                    cursor = base.max(cursor) + 1;
                }
                None
            }
        }
    }
}

/// An occurrence of `cron` in `zone`: the first strictly after `at_ms`
/// (`forward`), or the latest at or before it. From whole seconds: croner
/// keeps the start's fraction in what it returns (an occurrence within the
/// same second is not after it anyway).
fn occurrence(cron: &Cron, zone: &Zone, at_ms: u64, forward: bool) -> Option<u64> {
    fn find<T: TimeZone>(cron: &Cron, at: &DateTime<T>, forward: bool) -> Option<i64> {
        let found = match forward {
            true => cron.find_next_occurrence(at, false),
            false => cron.find_previous_occurrence(at, true),
        };
        found.ok().map(|t| t.timestamp_millis())
    }
    let at = Utc
        .timestamp_millis_opt((at_ms / 1000 * 1000) as i64)
        .single()?;
    let ms = match zone {
        Zone::Local => find(cron, &at.with_timezone(&chrono::Local), forward)?,
        Zone::Named(tz) => find(cron, &at.with_timezone(tz), forward)?,
    };
    u64::try_from(ms).ok()
}

/// OpenClaw's stable per-job stagger: SHA-256 of the id, its first four
/// bytes big-endian, modulo the stagger.
pub fn stagger_offset(job_id: &str, stagger_ms: u64) -> u64 {
    if stagger_ms <= 1 {
        return 0;
    }
    let d = Sha256::digest(job_id.as_bytes());
    u64::from(u32::from_be_bytes([d[0], d[1], d[2], d[3]])) % stagger_ms
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ms(s: &str) -> u64 {
        DateTime::parse_from_rfc3339(s).unwrap().timestamp_millis() as u64
    }

    fn iso(ms: u64) -> String {
        Utc.timestamp_millis_opt(ms as i64)
            .unwrap()
            .format("%Y-%m-%dT%H:%M:%SZ")
            .to_string()
    }

    /// The next `n` runs from `from`.
    fn runs(s: &Schedule, from: &str, n: usize) -> Vec<String> {
        let mut out = Vec::new();
        let mut now = ms(from);
        for _ in 0..n {
            match s.next_after(now, "job-1", ms(from)) {
                Some(t) => {
                    out.push(iso(t));
                    now = t;
                }
                None => break,
            }
        }
        out
    }

    #[test]
    fn at_runs_once_and_never_again() {
        let s = Schedule::parse(&json!({"kind": "at", "at": "2026-12-01T09:00:00Z"})).unwrap();
        assert_eq!(
            runs(&s, "2026-11-24T00:00:00Z", 3),
            ["2026-12-01T09:00:00Z"]
        );
        assert!(
            runs(&s, "2026-12-01T09:00:00Z", 1).is_empty(),
            "not at its own instant"
        );
        let s = Schedule::parse(&json!({"kind": "at", "at": "2026-12-01T10:00:00+01:00"})).unwrap();
        assert_eq!(
            runs(&s, "2026-11-24T00:00:00Z", 1),
            ["2026-12-01T09:00:00Z"]
        );
    }

    #[test]
    fn every_counts_from_its_anchor() {
        let s = Schedule::parse(
            &json!({"kind": "every", "everyMs": 3_600_000, "anchorMs": ms("2026-11-24T00:15:00Z")}),
        )
        .unwrap();
        assert_eq!(
            runs(&s, "2026-11-24T02:00:00Z", 3),
            [
                "2026-11-24T02:15:00Z",
                "2026-11-24T03:15:00Z",
                "2026-11-24T04:15:00Z"
            ]
        );
        // Before the anchor: the anchor itself.
        assert_eq!(
            runs(&s, "2026-11-23T23:00:00Z", 1),
            ["2026-11-24T00:15:00Z"]
        );
        // No anchor: from the job's creation.
        let s = Schedule::parse(&json!({"kind": "every", "everyMs": 600_000})).unwrap();
        assert_eq!(
            runs(&s, "2026-11-24T02:00:00Z", 2),
            ["2026-11-24T02:10:00Z", "2026-11-24T02:20:00Z"]
        );
    }

    #[test]
    fn cron_fires_at_local_times_across_daylight_saving_changes() {
        // Lisbon: UTC+0 in winter, UTC+1 from 2026-03-29 01:00 UTC.
        let s =
            Schedule::parse(&json!({"kind": "cron", "expr": "0 9 * * *", "tz": "Europe/Lisbon"}))
                .unwrap();
        assert_eq!(
            runs(&s, "2026-03-27T12:00:00Z", 4),
            [
                "2026-03-28T09:00:00Z",
                "2026-03-29T08:00:00Z",
                "2026-03-30T08:00:00Z",
                "2026-03-31T08:00:00Z"
            ]
        );
        // And back in October (UTC+1 -> UTC+0 on 2026-10-25).
        assert_eq!(
            runs(&s, "2026-10-24T12:00:00Z", 2),
            ["2026-10-25T09:00:00Z", "2026-10-26T09:00:00Z"]
        );
        // New York, every weekday at 08:30, across 2026-03-08.
        let s = Schedule::parse(
            &json!({"kind": "cron", "expr": "30 8 * * 1-5", "tz": "America/New_York"}),
        )
        .unwrap();
        assert_eq!(
            runs(&s, "2026-03-06T00:00:00Z", 2),
            ["2026-03-06T13:30:00Z", "2026-03-09T12:30:00Z"]
        );
        // A local time that does not exist on the change day fires at most once.
        let s =
            Schedule::parse(&json!({"kind": "cron", "expr": "30 1 * * *", "tz": "Europe/Lisbon"}))
                .unwrap();
        let r = runs(&s, "2026-03-28T12:00:00Z", 3);
        let days: Vec<&str> = r.iter().map(|t| &t[..10]).collect();
        let mut dedup = days.clone();
        dedup.dedup();
        assert_eq!(days, dedup, "never twice a day: {r:?}");
        // 01:30 does not exist on 2026-03-29 in Lisbon: croner runs it as
        // the clocks jump (02:00 local, 01:00 UTC).
        assert_eq!(r[..2], ["2026-03-29T01:00:00Z", "2026-03-30T00:30:00Z"]);
        // 01:30 happens twice on 2026-10-25 (the clocks go back at 02:00):
        // it fires once, at the first (00:30 UTC).
        let r = runs(&s, "2026-10-24T12:00:00Z", 2);
        assert_eq!(r, ["2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"]);
    }

    #[test]
    fn six_fields_carry_seconds_and_stagger_is_stable_per_job() {
        let s =
            Schedule::parse(&json!({"kind": "cron", "expr": "30 0 * * * *", "tz": "UTC"})).unwrap();
        assert_eq!(
            runs(&s, "2026-11-24T10:05:00Z", 1),
            ["2026-11-24T11:00:30Z"]
        );
        let s = Schedule::parse(
            &json!({"kind": "cron", "expr": "0 * * * *", "tz": "UTC", "staggerMs": 300_000}),
        )
        .unwrap();
        let off = stagger_offset("job-1", 300_000);
        assert!(off < 300_000);
        assert_eq!(off, stagger_offset("job-1", 300_000), "stable");
        let hour = ms("2026-11-24T10:00:00Z");
        let next = s.next_after(hour, "job-1", 0).unwrap();
        let want = if off == 0 {
            hour + 3_600_000
        } else {
            hour + off
        };
        assert_eq!(next, want, "the hour shifted by the job's offset");
        // Another job of the same schedule gets its own offset.
        assert_ne!(stagger_offset("job-2", 300_000), off);
        assert_eq!(stagger_offset("any", 0), 0);
    }

    #[test]
    fn bad_schedules_say_what_is_wrong() {
        for (v, want) in [
            (
                json!({"kind": "cron", "expr": "61 * * * *"}),
                "invalid cron expression",
            ),
            (json!({"kind": "cron", "expr": "* * *"}), "5 or 6 fields"),
            (
                json!({"kind": "cron", "expr": "0 9 * * *", "tz": "Mars/Olympus"}),
                "unknown timezone",
            ),
            (json!({"kind": "every", "everyMs": 0}), "at least 1"),
            (
                json!({"kind": "at", "at": "next tuesday"}),
                "invalid `at` time",
            ),
            (json!({"kind": "hourly"}), "unknown schedule kind"),
            (json!({}), "needs `kind`"),
        ] {
            let e = Schedule::parse(&v).unwrap_err();
            assert!(e.to_string().contains(want), "{v}: {e}");
        }
    }

    #[test]
    fn a_stop_catches_up_the_latest_missed_slot_once_or_not_at_all() {
        let created = ms("2026-11-01T00:00:00Z");
        let daily =
            Schedule::parse(&json!({"kind": "cron", "expr": "0 9 * * *", "tz": "UTC"})).unwrap();
        // Last ran on the 20th; stopped until the 24th at noon: one catch-up,
        // the 24th's 09:00, not four.
        let last = Some(ms("2026-11-20T09:00:00Z"));
        let now = ms("2026-11-24T12:00:00Z");
        assert_eq!(
            daily.catch_up(last, now, "j", created, true),
            Some(ms("2026-11-24T09:00:00Z"))
        );
        assert_eq!(
            daily.catch_up(last, now, "j", created, false),
            None,
            "runMissedJobs false"
        );
        // Nothing missed: the last slot is the latest.
        let last = Some(ms("2026-11-24T09:00:00Z"));
        assert_eq!(daily.catch_up(last, now, "j", created, true), None);
        // A one-shot due during the stop runs once after it.
        let at = Schedule::parse(&json!({"kind": "at", "at": "2026-11-24T10:00:00Z"})).unwrap();
        assert_eq!(
            at.catch_up(None, now, "j", created, true),
            Some(ms("2026-11-24T10:00:00Z"))
        );
        assert_eq!(
            at.catch_up(Some(ms("2026-11-24T10:00:00Z")), now, "j", created, true),
            None
        );
        // Every second for three weeks of downtime: computed, not walked.
        let every =
            Schedule::parse(&json!({"kind": "every", "everyMs": 1_000, "anchorMs": created}))
                .unwrap();
        assert_eq!(
            every.latest_at_or_before(now + 999, "j", created),
            Some(now)
        );
        assert_eq!(every.latest_at_or_before(created - 1, "j", created), None);
        // A staggered cron: the slot shifted by the job's offset.
        let stag = Schedule::parse(
            &json!({"kind": "cron", "expr": "0 * * * *", "tz": "UTC", "staggerMs": 600_000}),
        )
        .unwrap();
        let off = stagger_offset("j", 600_000);
        assert_eq!(
            stag.latest_at_or_before(now + off, "j", created),
            Some(now + off)
        );
        assert_eq!(
            stag.next_after(now + off, "j", created),
            Some(now + 3_600_000 + off)
        );
    }

    proptest::proptest! {
        #[test]
        fn a_catch_up_is_a_real_slot_between_the_last_and_now(
            every in 1_000u64..10_000_000,
            anchor in 0u64..1_000_000_000,
            gap in 0u64..100_000_000_000,
            down in 0u64..100_000_000_000,
        ) {
            let s = Schedule::Every { every_ms: every, anchor_ms: Some(anchor) };
            let last = s.latest_at_or_before(anchor + gap, "j", 0);
            let now = anchor + gap + down;
            match s.catch_up(last, now, "j", 0, true) {
                Some(t) => {
                    proptest::prop_assert!(t <= now && Some(t) > last);
                    proptest::prop_assert_eq!(s.next_after(t - 1, "j", 0), Some(t), "a slot");
                    proptest::prop_assert!(s.next_after(t, "j", 0).unwrap() > now, "the latest");
                }
                None => proptest::prop_assert_eq!(s.latest_at_or_before(now, "j", 0), last),
            }
        }
    }
}
