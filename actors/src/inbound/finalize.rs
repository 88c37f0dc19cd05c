//! The one inbound pipeline every channel adapter calls (seed 001's
//! `finalizeInboundContext`): what a platform handed over (`RawInbound`)
//! becomes a `MsgContext` and its routing facts (`Inbound`).
//! 1. Newlines: `\r\n` and a lone `\r` become `\n` in every text field, then
//!    the text is sanitised (control characters, NFC).
//! 2. Chat type: the platform's word (`private`, `dm`, `im`, `supergroup`,
//!    `mpim`...) becomes `direct | group | channel`.
//! 3. The agent's text: the first non-empty of the forced text, the
//!    command body, the raw body, the body.
//! 4. Commands are deny-by-default: only a sender named in the channel's
//!    allowlist (not `*`) may use directives.
//! 5. Media: every item gets a type; missing ones are
//!    `application/octet-stream`, surplus types are dropped.

use super::msg_context::{ChatType, MsgContext};
use super::sanitize_text;

/// What an adapter knows about one message, in the platform's terms.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RawInbound {
    pub channel: String,
    pub account_id: Option<String>,
    /// The platform's chat type word.
    pub chat_type: String,
    /// The sender's id on the platform.
    pub from: String,
    pub sender_name: Option<String>,
    /// The group or channel id (none for a direct chat).
    pub group_id: Option<String>,
    pub thread_id: Option<String>,
    pub reply_to_id: Option<String>,
    pub message_id: String,
    pub body: Option<String>,
    pub raw_body: Option<String>,
    pub command_body: Option<String>,
    /// Text the adapter wants the agent to see instead of the body.
    pub forced_body_for_agent: Option<String>,
    /// Paths or URLs of attached media, and their MIME types (may be fewer).
    pub media: Vec<String>,
    pub media_types: Vec<String>,
    pub timestamp_ms: u64,
}

/// An attachment with its type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Media {
    pub location: String,
    pub mime_type: String,
}

/// A finalised message: its context and what routing and delivery need.
#[derive(Debug, Clone, PartialEq)]
pub struct Inbound {
    pub ctx: MsgContext,
    pub account_id: Option<String>,
    pub from: String,
    pub sender_name: Option<String>,
    pub group_id: Option<String>,
    pub thread_id: Option<String>,
    pub reply_to_id: Option<String>,
    pub message_id: String,
    pub media: Vec<Media>,
}

/// The type given to media whose type the platform did not say.
pub const UNKNOWN_MEDIA: &str = "application/octet-stream";

/// `\r\n` and `\r` to `\n`, then sanitised.
pub fn normalize_text(s: &str) -> String {
    sanitize_text(&s.replace("\r\n", "\n").replace('\r', "\n"))
}

/// The platform's chat type word as `direct | group | channel`; an unknown
/// word is a group when the message names a group, else direct.
pub fn chat_type(word: &str, has_group: bool) -> ChatType {
    match word.trim().to_ascii_lowercase().as_str() {
        "direct" | "dm" | "private" | "im" | "user" => ChatType::Direct,
        "group" | "supergroup" | "mpim" | "groupchat" => ChatType::Group,
        "channel" | "broadcast" => ChatType::Channel,
        _ if has_group => ChatType::Group,
        _ => ChatType::Direct,
    }
}

fn text(v: &Option<String>) -> Option<String> {
    v.as_deref()
        .map(normalize_text)
        .filter(|t| !t.trim().is_empty())
}

/// Finalises a message. `allow_from`: the channel's allowlisted senders
/// (a `*` lets anyone talk, never run commands).
pub fn finalize(raw: &RawInbound, allow_from: &[String]) -> Inbound {
    let body = text(&raw.body)
        .or_else(|| text(&raw.raw_body))
        .unwrap_or_default();
    let for_agent = text(&raw.forced_body_for_agent)
        .or_else(|| text(&raw.command_body))
        .or_else(|| text(&raw.raw_body))
        .unwrap_or_else(|| body.clone());
    let for_commands = text(&raw.command_body).unwrap_or_else(|| body.clone());
    let from = raw.from.trim().to_string();
    let authorized = !from.is_empty()
        && allow_from
            .iter()
            .any(|a| a.trim() != "*" && a.trim().eq_ignore_ascii_case(&from));
    let group_id = raw.group_id.clone().filter(|g| !g.trim().is_empty());
    let kind = chat_type(&raw.chat_type, group_id.is_some());
    let mut ctx = MsgContext::new(&body, &raw.channel, kind, authorized, raw.timestamp_ms);
    ctx.body_for_agent = for_agent;
    ctx.body_for_commands = for_commands;
    let media = raw
        .media
        .iter()
        .enumerate()
        .map(|(i, location)| Media {
            location: location.clone(),
            mime_type: raw
                .media_types
                .get(i)
                .map(|t| t.trim())
                .filter(|t| !t.is_empty())
                .unwrap_or(UNKNOWN_MEDIA)
                .to_string(),
        })
        .collect();
    Inbound {
        ctx,
        account_id: raw.account_id.clone(),
        from,
        sender_name: raw.sender_name.as_deref().map(normalize_text),
        group_id,
        thread_id: raw.thread_id.clone().filter(|t| !t.trim().is_empty()),
        reply_to_id: raw.reply_to_id.clone(),
        message_id: raw.message_id.clone(),
        media,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(f: impl FnOnce(&mut RawInbound)) -> RawInbound {
        let mut r = RawInbound {
            channel: "telegram".into(),
            chat_type: "private".into(),
            from: "42".into(),
            message_id: "m1".into(),
            body: Some("hi".into()),
            timestamp_ms: 1,
            ..Default::default()
        };
        f(&mut r);
        r
    }

    #[test]
    fn newlines_are_one_kind_in_every_text_field() {
        let m = finalize(
            &raw(|r| {
                r.body = Some("a\r\nb\rc\u{0}d".into());
                r.sender_name = Some("Ann\r\nB".into());
            }),
            &[],
        );
        assert_eq!(m.ctx.body, "a\nb\ncd");
        assert_eq!(m.ctx.body_for_agent, "a\nb\ncd");
        assert_eq!(m.sender_name.as_deref(), Some("Ann\nB"));
    }

    #[test]
    fn chat_types_are_direct_group_or_channel() {
        for (word, group, want) in [
            ("private", false, ChatType::Direct),
            ("DM", false, ChatType::Direct),
            ("im", false, ChatType::Direct),
            ("supergroup", true, ChatType::Group),
            ("mpim", true, ChatType::Group),
            ("channel", true, ChatType::Channel),
            ("weird", true, ChatType::Group),
            ("weird", false, ChatType::Direct),
        ] {
            assert_eq!(chat_type(word, group), want, "{word}");
        }
    }

    #[test]
    fn the_agent_text_is_the_first_of_forced_command_raw_and_body() {
        let all = |r: &mut RawInbound| {
            r.forced_body_for_agent = Some("forced".into());
            r.command_body = Some("command".into());
            r.raw_body = Some("raw".into());
            r.body = Some("body".into());
        };
        assert_eq!(finalize(&raw(all), &[]).ctx.body_for_agent, "forced");
        let m = finalize(
            &raw(|r| {
                all(r);
                r.forced_body_for_agent = Some("  ".into());
            }),
            &[],
        );
        assert_eq!(
            (
                m.ctx.body_for_agent.as_str(),
                m.ctx.body_for_commands.as_str()
            ),
            ("command", "command")
        );
        let m = finalize(
            &raw(|r| {
                r.raw_body = Some("raw".into());
                r.body = Some("body".into());
            }),
            &[],
        );
        assert_eq!(
            (m.ctx.body_for_agent.as_str(), m.ctx.body.as_str()),
            ("raw", "body")
        );
        let m = finalize(&raw(|r| r.body = None), &[]);
        assert_eq!(m.ctx.body_for_agent, "");
    }

    #[test]
    fn commands_are_denied_unless_the_sender_is_named() {
        let allow = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(!finalize(&raw(|_| {}), &[]).ctx.command_authorized);
        assert!(
            !finalize(&raw(|_| {}), &allow(&["*"]))
                .ctx
                .command_authorized
        );
        assert!(
            !finalize(&raw(|_| {}), &allow(&["41"]))
                .ctx
                .command_authorized
        );
        assert!(
            finalize(&raw(|_| {}), &allow(&["7", "42"]))
                .ctx
                .command_authorized
        );
        assert!(
            !finalize(&raw(|r| r.from = " ".into()), &allow(&[""]))
                .ctx
                .command_authorized
        );
    }

    #[test]
    fn every_attachment_gets_a_type() {
        let m = finalize(
            &raw(|r| {
                r.media = vec!["a.jpg".into(), "b.bin".into(), "c".into()];
                r.media_types = vec!["image/jpeg".into(), " ".into()];
            }),
            &[],
        );
        let types: Vec<&str> = m.media.iter().map(|x| x.mime_type.as_str()).collect();
        assert_eq!(types, ["image/jpeg", UNKNOWN_MEDIA, UNKNOWN_MEDIA]);
        let m = finalize(&raw(|r| r.media_types = vec!["image/png".into()]), &[]);
        assert!(m.media.is_empty(), "surplus types are dropped");
    }

    proptest::proptest! {
        /// Any platform text finalises (no panic), with one kind of newline
        /// and no control characters, and commands stay denied to strangers.
        #[test]
        fn any_input_finalises_cleanly(body in "\\PC{0,40}|[\r\n\u{0}a-z]{0,20}", kind in ".{0,10}", from in "[0-9]{0,4}") {
            let m = finalize(&raw(|r| { r.body = Some(body.clone()); r.chat_type = kind.clone(); r.from = from.clone(); }), &[]);
            proptest::prop_assert!(!m.ctx.body_for_agent.contains('\r'));
            proptest::prop_assert!(!m.ctx.body.chars().any(|c| c.is_control() && c != '\n' && c != '\t'));
            proptest::prop_assert!(!m.ctx.command_authorized);
        }
    }
}
