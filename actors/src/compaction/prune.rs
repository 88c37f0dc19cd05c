//! Context pruning (pure, in memory only: the transcript is never
//! touched): old tool results are shortened in what one model call is
//! sent. OpenClaw's rules: nothing happens below `softTrimRatio` (0.3) of
//! the window; results over 4,000 characters keep their first and last
//! 1,500; if the context is still over `hardClearRatio` (0.5) and the
//! prunable results hold at least `minPrunableToolChars` (50,000), whole
//! results are replaced by the placeholder, oldest first, until it is not.
//! Protected: everything before the first user message, the last 3
//! assistant turns and what follows them, and results with images.

use std::sync::Arc;

use super::tokens::{message_chars, CHARS_PER_TOKEN, IMAGE_TOKENS};
use super::PruneSettings;
use crate::provider::{ChatMessage, MessageRole, Messages};

fn head(s: &str, n: usize) -> &str {
    match s.char_indices().nth(n) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

fn tail(s: &str, n: usize) -> &str {
    let count = s.chars().count();
    if count <= n {
        return s;
    }
    match s.char_indices().nth(count - n) {
        Some((i, _)) => &s[i..],
        None => s,
    }
}

fn chars_of(m: &ChatMessage) -> usize {
    message_chars(m) + m.images.len() * (IMAGE_TOKENS as f64 * CHARS_PER_TOKEN) as usize
}

/// A long tool result's head and tail with a note of what was cut (None:
/// short enough to keep whole).
fn soft_trimmed(text: &str, s: &PruneSettings) -> Option<String> {
    let n = text.chars().count();
    if n <= s.soft_trim_max_chars || n <= s.soft_trim_head + s.soft_trim_tail {
        return None;
    }
    Some(format!(
        "{}\n...\n{}\n\n[Tool result trimmed: kept the first {} and last {} of {n} characters.]",
        head(text, s.soft_trim_head),
        tail(text, s.soft_trim_tail),
        s.soft_trim_head,
        s.soft_trim_tail
    ))
}

/// The messages one model call is sent, pruned; None when nothing changes.
pub fn prune(
    messages: &[Arc<ChatMessage>],
    system_chars: usize,
    window: u64,
    s: &PruneSettings,
) -> Option<Messages> {
    let budget = (window as f64 * CHARS_PER_TOKEN).max(1.0);
    let mut total = system_chars + messages.iter().map(|m| chars_of(m)).sum::<usize>();
    if (total as f64) / budget < s.soft_trim_ratio {
        return None;
    }
    let first_user = messages.iter().position(|m| m.role == MessageRole::User)?;
    let assistants: Vec<usize> = messages
        .iter()
        .enumerate()
        .filter(|(_, m)| m.role == MessageRole::Assistant)
        .map(|(i, _)| i)
        .collect();
    if assistants.len() < s.keep_last_assistants.max(1) {
        return None;
    }
    let cutoff = assistants[assistants.len() - s.keep_last_assistants.max(1)];
    let prunable: Vec<usize> = (first_user..cutoff)
        .filter(|&i| messages[i].role == MessageRole::Tool && messages[i].images.is_empty())
        .collect();
    if prunable.is_empty() {
        return None;
    }
    let mut out: Messages = messages.to_vec();
    let mut changed = false;
    for &i in &prunable {
        if let Some(trimmed) = soft_trimmed(&out[i].text, s) {
            total = total + trimmed.len() - out[i].text.len();
            let mut m = (*out[i]).clone();
            m.text = trimmed;
            out[i] = Arc::new(m);
            changed = true;
        }
    }
    let prunable_chars: usize = prunable.iter().map(|&i| out[i].text.len()).sum();
    if s.hard_clear
        && (total as f64) / budget >= s.hard_clear_ratio
        && prunable_chars >= s.min_prunable_tool_chars
    {
        for &i in &prunable {
            if (total as f64) / budget < s.hard_clear_ratio {
                break;
            }
            if out[i].text == s.placeholder {
                continue;
            }
            total = total + s.placeholder.len() - out[i].text.len().min(total);
            let mut m = (*out[i]).clone();
            m.text = s.placeholder.clone();
            out[i] = Arc::new(m);
            changed = true;
        }
    }
    changed.then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    const CLEARED: &str = "[Old tool result content cleared]";
    use crate::provider::ToolCall;

    fn turn(id: &str, result_chars: usize) -> Vec<Arc<ChatMessage>> {
        let mut call = ChatMessage::assistant("");
        call.tool_calls.push(ToolCall {
            id: id.into(),
            name: "read".into(),
            arguments: serde_json::json!({}),
        });
        vec![
            Arc::new(ChatMessage::user("go")),
            Arc::new(call),
            Arc::new(ChatMessage::tool_result(
                id,
                &"é".repeat(result_chars),
                false,
            )),
            Arc::new(ChatMessage::assistant("ok")),
        ]
    }

    fn convo(sizes: &[usize]) -> Vec<Arc<ChatMessage>> {
        sizes
            .iter()
            .enumerate()
            .flat_map(|(i, n)| turn(&format!("c{i}"), *n))
            .collect()
    }

    #[test]
    fn small_contexts_are_left_alone() {
        let h = convo(&[10_000, 10, 10, 10]);
        assert!(prune(&h, 0, 200_000, &crate::compaction::shipped().1).is_none());
    }

    #[test]
    fn old_results_are_trimmed_then_cleared_and_recent_turns_kept() {
        let s = crate::compaction::shipped().1;
        // ~ 0.35 of a 10,000-token window: soft trim only.
        let h = convo(&[6_000, 6_000, 10, 10, 10, 10]);
        let out = prune(&h, 0, 10_000, &s).unwrap();
        assert!(out[2].text.contains("[Tool result trimmed"));
        assert_eq!(out[2].text.chars().filter(|c| *c == 'é').count(), 3_000);
        assert_eq!(out[6].text, out[2].text);
        // Recent turns (the last 3 assistant messages and after) untouched.
        for i in 16..out.len() {
            assert!(Arc::ptr_eq(&out[i], &h[i]));
        }
        // Far over half the window with enough to clear: placeholders
        // (results under 4,000 characters, which trimming leaves alone).
        let mut sizes = vec![1_900; 20];
        sizes.extend([10, 10, 10]);
        let h = convo(&sizes);
        let out = prune(&h, 0, 20_000, &s).unwrap();
        let cleared: Vec<usize> = (0..out.len()).filter(|&i| out[i].text == CLEARED).collect();
        assert!(!cleared.is_empty());
        assert_eq!(cleared[0], 2, "oldest first");
        assert!(
            cleared.windows(2).all(|w| w[1] == w[0] + 4),
            "in order, none skipped"
        );
        let left: usize = out.iter().map(|m| chars_of(m)).sum();
        assert!(
            (left as f64) / 80_000.0 < s.hard_clear_ratio,
            "until under the ratio"
        );
        assert!(out
            .iter()
            .all(|m| m.role != MessageRole::User || m.text == "go"));
        // The input is never changed.
        assert_eq!(h[2].text.chars().count(), 1_900);
    }
}
