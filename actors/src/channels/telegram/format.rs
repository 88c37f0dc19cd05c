//! The model's markdown as Telegram HTML (`parse_mode: HTML`), parsed by
//! pulldown-cmark: bold, italic, strikethrough, inline code, code blocks
//! with their language, links, block quotes; headings become bold lines and
//! list items bullets. Everything else is escaped text. When Telegram still
//! refuses the entities, the adapter sends the plain text instead.

use pulldown_cmark::{CodeBlockKind, Event, Options, Parser, Tag, TagEnd};

/// Telegram's limit for one message's text.
pub const MAX_MESSAGE_CHARS: usize = 4096;

fn escape(s: &str, out: &mut String) {
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            c => out.push(c),
        }
    }
}

/// Markdown to Telegram HTML.
pub fn to_html(markdown: &str) -> String {
    let mut out = String::with_capacity(markdown.len() + 16);
    let mut lists: Vec<Option<u64>> = Vec::new();
    let parser = Parser::new_ext(markdown, Options::ENABLE_STRIKETHROUGH);
    for event in parser {
        match event {
            Event::Start(tag) => start(tag, &mut out, &mut lists),
            Event::End(tag) => end(tag, &mut out, &mut lists),
            Event::Text(t) => escape(&t, &mut out),
            Event::Code(t) => {
                out.push_str("<code>");
                escape(&t, &mut out);
                out.push_str("</code>");
            }
            Event::SoftBreak | Event::HardBreak => out.push('\n'),
            Event::Rule => out.push_str("\n———\n"),
            Event::Html(t) | Event::InlineHtml(t) => escape(&t, &mut out),
            Event::TaskListMarker(done) => out.push_str(if done { "☑ " } else { "☐ " }),
            _ => {}
        }
    }
    out.trim_end().to_string()
}

fn start(tag: Tag<'_>, out: &mut String, lists: &mut Vec<Option<u64>>) {
    match tag {
        Tag::Strong | Tag::Heading { .. } => out.push_str("<b>"),
        Tag::Emphasis => out.push_str("<i>"),
        Tag::Strikethrough => out.push_str("<s>"),
        Tag::BlockQuote(_) => out.push_str("<blockquote>"),
        Tag::CodeBlock(kind) => match kind {
            CodeBlockKind::Fenced(lang) if !lang.trim().is_empty() => {
                out.push_str("<pre><code class=\"language-");
                let lang = lang.split_whitespace().next().unwrap_or_default();
                escape(lang, out);
                out.push_str("\">");
            }
            _ => out.push_str("<pre><code>"),
        },
        Tag::Link { dest_url, .. } => {
            out.push_str("<a href=\"");
            escape(&dest_url, out);
            out.push_str("\">");
        }
        Tag::List(first) => lists.push(first),
        Tag::Item => {
            let depth = lists.len().saturating_sub(1);
            out.push_str(&"  ".repeat(depth));
            match lists.last_mut() {
                Some(Some(n)) => {
                    out.push_str(&format!("{n}. "));
                    *n += 1;
                }
                _ => out.push_str("• "),
            }
        }
        _ => {}
    }
}

fn end(tag: TagEnd, out: &mut String, lists: &mut Vec<Option<u64>>) {
    match tag {
        TagEnd::Strong => out.push_str("</b>"),
        TagEnd::Heading(_) => out.push_str("</b>\n\n"),
        TagEnd::Emphasis => out.push_str("</i>"),
        TagEnd::Strikethrough => out.push_str("</s>"),
        TagEnd::BlockQuote(_) => out.push_str("</blockquote>\n"),
        TagEnd::CodeBlock => {
            if out.ends_with('\n') {
                out.pop();
            }
            out.push_str("</code></pre>\n\n");
        }
        TagEnd::Link => out.push_str("</a>"),
        TagEnd::Paragraph => out.push_str("\n\n"),
        TagEnd::List(_) => {
            lists.pop();
            if lists.is_empty() {
                out.push('\n');
            }
        }
        TagEnd::Item if !out.ends_with('\n') => out.push('\n'),
        _ => {}
    }
}

pub use crate::channels::chunker::split;

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn markdown_becomes_telegram_html() {
        assert_eq!(
            to_html("**bold** and _it_ `x<y`"),
            "<b>bold</b> and <i>it</i> <code>x&lt;y</code>"
        );
        assert_eq!(
            to_html("```rust\nfn a() {}\n```"),
            "<pre><code class=\"language-rust\">fn a() {}</code></pre>"
        );
        assert_eq!(
            to_html("[a](https://x.y/?q=1&r=2)"),
            "<a href=\"https://x.y/?q=1&amp;r=2\">a</a>"
        );
        assert_eq!(
            to_html("# Title\n\n- one\n- two"),
            "<b>Title</b>\n\n• one\n• two"
        );
        assert_eq!(to_html("1. a\n2. b"), "1. a\n2. b");
        assert_eq!(to_html("<script>&"), "&lt;script&gt;&amp;");
    }

    #[test]
    fn long_replies_split_at_breaks() {
        let text = format!("{}\n\n{}", "a".repeat(3000), "b".repeat(3000));
        let parts = split(&text, 4096);
        assert_eq!(parts, vec!["a".repeat(3000), "b".repeat(3000)]);
        let one_word = "x".repeat(9000);
        let parts = split(&one_word, 4096);
        assert_eq!(parts.len(), 3);
        assert!(parts.iter().all(|p| p.chars().count() <= 4096));
    }

    proptest! {
        #[test]
        fn splitting_keeps_every_word_and_respects_the_limit(
            words in prop::collection::vec("[a-zé]{1,30}", 0..400),
            max in 20usize..300,
        ) {
            let text = words.join(" ");
            let parts = split(&text, max);
            prop_assert!(parts.iter().all(|p| p.chars().count() <= max));
            let joined: Vec<String> = parts.iter().flat_map(|p| p.split_whitespace()).map(String::from).collect();
            let original: Vec<String> = text.split_whitespace().map(String::from).collect();
            prop_assert_eq!(joined.concat(), original.concat());
        }

        #[test]
        fn html_never_leaves_an_unescaped_angle_bracket_from_the_text(s in "[a-z<>& *_`]{0,80}") {
            let html = to_html(&s);
            let stripped = ["<b>", "</b>", "<i>", "</i>", "<s>", "</s>", "<code>", "</code>", "<pre>", "</pre>", "<blockquote>", "</blockquote>"]
                .iter()
                .fold(html, |h, t| h.replace(t, ""));
            prop_assert!(!stripped.contains('<') && !stripped.contains('>'));
        }
    }
}
