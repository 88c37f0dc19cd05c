//! Whether a reply is spoken, and what of it (OpenClaw's Auto-TTS rules):
//! `off` never, `always` every reply, `inbound` a reply to a voice note,
//! `tagged` a reply with a directive. Never a reply that carries media,
//! one under 10 characters, or one that is mostly fenced code. What is
//! spoken: the `[[tts:text]]` blocks, else the visible text without its
//! markdown, code blocks or URLs.

use super::directives::Directives;
use crate::settings::TtsAuto;

/// Why a reply is not spoken (logged at debug).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Silent {
    Off,
    NotVoice,
    NotTagged,
    Media,
    Short,
    Code,
}

/// The text to speak of a reply, or why none.
pub fn spoken(
    d: &Directives,
    auto: TtsAuto,
    voice_in: bool,
    has_media: bool,
) -> Result<String, Silent> {
    match auto {
        TtsAuto::Off => return Err(Silent::Off),
        TtsAuto::Inbound if !voice_in => return Err(Silent::NotVoice),
        TtsAuto::Tagged if !d.tagged => return Err(Silent::NotTagged),
        _ => {}
    }
    if let Some(s) = d.spoken.as_deref().filter(|s| !s.trim().is_empty()) {
        return Ok(s.trim().to_string());
    }
    if has_media {
        return Err(Silent::Media);
    }
    let (prose, code) = split_code(&d.visible);
    if code > prose.chars().count() {
        return Err(Silent::Code);
    }
    let text = speakable(&prose);
    if text.chars().count() < 10 {
        return Err(Silent::Short);
    }
    Ok(text)
}

/// The text without fenced code blocks, and how many characters they held.
fn split_code(text: &str) -> (String, usize) {
    let mut prose = String::new();
    let mut code = 0;
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            code += line.chars().count();
        } else {
            prose.push_str(line);
            prose.push('\n');
        }
    }
    (prose, code)
}

/// Markdown a voice would read out, taken away: emphasis, headings,
/// list marks, inline code ticks, links (their text kept), bare URLs.
pub fn speakable(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        let mut l = line.trim();
        l = l.trim_start_matches('#').trim_start();
        for mark in ["- ", "* ", "+ ", "> "] {
            if let Some(rest) = l.strip_prefix(mark) {
                l = rest;
            }
        }
        let l = unlink(l);
        let words: Vec<&str> = l
            .split_whitespace()
            .filter(|w| !w.starts_with("http://") && !w.starts_with("https://"))
            .collect();
        let line = words.join(" ").replace(['*', '_', '`', '~'], "");
        if !line.is_empty() {
            out.push_str(&line);
            out.push('\n');
        }
    }
    out.trim().to_string()
}

/// Each `[text](url)` of a line as `text`.
fn unlink(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(open) = rest.find('[') {
        let after = &rest[open + 1..];
        let Some(mid) = after.find("](") else { break };
        let Some(close) = after[mid + 2..].find(')') else {
            break;
        };
        out.push_str(&rest[..open]);
        out.push_str(&after[..mid]);
        rest = &after[mid + 2 + close + 1..];
    }
    out.push_str(rest);
    out
}

/// `text` cut to at most `max` characters, at a sentence or word end
/// when one is near.
pub fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let head: String = text.chars().take(max).collect();
    let at = head
        .rfind(['.', '!', '?'])
        .filter(|i| *i > max / 2)
        .map(|i| i + 1)
        .or_else(|| head.rfind(' ').filter(|i| *i > max / 2));
    match at {
        Some(i) => head[..i].trim().to_string(),
        None => head,
    }
}
