//! Token accounting (pure): an estimate per message as OpenClaw makes it
//! (characters / 4, times a 1.2 safety margin; an image counts 1,200), a
//! calibration from what the provider reported for the last call, each
//! model's context window, and the reserve math that decides when to
//! flush memories and when to compact.

use std::collections::HashMap;

use crate::provider::ChatMessage;

/// Characters per token of the estimate.
pub const CHARS_PER_TOKEN: f64 = 4.0;
/// The estimate's safety margin.
pub const SAFETY_MARGIN: f64 = 1.2;
/// Tokens an image is counted as.
pub const IMAGE_TOKENS: u64 = 1_200;
/// The window when neither config nor the table knows the model.
pub const DEFAULT_WINDOW: u64 = 200_000;

/// Characters of a message as sent (text, tool call arguments, ids).
pub fn message_chars(m: &ChatMessage) -> usize {
    m.text.len()
        + m.tool_calls
            .iter()
            .map(|c| c.name.len() + c.arguments.to_string().len() + c.id.len())
            .sum::<usize>()
        + m.tool_call_id.as_ref().map_or(0, String::len)
}

/// The estimated tokens of a message.
pub fn estimate(m: &ChatMessage) -> u64 {
    let text = (message_chars(m) as f64 / CHARS_PER_TOKEN * SAFETY_MARGIN).ceil() as u64;
    text + IMAGE_TOKENS * m.images.len() as u64
}

/// The estimated tokens of a prompt text.
pub fn estimate_text(chars: usize) -> u64 {
    (chars as f64 / CHARS_PER_TOKEN * SAFETY_MARGIN).ceil() as u64
}

/// How the estimate compares with what the provider counts: the ratio of
/// the reported prompt tokens to the estimate of the same prompt, kept
/// between 0.5 and 4 (a provider that counts nothing changes nothing).
pub fn calibration(reported: u64, estimated: u64) -> f64 {
    if reported == 0 || estimated == 0 {
        return 1.0;
    }
    (reported as f64 / estimated as f64).clamp(0.5, 4.0)
}

/// Context windows of models without a configured one (OpenClaw's catalog
/// values for the common families; the longest matching prefix wins).
const KNOWN: &[(&str, u64)] = &[
    ("claude-", 200_000),
    ("gpt-4o", 128_000),
    ("gpt-4.1", 1_047_576),
    ("gpt-4-turbo", 128_000),
    ("gpt-5", 400_000),
    ("o1", 200_000),
    ("o3", 200_000),
    ("o4-mini", 200_000),
    ("gemini-", 1_048_576),
    ("llama", 131_072),
    ("mistral", 128_000),
    ("deepseek", 128_000),
    ("qwen", 131_072),
];

/// Each model's context window: `models.providers.<p>.models[].contextWindow`,
/// then the known families, then `agents.defaults.contextTokens`, then 200,000.
#[derive(Debug, Clone, Default)]
pub struct Windows {
    configured: HashMap<String, u64>,
    fallback: Option<u64>,
}

impl Windows {
    /// `configured`: `provider/model` -> tokens; `fallback`: `contextTokens`.
    pub fn new(configured: HashMap<String, u64>, fallback: Option<u64>) -> Windows {
        Windows {
            configured,
            fallback,
        }
    }

    /// The window of `provider/model` (or a bare model id).
    pub fn of(&self, model_ref: &str) -> u64 {
        if let Some(w) = self.configured.get(model_ref) {
            return (*w).max(1);
        }
        let id = model_ref.rsplit('/').next().unwrap_or(model_ref);
        let known = KNOWN
            .iter()
            .filter(|(prefix, _)| id.starts_with(prefix))
            .max_by_key(|(prefix, _)| prefix.len())
            .map(|(_, w)| *w);
        known.or(self.fallback).unwrap_or(DEFAULT_WINDOW).max(1)
    }
}

/// The thresholds of one window under the compaction settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    pub window: u64,
    /// Tokens kept free for the reply and the next turn.
    pub reserve: u64,
    /// Compaction starts above this.
    pub compact_at: u64,
    /// The silent memory flush starts above this.
    pub flush_at: u64,
    /// Recent tokens a compaction keeps as they are.
    pub keep_recent: u64,
}

impl Budget {
    /// OpenClaw's reserve math: the reserve is at least the floor (20,000)
    /// and at most what leaves the prompt min(8,000, half the window).
    /// Aggressive mode compacts at half the window at the latest and keeps
    /// half as much. `keep_recent` never exceeds half of what may be used,
    /// so a compaction always frees something.
    pub fn new(window: u64, s: &super::CompactionSettings) -> Budget {
        let window = window.max(1);
        let prompt_min = 8_000u64.min(window / 2);
        let reserve = s
            .reserve_tokens
            .max(s.reserve_tokens_floor)
            .min(window.saturating_sub(prompt_min));
        let mut compact_at = window - reserve;
        let mut keep = s.keep_recent_tokens;
        if s.mode == super::Mode::Aggressive {
            compact_at = compact_at.min(window / 2);
            keep /= 2;
        }
        let keep_recent = keep.min(compact_at / 2).max(1);
        Budget {
            window,
            reserve,
            compact_at,
            // Never below half the compaction point (a small window would
            // otherwise flush from the first turn).
            flush_at: compact_at
                .saturating_sub(s.memory_flush.soft_threshold_tokens)
                .max(compact_at / 2),
            keep_recent,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compaction::{CompactionSettings, Mode};

    #[test]
    fn estimates_count_characters_with_a_margin_and_images_flat() {
        let mut m = ChatMessage::user(&"x".repeat(400));
        assert_eq!(estimate(&m), 120);
        m.images
            .push(crate::provider::Image::inline("image/png", "AAAA".into()));
        assert_eq!(estimate(&m), 1_320);
        assert_eq!(calibration(150, 100), 1.5);
        assert_eq!(calibration(0, 100), 1.0);
        assert_eq!(calibration(10_000, 100), 4.0);
    }

    #[test]
    fn windows_come_from_config_then_the_catalog_then_the_default() {
        let configured = HashMap::from([("openai/gpt-4o".to_string(), 64_000)]);
        let w = Windows::new(configured, None);
        assert_eq!(w.of("openai/gpt-4o"), 64_000);
        assert_eq!(w.of("openrouter/gpt-4o-mini"), 128_000);
        assert_eq!(w.of("anthropic/claude-sonnet-4-5"), 200_000);
        assert_eq!(w.of("offline/echo"), DEFAULT_WINDOW);
        assert_eq!(Windows::new(HashMap::new(), Some(32_000)).of("x/y"), 32_000);
    }

    #[test]
    fn the_reserve_has_a_floor_and_leaves_the_prompt_room() {
        let s = crate::compaction::shipped().0;
        let b = Budget::new(200_000, &s);
        assert_eq!(
            (b.reserve, b.compact_at, b.flush_at),
            (20_000, 180_000, 176_000)
        );
        assert_eq!(b.keep_recent, 20_000);
        // A small window: the prompt keeps min(8,000, half) at least.
        let b = Budget::new(10_000, &s);
        assert_eq!(
            (b.reserve, b.compact_at, b.keep_recent),
            (5_000, 5_000, 2_500)
        );
        assert_eq!(
            b.flush_at, 2_500,
            "at half the compaction point at the earliest"
        );
        let b = Budget::new(30_000, &s);
        assert_eq!((b.reserve, b.compact_at), (20_000, 10_000));
        let aggressive = CompactionSettings {
            mode: Mode::Aggressive,
            ..crate::compaction::shipped().0
        };
        let b = Budget::new(200_000, &aggressive);
        assert_eq!((b.compact_at, b.keep_recent), (100_000, 10_000));
    }
}
