//! Long sessions (not an actor; the session drives it): whether a turn
//! needs room, where a compaction cuts and the job that makes it
//! (`job.rs`), the transcript's compaction entries and the context rebuilt
//! from them (`stored.rs`), token accounting (`tokens.rs`), the cut points
//! (`split.rs`), the summary and its quality check (`summary.rs`), the
//! deterministic summary used whenever the model's cannot be had
//! (`fallback.rs`), the silent memory flush (`flush.rs`) and in-memory
//! context pruning (`prune.rs`). This file holds
//! the settings as the session and runs use them, from the typed
//! `agents.defaults.compaction` and `agents.defaults.contextPruning`
//! (their defaults are in `config/default.json5` only).

pub mod fallback;
pub mod flush;
pub mod job;
pub mod plan;
pub mod prune;
pub mod split;
pub mod stored;
pub mod summary;
pub mod tokens;

use std::time::Duration;

use crate::settings::BadSetting;

pub use crate::settings::CompactionMode as Mode;
pub use crate::settings::PruningMode as PruneMode;

/// `agents.defaults.compaction.memoryFlush`.
#[derive(Debug, Clone, PartialEq)]
pub struct FlushSettings {
    pub enabled: bool,
    pub soft_threshold_tokens: u64,
    pub prompt: String,
}

/// `agents.defaults.compaction`, as the session uses it.
#[derive(Debug, Clone, PartialEq)]
pub struct CompactionSettings {
    pub mode: Mode,
    pub reserve_tokens: u64,
    pub reserve_tokens_floor: u64,
    pub keep_recent_tokens: u64,
    /// How long the summary call may take before the deterministic summary
    /// is used.
    pub timeout: Duration,
    pub memory_flush: FlushSettings,
}

impl CompactionSettings {
    pub fn from_settings(c: &crate::settings::CompactionConfig) -> CompactionSettings {
        CompactionSettings {
            mode: c.mode,
            reserve_tokens: c.reserve_tokens,
            reserve_tokens_floor: c.reserve_tokens_floor,
            keep_recent_tokens: c.keep_recent_tokens.max(1),
            timeout: Duration::from_secs(c.timeout_seconds.max(1)),
            memory_flush: FlushSettings {
                enabled: c.memory_flush.enabled,
                soft_threshold_tokens: c.memory_flush.soft_threshold_tokens,
                prompt: c.memory_flush.prompt.clone(),
            },
        }
    }
}

/// `agents.defaults.contextPruning`, as runs use it.
#[derive(Debug, Clone, PartialEq)]
pub struct PruneSettings {
    pub mode: PruneMode,
    pub ttl: Duration,
    pub keep_last_assistants: usize,
    pub soft_trim_ratio: f64,
    pub hard_clear_ratio: f64,
    pub min_prunable_tool_chars: usize,
    pub soft_trim_max_chars: usize,
    pub soft_trim_head: usize,
    pub soft_trim_tail: usize,
    pub hard_clear: bool,
    pub placeholder: String,
}

impl PruneSettings {
    /// The section read; `None` when a value is out of range (the config
    /// check refuses it with its key first).
    pub fn from_settings(
        c: &crate::settings::ContextPruningConfig,
    ) -> Result<PruneSettings, BadSetting> {
        let key = "agents.defaults.contextPruning";
        let ttl = crate::settings::parse_duration(&c.ttl).ok_or_else(|| {
            BadSetting::new(
                format!("{key}.ttl"),
                format!("unreadable duration {:?} (e.g. 5m)", c.ttl),
            )
        })?;
        for (name, r) in [
            ("softTrimRatio", c.soft_trim_ratio),
            ("hardClearRatio", c.hard_clear_ratio),
        ] {
            if !(0.0..=1.0).contains(&r) {
                return Err(BadSetting::new(
                    format!("{key}.{name}"),
                    format!("must be between 0 and 1, got {r}"),
                ));
            }
        }
        Ok(PruneSettings {
            mode: c.mode,
            ttl,
            keep_last_assistants: c.keep_last_assistants as usize,
            soft_trim_ratio: c.soft_trim_ratio,
            hard_clear_ratio: c.hard_clear_ratio,
            min_prunable_tool_chars: c.min_prunable_tool_chars as usize,
            soft_trim_max_chars: c.soft_trim.max_chars as usize,
            soft_trim_head: c.soft_trim.head_chars as usize,
            soft_trim_tail: c.soft_trim.tail_chars as usize,
            hard_clear: c.hard_clear.enabled,
            placeholder: c.hard_clear.placeholder.clone(),
        })
    }
}

/// The shipped settings (`config/default.json5`), for tests.
#[cfg(test)]
pub fn shipped() -> (CompactionSettings, PruneSettings) {
    let s = crate::settings::shipped().agents.defaults;
    (
        CompactionSettings::from_settings(&s.compaction),
        PruneSettings::from_settings(&s.context_pruning).unwrap(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::{CompactionConfig, ContextPruningConfig};
    use serde_json::{json, Value};

    /// The shipped section with `patch`'s keys over it.
    fn section<T: serde::de::DeserializeOwned>(
        name: &str,
        patch: Value,
    ) -> Result<T, serde_json::Error> {
        let mut v = serde_json::to_value(crate::settings::shipped().agents.defaults).unwrap();
        let mut s = v[name].take();
        for (k, x) in patch.as_object().unwrap() {
            s[k] = x.clone();
        }
        serde_json::from_value(s)
    }

    #[test]
    fn settings_read_openclaw_keys_and_refuse_unknown_modes() {
        let c: CompactionConfig = section(
            "compaction",
            json!({"mode": "aggressive", "keepRecentTokens": 900,
                "memoryFlush": {"softThresholdTokens": 100, "enabled": false, "prompt": "p"}}),
        )
        .unwrap();
        let c = CompactionSettings::from_settings(&c);
        assert_eq!(c.mode, Mode::Aggressive);
        assert_eq!(
            (c.keep_recent_tokens, c.memory_flush.soft_threshold_tokens),
            (900, 100)
        );
        assert!(!c.memory_flush.enabled);
        let e = section::<CompactionConfig>("compaction", json!({"mode": "turbo"})).unwrap_err();
        assert!(e.to_string().contains("unknown variant `turbo`"), "{e}");
        for (alias, mode) in [("default", Mode::Safeguard), ("off", Mode::None)] {
            let c: CompactionConfig = section("compaction", json!({ "mode": alias })).unwrap();
            assert_eq!(c.mode, mode);
        }
        let p: ContextPruningConfig =
            section("contextPruning", json!({"mode": "cache-ttl", "ttl": "1h"})).unwrap();
        let p = PruneSettings::from_settings(&p).unwrap();
        assert_eq!(
            (p.mode, p.ttl),
            (PruneMode::CacheTtl, Duration::from_secs(3600))
        );
        let bad: ContextPruningConfig =
            section("contextPruning", json!({"softTrimRatio": 2})).unwrap();
        let e = PruneSettings::from_settings(&bad).unwrap_err();
        assert!(
            e.to_string().contains("contextPruning.softTrimRatio"),
            "{e}"
        );
        let p: ContextPruningConfig = section("contextPruning", json!({"mode": "none"})).unwrap();
        assert_eq!(p.mode, PruneMode::None);
        let (c, p) = shipped();
        assert_eq!((c.mode, p.mode), (Mode::Safeguard, PruneMode::CacheTtl));
    }
}
