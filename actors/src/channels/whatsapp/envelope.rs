//! Meta's webhook bodies as plain types: `object:
//! "whatsapp_business_account"`, `entry[].changes[]` whose `field` is
//! `messages`, each `value` holding the number it was sent to
//! (`metadata.phone_number_id`), the senders' profiles (`contacts[]`),
//! `messages[]` and `statuses[]`. Anything else (another object, another
//! field, an unknown message type) is named, never an error: Meta adds
//! fields and types, and a webhook that answers non-2xx is retried.

use serde_json::Value;

use crate::channels::dispatch::MediaRef;

/// A message a customer sent to the business number.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct WaMessage {
    /// The sender's WhatsApp id (their number, digits).
    pub from: String,
    pub name: Option<String>,
    /// `wamid....`: the dedupe key and what a reply quotes.
    pub id: String,
    pub timestamp_s: u64,
    /// `text`, `image`, `audio`, ... as Meta names it.
    pub kind: String,
    /// The text, a caption, a button's or list row's title.
    pub text: String,
    /// Media by Graph id (`url` unset: the outlet asks the Graph API).
    pub media: Vec<MediaRef>,
    /// The message it replies to (`context.id`).
    pub reply_to: Option<String>,
}

/// What happened to a message the business sent.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct WaStatus {
    /// The sent message's `wamid`.
    pub id: String,
    /// `sent` | `delivered` | `read` | `failed` (others kept as written).
    pub status: String,
    pub recipient: String,
    /// A failure's Graph error code and title.
    pub error: Option<(i64, String)>,
}

/// One webhook body: what it holds for `phone_number_id`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Parsed {
    pub messages: Vec<WaMessage>,
    pub statuses: Vec<WaStatus>,
    /// What was left alone (another object or field, another number, a
    /// message type with nothing to answer), for one log line.
    pub ignored: Vec<String>,
}

fn text(v: &Value, key: &str) -> String {
    v.get(key).and_then(Value::as_str).unwrap_or("").to_string()
}

/// The body of one webhook request, for the account of `phone_number_id`.
pub fn parse(body: &Value, phone_number_id: &str) -> Parsed {
    let mut out = Parsed::default();
    let object = body.get("object").and_then(Value::as_str).unwrap_or("");
    if object != "whatsapp_business_account" {
        out.ignored.push(format!("object {object:?}"));
        return out;
    }
    let changes = body["entry"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|e| e["changes"].as_array().into_iter().flatten());
    for change in changes {
        let field = change.get("field").and_then(Value::as_str).unwrap_or("");
        if field != "messages" {
            out.ignored.push(format!("field {field:?}"));
            continue;
        }
        let value = &change["value"];
        let to = value["metadata"]["phone_number_id"].as_str().unwrap_or("");
        if to != phone_number_id {
            out.ignored.push(format!("number {to:?}"));
            continue;
        }
        let contacts = value["contacts"].as_array().cloned().unwrap_or_default();
        let name_of = |wa_id: &str| {
            contacts
                .iter()
                .find(|c| c["wa_id"].as_str() == Some(wa_id))
                .and_then(|c| c["profile"]["name"].as_str())
                .map(str::to_string)
        };
        for m in value["messages"].as_array().into_iter().flatten() {
            match message(m) {
                Ok(mut msg) => {
                    msg.name = name_of(&msg.from);
                    out.messages.push(msg);
                }
                Err(why) => out.ignored.push(why.to_string()),
            }
        }
        for s in value["statuses"].as_array().into_iter().flatten() {
            let error = s["errors"].as_array().and_then(|e| e.first()).map(|e| {
                let title = e["title"].as_str().or(e["message"].as_str()).unwrap_or("");
                (e["code"].as_i64().unwrap_or(0), title.to_string())
            });
            out.statuses.push(WaStatus {
                id: text(s, "id"),
                status: text(s, "status"),
                recipient: text(s, "recipient_id"),
                error,
            });
        }
    }
    out
}

/// A media object (`image`, `audio`, `video`, `document`, `sticker`).
fn media(kind: &str, m: &Value) -> Option<MediaRef> {
    let id = m["id"].as_str().filter(|i| !i.is_empty())?;
    let name = m["filename"]
        .as_str()
        .map(str::to_string)
        .or_else(|| (kind == "audio" && m["voice"] == true).then(|| "voice.ogg".to_string()));
    Some(MediaRef {
        id: id.to_string(),
        mime_type: m["mime_type"].as_str().map(str::to_string),
        name,
        size: None,
        url: None,
    })
}

/// Why a message in a webhook body is not taken (the body's `ignored` note).
#[derive(Debug, thiserror::Error)]
enum Ignored {
    #[error("a message without a sender or an id")]
    Anonymous,
    #[error("message type {kind:?} ({id})")]
    Kind { kind: String, id: String },
    #[error("an empty {kind} message ({id})")]
    Empty { kind: String, id: String },
}

fn message(m: &Value) -> Result<WaMessage, Ignored> {
    let kind = text(m, "type");
    let mut msg = WaMessage {
        from: text(m, "from"),
        id: text(m, "id"),
        timestamp_s: text(m, "timestamp").parse().unwrap_or(0),
        reply_to: m["context"]["id"].as_str().map(str::to_string),
        kind: kind.clone(),
        ..WaMessage::default()
    };
    if msg.from.is_empty() || msg.id.is_empty() {
        return Err(Ignored::Anonymous);
    }
    let body = &m[kind.as_str()];
    match kind.as_str() {
        "text" => msg.text = text(body, "body"),
        "image" | "audio" | "video" | "document" | "sticker" => {
            msg.text = text(body, "caption");
            msg.media.extend(media(&kind, body));
        }
        "button" => msg.text = text(body, "text"),
        "interactive" => {
            let reply = body
                .get("button_reply")
                .or_else(|| body.get("list_reply"))
                .unwrap_or(&Value::Null);
            msg.text = text(reply, "title");
        }
        "location" => {
            let (lat, lon) = (&body["latitude"], &body["longitude"]);
            let place = [text(body, "name"), text(body, "address")]
                .into_iter()
                .filter(|s| !s.is_empty())
                .collect::<Vec<_>>()
                .join(", ");
            msg.text = format!(
                "[location: {lat}, {lon}{}]",
                match place.is_empty() {
                    true => String::new(),
                    false => format!(" ({place})"),
                }
            );
        }
        other => {
            return Err(Ignored::Kind {
                kind: other.to_string(),
                id: msg.id,
            })
        }
    }
    if msg.text.trim().is_empty() && msg.media.is_empty() {
        return Err(Ignored::Empty { kind, id: msg.id });
    }
    Ok(msg)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn hook(value: Value) -> Value {
        json!({ "object": "whatsapp_business_account", "entry": [{ "id": "WABA", "changes": [
            { "field": "messages", "value": value } ] }] })
    }

    fn meta(to: &str) -> Value {
        json!({ "display_phone_number": "15550001111", "phone_number_id": to })
    }

    #[test]
    fn messages_statuses_and_senders_names_are_read_for_the_number() {
        let body = hook(json!({
            "messaging_product": "whatsapp", "metadata": meta("1055"),
            "contacts": [{ "profile": { "name": "Ann" }, "wa_id": "15551234567" }],
            "messages": [
                { "from": "15551234567", "id": "wamid.A", "timestamp": "1700000000", "type": "text",
                  "text": { "body": "hello" }, "context": { "from": "15550001111", "id": "wamid.prev" } },
                { "from": "15551234567", "id": "wamid.B", "timestamp": "1700000001", "type": "image",
                  "image": { "id": "MEDIA1", "mime_type": "image/jpeg", "sha256": "x", "caption": "look" } },
                { "from": "15551234567", "id": "wamid.C", "timestamp": "1700000002", "type": "audio",
                  "audio": { "id": "MEDIA2", "mime_type": "audio/ogg; codecs=opus", "voice": true } },
                { "from": "15551234567", "id": "wamid.D", "timestamp": "1700000003", "type": "reaction",
                  "reaction": { "message_id": "wamid.A", "emoji": "👍" } },
                { "from": "15551234567", "id": "wamid.E", "type": "interactive",
                  "interactive": { "type": "button_reply", "button_reply": { "id": "b1", "title": "Yes" } } },
            ],
            "statuses": [{ "id": "wamid.OUT", "status": "failed", "recipient_id": "15551234567",
                "errors": [{ "code": 131047, "title": "Re-engagement message" }] }],
        }));
        let p = parse(&body, "1055");
        assert_eq!(p.messages.len(), 4, "{p:?}");
        let a = &p.messages[0];
        assert_eq!(
            (
                a.text.as_str(),
                a.name.as_deref(),
                a.reply_to.as_deref(),
                a.timestamp_s
            ),
            ("hello", Some("Ann"), Some("wamid.prev"), 1_700_000_000)
        );
        let b = &p.messages[1];
        assert_eq!(
            (b.text.as_str(), b.media[0].id.as_str()),
            ("look", "MEDIA1")
        );
        assert_eq!(b.media[0].mime_type.as_deref(), Some("image/jpeg"));
        assert_eq!(p.messages[2].media[0].name.as_deref(), Some("voice.ogg"));
        assert_eq!(p.messages[3].text, "Yes");
        assert_eq!(p.ignored, ["message type \"reaction\" (wamid.D)"]);
        assert_eq!(p.statuses[0].status, "failed");
        assert_eq!(
            p.statuses[0].error,
            Some((131047, "Re-engagement message".into()))
        );
    }

    #[test]
    fn other_objects_fields_numbers_and_garbage_are_named_not_errors() {
        assert_eq!(
            parse(&json!({ "object": "page" }), "1").ignored,
            ["object \"page\""]
        );
        let other_field = json!({ "object": "whatsapp_business_account", "entry": [{ "changes": [
            { "field": "account_update", "value": {} } ] }] });
        assert_eq!(
            parse(&other_field, "1").ignored,
            ["field \"account_update\""]
        );
        let other_number = hook(json!({ "metadata": meta("999"), "messages": [
            { "from": "1", "id": "wamid.X", "type": "text", "text": { "body": "hi" } }] }));
        let p = parse(&other_number, "1055");
        assert!(p.messages.is_empty());
        assert_eq!(p.ignored, ["number \"999\""]);
        for garbage in [
            json!(null),
            json!([]),
            json!({ "object": 3 }),
            json!({ "object":
            "whatsapp_business_account", "entry": "x" }),
        ] {
            let p = parse(&garbage, "1055");
            assert!(p.messages.is_empty() && p.statuses.is_empty());
        }
        let empty = hook(json!({ "metadata": meta("1055"), "messages": [
            { "from": "1", "id": "wamid.Y", "type": "text", "text": { "body": "  " } },
            { "id": "wamid.Z", "type": "text", "text": { "body": "no sender" } }] }));
        assert_eq!(parse(&empty, "1055").ignored.len(), 2);
    }
}
