//! The stored side of compaction: the transcript keeps every message and
//! gets a `compaction` entry (OpenClaw's shape: `summary`,
//! `firstKeptEntryId`, `tokensBefore`), so the context rebuilt after a
//! restart is the summary plus the messages from `firstKeptEntryId` on;
//! and the cut of a manual compaction (the last two user turns kept). The
//! session drives it (`session/autocompact.rs`); the job is `job.rs`.

use std::sync::Arc;

use serde_json::{json, Value};

use crate::provider::{ChatMessage, Messages};
use crate::transcript::{self, id_of, Entry};

pub use super::summary::summary_message;

/// The model context from transcript entries, honouring the last
/// `compaction` entry; with each message's entry id (None for the summary).
pub fn load_history(entries: &[Value]) -> (Messages, Vec<Option<String>>) {
    let last = entries
        .iter()
        .rposition(|e| matches!(Entry::of(e), Entry::Compaction { .. }));
    let mut messages: Messages = Vec::new();
    let mut ids = Vec::new();
    let mut start = 0;
    if let Some(i) = last {
        let (summary, first) = match Entry::of(&entries[i]) {
            Entry::Compaction {
                summary,
                first_kept,
            } => (summary, first_kept),
            _ => ("", None),
        };
        start = first
            .and_then(|f| entries.iter().position(|e| id_of(e) == Some(f)))
            .unwrap_or(i);
        messages.push(Arc::new(summary_message(summary)));
        ids.push(None);
    }
    for e in &entries[start..] {
        if Entry::of(e).is_pending() {
            continue;
        }
        if let Some(m) = transcript::to_chat(e) {
            messages.push(Arc::new(m));
            ids.push(id_of(e).map(str::to_string));
        }
    }
    (messages, ids)
}

/// Where the kept part starts: the second-to-last user message. None when
/// there is too little to compact (fewer than three user turns).
pub fn cut_point(history: &[Arc<ChatMessage>]) -> Option<usize> {
    let users: Vec<usize> = history
        .iter()
        .enumerate()
        .filter(|(_, m)| m.role == crate::provider::MessageRole::User)
        .map(|(i, _)| i)
        .collect();
    (users.len() >= 3).then(|| users[users.len() - 2])
}

/// The `compaction` transcript entry; `fallback`: why the model's summary
/// was not used (the deterministic one was).
pub fn entry(summary: &str, first_kept: &str, tokens: (u64, u64), fallback: Option<&str>) -> Value {
    let mut entry = json!({
        "type": "compaction", "id": ulid::Ulid::generate().to_string(), "timestamp": crate::now_ms(),
        "summary": summary, "firstKeptEntryId": first_kept, "tokensBefore": tokens.0,
        "tokensAfter": tokens.1,
    });
    if let Some(why) = fallback {
        entry["details"] = json!({ "fallback": "deterministic", "reason": why });
    }
    entry
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(id: &str, role: &str, text: &str) -> Value {
        json!({"type": "message", "id": id, "message": {"role": role, "content": [{"type": "text", "text": text}]}})
    }

    #[test]
    fn history_after_a_compaction_is_the_summary_and_the_kept_messages() {
        let entries = vec![
            json!({"type": "session", "id": "s"}),
            msg("a", "user", "one"),
            msg("b", "assistant", "1"),
            msg("c", "user", "two"),
            msg("d", "assistant", "2"),
            entry("they counted", "c", (10, 4), None),
            msg("e", "user", "three"),
        ];
        let (h, ids) = load_history(&entries);
        let texts: Vec<&str> = h.iter().map(|m| m.text.as_str()).collect();
        assert_eq!(
            texts,
            [
                "[Summary of the earlier conversation]\nthey counted",
                "two",
                "2",
                "three"
            ]
        );
        assert_eq!(
            ids,
            [None, Some("c".into()), Some("d".into()), Some("e".into())]
        );
        let (plain, _) = load_history(&entries[..5]);
        assert_eq!(plain.len(), 4);
        assert_eq!(cut_point(&h), Some(1), "the second-to-last user turn");
        assert_eq!(
            cut_point(&plain),
            None,
            "two user turns: nothing to compact"
        );
    }
}
