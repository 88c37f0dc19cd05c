//! Where a compaction cuts the context (pure): about `keep_recent` tokens
//! at the end stay as they are, the rest is summarised. The cut is never
//! at a tool result, so a tool call and its results are always on the same
//! side (the kept part starts at a user or an assistant message).

use std::sync::Arc;

use super::tokens::estimate;
use crate::provider::{ChatMessage, MessageRole};

/// The index of the first kept message, or None when nothing before it
/// could be summarised.
pub fn cut_point(history: &[Arc<ChatMessage>], keep_recent: u64) -> Option<usize> {
    if history.len() < 2 {
        return None;
    }
    let mut acc = 0u64;
    let mut candidate = 0;
    for i in (0..history.len()).rev() {
        acc += estimate(&history[i]);
        if acc >= keep_recent {
            candidate = i;
            break;
        }
    }
    let valid = |i: usize| history[i].role != MessageRole::Tool;
    // Forward first (keeps less, frees more), then back.
    let cut = (candidate.max(1)..history.len())
        .find(|&i| valid(i))
        .or_else(|| (1..candidate.max(1)).rev().find(|&i| valid(i)))?;
    (cut >= 1).then_some(cut)
}

/// The cut that keeps at most `n` messages (moved later past tool
/// results), or None when nothing would be dropped.
pub fn cut_last(history: &[Arc<ChatMessage>], n: usize) -> Option<usize> {
    if n >= history.len() {
        return None;
    }
    let start = history.len().saturating_sub(n.max(1)).max(1);
    (start..history.len()).find(|&i| history[i].role != MessageRole::Tool)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::ToolCall;
    use proptest::prelude::*;

    fn user(n: usize) -> Arc<ChatMessage> {
        Arc::new(ChatMessage::user(&"u".repeat(n)))
    }

    fn assistant(n: usize, calls: &[&str]) -> Arc<ChatMessage> {
        let mut m = ChatMessage::assistant(&"a".repeat(n));
        m.tool_calls = calls
            .iter()
            .map(|id| ToolCall {
                id: id.to_string(),
                name: "exec".into(),
                arguments: serde_json::json!({}),
            })
            .collect();
        Arc::new(m)
    }

    fn result(id: &str, n: usize) -> Arc<ChatMessage> {
        Arc::new(ChatMessage::tool_result(id, &"r".repeat(n), false))
    }

    #[test]
    fn the_cut_keeps_recent_tokens_and_never_splits_a_call_from_its_results() {
        let h = vec![
            user(400),
            assistant(400, &["c1"]),
            result("c1", 4000),
            result("c1", 4000),
            assistant(400, &[]),
            user(400),
        ];
        // 120 tokens per 400 characters: the last two messages are 240.
        assert_eq!(cut_point(&h, 200), Some(4));
        // Landing on a result moves forward to the next message that is not one.
        assert_eq!(cut_point(&h, 1_500), Some(4));
        assert_eq!(
            cut_point(&h, 2_700),
            Some(1),
            "at the call, with its results"
        );
        assert_eq!(cut_point(&h, 1_000_000), Some(1), "keeps the first back");
        assert_eq!(cut_point(&h[..1], 1), None);
        assert_eq!(cut_last(&h, 2), Some(4));
        assert_eq!(cut_last(&h, 4), Some(4), "not at a result");
        assert_eq!(cut_last(&h, 5), Some(1));
        assert_eq!(cut_last(&h, 6), None, "all fit");
        assert_eq!(cut_last(&h[..1], 5), None);
    }

    proptest! {
        #[test]
        fn no_cut_separates_a_call_from_its_results(
            shape in proptest::collection::vec((0u8..3, 1usize..3000), 2..40),
            keep in 1u64..5000,
        ) {
            let mut h = Vec::new();
            for (i, (kind, n)) in shape.into_iter().enumerate() {
                match kind {
                    0 => h.push(user(n)),
                    1 => h.push(assistant(n, &[])),
                    _ => {
                        let id = format!("c{i}");
                        h.push(assistant(10, &[&id]));
                        h.push(result(&id, n));
                    }
                }
            }
            if let Some(cut) = cut_point(&h, keep) {
                prop_assert!(cut >= 1 && cut < h.len());
                prop_assert!(h[cut].role != MessageRole::Tool);
            }
        }
    }
}
