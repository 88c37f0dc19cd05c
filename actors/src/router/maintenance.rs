//! Session maintenance, OpenClaw's `session.maintenance`: stale sessions
//! (not updated for `pruneAfter`) are removed with their transcripts, and
//! the oldest beyond `maxEntries` (defaults in `default.json5`); `mode:
//! "warn"` only reports. Never removed: an agent's main session, a session
//! with a live actor, one whose inbox holds messages not yet answered.
//! Run by the router at start and hourly, with the usage rows' own policy
//! (400 days). The reply outbox is never pruned here (its delivery records
//! are what makes a restart answer once).

use super::SessionRow;
use crate::settings::{BadSetting, MaintenanceMode, Settings};

/// The router's policy.
#[derive(Debug, Clone, PartialEq)]
pub struct Maintenance {
    /// False: `mode: "warn"`, report only.
    pub enforce: bool,
    pub prune_after_ms: u64,
    pub max_entries: usize,
    /// Keys never removed (every agent's main session).
    pub protected: Vec<String>,
}

/// How long usage rows are kept (`usage.cost` reads back a year and more).
pub const USAGE_KEEP_MS: u64 = 400 * 86_400_000;

impl Maintenance {
    /// From `session.maintenance` (OpenClaw's keys); an invalid one is an
    /// error at start.
    pub fn from_settings(s: &Settings) -> Result<Maintenance, BadSetting> {
        let bad = |key: &str, problem: String| {
            BadSetting::new(format!("session.maintenance.{key}"), problem)
        };
        let m = &s.session.maintenance;
        let prune_after_ms = m.prune_after.millis().ok_or_else(|| {
            bad(
                "pruneAfter",
                format!("{:?} is not a duration (\"30d\", \"12h\")", m.prune_after),
            )
        })?;
        if m.max_entries == 0 {
            return Err(bad("maxEntries", "a positive number".into()));
        }
        let mut protected: Vec<String> = std::iter::once(s.default_agent_id().to_string())
            .chain(s.agents.list.iter().map(|a| a.id.clone()))
            .map(|id| format!("agent:{id}:{}", s.session.main_key))
            .collect();
        protected.dedup();
        Ok(Maintenance {
            enforce: m.mode == MaintenanceMode::Enforce,
            prune_after_ms,
            max_entries: m.max_entries as usize,
            protected,
        })
    }

    /// The keys to remove from `rows`; `busy` says a session has messages
    /// in its inbox. Stale ones first, then the oldest over the cap.
    pub fn select(
        &self,
        rows: &[SessionRow],
        busy: &dyn Fn(&str) -> bool,
        now: u64,
    ) -> Vec<String> {
        let cutoff = now.saturating_sub(self.prune_after_ms);
        let removable =
            |r: &&SessionRow| !r.live && !self.protected.contains(&r.key) && !busy(&r.key);
        let mut out: Vec<String> = rows
            .iter()
            .filter(removable)
            .filter(|r| r.entry.updated_at < cutoff)
            .map(|r| r.key.clone())
            .collect();
        let left = rows.len() - out.len();
        if left > self.max_entries {
            let mut rest: Vec<&SessionRow> = rows
                .iter()
                .filter(removable)
                .filter(|r| !out.contains(&r.key))
                .collect();
            rest.sort_by_key(|r| r.entry.updated_at);
            out.extend(
                rest.into_iter()
                    .take(left - self.max_entries)
                    .map(|r| r.key.clone()),
            );
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::SessionEntry;

    fn row(key: &str, updated_at: u64, live: bool) -> SessionRow {
        let mut entry = SessionEntry::new(updated_at);
        entry.updated_at = updated_at;
        SessionRow {
            key: key.into(),
            entry,
            live,
        }
    }

    fn policy(patch: serde_json::Value) -> Result<Maintenance, BadSetting> {
        let mut s = crate::settings::shipped();
        s.session.maintenance = crate::settings::shipped_with("session.maintenance", patch);
        Maintenance::from_settings(&s)
    }

    #[test]
    fn stale_and_over_the_cap_go_and_the_protected_stay() {
        let day = 86_400_000;
        let now = 100 * day;
        let m = policy(serde_json::json!({ "pruneAfter": "30d", "maxEntries": 3 })).unwrap();
        assert_eq!(m.protected, vec!["agent:main:main".to_string()]);
        let rows = vec![
            row("agent:main:main", 0, false),
            row("agent:main:old", 10 * day, false),
            row("agent:main:old-live", 10 * day, true),
            row("agent:main:old-busy", 10 * day, false),
            row("agent:main:a", 80 * day, false),
            row("agent:main:b", 90 * day, false),
            row("agent:main:c", 95 * day, false),
        ];
        let busy = |k: &str| k.ends_with("busy");
        // 7 rows, 1 stale: 6 left over a cap of 3: the 3 oldest removable.
        let out = m.select(&rows, &busy, now);
        assert_eq!(
            out,
            vec![
                "agent:main:old",
                "agent:main:a",
                "agent:main:b",
                "agent:main:c"
            ]
        );
        let roomy = policy(serde_json::json!({})).unwrap();
        // The shipped ones (30 days, 5000 entries): only the stale one.
        assert_eq!(roomy.select(&rows, &busy, now), vec!["agent:main:old"]);
        assert_eq!(
            (roomy.prune_after_ms, roomy.max_entries, roomy.enforce),
            (30 * day, 5000, true)
        );
    }

    #[test]
    fn bad_settings_are_refused_with_their_key() {
        // An unknown mode is refused when the config is read (typed).
        let mut m = serde_json::json!({ "pruneAfter": "30d", "maxEntries": 1 });
        m["mode"] = "delete".into();
        let e = serde_json::from_value::<crate::settings::MaintenanceSettings>(m).unwrap_err();
        assert!(e.to_string().contains("enforce"), "{e}");
        for (bad, key) in [
            (serde_json::json!({ "pruneAfter": "soon" }), "pruneAfter"),
            (serde_json::json!({ "maxEntries": 0 }), "maxEntries"),
        ] {
            let e = policy(bad).unwrap_err();
            assert!(e.to_string().contains(key), "{e}");
        }
        assert!(
            !policy(serde_json::json!({ "mode": "warn" }))
                .unwrap()
                .enforce
        );
    }
}
