//! Session transcripts: one entry per OpenClaw JSONL line (`session`,
//! `model_change`, `thinking_level_change`, `message` with role `user`,
//! `assistant` or `toolResult`, `custom`...), kept as JSON objects so fields
//! this build does not know survive an import/export round trip. Stored in
//! the `transcripts` tree under `<sessionId>\0<time-ordered id>`. OpenClaw's
//! `<sessionId>.jsonl` comes in line by line through `each_jsonl` (checked;
//! `migrate` streams it into the store) and goes out in pages (`page`, for
//! `sessions.export`). `entry.rs` is the typed view every reader uses.

pub mod build;
mod entry;
pub mod written;
pub use entry::{id_of, mark_pending, Entry, Role};

use std::io::BufRead;

use serde_json::{json, Value};

use crate::store::{composite_key, time_ordered_id, Store, StoreError, StoreWrite, Tree};

/// The `session` header version written by OpenClaw's runtime.
pub const SESSION_VERSION: u64 = 3;

#[derive(Debug, thiserror::Error)]
pub enum TranscriptError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("line {line}: {message}")]
    BadLine { line: usize, message: String },
    #[error("cannot read or write the JSONL: {0}")]
    Io(#[from] std::io::Error),
    #[error("session id {0:?} is not usable as a key")]
    BadSessionId(String),
    #[error("the session stopped before it answered")]
    Stopped,
}

fn iso_now() -> String {
    iso_from_ms(crate::now_ms())
}

/// RFC 3339 UTC with milliseconds (civil-from-days; no date crate needed).
fn iso_from_ms(ms: u64) -> String {
    let (secs, millis) = (ms / 1000, ms % 1000);
    let days = secs / 86_400;
    let rem = secs % 86_400;
    let (h, m, s) = (rem / 3600, (rem % 3600) / 60, rem % 60);
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let mo = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(mo <= 2);
    format!("{y:04}-{mo:02}-{d:02}T{h:02}:{m:02}:{s:02}.{millis:03}Z")
}

fn short_id() -> String {
    let id = time_ordered_id();
    id[id.len() - 8..].to_string()
}

/// The `session` header entry.
pub fn session_header(session_id: &str, cwd: &str) -> Value {
    json!({ "type": "session", "version": SESSION_VERSION, "id": session_id, "timestamp": iso_now(), "cwd": cwd })
}

/// A `message` entry wrapping an agent message (`role`, `content`, ...).
pub fn message_entry(parent_id: Option<&str>, mut message: Value) -> Value {
    if message.get("timestamp").is_none() {
        message["timestamp"] = json!(crate::now_ms());
    }
    json!({ "type": "message", "id": short_id(), "parentId": parent_id, "timestamp": iso_now(), "message": message })
}

/// A user message in OpenClaw's shape.
/// The idempotency key a run's reply carries in the transcript (the
/// message's `idempotencyKey`, as OpenClaw stores it) and in its `chat`
/// final event (`__openclaw.idempotencyKey`): how a client that streamed
/// the reply knows the stored message is the same one.
pub fn reply_key(run_id: &str) -> String {
    format!("{run_id}:reply")
}

pub fn user_message(text: &str) -> Value {
    json!({ "role": "user", "content": [{ "type": "text", "text": text }] })
}

/// Why a line is not an entry we can store.
#[derive(Debug, thiserror::Error)]
enum BadEntry {
    #[error("not a JSON object")]
    NotObject,
    #[error("missing \"type\"")]
    NoType,
    #[error("message entry without message.role")]
    NoRole,
}

/// Checks that a line is an entry we can store: an object with a string `type`.
fn validate(v: &Value) -> Result<(), BadEntry> {
    let Some(obj) = v.as_object() else {
        return Err(BadEntry::NotObject);
    };
    match obj.get("type") {
        Some(Value::String(t)) if !t.is_empty() => {}
        _ => return Err(BadEntry::NoType),
    }
    if obj.get("type").and_then(Value::as_str) == Some("message") {
        let role = obj
            .get("message")
            .and_then(|m| m.get("role"))
            .and_then(Value::as_str);
        if role.is_none() {
            return Err(BadEntry::NoRole);
        }
    }
    Ok(())
}

fn check_session_id(session_id: &str) -> Result<(), TranscriptError> {
    if session_id.is_empty() || session_id.contains('\0') || session_id.len() > 256 {
        return Err(TranscriptError::BadSessionId(session_id.to_string()));
    }
    Ok(())
}

fn prefix(session_id: &str) -> String {
    composite_key(session_id, "")
}

/// Checks every entry; the first bad one is the error, numbered from 1.
fn validate_all(entries: &[Value]) -> Result<(), TranscriptError> {
    for (i, e) in entries.iter().enumerate() {
        validate(e).map_err(|e| TranscriptError::BadLine {
            line: i + 1,
            message: e.to_string(),
        })?;
    }
    Ok(())
}

/// Appends entries (atomically, in order). The caller flushes at its durability point.
pub fn append(store: &Store, session_id: &str, entries: &[Value]) -> Result<(), TranscriptError> {
    check_session_id(session_id)?;
    validate_all(entries)?;
    let items: Vec<(String, &Value)> = entries
        .iter()
        .map(|e| (composite_key(session_id, &time_ordered_id()), e))
        .collect();
    store.put_batch(Tree::Transcripts, &items)?;
    Ok(())
}

/// The writes that append `entries` (in order), for a `Store::commit`
/// with other trees.
pub fn entry_writes(
    session_id: &str,
    entries: &[Value],
) -> Result<Vec<StoreWrite>, TranscriptError> {
    check_session_id(session_id)?;
    validate_all(entries)?;
    Ok(entries
        .iter()
        .map(|e| {
            (
                Tree::Transcripts,
                composite_key(session_id, &time_ordered_id()),
                Some(e.clone()),
            )
        })
        .collect())
}

/// Every entry of a session, oldest first.
pub fn entries(store: &Store, session_id: &str) -> Result<Vec<Value>, TranscriptError> {
    check_session_id(session_id)?;
    Ok(store
        .scan::<Value>(Tree::Transcripts, &prefix(session_id))?
        .into_iter()
        .map(|(_, v)| v)
        .collect())
}

/// Removes a session's transcript; returns how many entries went.
pub fn delete(store: &Store, session_id: &str) -> Result<usize, TranscriptError> {
    check_session_id(session_id)?;
    let keys: Vec<String> = store
        .scan::<Value>(Tree::Transcripts, &prefix(session_id))?
        .into_iter()
        .map(|(k, _)| k)
        .collect();
    for k in &keys {
        store.remove(Tree::Transcripts, k)?;
    }
    Ok(keys.len())
}

/// Streams OpenClaw JSONL: each entry, checked, to `f`, one line at a time
/// (blank lines skipped). The first bad line is the error, with its number;
/// an error from `f` stops the stream. Returns how many entries there were.
pub fn each_jsonl(
    input: impl BufRead,
    mut f: impl FnMut(Value) -> Result<(), TranscriptError>,
) -> Result<usize, TranscriptError> {
    let mut n = 0;
    for (i, line) in input.lines().enumerate() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let v: Value = serde_json::from_str(&line).map_err(|e| TranscriptError::BadLine {
            line: i + 1,
            message: e.to_string(),
        })?;
        validate(&v).map_err(|e| TranscriptError::BadLine {
            line: i + 1,
            message: e.to_string(),
        })?;
        f(v)?;
        n += 1;
    }
    Ok(n)
}

/// One page of a transcript for export: the entries after `after` (the
/// cursor a previous page returned), about `max_bytes` of them (at least
/// one), and the cursor to continue from when more follow.
pub fn page(
    store: &Store,
    session_id: &str,
    after: Option<&str>,
    max_bytes: usize,
) -> Result<(Vec<Value>, Option<String>), TranscriptError> {
    check_session_id(session_id)?;
    let prefix = prefix(session_id);
    let after = after.map(|a| composite_key(session_id, a));
    let (items, next) =
        store.scan_page::<Value>(Tree::Transcripts, &prefix, after.as_deref(), max_bytes)?;
    // The cursor is the entry part of the key: it cannot name another session.
    let next = next.and_then(|k| k.strip_prefix(prefix.as_str()).map(str::to_string));
    Ok((items.into_iter().map(|(_, v)| v).collect(), next))
}

/// The store writes that remove a session's transcript (for a commit).
pub fn removals_for(store: &Store, session_id: &str) -> Result<Vec<StoreWrite>, TranscriptError> {
    check_session_id(session_id)?;
    Ok(store
        .scan::<Value>(Tree::Transcripts, &prefix(session_id))?
        .into_iter()
        .map(|(k, _)| (Tree::Transcripts, k, None))
        .collect())
}

/// A conversation message in OpenClaw's transcript shape.
pub fn from_chat(m: &crate::provider::ChatMessage) -> Value {
    use crate::provider::MessageRole;
    match m.role {
        MessageRole::User => {
            let mut msg = user_message(&m.text);
            if let Some(content) = msg.get_mut("content").and_then(Value::as_array_mut) {
                content.extend(m.images.iter().map(image_block));
            }
            msg
        }
        MessageRole::Assistant => {
            let mut content = Vec::new();
            if !m.text.is_empty() {
                content.push(json!({ "type": "text", "text": m.text }));
            }
            for c in &m.tool_calls {
                content.push(json!({ "type": "toolCall", "id": c.id, "name": c.name, "arguments": c.arguments }));
            }
            json!({ "role": "assistant", "content": content })
        }
        MessageRole::Tool => {
            let mut content = vec![json!({ "type": "text", "text": m.text })];
            content.extend(m.images.iter().map(image_block));
            json!({
                "role": "toolResult",
                "toolCallId": m.tool_call_id.clone().unwrap_or_default(),
                "content": content,
                "isError": m.is_error,
            })
        }
    }
}

/// An image as a transcript block: a stored one by its id (the bytes stay
/// in the media store), else inline.
fn image_block(img: &crate::provider::Image) -> Value {
    match &img.media_id {
        Some(id) => json!({ "type": "image", "mimeType": img.mime_type, "mediaId": id }),
        None => json!({ "type": "image", "data": img.data, "mimeType": img.mime_type }),
    }
}

/// The image blocks of a message's content.
fn images_of(msg: &Value) -> Vec<crate::provider::Image> {
    msg.get("content")
        .and_then(Value::as_array)
        .map(|blocks| {
            blocks
                .iter()
                .filter(|b| b.get("type").and_then(Value::as_str) == Some("image"))
                .filter_map(|b| {
                    let text = |k: &str| b.get(k).and_then(Value::as_str);
                    let media_id = text("mediaId").map(str::to_string);
                    let data = match (text("data"), &media_id) {
                        // By reference: loaded by the run that sends it.
                        (_, Some(_)) => String::new(),
                        (Some(d), None) => d.to_string(),
                        (None, None) => return None,
                    };
                    Some(crate::provider::Image {
                        mime_type: text("mimeType")?.to_string(),
                        data,
                        media_id,
                    })
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The `toolCall` blocks of an assistant message, as calls.
fn tool_calls_of(msg: &Value) -> Vec<crate::provider::ToolCall> {
    let text = |b: &Value, k: &str| b.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    msg.get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|b| b.get("type").and_then(Value::as_str) == Some("toolCall"))
        .map(|b| crate::provider::ToolCall {
            id: text(b, "id"),
            name: text(b, "name"),
            arguments: b.get("arguments").cloned().unwrap_or(Value::Null),
        })
        .collect()
}

/// The conversation message of a `message` entry (other entries: None).
pub fn to_chat(entry: &Value) -> Option<crate::provider::ChatMessage> {
    use crate::provider::{ChatMessage, MessageRole};
    let Entry::Message {
        role, message: msg, ..
    } = Entry::of(entry)
    else {
        return None;
    };
    let text = message_text(entry).unwrap_or_default();
    match role {
        Role::User => {
            // What the model saw (timestamp envelope, inline directives
            // removed) when it differs from the text people see.
            let text = msg
                .get("bodyForAgent")
                .and_then(Value::as_str)
                .map(str::to_string)
                .unwrap_or(text);
            let mut m = ChatMessage::user(&text);
            m.images = images_of(msg);
            Some(m)
        }
        Role::Assistant => Some(ChatMessage {
            role: MessageRole::Assistant,
            text,
            tool_calls: tool_calls_of(msg),
            tool_call_id: None,
            is_error: false,
            images: Vec::new(),
        }),
        Role::ToolResult => {
            let id = msg.get("toolCallId").and_then(Value::as_str).unwrap_or("");
            let is_error = msg.get("isError").and_then(Value::as_bool).unwrap_or(false);
            let mut m = ChatMessage::tool_result(id, &text, is_error);
            m.images = images_of(msg);
            Some(m)
        }
        _ => None,
    }
}

/// The text of a message entry's content blocks (for previews and tests).
pub fn message_text(entry: &Value) -> Option<String> {
    let content = entry.get("message")?.get("content")?;
    let text = match content {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(""),
        _ => return None,
    };
    Some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    const OPENCLAW_JSONL: &str = r#"{"type":"session","version":3,"id":"9f1c","timestamp":"2026-02-06T07:49:00.000Z","cwd":"/home/u/.openclaw/workspace"}
{"type":"model_change","id":"a1","parentId":null,"timestamp":"2026-02-06T07:49:01.000Z","provider":"anthropic","modelId":"claude-sonnet-4-6"}
{"type":"message","id":"b1","parentId":"a1","timestamp":"2026-02-06T07:49:02.000Z","message":{"role":"user","content":[{"type":"text","text":"list files"}],"timestamp":1770364142000}}
{"type":"message","id":"b2","parentId":"b1","timestamp":"2026-02-06T07:49:03.000Z","message":{"role":"assistant","content":[{"type":"thinking","thinking":"use exec"},{"type":"toolCall","id":"t1","name":"exec","arguments":{"command":"ls"}}],"provider":"anthropic","model":"claude-sonnet-4-6","usage":{"input":10,"output":5},"stopReason":"toolUse","timestamp":1770364143000}}

{"type":"message","id":"b3","parentId":"b2","timestamp":"2026-02-06T07:49:04.000Z","message":{"role":"toolResult","toolCallId":"t1","toolName":"exec","content":[{"type":"text","text":"a.txt"}],"isError":false,"timestamp":1770364144000}}
{"type":"custom","customType":"cache-ttl","data":{"ttl":300},"id":"c1","parentId":"b3","timestamp":"2026-02-06T07:49:05.000Z"}
"#;

    /// Reads JSONL the way an import does: every line checked, then stored.
    fn import(store: &Store, id: &str, text: &str) -> Result<usize, TranscriptError> {
        let mut lines = Vec::new();
        let n = each_jsonl(text.as_bytes(), |v| {
            lines.push(v);
            Ok(())
        })?;
        append(store, id, &lines)?;
        Ok(n)
    }

    #[test]
    fn openclaw_jsonl_round_trips_with_unknown_fields_intact() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        assert_eq!(import(&store, "9f1c", OPENCLAW_JSONL).unwrap(), 6);
        // Out again in small pages, as `sessions.export` reads it.
        let (mut got, mut cursor) = (Vec::new(), None::<String>);
        loop {
            let (page, next) = page(&store, "9f1c", cursor.as_deref(), 200).unwrap();
            got.extend(page);
            match next {
                Some(c) => cursor = Some(c),
                None => break,
            }
        }
        let want: Vec<Value> = OPENCLAW_JSONL
            .lines()
            .filter(|l| !l.is_empty())
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(got, want);
        assert_eq!(message_text(&got[2]).as_deref(), Some("list files"));
    }

    #[test]
    fn a_bad_line_refuses_the_whole_import() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let bad = format!("{OPENCLAW_JSONL}{{\"type\":\"message\",\"message\":{{}}}}\n");
        match import(&store, "s", &bad) {
            Err(TranscriptError::BadLine { line: 8, message }) => {
                assert!(message.contains("role"), "{message}")
            }
            other => panic!("{other:?}"),
        }
        assert!(
            entries(&store, "s").unwrap().is_empty(),
            "nothing half-written"
        );
        assert!(matches!(
            import(&store, "s", "not json\n"),
            Err(TranscriptError::BadLine { line: 1, .. })
        ));
        assert!(matches!(
            append(&store, "a\0b", &[]),
            Err(TranscriptError::BadSessionId(_))
        ));
    }

    #[test]
    fn sessions_are_kept_apart_in_order_and_deletable() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        append(&store, "s1", &[session_header("s1", "/w")]).unwrap();
        for i in 0..50 {
            let e = message_entry(None, user_message(&format!("m{i}")));
            append(&store, if i % 2 == 0 { "s1" } else { "s10" }, &[e]).unwrap();
        }
        let s1 = entries(&store, "s1").unwrap();
        assert_eq!(s1.len(), 26, "s10 entries do not leak into s1");
        let texts: Vec<String> = s1[1..].iter().filter_map(message_text).collect();
        let want: Vec<String> = (0..50).step_by(2).map(|i| format!("m{i}")).collect();
        assert_eq!(texts, want);
        assert_eq!(delete(&store, "s1").unwrap(), 26);
        assert!(entries(&store, "s1").unwrap().is_empty());
        assert_eq!(entries(&store, "s10").unwrap().len(), 25);
    }

    #[test]
    fn chat_messages_convert_both_ways() {
        use crate::provider::{ChatMessage, MessageRole, ToolCall};
        let msgs = vec![
            ChatMessage::user("hi"),
            ChatMessage {
                role: MessageRole::Assistant,
                text: "running".into(),
                tool_calls: vec![ToolCall {
                    id: "t1".into(),
                    name: "exec".into(),
                    arguments: json!({"command": "ls"}),
                }],
                tool_call_id: None,
                is_error: false,
                images: Vec::new(),
            },
            ChatMessage::tool_result("t1", "a.txt", false),
        ];
        for m in &msgs {
            let entry = message_entry(None, from_chat(m));
            assert_eq!(to_chat(&entry).as_ref(), Some(m));
        }
        assert_eq!(to_chat(&session_header("s", "/")), None);
    }

    #[test]
    fn timestamps_are_rfc3339_utc() {
        let t = iso_now();
        assert_eq!(t.len(), 24, "{t}");
        assert!(t.ends_with('Z') && t.as_bytes()[10] == b'T', "{t}");
        assert!(t.starts_with("20"), "{t}");
        assert_eq!(iso_from_ms(1_770_364_143_489), "2026-02-06T07:49:03.489Z");
        assert_eq!(iso_from_ms(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso_from_ms(951_782_400_000), "2000-02-29T00:00:00.000Z");
    }
}
