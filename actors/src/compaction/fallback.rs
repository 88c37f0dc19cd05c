//! The deterministic summary (pure, no model): used whenever the model's
//! summary cannot be had (the call fails, times out, would itself overflow,
//! or returns something that fails the quality check), so a compaction
//! always completes. It carries the previous summary forward (shortened)
//! and extracts from the dropped messages what a continuation needs most:
//! the user's asks, exact identifiers (paths, URLs, ids, numbers with
//! units, code spans) and each tool call with its outcome, under the same
//! headings the model's summary uses.

use std::collections::BTreeSet;
use std::sync::Arc;

use regex::Regex;

use super::summary::HEADINGS;
use crate::provider::{ChatMessage, MessageRole};

const ASK_CHARS: usize = 240;
const MAX_ASKS: usize = 12;
const MAX_IDS: usize = 40;
const MAX_TOOLS: usize = 20;
const PREVIOUS_CHARS: usize = 4_000;

fn clip(s: &str, n: usize) -> String {
    let one: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if one.chars().count() <= n {
        return one;
    }
    let cut: String = one.chars().take(n).collect();
    format!("{cut}…")
}

fn identifiers(text: &str, into: &mut BTreeSet<String>) {
    static RE: std::sync::OnceLock<Option<Regex>> = std::sync::OnceLock::new();
    let re = RE.get_or_init(|| {
        Regex::new(concat!(
            r"https?://[^\s)>\]]+",
            r"|`[^`\n]{2,80}`",
            r"|(?:~|\.{1,2})?/[\w.\-]+(?:/[\w.\-]+)+",
            r"|\b[\w\-]+\.(?:md|rs|ts|js|py|json|toml|yaml|yml|txt|sh|csv)\b",
            r"|\b[A-Z][A-Z0-9]{2,}-\d+\b",
            r"|\b[0-9A-HJKMNP-TV-Z]{26}\b",
            r"|\b[0-9a-f]{7,40}\b",
        ))
        .ok()
    });
    let Some(re) = re else { return };
    for m in re.find_iter(text) {
        if into.len() >= MAX_IDS {
            return;
        }
        into.insert(m.as_str().trim_matches('`').to_string());
    }
}

/// One tool call and how it ended (its result among the tool messages
/// that follow it in `after`).
fn tool_line(c: &crate::provider::ToolCall, after: &[Arc<ChatMessage>]) -> String {
    let outcome = after
        .iter()
        .take_while(|r| r.role == MessageRole::Tool)
        .find(|r| r.tool_call_id.as_deref() == Some(c.id.as_str()))
        .map(|r| {
            let status = if r.is_error { "error" } else { "ok" };
            format!("{status}: {}", clip(&r.text, 120))
        })
        .unwrap_or_else(|| "no result".into());
    format!(
        "- {} {} → {outcome}",
        c.name,
        clip(&c.arguments.to_string(), 120)
    )
}

/// The summary of `older` (the messages a compaction drops), without a model.
pub fn summarize(older: &[Arc<ChatMessage>]) -> String {
    let mut previous = None;
    let mut asks = Vec::new();
    let mut ids = BTreeSet::new();
    let mut tools: Vec<String> = Vec::new();
    for (i, m) in older.iter().enumerate() {
        if i == 0 && m.role == MessageRole::User {
            if let Some(p) = m.text.strip_prefix(super::summary::SUMMARY_PREFIX) {
                previous = Some(p.trim().to_string());
                continue;
            }
        }
        identifiers(&m.text, &mut ids);
        match m.role {
            MessageRole::User => asks.push(clip(&m.text, ASK_CHARS)),
            MessageRole::Assistant => {
                for c in &m.tool_calls {
                    identifiers(&c.arguments.to_string(), &mut ids);
                    tools.push(tool_line(c, &older[i + 1..]));
                }
            }
            MessageRole::Tool => {}
        }
    }
    let asks: Vec<String> = asks.iter().rev().take(MAX_ASKS).rev().cloned().collect();
    let tools: Vec<String> = tools.iter().rev().take(MAX_TOOLS).rev().cloned().collect();
    let list = |items: &[String], none: &str| {
        if items.is_empty() {
            none.to_string()
        } else {
            items.join("\n")
        }
    };
    let mut out = String::from(
        "(Written without a model: the summary call could not be used. Earlier decisions are in the previous summary and the user's asks below.)\n\n",
    );
    let sections = [
        previous.map_or_else(
            || "- None recorded.".to_string(),
            |p| format!("Previous summary, carried forward:\n{}", clip_block(&p)),
        ),
        "- Unknown: see the user's asks and the tools below.".to_string(),
        "- None recorded.".to_string(),
        list(
            &asks.iter().map(|a| format!("- {a}")).collect::<Vec<_>>(),
            "- None.",
        ),
        list(
            &ids.into_iter()
                .map(|s| format!("- {s}"))
                .collect::<Vec<_>>(),
            "- None.",
        ),
    ];
    for (h, body) in HEADINGS.iter().zip(sections) {
        out.push_str(&format!("## {h}\n{body}\n\n"));
    }
    out.push_str(&format!("## Tools used\n{}\n", list(&tools, "- None.")));
    out
}

fn clip_block(s: &str) -> String {
    if s.chars().count() <= PREVIOUS_CHARS {
        return s.to_string();
    }
    let cut: String = s.chars().take(PREVIOUS_CHARS).collect();
    format!("{cut}…")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::ToolCall;

    #[test]
    fn the_fallback_keeps_asks_identifiers_and_tool_outcomes() {
        let mut call = ChatMessage::assistant("");
        call.tool_calls.push(ToolCall {
            id: "c1".into(),
            name: "exec".into(),
            arguments: serde_json::json!({"command": "cat /srv/app/config.toml"}),
        });
        let older = vec![
            Arc::new(ChatMessage::user(&format!(
                "{}\nWe chose Postgres.",
                super::super::summary::SUMMARY_PREFIX
            ))),
            Arc::new(ChatMessage::user(
                "Please fix ticket OPS-1234, see https://example.com/t/1",
            )),
            Arc::new(call),
            Arc::new(ChatMessage::tool_result("c1", "port = 8080", false)),
            Arc::new(ChatMessage::assistant("Done; the port is 8080.")),
        ];
        let s = summarize(&older);
        for h in HEADINGS {
            assert!(s.contains(&format!("## {h}")), "{h}");
        }
        assert!(
            s.contains("We chose Postgres."),
            "the previous summary is carried"
        );
        assert!(s.contains("- Please fix ticket OPS-1234"));
        for id in [
            "OPS-1234",
            "https://example.com/t/1",
            "/srv/app/config.toml",
        ] {
            assert!(s.contains(&format!("- {id}")), "{id} in {s}");
        }
        assert!(s.contains("- exec {\"command\":\"cat /srv/app/config.toml\"} → ok: port = 8080"));
        assert!(summarize(&[]).contains("## Decisions"));
    }
}
