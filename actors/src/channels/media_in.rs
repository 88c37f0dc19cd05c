//! An accepted message's attachments, the same way on every channel: each
//! downloaded once through its outlet (refused past the account's
//! `mediaMaxMb`), kept in the media store, then given to the model as what
//! it can use: images as image blocks; audio transcribed by `tools.media`
//! (the body becomes OpenClaw's `[Audio]` block, and command parsing sees
//! the transcript); anything else, or what could not be taken, as a note.
//!
//! Trust: what a file says is the sender's words; it follows the sender's
//! trust (a stranger's transcript is wrapped like a stranger's text).

use std::sync::Arc;

use base64::Engine;

use super::deliver::Outlet;
use super::dispatch::{DispatchDeps, Heard, Incoming, MediaRef, Taken};
use crate::media::{audio_body, MediaKind, PutMedia, UnderstandAudio};
use crate::provider::Image;

fn label(m: &MediaRef) -> String {
    format!(
        "{} ({}{})",
        m.name.clone().unwrap_or_else(|| "file".into()),
        m.mime_type
            .clone()
            .unwrap_or_else(|| crate::inbound::finalize::UNKNOWN_MEDIA.to_string()),
        m.size.map(|s| format!(", {s} bytes")).unwrap_or_default()
    )
}

/// Takes in `inc`'s attachments (`max`: the account's size limit).
pub async fn take_in<O: Outlet>(
    deps: &DispatchDeps,
    outlet: &O,
    inc: &Incoming,
    max: u64,
) -> Taken {
    let mut taken = Taken::default();
    let mut notes = Vec::new();
    let config = deps
        .policies
        .lock()
        .map(|p| p.media.clone())
        .unwrap_or_default();
    for m in &inc.media {
        if m.size.is_some_and(|s| s > max) {
            notes.push(format!(
                "[attachment not loaded: {} is larger than {max} bytes]",
                label(m)
            ));
            continue;
        }
        // Shared, not copied, between the store and the image block.
        let bytes = match outlet.download(m, max).await {
            Ok(b) => bytes::Bytes::from(b),
            Err(e) => {
                tracing::warn!(channel = %inc.channel, error = %e, "channel media not loaded");
                notes.push(format!("[attachment not loaded: {}: {e}]", label(m)));
                continue;
            }
        };
        let stored = match &deps.media {
            Some(store) => store
                .send(PutMedia {
                    bytes: bytes.clone(),
                    content_type: m.mime_type.clone(),
                    file_name: m.name.clone(),
                })
                .await
                .ok()
                .and_then(Result::ok),
            None => None,
        };
        let kind = stored
            .as_ref()
            .map(|s| s.kind)
            .unwrap_or_else(|| MediaKind::of(m.mime_type.as_deref().unwrap_or("")));
        match (kind, &stored, &deps.media) {
            (MediaKind::Image, s, _) => taken.images.push(Image {
                mime_type: s
                    .as_ref()
                    .map(|s| s.content_type.clone())
                    .or(m.mime_type.clone())
                    .unwrap_or_else(|| "image/jpeg".into()),
                data: base64::engine::general_purpose::STANDARD.encode(&bytes),
            }),
            // The first audio only (OpenClaw's `attachments.mode: "first"`);
            // later ones are named, not transcribed.
            (MediaKind::Audio, Some(s), Some(store))
                if taken.heard.is_none() && !config.audio_entries().is_empty() =>
            {
                let u = store
                    .send(UnderstandAudio {
                        media: s.clone(),
                        config: Arc::clone(&config),
                    })
                    .await
                    .unwrap_or_default();
                match u.text {
                    Some(t) => {
                        taken.heard = Some(Heard {
                            body: audio_body(&inc.text, &t),
                            commands: t,
                        })
                    }
                    _ => notes.push(format!(
                        "[audio: {} (not transcribed: {})]",
                        label(m),
                        u.attempts.join("; ")
                    )),
                }
            }
            _ => notes.push(format!("[attachment: {}]", label(m))),
        }
    }
    taken.note = (!notes.is_empty()).then(|| notes.join("\n"));
    taken
}
