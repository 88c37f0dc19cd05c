//! The session's model context and its token accounting, one type: every
//! delivered message oldest first (loaded from the transcript at start,
//! then kept in step with each message written), its estimated tokens,
//! the calibration against what the provider last counted, the prompt of
//! the last run and when its last model call ended (the pruning TTL), and
//! the model the transcript last named. Pure: the session writes the
//! store, this keeps the numbers that follow from it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::compaction::tokens::{calibration, estimate, estimate_text};
use crate::provider::{ChatMessage, Messages, Usage};
use crate::transcript::{self, Entry};

pub(super) struct History {
    messages: Messages,
    /// The estimate of `messages`, kept in step with them.
    tokens: u64,
    /// Provider-counted tokens per estimated token (from the last run).
    calibration: f64,
    /// When the last model call ended.
    last_call_at: Option<Instant>,
    /// Characters of the last run's system prompt.
    prompt_chars: usize,
    /// The model the transcript's last `model_change` names.
    model: Option<String>,
}

/// The context's size after a run, for the entry's `totalTokens`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Counted {
    pub tokens: u64,
    /// Counted by the provider (else estimated).
    pub fresh: bool,
}

impl History {
    pub fn new() -> History {
        History {
            messages: Vec::new(),
            tokens: 0,
            calibration: 1.0,
            last_call_at: None,
            prompt_chars: 0,
            model: None,
        }
    }

    /// The context a stored transcript rebuilds (honouring its last
    /// compaction) and the model it last named.
    pub fn load(entries: &[Value]) -> History {
        let mut h = History::new();
        h.replace(crate::compaction::stored::load_history(entries).0);
        h.model = entries
            .iter()
            .rev()
            .map(Entry::of)
            .find_map(|e| match e {
                Entry::ModelChange {
                    provider: Some(p),
                    model_id: Some(m),
                } => Some(Some(format!("{p}/{m}"))),
                Entry::ModelChange { .. } => Some(None),
                _ => None,
            })
            .flatten();
        h
    }

    pub fn messages(&self) -> &Messages {
        &self.messages
    }

    pub fn len(&self) -> usize {
        self.messages.len()
    }

    /// Characters of the context (text and tool call arguments).
    pub fn chars(&self) -> usize {
        self.messages
            .iter()
            .map(|m| {
                m.text.len()
                    + m.tool_calls
                        .iter()
                        .map(|c| c.arguments.to_string().len())
                        .sum::<usize>()
            })
            .sum()
    }

    /// The last `n` messages.
    pub fn recent(&self, n: usize) -> Messages {
        self.messages[self.messages.len().saturating_sub(n)..].to_vec()
    }

    /// Replaces the context (load, compaction) and its estimate.
    pub fn replace(&mut self, messages: Messages) {
        self.tokens = messages.iter().map(|m| estimate(m)).sum();
        self.messages = messages;
    }

    /// A new transcript: nothing in context, no model named.
    pub fn clear(&mut self) {
        self.replace(Vec::new());
        self.model = None;
    }

    /// The delivered messages among stored `entries` join the context.
    pub fn extend(&mut self, entries: &[Value]) {
        let delivered = entries.iter().filter(|e| !Entry::of(e).is_pending());
        for m in delivered.filter_map(transcript::to_chat) {
            self.push(m);
        }
    }

    pub fn push(&mut self, m: ChatMessage) {
        self.tokens += estimate(&m);
        self.messages.push(Arc::new(m));
    }

    /// The context with everything before `cut` replaced by `summary`
    /// (the history only grows by appending, so what follows the cut the
    /// plan saw is all still there).
    pub fn compacted(&self, summary: ChatMessage, cut: usize) -> Messages {
        let mut kept: Messages = vec![Arc::new(summary)];
        kept.extend(self.messages.iter().skip(cut).cloned());
        kept
    }

    /// The context's tokens with `prompt_chars` of prompt: estimated and
    /// calibrated.
    pub fn tokens(&self, prompt_chars: usize) -> u64 {
        let est = estimate_text(prompt_chars) + self.tokens;
        (est as f64 * self.calibration) as u64
    }

    /// A run starts with a prompt of `prompt_chars`.
    pub fn run_started(&mut self, prompt_chars: usize) {
        self.prompt_chars = prompt_chars;
    }

    /// After a run: the provider's count of its last call when reported
    /// (the estimate calibrated against it), else the calibrated estimate.
    pub fn account(&mut self, usage: &Usage, now: Instant) -> Counted {
        let raw = estimate_text(self.prompt_chars) + self.tokens;
        self.last_call_at = Some(now);
        if usage.context > 0 {
            self.calibration = calibration(usage.context, raw);
            Counted {
                tokens: usage.context,
                fresh: true,
            }
        } else {
            Counted {
                tokens: (raw as f64 * self.calibration) as u64,
                fresh: false,
            }
        }
    }

    /// At least `ttl` has passed since the last model call (or there was none).
    pub fn cold(&self, ttl: Duration, now: Instant) -> bool {
        self.last_call_at
            .is_none_or(|t| now.saturating_duration_since(t) >= ttl)
    }

    /// The model the transcript last named.
    pub fn model(&self) -> Option<&str> {
        self.model.as_deref()
    }

    pub fn name_model(&mut self, model: &str) {
        self.model = Some(model.to_string());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn text(n: usize) -> ChatMessage {
        ChatMessage::user(&"x".repeat(n))
    }

    #[test]
    fn the_estimate_follows_every_change_of_the_context() {
        let mut h = History::new();
        h.push(text(40));
        h.push(text(400));
        let sum = |h: &History| h.messages().iter().map(|m| estimate(m)).sum::<u64>();
        assert_eq!(h.tokens(0), sum(&h));
        assert_eq!(h.tokens(0), 12 + 120);
        let replaced = h.compacted(text(4), 1);
        h.replace(replaced);
        assert_eq!((h.len(), h.tokens(0)), (2, sum(&h)));
        assert_eq!(h.messages()[1].text.len(), 400);
        h.clear();
        assert_eq!((h.len(), h.tokens(0), h.model()), (0, 0, None));
    }

    #[test]
    fn a_provider_count_calibrates_the_next_estimate() {
        let mut h = History::new();
        h.push(text(4000)); // 1,200 estimated
        h.run_started(400); // 120 estimated
        let now = Instant::now();
        let unreported = h.account(&Usage::default(), now);
        assert_eq!(
            unreported,
            Counted {
                tokens: 1320,
                fresh: false
            }
        );
        let reported = Usage {
            context: 2640,
            ..Default::default()
        };
        let counted = h.account(&reported, now);
        assert_eq!(
            counted,
            Counted {
                tokens: 2640,
                fresh: true
            }
        );
        // The provider counts twice the estimate: so does the next estimate.
        assert_eq!(h.tokens(400), 2640);
        // Out of range: kept within 0.5..4.
        let wild = Usage {
            context: 1_000_000,
            ..Default::default()
        };
        h.account(&wild, now);
        assert_eq!(h.tokens(400), 1320 * 4);
    }

    #[test]
    fn the_cache_is_cold_after_the_ttl_from_the_last_call() {
        let mut h = History::new();
        let t0 = Instant::now();
        assert!(h.cold(Duration::from_secs(300), t0));
        h.account(&Usage::default(), t0);
        assert!(!h.cold(Duration::from_secs(300), t0 + Duration::from_secs(299)));
        assert!(h.cold(Duration::from_secs(300), t0 + Duration::from_secs(300)));
    }

    #[test]
    fn loading_honours_pending_entries_and_the_last_model_change() {
        let user = |text: &str, pending: bool| {
            let mut e = transcript::message_entry(None, json!({"role": "user", "content": text}));
            if pending {
                transcript::mark_pending(&mut e);
            }
            e
        };
        let entries = vec![
            transcript::build::model_change("openai", "gpt-4o"),
            user("one", false),
            user("queued", true),
            transcript::build::model_change("offline", "echo"),
        ];
        let h = History::load(&entries);
        assert_eq!(h.len(), 1);
        assert_eq!(h.model(), Some("offline/echo"));
        let mut h = History::new();
        h.extend(&entries);
        assert_eq!(h.len(), 1, "a pending message stays out of the context");
        assert_eq!(h.chars(), 3);
    }
}
