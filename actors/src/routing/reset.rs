//! Session reset policies (seed 002; OpenClaw's `session.reset`,
//! `resetByType`, `resetByChannel`): when a channel conversation's session
//! is stale and its next message starts a new one. `mode`: `none` (the
//! default), `daily` (stale once the gateway-local clock passes `atHour`,
//! `resetDefaults.atHour` when unset, after the session started) or `idle` (stale after
//! `idleMinutes` without a message; `idleMinutes` also applies beside
//! `daily`). `resetByType.<direct|group|thread>` refines `reset`;
//! `resetByChannel.<channel>` replaces both. Time and the gateway's UTC
//! offset are passed in.

pub use crate::settings::ResetMode;
use crate::settings::{ResetSettings, SessionSettings};

const HOUR_MS: i64 = 3_600_000;
const DAY_MS: i64 = 24 * HOUR_MS;

/// The conversation kind a policy is chosen for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResetType {
    Direct,
    Group,
    Thread,
}

/// `resetByType`'s section for `kind`.
fn of_type(by: &crate::settings::ResetByType, kind: ResetType) -> Option<&ResetSettings> {
    match kind {
        ResetType::Direct => by.direct.as_ref(),
        ResetType::Group => by.group.as_ref(),
        ResetType::Thread => by.thread.as_ref(),
    }
}

/// The policy in force for one conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResetPolicy {
    pub mode: ResetMode,
    pub at_hour: u32,
    pub idle_minutes: Option<u64>,
}

/// Why a session is stale.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stale {
    Daily,
    Idle,
}

/// The policy for a conversation of `kind` on `channel`.
pub fn policy(session: &SessionSettings, kind: ResetType, channel: &str) -> ResetPolicy {
    let (base, typed) = match session.reset_by_channel.get(channel) {
        Some(o) => (Some(o), None),
        None => (
            session.reset.as_ref(),
            of_type(&session.reset_by_type, kind),
        ),
    };
    let inherited = typed
        .and(base.and_then(|b| b.mode))
        .filter(|m| *m != ResetMode::None);
    let mode = typed
        .and_then(|t| t.mode)
        .or(inherited)
        .or(typed.map(|_| ResetMode::Daily))
        .or(base.and_then(|b| b.mode))
        .or(base.map(|_| ResetMode::Daily))
        .unwrap_or(ResetMode::None);
    let pick = |f: fn(&ResetSettings) -> Option<i64>| typed.and_then(f).or(base.and_then(f));
    let at_hour = pick(|c| c.at_hour)
        .unwrap_or(session.reset_defaults.at_hour)
        .clamp(0, 23) as u32;
    let idle_minutes = pick(|c| c.idle_minutes)
        .map(|m| m.max(0) as u64)
        .filter(|m| *m > 0);
    ResetPolicy {
        mode,
        at_hour,
        idle_minutes,
    }
}

/// The last daily reset time at or before `now` (ms), for a gateway whose
/// local time is UTC + `utc_offset_secs`.
pub fn daily_reset_at(now_ms: u64, at_hour: u32, utc_offset_secs: i32) -> u64 {
    let offset = i64::from(utc_offset_secs) * 1000;
    let local = now_ms as i64 + offset;
    let today = local.div_euclid(DAY_MS) * DAY_MS + i64::from(at_hour) * HOUR_MS - offset;
    let at = if (now_ms as i64) < today {
        today - DAY_MS
    } else {
        today
    };
    at.max(0) as u64
}

/// Whether a session that started at `started_ms` and last heard from its
/// peer at `last_ms` is stale at `now` (None: fresh).
pub fn stale(
    p: &ResetPolicy,
    started_ms: u64,
    last_ms: u64,
    now_ms: u64,
    utc_offset_secs: i32,
) -> Option<Stale> {
    if p.mode == ResetMode::None {
        return None;
    }
    let daily = (p.mode == ResetMode::Daily)
        .then(|| daily_reset_at(now_ms, p.at_hour, utc_offset_secs))
        .filter(|at| started_ms < *at);
    let idle = p
        .idle_minutes
        .map(|m| last_ms.max(started_ms).saturating_add(m * 60_000))
        .filter(|expires| now_ms > *expires);
    match (daily, idle) {
        (Some(d), Some(i)) if d <= i => Some(Stale::Daily),
        (_, Some(_)) => Some(Stale::Idle),
        (Some(_), None) => Some(Stale::Daily),
        (None, None) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn session(v: serde_json::Value) -> SessionSettings {
        crate::settings::shipped_with("session", v)
    }

    const H: u64 = 3_600_000;
    /// 2026-11-24 00:00 UTC.
    const DAY0: u64 = 1_795_478_400_000;

    #[test]
    fn no_reset_unless_configured_and_sections_refine_each_other() {
        let none = policy(&SessionSettings::default(), ResetType::Direct, "telegram");
        assert_eq!(none.mode, ResetMode::None);
        assert_eq!(stale(&none, 0, 0, DAY0 * 2, 0), None);
        let s = session(json!({
            "reset": { "mode": "daily", "atHour": 6 },
            "resetByType": { "group": { "mode": "idle", "idleMinutes": 30 }, "thread": { "idleMinutes": 90 } },
            "resetByChannel": { "discord": { "mode": "none" } },
        }));
        let direct = policy(&s, ResetType::Direct, "telegram");
        assert_eq!(
            (direct.mode, direct.at_hour, direct.idle_minutes),
            (ResetMode::Daily, 6, None)
        );
        let group = policy(&s, ResetType::Group, "telegram");
        assert_eq!(
            (group.mode, group.idle_minutes),
            (ResetMode::Idle, Some(30))
        );
        let thread = policy(&s, ResetType::Thread, "telegram");
        assert_eq!(
            (thread.mode, thread.at_hour, thread.idle_minutes),
            (ResetMode::Daily, 6, Some(90)),
            "the type inherits the base mode and hour"
        );
        assert_eq!(
            policy(&s, ResetType::Group, "discord").mode,
            ResetMode::None
        );
        // A section that does not say takes resetDefaults' hour (shipped: 4).
        let bare = session(json!({ "resetByChannel": { "slack": {} } }));
        let slack = policy(&bare, ResetType::Direct, "slack");
        assert_eq!((slack.mode, slack.at_hour), (ResetMode::Daily, 4));
        let later = session(json!({ "reset": {}, "resetDefaults": { "atHour": 9 } }));
        assert_eq!(policy(&later, ResetType::Direct, "telegram").at_hour, 9);
        // An unknown mode is refused when the config is read (typed).
        let e = serde_json::from_value::<ResetSettings>(json!({ "mode": "weekly" })).unwrap_err();
        assert!(e.to_string().contains("daily"), "{e}");
    }

    #[test]
    fn daily_resets_at_the_gateway_local_hour() {
        // 03:00 UTC: the last 04:00 UTC was yesterday's.
        assert_eq!(daily_reset_at(DAY0 + 3 * H, 4, 0), DAY0 - 20 * H);
        assert_eq!(daily_reset_at(DAY0 + 4 * H, 4, 0), DAY0 + 4 * H);
        // At UTC+2, 04:00 local is 02:00 UTC.
        assert_eq!(daily_reset_at(DAY0 + 3 * H, 4, 7_200), DAY0 + 2 * H);
        // At UTC-5, 04:00 local is 09:00 UTC.
        assert_eq!(daily_reset_at(DAY0 + 8 * H, 4, -18_000), DAY0 - 15 * H);
        let p = ResetPolicy {
            mode: ResetMode::Daily,
            at_hour: 4,
            idle_minutes: None,
        };
        assert_eq!(
            stale(&p, DAY0 + H, DAY0 + H, DAY0 + 3 * H, 0),
            None,
            "same day before 4"
        );
        assert_eq!(
            stale(&p, DAY0 + H, DAY0 + H, DAY0 + 5 * H, 0),
            Some(Stale::Daily)
        );
        assert_eq!(
            stale(&p, DAY0 + 5 * H, DAY0 + 5 * H, DAY0 + 23 * H, 0),
            None
        );
    }

    #[test]
    fn idle_counts_from_the_last_message_and_the_earlier_reason_wins() {
        let p = ResetPolicy {
            mode: ResetMode::Idle,
            at_hour: 4,
            idle_minutes: Some(30),
        };
        assert_eq!(
            stale(&p, DAY0, DAY0 + 20 * 60_000, DAY0 + 45 * 60_000, 0),
            None
        );
        assert_eq!(
            stale(&p, DAY0, DAY0, DAY0 + 31 * 60_000, 0),
            Some(Stale::Idle)
        );
        let both = ResetPolicy {
            mode: ResetMode::Daily,
            at_hour: 4,
            idle_minutes: Some(60),
        };
        // Idle since 01:00, daily at 04:00: idle expired first (02:00).
        assert_eq!(
            stale(&both, DAY0 + H, DAY0 + H, DAY0 + 5 * H, 0),
            Some(Stale::Idle)
        );
        // Active until 03:30, daily at 04:00 comes before the idle expiry (04:30).
        assert_eq!(
            stale(&both, DAY0 + H, DAY0 + 3 * H + H / 2, DAY0 + 5 * H, 0),
            Some(Stale::Daily)
        );
    }
}
