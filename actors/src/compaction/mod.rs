//! Long sessions (not an actor; the session drives it): token accounting
//! (`tokens.rs`), where a compaction cuts (`split.rs`), the summary and its
//! quality check (`summary.rs`), the deterministic summary used whenever the
//! model's cannot be had (`fallback.rs`), the silent memory flush
//! (`flush.rs`) and in-memory context pruning (`prune.rs`). This file holds
//! the settings: `agents.defaults.compaction` and
//! `agents.defaults.contextPruning`, read leniently (a mistyped value is
//! the default).

pub mod fallback;
pub mod flush;
pub mod prune;
pub mod split;
pub mod summary;
pub mod tokens;

use std::time::Duration;

use serde_json::Value;

/// `agents.defaults.compaction.mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// Compacts when the context nears the window (default).
    #[default]
    Safeguard,
    /// Compacts at half the window at the latest, keeps half as much.
    Aggressive,
    /// Never on its own (`/compact`, `sessions.compact` and overflow
    /// recovery still compact).
    None,
}

/// `agents.defaults.compaction.memoryFlush`.
#[derive(Debug, Clone, PartialEq)]
pub struct FlushSettings {
    pub enabled: bool,
    pub soft_threshold_tokens: u64,
    pub prompt: String,
}

pub const DEFAULT_FLUSH_PROMPT: &str = "Session nearing compaction. Store durable memories now.";

/// `agents.defaults.compaction`.
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

impl Default for CompactionSettings {
    fn default() -> Self {
        CompactionSettings {
            mode: Mode::Safeguard,
            reserve_tokens: 16_384,
            reserve_tokens_floor: 20_000,
            keep_recent_tokens: 20_000,
            timeout: Duration::from_secs(120),
            memory_flush: FlushSettings {
                enabled: true,
                soft_threshold_tokens: 4_000,
                prompt: DEFAULT_FLUSH_PROMPT.into(),
            },
        }
    }
}

fn u64_at(v: &Value, k: &str) -> Option<u64> {
    v.get(k).and_then(Value::as_u64)
}

impl CompactionSettings {
    pub fn from_config(v: &Value) -> CompactionSettings {
        let d = CompactionSettings::default();
        let flush = v.get("memoryFlush").cloned().unwrap_or(Value::Null);
        CompactionSettings {
            mode: match v.get("mode").and_then(Value::as_str) {
                Some("aggressive") => Mode::Aggressive,
                Some("none") | Some("off") => Mode::None,
                _ => Mode::Safeguard,
            },
            reserve_tokens: u64_at(v, "reserveTokens").unwrap_or(d.reserve_tokens),
            reserve_tokens_floor: u64_at(v, "reserveTokensFloor").unwrap_or(d.reserve_tokens_floor),
            keep_recent_tokens: u64_at(v, "keepRecentTokens")
                .unwrap_or(d.keep_recent_tokens)
                .max(1),
            timeout: u64_at(v, "timeoutSeconds")
                .map_or(d.timeout, |s| Duration::from_secs(s.max(1))),
            memory_flush: FlushSettings {
                enabled: flush
                    .get("enabled")
                    .and_then(Value::as_bool)
                    .unwrap_or(true),
                soft_threshold_tokens: u64_at(&flush, "softThresholdTokens")
                    .unwrap_or(d.memory_flush.soft_threshold_tokens),
                prompt: flush
                    .get("prompt")
                    .and_then(Value::as_str)
                    .unwrap_or(DEFAULT_FLUSH_PROMPT)
                    .to_string(),
            },
        }
    }
}

/// `agents.defaults.contextPruning.mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PruneMode {
    /// Prune when the provider's prompt cache has gone cold (the TTL since
    /// the last model call passed).
    CacheTtl,
    /// Prune before every model call.
    Sliding,
    None,
}

/// `agents.defaults.contextPruning` (OpenClaw's defaults).
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

pub const CLEARED: &str = "[Old tool result content cleared]";

impl Default for PruneSettings {
    fn default() -> Self {
        PruneSettings {
            mode: PruneMode::CacheTtl,
            ttl: Duration::from_secs(300),
            keep_last_assistants: 3,
            soft_trim_ratio: 0.3,
            hard_clear_ratio: 0.5,
            min_prunable_tool_chars: 50_000,
            soft_trim_max_chars: 4_000,
            soft_trim_head: 1_500,
            soft_trim_tail: 1_500,
            hard_clear: true,
            placeholder: CLEARED.into(),
        }
    }
}

impl PruneSettings {
    pub fn from_config(v: &Value) -> PruneSettings {
        let d = PruneSettings::default();
        let f = |k: &str, def: f64| {
            v.get(k)
                .and_then(Value::as_f64)
                .filter(|r| (0.0..=1.0).contains(r))
                .unwrap_or(def)
        };
        let soft = v.get("softTrim").cloned().unwrap_or(Value::Null);
        let hard = v.get("hardClear").cloned().unwrap_or(Value::Null);
        let us = |v: &Value, k: &str, def: usize| u64_at(v, k).map_or(def, |n| n as usize);
        PruneSettings {
            mode: match v.get("mode").and_then(Value::as_str) {
                Some("sliding") => PruneMode::Sliding,
                Some("none") | Some("off") => PruneMode::None,
                _ => PruneMode::CacheTtl,
            },
            ttl: v
                .get("ttl")
                .and_then(Value::as_str)
                .and_then(crate::settings::parse_duration)
                .unwrap_or(d.ttl),
            keep_last_assistants: us(v, "keepLastAssistants", d.keep_last_assistants),
            soft_trim_ratio: f("softTrimRatio", d.soft_trim_ratio),
            hard_clear_ratio: f("hardClearRatio", d.hard_clear_ratio),
            min_prunable_tool_chars: us(v, "minPrunableToolChars", d.min_prunable_tool_chars),
            soft_trim_max_chars: us(&soft, "maxChars", d.soft_trim_max_chars),
            soft_trim_head: us(&soft, "headChars", d.soft_trim_head),
            soft_trim_tail: us(&soft, "tailChars", d.soft_trim_tail),
            hard_clear: hard.get("enabled").and_then(Value::as_bool).unwrap_or(true),
            placeholder: hard
                .get("placeholder")
                .and_then(Value::as_str)
                .unwrap_or(CLEARED)
                .to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn settings_read_openclaw_keys_and_default_the_rest() {
        let c =
            CompactionSettings::from_config(&json!({"mode": "aggressive", "keepRecentTokens": 900,
            "memoryFlush": {"softThresholdTokens": 100, "enabled": false}}));
        assert_eq!(c.mode, Mode::Aggressive);
        assert_eq!(
            (c.keep_recent_tokens, c.memory_flush.soft_threshold_tokens),
            (900, 100)
        );
        assert!(!c.memory_flush.enabled);
        assert_eq!(
            CompactionSettings::from_config(&json!({"mode": 7})),
            CompactionSettings::default()
        );
        let p = PruneSettings::from_config(
            &json!({"mode": "cache-ttl", "ttl": "1h", "softTrimRatio": 2}),
        );
        assert_eq!(
            (p.mode, p.ttl, p.soft_trim_ratio),
            (PruneMode::CacheTtl, Duration::from_secs(3600), 0.3)
        );
        assert_eq!(
            PruneSettings::from_config(&json!({"mode": "none"})).mode,
            PruneMode::None
        );
    }
}
