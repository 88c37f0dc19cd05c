//! `chat.send`'s attachments (OpenClaw's `{type, mimeType, fileName,
//! content}` with base64 content or a data URL): checked before anything
//! is stored (count, base64, size, type), then taken in like a channel's
//! (`media::take`): kept in the media store, images to a model that sees
//! them (described for one that does not), audio transcribed, documents
//! read into `[Document]` blocks.
//!
//! Trust: an operator's files (chat.send needs `operator.write`); what
//! they say is the operator's words.

use std::sync::Arc;

use base64::Engine;
use bytes::Bytes;
use ferroclaw_actors::inbound::{sanitize_text, SessionKey};
use ferroclaw_actors::media::{take, Intake, Loaded, MediaConfig, MediaKind, Taken};
use serde::Deserialize;
use serde_json::Value;

use super::params;
use crate::protocol::errors::ErrorShape;
use crate::state::SharedState;

/// Largest image attachment (decoded).
pub const MAX_IMAGE_BYTES: usize = 5 * 1024 * 1024;
/// Largest text attachment (decoded).
pub const MAX_TEXT_ATTACHMENT_BYTES: usize = 512 * 1024;
/// Largest audio, video or PDF attachment (decoded; the frame limit,
/// `gateway.maxPayload`, applies first).
pub const MAX_FILE_BYTES: usize = 20 * 1024 * 1024;
pub const MAX_ATTACHMENTS: usize = 16;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct AttachmentIn {
    #[serde(default, rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    mime_type: Option<String>,
    #[serde(default)]
    file_name: Option<String>,
    content: String,
}

/// One checked attachment: its bytes, type and name.
pub struct Checked {
    bytes: Vec<u8>,
    mime: String,
    name: String,
}

/// Checks every attachment; the first bad one refuses the message.
pub fn check(raw: &[Value]) -> Result<Vec<Checked>, ErrorShape> {
    if raw.len() > MAX_ATTACHMENTS {
        return Err(ErrorShape::invalid(format!(
            "too many attachments (max {MAX_ATTACHMENTS})"
        )));
    }
    raw.iter().enumerate().map(|(i, v)| one(i, v)).collect()
}

fn one(i: usize, v: &Value) -> Result<Checked, ErrorShape> {
    let a: AttachmentIn = params(&format!("chat.send attachment {i}"), v)?;
    let (data_mime, b64) = match a.content.strip_prefix("data:") {
        Some(rest) => match rest.split_once(";base64,") {
            Some((m, d)) => (Some(m.to_string()), d),
            None => {
                return Err(ErrorShape::invalid(format!(
                    "attachment {i}: data URL is not base64"
                )))
            }
        },
        None => (None, a.content.as_str()),
    };
    let cleaned: String = b64.chars().filter(|c| !c.is_whitespace()).collect();
    if cleaned.len() > MAX_FILE_BYTES.div_ceil(3) * 4 + 4 {
        return Err(ErrorShape::invalid(format!(
            "attachment {i}: larger than {} MB",
            MAX_FILE_BYTES >> 20
        )));
    }
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(&cleaned)
        .map_err(|e| {
            ErrorShape::invalid(format!("attachment {i}: content is not valid base64 ({e})"))
        })?;
    let mime = a
        .mime_type
        .or(data_mime)
        .or_else(|| (a.kind.as_deref() == Some("image")).then(|| "image/png".to_string()))
        .unwrap_or_else(|| "application/octet-stream".to_string())
        .to_ascii_lowercase();
    let name = a.file_name.unwrap_or_else(|| format!("attachment-{i}"));
    let (max, what) = match MediaKind::of(&mime) {
        MediaKind::Image => (MAX_IMAGE_BYTES, "image is larger than 5 MB"),
        MediaKind::Document if mime != "application/pdf" => {
            if std::str::from_utf8(&bytes).is_err() {
                return Err(ErrorShape::invalid(format!(
                    "attachment {i} ({name}): text is not UTF-8"
                )));
            }
            (MAX_TEXT_ATTACHMENT_BYTES, "text file is larger than 512 KB")
        }
        MediaKind::Document | MediaKind::Audio | MediaKind::Video => {
            (MAX_FILE_BYTES, "file is larger than 20 MB")
        }
        MediaKind::Other => {
            return Err(ErrorShape::invalid(format!(
                "attachment {i} ({name}): unsupported type {mime} (images, audio, video, PDFs and text files are accepted)"
            )))
        }
    };
    if bytes.len() > max {
        return Err(ErrorShape::invalid(format!(
            "attachment {i} ({name}): {what}"
        )));
    }
    Ok(Checked { bytes, mime, name })
}

/// Takes in the checked attachments (and the links) of a message to `key`
/// (its text is the caption; `trusted`: an operator's).
pub async fn take_in(
    state: &SharedState,
    key: &SessionKey,
    caption: &str,
    checked: Vec<Checked>,
    trusted: bool,
) -> Taken {
    let settings = state.live.settings();
    // The common case (no files, no `tools.links`) costs nothing more.
    if checked.is_empty() && !settings.tools.links.on() {
        return Taken::default();
    }
    let config = Arc::new(MediaConfig::from_settings(&settings, &state.gateway.env));
    if checked.is_empty() && config.links.is_none() {
        return Taken::default();
    }
    let items = checked
        .into_iter()
        .map(|c| {
            Ok(Loaded {
                bytes: Bytes::from(c.bytes),
                content_type: Some(c.mime),
                name: Some(c.name),
                url: None,
            })
        })
        .collect();
    let intake = Intake {
        store: Some(state.gateway.media.clone()),
        vision: config.reply.vision(None, key.agent_id()),
        config,
        caption: caption.to_string(),
        trusted,
    };
    take(&intake, items).await
}

/// What people see of the message when the session gets more than they
/// typed (documents' blocks, notes): the understood body or the message.
pub fn shown_with(text: &str, taken: &Taken) -> Option<String> {
    taken.note.as_ref().map(|_| {
        taken
            .heard
            .as_ref()
            .map_or_else(|| text.to_string(), |h| h.body.clone())
    })
}

/// The text the session gets: the understood body (or the message), then
/// the documents' blocks and the notes.
pub fn text_with(text: &str, taken: &Taken) -> String {
    let body = taken
        .heard
        .as_ref()
        .map_or_else(|| text.to_string(), |h| h.body.clone());
    match &taken.note {
        Some(n) if body.trim().is_empty() => sanitize_text(n),
        Some(n) => format!("{body}\n\n{}", sanitize_text(n)),
        None => body,
    }
}
