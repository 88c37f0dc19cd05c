//! `MsgContext`: one inbound message in its three forms (seed 004).
//! - `body`: the raw text, stored and shown to people;
//! - `body_for_agent`: what the model sees: the text with a timestamp
//!   envelope (`[Sun 2026-11-22 20:15 UTC] text`) and without the inline
//!   directives that were applied;
//! - `body_for_commands`: what the directive parser reads.
//!
//! `command_authorized` is deny-by-default: a sender who is not authorised
//! gets directives treated as plain text. `media`: its attachments as the
//! media store keeps them (OpenClaw's `MediaPaths`, `MediaUrls`,
//! `MediaTypes`), written on its transcript entry.

use chrono::{DateTime, Local, TimeZone, Utc};
use serde::{Deserialize, Serialize};

/// An attachment kept in the media store, as a message's context and its
/// transcript entry name it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Attached {
    /// The store's id (the SHA-256 of the bytes).
    pub id: String,
    pub path: String,
    pub content_type: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub size: u64,
    /// Where it came from (a platform URL).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

/// Where a message came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChatType {
    Direct,
    Group,
    Channel,
}

impl ChatType {
    pub fn as_str(self) -> &'static str {
        match self {
            ChatType::Direct => "direct",
            ChatType::Group => "group",
            ChatType::Channel => "channel",
        }
    }
}

/// Envelope settings (`agents.defaults.envelopeTimestamp`, `envelopeTimezone`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EnvelopeSettings {
    pub timestamp: bool,
    pub utc: bool,
}

impl Default for EnvelopeSettings {
    fn default() -> Self {
        EnvelopeSettings {
            timestamp: true,
            utc: false,
        }
    }
}

impl EnvelopeSettings {
    /// From config values: `envelopeTimestamp` `on|off`, `envelopeTimezone`
    /// `utc|local` (an IANA zone or `user` falls back to the host's, logged).
    pub fn from_config(
        timestamp: &str,
        timezone: &str,
    ) -> Result<EnvelopeSettings, crate::settings::BadSetting> {
        let timestamp = match timestamp {
            "on" => true,
            "off" => false,
            other => {
                return Err(crate::settings::BadSetting::new(
                    "agents.defaults.envelopeTimestamp",
                    format!("{other:?} (on or off)"),
                ))
            }
        };
        let utc = match timezone.to_ascii_lowercase().as_str() {
            "utc" | "gmt" | "z" => true,
            "local" => false,
            other => {
                tracing::warn!(timezone = other, "envelopeTimezone: only utc and local are supported; using the host's local time");
                false
            }
        };
        Ok(EnvelopeSettings { timestamp, utc })
    }

    /// The time zone named in the system prompt.
    pub fn zone_name(&self) -> String {
        if self.utc {
            "UTC".into()
        } else {
            let offset = Local::now().format("%:z").to_string();
            match crate::host::env().tz.clone() {
                Some(tz) => format!("{tz} (UTC{offset})"),
                None if offset == "+00:00" => "UTC".into(),
                None => format!("UTC{offset}"),
            }
        }
    }
}

/// `[Sun 2026-11-22 20:15 UTC]` for a time in ms since the epoch.
pub fn envelope(ts_ms: u64, settings: EnvelopeSettings) -> String {
    let ts = i64::try_from(ts_ms).unwrap_or(i64::MAX);
    let utc: DateTime<Utc> = Utc.timestamp_millis_opt(ts).single().unwrap_or_default();
    if settings.utc {
        return format!("[{}]", utc.format("%a %Y-%m-%d %H:%M UTC"));
    }
    let local = utc.with_timezone(&Local);
    let offset = local.format("%:z").to_string();
    if offset == "+00:00" {
        format!("[{}]", local.format("%a %Y-%m-%d %H:%M UTC"))
    } else {
        format!("[{} UTC{offset}]", local.format("%a %Y-%m-%d %H:%M"))
    }
}

/// Whether text already carries an envelope (a channel stamped it) or a
/// cron-style "Current time:" line, so it is not stamped twice.
fn already_stamped(text: &str) -> bool {
    if text.contains("Current time: ") {
        return true;
    }
    let Some(rest) = text.strip_prefix('[') else {
        return false;
    };
    let Some(end) = rest.find(']') else {
        return false;
    };
    let inside = &rest[..end];
    // `[<word> ... YYYY-MM-DD ...]`
    inside.split_whitespace().skip(1).any(|w| {
        let b = w.as_bytes();
        b.len() >= 10
            && b[..4].iter().all(u8::is_ascii_digit)
            && b[4] == b'-'
            && b[5..7].iter().all(u8::is_ascii_digit)
            && b[7] == b'-'
            && b[8..10].iter().all(u8::is_ascii_digit)
    })
}

/// The text without a leading timestamp envelope (what the person wrote).
pub fn strip_envelope(text: &str) -> &str {
    if already_stamped(text) && text.starts_with('[') {
        if let Some(end) = text.find(']') {
            return text[end + 1..]
                .strip_prefix(' ')
                .unwrap_or(&text[end + 1..]);
        }
    }
    text
}

#[derive(Debug, Clone, PartialEq)]
pub struct MsgContext {
    pub body: String,
    pub body_for_agent: String,
    pub body_for_commands: String,
    pub channel: String,
    pub chat_type: ChatType,
    pub command_authorized: bool,
    pub timestamp_ms: u64,
    pub media: Vec<Attached>,
}

impl MsgContext {
    /// A message received now. `body_for_agent` is stamped by [`MsgContext::stamp`].
    pub fn new(
        body: &str,
        channel: &str,
        chat_type: ChatType,
        command_authorized: bool,
        timestamp_ms: u64,
    ) -> MsgContext {
        MsgContext {
            body: body.to_string(),
            body_for_agent: body.to_string(),
            body_for_commands: body.to_string(),
            channel: channel.to_string(),
            chat_type,
            command_authorized,
            timestamp_ms,
            media: Vec::new(),
        }
    }

    /// Sets the agent's text: `text` (the body without applied inline
    /// directives) behind the timestamp envelope.
    pub fn stamp(&mut self, text: &str, settings: EnvelopeSettings) {
        self.body_for_agent = if !settings.timestamp || text.is_empty() || already_stamped(text) {
            text.to_string()
        } else {
            format!("{} {text}", envelope(self.timestamp_ms, settings))
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const UTC: EnvelopeSettings = EnvelopeSettings {
        timestamp: true,
        utc: true,
    };

    #[test]
    fn only_the_agent_body_gets_the_envelope() {
        // 2026-11-22 20:15:30 UTC, a Sunday.
        let ts = 1_795_378_530_000;
        let mut m = MsgContext::new("/think high hello", "webchat", ChatType::Direct, true, ts);
        m.stamp("hello", UTC);
        assert_eq!(m.body, "/think high hello");
        assert_eq!(m.body_for_commands, "/think high hello");
        assert_eq!(m.body_for_agent, "[Sun 2026-11-22 20:15 UTC] hello");
    }

    #[test]
    fn stamped_text_is_not_stamped_twice_and_off_means_off() {
        let ts = 1_795_378_530_000;
        let mut m = MsgContext::new("x", "telegram", ChatType::Group, false, ts);
        m.stamp("[Telegram Ann 2026-11-22 20:15 UTC] hi", UTC);
        assert_eq!(m.body_for_agent, "[Telegram Ann 2026-11-22 20:15 UTC] hi");
        m.stamp("Reminder. Current time: 20:15", UTC);
        assert_eq!(m.body_for_agent, "Reminder. Current time: 20:15");
        m.stamp("[not a date] hi", UTC);
        assert_eq!(
            m.body_for_agent,
            "[Sun 2026-11-22 20:15 UTC] [not a date] hi"
        );
        m.stamp(
            "hi",
            EnvelopeSettings {
                timestamp: false,
                utc: true,
            },
        );
        assert_eq!(m.body_for_agent, "hi");
    }

    #[test]
    fn strip_envelope_gives_back_the_words() {
        assert_eq!(strip_envelope("[Sun 2026-11-22 20:15 UTC] hello"), "hello");
        assert_eq!(
            strip_envelope("[Sun 2026-11-22 20:15 UTC+01:00] a\nb"),
            "a\nb"
        );
        assert_eq!(strip_envelope("[x] hello"), "[x] hello");
        assert_eq!(strip_envelope("hello"), "hello");
    }

    #[test]
    fn envelope_settings_from_config() {
        assert_eq!(EnvelopeSettings::from_config("on", "utc").unwrap(), UTC);
        assert!(
            !EnvelopeSettings::from_config("off", "local")
                .unwrap()
                .timestamp
        );
        assert!(EnvelopeSettings::from_config("maybe", "utc").is_err());
        assert!(
            !EnvelopeSettings::from_config("on", "America/Chicago")
                .unwrap()
                .utc
        );
        assert_eq!(UTC.zone_name(), "UTC");
    }
}
