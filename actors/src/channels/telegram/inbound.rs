//! A Telegram update as the neutral `Incoming` the pipeline takes: the
//! chat, its type, a forum topic, the sender, the text (a caption for
//! media), whether the bot was mentioned (an `@name` mention, a text
//! mention of its id, a reply to one of its messages; the mention is taken
//! out of the text), and the photo (largest size) or document.

use super::api::{Message, Update, User};
use crate::channels::dispatch::{Incoming, MediaRef};
use crate::channels::ledger::InboundKey;

/// The bot's own identity (from `getMe`).
#[derive(Debug, Clone, Default)]
pub struct Me {
    pub id: i64,
    pub username: Option<String>,
}

/// What an update is.
#[derive(Debug, Clone, PartialEq)]
pub enum Parsed {
    Message(Box<Incoming>),
    /// An update ferroclaw does not act on (edits, bots, service messages).
    Skip(&'static str),
}

fn name(u: &User) -> String {
    match &u.last_name {
        Some(l) if !l.is_empty() => format!("{} {l}", u.first_name),
        _ => u.first_name.clone(),
    }
}

fn utf16_slice(text: &str, offset: usize, length: usize) -> Option<(usize, usize)> {
    // Telegram's entity offsets count UTF-16 code units.
    let mut units = 0usize;
    let (mut start, mut end) = (None, None);
    for (i, c) in text.char_indices() {
        if units == offset {
            start = Some(i);
        }
        if units == offset + length {
            end = Some(i);
        }
        units += c.len_utf16();
    }
    if units == offset + length {
        end = Some(text.len());
    }
    Some((start?, end?))
}

/// Whether `m` mentions the bot, and its text without the mention.
fn mention(m: &Message, text: &str, me: &Me) -> (bool, String) {
    let mut mentioned = m
        .reply_to_message
        .as_ref()
        .and_then(|r| r.from.as_ref())
        .is_some_and(|u| u.id == me.id);
    let mut cleaned = text.to_string();
    let entities = m.entities.as_ref().or(m.caption_entities.as_ref());
    for e in entities.into_iter().flatten().rev() {
        let Some((a, b)) = utf16_slice(text, e.offset, e.length) else {
            continue;
        };
        let hit = match e.kind.as_str() {
            "mention" => me
                .username
                .as_deref()
                .is_some_and(|u| text[a..b].trim_start_matches('@').eq_ignore_ascii_case(u)),
            "text_mention" => e.user.as_ref().is_some_and(|u| u.id == me.id),
            _ => false,
        };
        if hit {
            mentioned = true;
            if e.kind == "mention" {
                cleaned.replace_range(a..b, "");
            }
        }
    }
    if cleaned.len() == text.len() {
        return (mentioned, text.trim().to_string());
    }
    // A mention was taken out: tidy the spaces it leaves, keep the lines.
    let lines: Vec<String> = cleaned
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    (mentioned, lines.join("\n").trim().to_string())
}

/// The message id a button press is known by (`cb:<callback id>`): the
/// actor answers the press by it.
pub const PRESS: &str = "cb:";

/// What a message in `m`'s chat is known by: the chat, its type, a forum
/// topic, and the ledger's dedupe key of `message_id`.
fn in_chat(m: &Message, account: &str, message_id: String) -> Incoming {
    let chat_id = m.chat.id.to_string();
    let forum_topic = m.chat.is_forum == Some(true) && m.is_topic_message == Some(true);
    let dedupe_key = InboundKey {
        channel: "telegram",
        account,
        peer: &chat_id,
        message_id: &message_id,
    }
    .key();
    Incoming {
        channel: "telegram".into(),
        account: account.into(),
        dedupe_key,
        chat_id,
        chat_type: m.chat.kind.clone(),
        thread_id: m
            .message_thread_id
            .filter(|_| forum_topic)
            .map(|t| t.to_string()),
        message_id,
        ..Incoming::default()
    }
}

/// A press of a question's button: the option's number as the text, the
/// question it answers (`Incoming::question`). Other presses are skipped.
fn press(q: &super::api::CallbackQuery, account: &str) -> Parsed {
    let Some((question, option)) = q.data.as_deref().and_then(crate::questions::parse_button)
    else {
        return Parsed::Skip("a button that is not a question's");
    };
    let Some(m) = q.message.as_ref() else {
        return Parsed::Skip("a button press without its message");
    };
    Parsed::Message(Box::new(Incoming {
        sender: q.from.id.to_string(),
        sender_name: Some(name(&q.from)),
        text: option.to_string(),
        mentioned: true,
        ts_ms: crate::now_ms(),
        question: Some(question),
        ..in_chat(m, account, format!("{PRESS}{}", q.id))
    }))
}

/// Parses one update of `account`.
/// A message's files: its largest photo, then its document, voice, audio,
/// video note, video and sticker.
fn media_of(m: &super::api::Message) -> Vec<MediaRef> {
    let mut media = Vec::new();
    if let Some(p) = m
        .photo
        .as_ref()
        .and_then(|ps| ps.iter().max_by_key(|p| p.width * p.height))
    {
        media.push(MediaRef {
            id: p.file_id.clone(),
            mime_type: Some("image/jpeg".into()),
            name: None,
            size: p.file_size,
            url: None,
        });
    }
    // The type each kind has when Telegram does not say.
    let files = [
        (&m.document, None),
        (&m.voice, Some("audio/ogg")),
        (&m.audio, Some("audio/mpeg")),
        (&m.video_note, Some("video/mp4")),
        (&m.video, Some("video/mp4")),
        (&m.sticker, Some("image/webp")),
    ];
    for (d, default_type) in files {
        let Some(d) = d else { continue };
        media.push(MediaRef {
            id: d.file_id.clone(),
            mime_type: d.mime_type.clone().or(default_type.map(str::to_string)),
            name: d.file_name.clone(),
            size: d.file_size,
            url: None,
        });
    }
    media
}

pub fn parse(update: &Update, account: &str, me: &Me) -> Parsed {
    if let Some(q) = &update.callback_query {
        return press(q, account);
    }
    let Some(m) = update.message.as_ref().or(update.channel_post.as_ref()) else {
        return Parsed::Skip(if update.edited_message.is_some() {
            "edited message"
        } else {
            "not a message"
        });
    };
    if m.from.as_ref().is_some_and(|u| u.is_bot) {
        return Parsed::Skip("from a bot");
    }
    let raw_text = m
        .text
        .clone()
        .or_else(|| m.caption.clone())
        .unwrap_or_default();
    let (mentioned, text) = mention(m, &raw_text, me);
    let media = media_of(m);
    if text.is_empty() && media.is_empty() {
        return Parsed::Skip("no text or media");
    }
    let sender = m
        .from
        .as_ref()
        .map_or_else(|| m.chat.id.to_string(), |u| u.id.to_string());
    Parsed::Message(Box::new(Incoming {
        sender,
        sender_name: m.from.as_ref().map(name),
        text,
        mentioned,
        media,
        ts_ms: (m.date.max(0) as u64).saturating_mul(1000),
        ..in_chat(m, account, m.message_id.to_string())
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn me() -> Me {
        Me {
            id: 777,
            username: Some("ferro_bot".into()),
        }
    }

    fn update(v: serde_json::Value) -> Update {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn a_question_button_press_is_the_options_number_for_that_question() {
        let press = |data: &str| {
            update(json!({ "update_id": 9, "callback_query": {
                "id": "77", "from": { "id": 42, "first_name": "Ann" }, "data": data,
                "message": { "message_id": 5, "date": 1, "chat": { "id": 42, "type": "private" } },
            } }))
        };
        let Parsed::Message(m) = parse(&press("q:ask_1:2"), "default", &me()) else {
            panic!("a press");
        };
        assert_eq!(
            (m.text.as_str(), m.question.as_deref()),
            ("2", Some("ask_1"))
        );
        assert_eq!((m.sender.as_str(), m.chat_id.as_str()), ("42", "42"));
        assert_eq!(m.message_id, "cb:77");
        assert_eq!(
            parse(&press("vote:2"), "default", &me()),
            Parsed::Skip("a button that is not a question's")
        );
    }

    #[test]
    fn a_direct_message_becomes_incoming() {
        let u = update(
            json!({"update_id": 1, "message": {"message_id": 5, "date": 1700000000,
            "chat": {"id": 42, "type": "private"}, "from": {"id": 42, "first_name": "Ann", "last_name": "Lee"},
            "text": "hello\nthere"}}),
        );
        let Parsed::Message(m) = parse(&u, "default", &me()) else {
            panic!("expected a message")
        };
        assert_eq!(m.chat_id, "42");
        assert_eq!(m.text, "hello\nthere");
        assert_eq!(m.sender_name.as_deref(), Some("Ann Lee"));
        assert_eq!(m.dedupe_key, "telegram/default/42/5");
        assert_eq!(m.ts_ms, 1_700_000_000_000);
        assert!(!m.is_group());
    }

    #[test]
    fn group_mentions_are_found_and_taken_out() {
        let u = update(
            json!({"update_id": 2, "message": {"message_id": 6, "date": 1,
            "chat": {"id": -100, "type": "supergroup", "is_forum": true}, "is_topic_message": true, "message_thread_id": 9,
            "from": {"id": 1, "first_name": "B"}, "text": "héllo @Ferro_Bot what's up",
            "entities": [{"type": "mention", "offset": 6, "length": 10}]}}),
        );
        let Parsed::Message(m) = parse(&u, "default", &me()) else {
            panic!("expected a message")
        };
        assert!(m.mentioned);
        assert_eq!(m.text, "héllo what's up");
        assert_eq!(m.thread_id.as_deref(), Some("9"));
        assert!(m.is_group());
        let other = update(
            json!({"update_id": 3, "message": {"message_id": 7, "date": 1,
            "chat": {"id": -100, "type": "group"}, "from": {"id": 1, "first_name": "B"}, "text": "@someone hi",
            "entities": [{"type": "mention", "offset": 0, "length": 8}]}}),
        );
        let Parsed::Message(m) = parse(&other, "default", &me()) else {
            panic!("expected a message")
        };
        assert!(!m.mentioned);
        let reply = update(
            json!({"update_id": 4, "message": {"message_id": 8, "date": 1,
            "chat": {"id": -100, "type": "group"}, "from": {"id": 1, "first_name": "B"}, "text": "yes",
            "reply_to_message": {"message_id": 3, "date": 1, "chat": {"id": -100, "type": "group"}, "from": {"id": 777, "is_bot": true, "first_name": "F"}}}}),
        );
        let Parsed::Message(m) = parse(&reply, "default", &me()) else {
            panic!("expected a message")
        };
        assert!(m.mentioned);
    }

    #[test]
    fn media_edits_and_bots() {
        let photo = update(
            json!({"update_id": 5, "message": {"message_id": 9, "date": 1,
            "chat": {"id": 42, "type": "private"}, "from": {"id": 42, "first_name": "A"}, "caption": "look",
            "photo": [{"file_id": "small", "width": 90, "height": 90}, {"file_id": "big", "width": 800, "height": 600, "file_size": 5000}]}}),
        );
        let Parsed::Message(m) = parse(&photo, "default", &me()) else {
            panic!("expected a message")
        };
        assert_eq!(m.text, "look");
        assert_eq!(m.media[0].id, "big");
        let edit = update(
            json!({"update_id": 6, "edited_message": {"message_id": 9, "date": 1,
            "chat": {"id": 42, "type": "private"}, "text": "x"}}),
        );
        assert_eq!(
            parse(&edit, "default", &me()),
            Parsed::Skip("edited message")
        );
        let bot = update(
            json!({"update_id": 7, "message": {"message_id": 10, "date": 1,
            "chat": {"id": 42, "type": "private"}, "from": {"id": 5, "is_bot": true, "first_name": "X"}, "text": "x"}}),
        );
        assert_eq!(parse(&bot, "default", &me()), Parsed::Skip("from a bot"));
        let empty = update(
            json!({"update_id": 8, "message": {"message_id": 11, "date": 1, "chat": {"id": 42, "type": "private"}}}),
        );
        assert_eq!(
            parse(&empty, "default", &me()),
            Parsed::Skip("no text or media")
        );
    }
}
