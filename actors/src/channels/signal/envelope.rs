//! A `receive` event's data as signal-cli writes it (`{"envelope": {...},
//! "account": "+1..."}`), read into plain types. Only a data message from
//! someone else is a message; a sync message (the bot's own devices), a
//! receipt, a typing notice, a story, an edit and a reaction are skipped
//! with their reason.

use serde::Deserialize;
use serde_json::Value;

use crate::channels::dispatch::MediaRef;

/// One message as the pipeline needs it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SigMessage {
    pub source_number: Option<String>,
    pub source_uuid: Option<String>,
    pub source_name: Option<String>,
    /// The sender's timestamp: Signal's id of the message.
    pub timestamp: u64,
    /// When Signal's server received it (the sender's clock may be wrong):
    /// how old the message is. Falls back to `timestamp`.
    pub received_ms: u64,
    pub text: String,
    /// `group:<id>` for a group message.
    pub group: Option<String>,
    pub mentions: Vec<(Option<String>, Option<String>)>,
    /// The author (number or uuid) of the message this one quotes.
    pub quote_author: Option<String>,
    pub attachments: Vec<MediaRef>,
}

/// What an event is.
#[derive(Debug, Clone, PartialEq)]
pub enum SigEvent {
    Message(Box<SigMessage>),
    Skip(&'static str),
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Data {
    envelope: Envelope,
    #[serde(default)]
    account: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Envelope {
    #[serde(default)]
    source_number: Option<String>,
    #[serde(default)]
    source: Option<String>,
    #[serde(default)]
    source_uuid: Option<String>,
    #[serde(default)]
    source_name: Option<String>,
    #[serde(default)]
    timestamp: Option<u64>,
    #[serde(default)]
    server_received_timestamp: Option<u64>,
    #[serde(default)]
    data_message: Option<Value>,
    #[serde(default)]
    edit_message: Option<Value>,
    #[serde(default)]
    sync_message: Option<Value>,
    #[serde(default)]
    receipt_message: Option<Value>,
    #[serde(default)]
    typing_message: Option<Value>,
    #[serde(default)]
    story_message: Option<Value>,
}

fn text_of(v: &Value) -> Option<String> {
    v.as_str().map(str::to_string).filter(|s| !s.is_empty())
}

fn attachments(dm: &Value) -> Vec<MediaRef> {
    dm["attachments"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|a| {
            Some(MediaRef {
                id: text_of(&a["id"])?,
                mime_type: text_of(&a["contentType"]),
                name: text_of(&a["filename"]),
                size: a["size"].as_u64(),
                url: None,
            })
        })
        .collect()
}

/// A `receive` event that cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum BadEvent {
    #[error("not a receive event: {0}")]
    NotJson(#[from] serde_json::Error),
    #[error("a message without a timestamp")]
    NoTimestamp,
    #[error("a message without a sender")]
    NoSender,
}

/// What an envelope that is no one's new message is, in the words of a
/// skip (None: it may be one).
fn not_a_message(e: &Envelope) -> Option<&'static str> {
    [
        (
            e.sync_message.is_some(),
            "sync message (the account's own devices)",
        ),
        (e.receipt_message.is_some(), "receipt"),
        (e.typing_message.is_some(), "typing notice"),
        (e.story_message.is_some(), "story"),
        (e.edit_message.is_some(), "edited message"),
    ]
    .into_iter()
    .find_map(|(is, why)| is.then_some(why))
}

/// Reads one event's data for the account `me`.
pub fn parse(data: &str, me: &str) -> Result<SigEvent, BadEvent> {
    let d: Data = serde_json::from_str(data)?;
    if d.account.as_deref().is_some_and(|a| a != me) {
        return Ok(SigEvent::Skip("another account's event"));
    }
    let e = d.envelope;
    let skip = |why| Ok(SigEvent::Skip(why));
    if let Some(why) = not_a_message(&e) {
        return skip(why);
    }
    let Some(dm) = e.data_message else {
        return skip("no data message");
    };
    if !dm["reaction"].is_null() {
        return skip("reaction");
    }
    if !dm["remoteDelete"].is_null() {
        return skip("remote delete");
    }
    let number = e.source_number.or(e.source.filter(|s| s.starts_with('+')));
    if number.as_deref() == Some(me) {
        return skip("the bot's own message");
    }
    let Some(timestamp) = e.timestamp.or(dm["timestamp"].as_u64()) else {
        return Err(BadEvent::NoTimestamp);
    };
    let group = dm["groupInfo"]["groupId"]
        .as_str()
        .or(dm["groupV2"]["id"].as_str())
        .map(|g| format!("group:{g}"));
    let mentions = dm["mentions"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|m| (text_of(&m["number"]), text_of(&m["uuid"])))
        .collect();
    let quote_author = text_of(&dm["quote"]["authorNumber"])
        .or(text_of(&dm["quote"]["author"]))
        .or(text_of(&dm["quote"]["authorUuid"]));
    let m = SigMessage {
        source_number: number,
        source_uuid: e.source_uuid,
        source_name: e.source_name,
        timestamp,
        received_ms: e.server_received_timestamp.unwrap_or(timestamp),
        text: dm["message"].as_str().unwrap_or_default().to_string(),
        group,
        mentions,
        quote_author,
        attachments: attachments(&dm),
    };
    if m.text.trim().is_empty() && m.attachments.is_empty() {
        return skip("nothing to answer (no text, no attachment)");
    }
    if m.source_number.is_none() && m.source_uuid.is_none() {
        return Err(BadEvent::NoSender);
    }
    Ok(SigEvent::Message(Box::new(m)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const ME: &str = "+15550000000";

    fn ev(env: Value) -> Result<SigEvent, BadEvent> {
        parse(&json!({ "envelope": env, "account": ME }).to_string(), ME)
    }

    #[test]
    fn a_group_message_with_a_mention_a_quote_and_an_attachment_reads_whole() {
        let got = ev(json!({ "source": "+15551112222", "sourceNumber": "+15551112222",
            "sourceUuid": "u-1", "sourceName": "Ann", "sourceDevice": 1, "timestamp": 1700000000001u64,
            "dataMessage": { "timestamp": 1700000000001u64, "message": "\u{fffc} look",
                "groupInfo": { "groupId": "g1==", "type": "DELIVER" },
                "mentions": [{ "name": ME, "number": ME, "uuid": "bot-u", "start": 0, "length": 1 }],
                "quote": { "id": 1699, "author": ME, "authorNumber": ME, "text": "earlier" },
                "attachments": [{ "contentType": "image/png", "filename": "a.png", "id": "att1.png", "size": 70 }] } }))
        .unwrap();
        let SigEvent::Message(m) = got else {
            panic!("{got:?}")
        };
        assert_eq!(m.group.as_deref(), Some("group:g1=="));
        assert_eq!(
            m.mentions,
            [(Some(ME.to_string()), Some("bot-u".to_string()))]
        );
        assert_eq!(m.quote_author.as_deref(), Some(ME));
        assert_eq!(m.attachments[0].id, "att1.png");
        assert_eq!(m.timestamp, 1_700_000_000_001);
    }

    #[test]
    fn edits_reactions_receipts_sync_and_own_messages_are_skipped_garbage_is_an_error() {
        let skip = |env: Value| match ev(env) {
            Ok(SigEvent::Skip(why)) => why,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            skip(json!({ "sourceNumber": "+1555", "timestamp": 2,
                "editMessage": { "targetSentTimestamp": 1, "dataMessage": { "message": "fixed" } } })),
            "edited message"
        );
        assert_eq!(
            skip(
                json!({ "sourceNumber": "+1555", "timestamp": 3, "dataMessage": { "timestamp": 3,
                "reaction": { "emoji": "👍", "targetAuthor": ME, "targetSentTimestamp": 1, "isRemove": false } } })
            ),
            "reaction"
        );
        assert_eq!(
            skip(json!({ "sourceNumber": ME, "timestamp": 4, "syncMessage": {} })),
            "sync message (the account's own devices)"
        );
        assert_eq!(
            skip(json!({ "sourceNumber": ME, "timestamp": 5, "dataMessage": { "message": "me" } })),
            "the bot's own message"
        );
        assert!(parse("garbage", ME).is_err());
        assert!(ev(json!({ "timestamp": 6, "dataMessage": { "message": "who?" } })).is_err());
    }
}
