//! The model's summary: the prompt (the summary is re-distilled, never
//! appended to: an earlier summary at the start of the dropped part is
//! merged into one new summary), the required headings, the quality check,
//! and the call itself, bounded in time and refused up front when its
//! input would not fit the window. `ask` is shared with the memory flush.

use std::sync::Arc;
use std::time::Duration;

use actix::Addr;
use tokio::sync::watch;

use super::tokens::{estimate, estimate_text};
use crate::provider::hub::{open_stream, OpenOutcome, ProviderHub};
use crate::provider::selection::ModelRef;
use crate::provider::{ChatMessage, CompletionRequest, Messages, ProviderEvent};

/// The headings every summary has, in order.
pub const HEADINGS: [&str; 5] = [
    "Decisions",
    "Open TODOs",
    "Constraints/Rules",
    "Pending user asks",
    "Exact identifiers",
];

/// How a summary starts in the model context.
pub const SUMMARY_PREFIX: &str = "[Summary of the earlier conversation]";

pub const SYSTEM: &str = "You write the working summary of a conversation between a user and an AI assistant, so the assistant can continue the conversation from the summary alone. Keep decisions, facts about the user, open tasks, constraints, file paths, commands and their outcomes. Leave out pleasantries.";

/// The last message of the summary request.
pub fn instruction(extra: Option<&str>) -> String {
    let headings: Vec<String> = HEADINGS.iter().map(|h| format!("## {h}")).collect();
    let mut s = format!(
        "Write the summary of the conversation above now. If it starts with an earlier summary, merge that in: write one complete, updated summary (rewrite it; do not append to it). Use exactly these headings, in this order: {}. Under each, short bullet points; write \"- None.\" under a heading with nothing to say. Copy identifiers (paths, URLs, ids, numbers, names) exactly.",
        headings.join(", ")
    );
    if let Some(e) = extra.filter(|e| !e.trim().is_empty()) {
        s.push_str(&format!(" Also: {e}"));
    }
    s
}

/// The user message a summary becomes in the context.
pub fn summary_message(summary: &str) -> ChatMessage {
    ChatMessage::user(&format!("{SUMMARY_PREFIX}\n{summary}"))
}

/// Why a model's summary cannot replace the conversation.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unusable {
    #[error("the summary is empty")]
    Empty,
    #[error("the summary lacks the heading \"{0}\" (on a line of its own, in order)")]
    NoHeading(&'static str),
    #[error("the summary is longer than what it summarises")]
    TooLong,
}

/// Whether `summary` can replace `input_chars` characters of conversation:
/// not empty, every heading present, and shorter than what it replaces.
pub fn check(summary: &str, input_chars: usize) -> Result<(), Unusable> {
    let s = summary.trim();
    if s.is_empty() || s == "NO_REPLY" {
        return Err(Unusable::Empty);
    }
    // Each heading on a line of its own, in order.
    let mut lines = s.lines().map(str::trim).filter(|l| l.starts_with("## "));
    for h in HEADINGS {
        let want = format!("## {h}");
        if !lines.any(|l| l == want) {
            return Err(Unusable::NoHeading(h));
        }
    }
    if s.len() > input_chars.max(2_000) {
        return Err(Unusable::TooLong);
    }
    Ok(())
}

/// Why a model answer could not be had.
#[derive(Debug, Clone, PartialEq)]
pub enum AskError {
    /// The request would not fit the window.
    TooLarge {
        tokens: u64,
        window: u64,
    },
    TimedOut,
    Failed(String),
}

impl std::fmt::Display for AskError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AskError::TooLarge { tokens, window } => write!(
                f,
                "the request would overflow the window (~{tokens} of {window} tokens)"
            ),
            AskError::TimedOut => f.write_str("the model did not answer in time"),
            AskError::Failed(e) => f.write_str(e),
        }
    }
}

/// One model call without tools: `messages` then the answer's text.
/// Refused when it would not fit `window` with room for the answer.
pub async fn ask(
    hub: Addr<ProviderHub>,
    models: Vec<ModelRef>,
    sticky: Option<String>,
    system: &str,
    messages: Messages,
    window: u64,
    timeout: Duration,
) -> Result<String, AskError> {
    let tokens = estimate_text(system.len()) + messages.iter().map(|m| estimate(m)).sum::<u64>();
    // Room for the answer: a summary is short, an eighth of the window
    // (at most 8,000 tokens) is plenty.
    let room = (window / 8).min(8_000);
    if tokens + room > window {
        return Err(AskError::TooLarge { tokens, window });
    }
    let request = CompletionRequest {
        system: Arc::from(system),
        messages: crate::tool::policy::repair(&messages),
        ..Default::default()
    };
    let call = async move {
        let (_keep, mut abort) = watch::channel(false);
        let opened = match open_stream(&hub, &models, sticky.as_deref(), &request, &mut abort).await
        {
            OpenOutcome::Opened(o) => o,
            OpenOutcome::Failed(e) => return Err(AskError::Failed(e.message)),
            OpenOutcome::Aborted => return Err(AskError::Failed("aborted".into())),
        };
        let mut text = String::new();
        let mut next = Some(opened.first);
        let mut rest = opened.rest;
        loop {
            let ev = match next.take() {
                Some(e) => e,
                None => match rest.recv().await {
                    Some(e) => e,
                    None => break,
                },
            };
            match ev {
                ProviderEvent::TextDelta(t) => text.push_str(&t),
                ProviderEvent::Error(e) => return Err(AskError::Failed(e.to_string())),
                ProviderEvent::Done(_) => break,
                _ => {}
            }
        }
        Ok(text.trim().to_string())
    };
    tokio::time::timeout(timeout, call)
        .await
        .unwrap_or(Err(AskError::TimedOut))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_summary_needs_every_heading_and_must_be_shorter() {
        let good: String = HEADINGS
            .iter()
            .map(|h| format!("## {h}\n- None.\n"))
            .collect();
        assert_eq!(check(&good, 10_000), Ok(()));
        assert!(check("", 10_000).is_err());
        assert!(check("NO_REPLY", 10_000).is_err());
        assert!(check("## Decisions\n- x", 10_000)
            .unwrap_err()
            .to_string()
            .contains("Open TODOs"));
        // Headings named inline (an echo of the instruction) do not count.
        assert!(check(&instruction(None), 10_000).is_err());
        let reordered: String = HEADINGS
            .iter()
            .rev()
            .map(|h| format!("## {h}\n- None.\n"))
            .collect();
        assert!(check(&reordered, 10_000).is_err(), "in order");
        let long = format!("{good}{}", "x".repeat(20_000));
        assert!(check(&long, 10_000).is_err());
        assert!(instruction(Some("keep the numbers")).ends_with("Also: keep the numbers"));
        assert!(instruction(None).contains("## Exact identifiers"));
    }
}
