//! Transcript messages as OpenClaw's clients see them (`chat.history`,
//! `chat.startup`, `session.message`): directive tags stripped from
//! assistant text, text fields capped, inline images replaced by a note,
//! stored files given signed links, oversized messages replaced whole, and
//! `__openclaw` naming each message's entry id, idempotency key, position
//! and media. Pure functions (links signed with the process's key).

use serde_json::{json, Value};

/// Longest text field in `chat.history` (characters).
pub const HISTORY_FIELD_CHARS: usize = 12_000;
/// Largest single message in `chat.history` (serialised bytes).
pub const HISTORY_MESSAGE_BYTES: usize = 128 * 1024;
/// Total `chat.history` budget (serialised bytes; oldest dropped first).
pub const HISTORY_TOTAL_BYTES: usize = 6 * 1024 * 1024;

/// A stored file a user message names (its entry's `media[]`).
struct Stored {
    id: String,
    content_type: String,
    name: Option<String>,
    size: u64,
}

fn stored_media(m: &Value) -> Vec<Stored> {
    let Some(list) = m.get("media").and_then(Value::as_array) else {
        return Vec::new();
    };
    list.iter()
        .filter_map(|a| {
            let text = |k: &str| a.get(k).and_then(Value::as_str).map(str::to_string);
            let id = text("id")?;
            // Only what the store could have made (`GET /media/<id>` checks it too).
            let safe = id.len() == 64 && id.bytes().all(|b| b.is_ascii_hexdigit());
            safe.then(|| Stored {
                id,
                content_type: text("contentType").unwrap_or_default(),
                name: text("name"),
                size: a.get("size").and_then(Value::as_u64).unwrap_or(0),
            })
        })
        .collect()
}

/// Removes reply directives (`[[reply_to_current]]`, `[[reply_to:<id>]]`,
/// `[[audio_as_voice]]`) from displayed text.
pub fn strip_directives(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("[[") {
        let Some(len) = rest[start..].find("]]") else {
            break;
        };
        let inner = rest[start + 2..start + len].trim();
        let directive = inner == "reply_to_current"
            || inner == "audio_as_voice"
            || inner
                .strip_prefix("reply_to")
                .is_some_and(|r| r.trim_start().starts_with(':'));
        out.push_str(&rest[..start]);
        if !directive {
            out.push_str(&rest[start..start + len + 2]);
        }
        rest = &rest[start + len + 2..];
        if directive && (out.is_empty() || out.ends_with(' ')) {
            rest = rest.trim_start_matches(' ');
        }
    }
    out.push_str(rest);
    if out.len() != text.len() {
        out.trim().to_string()
    } else {
        out
    }
}

fn cap_chars(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}…[truncated]", &s[..i]),
        None => s.to_string(),
    }
}

/// One transcript message as `chat.history` shows it: directive tags
/// stripped from assistant text, text fields capped, inline image data
/// replaced by a note, and a message still over 128 KB replaced whole.
/// A stored image's block gets a signed `url` to its original, and the
/// message's other stored files are listed as OpenClaw's media facts
/// (`__openclaw.media`), so OpenClaw's Control UI shows them.
/// Returns it with its serialised size.
pub fn display_message(
    mut m: Value,
    max_chars: usize,
    links: &crate::media_links::MediaLinks,
) -> (Value, usize) {
    let assistant = m.get("role").and_then(Value::as_str) == Some("assistant");
    let stored = stored_media(&m);
    let mut shown_ids = Vec::new();
    if let Some(blocks) = m.get_mut("content").and_then(Value::as_array_mut) {
        for b in blocks.iter_mut() {
            if b.get("type").and_then(Value::as_str) == Some("image") {
                shown_ids.extend(image_block(b, &stored, links));
                continue;
            }
            for field in ["text", "thinking"] {
                if let Some(t) = b.get(field).and_then(Value::as_str) {
                    let t = if assistant && field == "text" {
                        strip_directives(t)
                    } else {
                        t.to_string()
                    };
                    b[field] = Value::String(cap_chars(&t, max_chars));
                }
            }
        }
    } else if let Some(t) = m.get("content").and_then(Value::as_str) {
        let t = if assistant {
            strip_directives(t)
        } else {
            t.to_string()
        };
        m["content"] = Value::String(cap_chars(&t, max_chars));
    }
    let facts = media_facts(&stored, &shown_ids, links);
    if !facts.is_empty() {
        if let Some(meta) = m.get_mut("__openclaw").and_then(Value::as_object_mut) {
            meta.insert("media".into(), Value::Array(facts));
        }
    }
    let size = serde_json::to_vec(&m).map(|v| v.len()).unwrap_or(0);
    if size > HISTORY_MESSAGE_BYTES {
        let role = m.get("role").cloned().unwrap_or(Value::Null);
        let ts = m.get("timestamp").cloned().unwrap_or(Value::Null);
        let note = json!({ "role": role, "timestamp": ts, "omitted": true,
            "content": [{ "type": "text", "text": format!("[message omitted from history: {size} bytes]") }] });
        let note_size = serde_json::to_vec(&note).map(|v| v.len()).unwrap_or(0);
        return (note, note_size);
    }
    (m, size)
}

/// An image block's data replaced by a note of its size; a stored one gets
/// the signed `url` of its original at `GET /media/<id>` (an `<img>` sends
/// no token). Returns its media id.
fn image_block(
    b: &mut Value,
    stored: &[Stored],
    links: &crate::media_links::MediaLinks,
) -> Option<String> {
    let id = b.get("mediaId").and_then(Value::as_str).map(str::to_string);
    let kept = id
        .as_deref()
        .and_then(|id| stored.iter().find(|s| s.id == id))
        .map(|s| s.size);
    let bytes = b
        .get("data")
        .and_then(Value::as_str)
        .map(|d| (d.len() / 4 * 3) as u64)
        .or(kept)
        .unwrap_or(0);
    let mime = b.get("mimeType").cloned().unwrap_or(Value::Null);
    *b = json!({ "type": "image", "mimeType": mime, "omitted": true, "bytes": bytes });
    let id = id?;
    b["url"] = json!(links.url(&id));
    b["mediaId"] = json!(id);
    Some(id)
}

/// The message's stored files not shown as image blocks, as OpenClaw's
/// media facts.
fn media_facts(
    stored: &[Stored],
    shown_ids: &[String],
    links: &crate::media_links::MediaLinks,
) -> Vec<Value> {
    stored
        .iter()
        .filter(|s| !shown_ids.contains(&s.id))
        .map(|s| {
            let mut fact = json!({ "url": links.url(&s.id), "contentType": s.content_type,
                "sizeBytes": s.size });
            if let Some(name) = &s.name {
                fact["fileName"] = json!(name);
            }
            fact
        })
        .collect()
}

/// A transcript entry's message as OpenClaw's clients see it: with
/// `__openclaw` naming its entry id, its idempotency key (a user message:
/// the `chat.send` key that sent it; a run's reply: the key its `chat`
/// final carried) and its 1-based position among the messages.
/// The Control UI matches its optimistic copy of a sent message by the key.
pub fn with_transcript_meta(entry: &Value, seq: Option<u64>) -> Option<Value> {
    let mut message = entry.get("message")?.clone();
    let obj = message.as_object_mut()?;
    let mut meta = serde_json::Map::new();
    if let Some(id) = entry.get("id").filter(|v| v.is_string()) {
        meta.insert("id".into(), id.clone());
    }
    let key = match obj.get("role").and_then(Value::as_str) {
        Some("user") => entry.get("messageId"),
        _ => obj.get("idempotencyKey"),
    };
    if let Some(key) = key.filter(|v| v.is_string()) {
        meta.insert("idempotencyKey".into(), key.clone());
    }
    if let Some(seq) = seq {
        meta.insert("seq".into(), json!(seq));
    }
    obj.insert("__openclaw".into(), Value::Object(meta));
    Some(message)
}
