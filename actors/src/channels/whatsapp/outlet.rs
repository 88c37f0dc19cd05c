//! WhatsApp's `Outlet`: texts (quoting the message answered when asked),
//! reactions, media by link or by upload, and the typing indicator, which
//! the Cloud API shows by marking the customer's last message read. It
//! cannot edit or delete a message (a preview could never be finished:
//! replies go whole). Every call waits on the number's limiter; a new
//! message is never retried after an unknown outcome. When the 24-hour
//! customer service window is closed, free text is refused by Meta: the
//! chunk fails with that notice (never retried), and the configured
//! template, if any, is sent once per closed window so the customer can
//! reopen it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::api::{GraphApi, WaError};
use super::config::MAX_MESSAGE_CHARS;
use crate::channels::chunker::split;
use crate::channels::deliver::{Outlet, SendFailure, Target};
use crate::channels::sender::Buckets;
use crate::settings::WindowTemplate;

/// How long a template sent for a closed window stands for that chat.
const TEMPLATE_EVERY_MS: u64 = 24 * 3600 * 1000;

/// Bounds the chats a template time is kept for (a full map is cleared:
/// at worst one more template goes out).
const CHATS_MAX: usize = 10_000;

/// When a template was last sent for a closed window, per chat: the
/// outlet's own memory (only its sends read and write it; every clone of
/// one account's outlet shares it).
pub type TemplatesSent = Arc<Mutex<HashMap<String, u64>>>;

#[derive(Clone)]
pub struct WhatsAppOutlet {
    pub api: GraphApi,
    pub buckets: Buckets,
    pub chunk_limit: usize,
    pub media_max_bytes: u64,
    pub read_receipts: bool,
    pub template: Option<WindowTemplate>,
    pub templates_sent: TemplatesSent,
}

fn unsupported(what: &str) -> SendFailure {
    SendFailure {
        unknown: false,
        error: format!("WhatsApp's Cloud API cannot {what} a message"),
        retry_after_ms: None,
    }
}

/// The Cloud API's media type for a content type.
fn kind_of(content_type: &str) -> &'static str {
    match content_type.split('/').next().unwrap_or("") {
        "image" if matches!(content_type, "image/jpeg" | "image/png") => "image",
        "audio" => "audio",
        "video" => "video",
        _ => "document",
    }
}

impl WhatsAppOutlet {
    /// After Meta refused free text (131047): the template, once per
    /// window, and the chunk's failure saying what happened.
    async fn window_closed(&self, to: &Target) -> SendFailure {
        let mut error = WaError::WindowClosed.to_string();
        let Some(t) = &self.template else {
            return SendFailure {
                unknown: false,
                error,
                retry_after_ms: None,
            };
        };
        let now = crate::now_ms();
        let due = self.templates_sent.lock().is_ok_and(|mut at| {
            let last = at.get(&to.chat_id).copied().unwrap_or(0);
            let due = now.saturating_sub(last) >= TEMPLATE_EVERY_MS;
            if due {
                if at.len() >= CHATS_MAX {
                    at.clear();
                }
                at.insert(to.chat_id.clone(), now);
            }
            due
        });
        if due {
            let sent = self
                .buckets
                .get("messages")
                .call(false, || {
                    self.api.send_template(&to.chat_id, &t.name, &t.language)
                })
                .await;
            error = match sent {
                Ok(_) => format!("{error}; template {:?} sent instead", t.name),
                Err(e) => format!("{error}; template {:?} not sent: {e}", t.name),
            };
        }
        SendFailure {
            unknown: false,
            error,
            retry_after_ms: None,
        }
    }
}

impl Outlet for WhatsAppOutlet {
    async fn send(
        &self,
        to: &Target,
        text: &str,
        _formatted: bool,
        reply_to: Option<&str>,
    ) -> Result<String, SendFailure> {
        let sent = self
            .buckets
            .get("messages")
            .call(false, || self.api.send_text(&to.chat_id, text, reply_to))
            .await;
        match sent {
            Ok(id) => Ok(id),
            Err(WaError::WindowClosed) => Err(self.window_closed(to).await),
            Err(e) => Err(SendFailure::of(e)),
        }
    }

    async fn edit(&self, _: &Target, _: &str, _: &str, _: bool) -> Result<(), SendFailure> {
        Err(unsupported("edit"))
    }

    /// The typing indicator: the customer's last message marked read with
    /// it (nothing when `sendReadReceipts` is off).
    async fn typing(&self, to: &Target) {
        if !self.read_receipts {
            return;
        }
        if let Some(id) = &to.answering {
            let marked = self
                .buckets
                .get("messages")
                .call(true, || self.api.mark_read(id, true))
                .await;
            if let Err(e) = marked {
                tracing::debug!(error = %e, "whatsapp typing indicator not shown");
            }
        }
    }

    async fn react(
        &self,
        to: &Target,
        id: &str,
        emoji: &str,
        remove: bool,
    ) -> Result<(), SendFailure> {
        let emoji = if remove { "" } else { emoji.trim() };
        self.buckets
            .get("messages")
            .call(true, || self.api.react(&to.chat_id, id, emoji))
            .await
            .map_err(SendFailure::of)
    }

    async fn delete(&self, _: &Target, _: &str) -> Result<(), SendFailure> {
        Err(unsupported("delete"))
    }

    /// A link WhatsApp fetches: a picture when it names one, else a document.
    async fn send_media(
        &self,
        to: &Target,
        url: &str,
        caption: &str,
    ) -> Result<String, SendFailure> {
        let path = url
            .split(['?', '#'])
            .next()
            .unwrap_or(url)
            .to_ascii_lowercase();
        let kind = if [".jpg", ".jpeg", ".png"].iter().any(|e| path.ends_with(e)) {
            "image"
        } else {
            "document"
        };
        self.buckets
            .get("messages")
            .call(false, || {
                self.api
                    .send_media(&to.chat_id, kind, ("link", url), caption, None)
            })
            .await
            .map_err(SendFailure::of)
    }

    /// Uploaded to the number's media (may be tried again), then sent by id.
    async fn send_file(
        &self,
        to: &Target,
        file: &crate::media::MediaRef,
        caption: &str,
    ) -> Result<String, SendFailure> {
        self.upload_and_send(to, file, caption, kind_of(&file.content_type))
            .await
    }

    /// An Ogg/Opus voice note (`audio` with `voice: true`; the caption,
    /// which voice notes do not show, is left out); other audio as a file.
    async fn send_voice(
        &self,
        to: &Target,
        file: &crate::media::MediaRef,
        caption: &str,
    ) -> Result<String, SendFailure> {
        match file.content_type.as_str() {
            "audio/ogg" => self.upload_and_send(to, file, "", "voice").await,
            _ => self.send_file(to, file, caption).await,
        }
    }

    fn voice_notes(&self) -> bool {
        true
    }

    fn split(&self, text: &str) -> Vec<String> {
        split(text, self.chunk_limit.min(MAX_MESSAGE_CHARS))
    }

    fn preview_limit(&self) -> usize {
        0
    }

    async fn download(
        &self,
        file: &crate::channels::dispatch::MediaRef,
        max: u64,
    ) -> Result<Vec<u8>, crate::channels::error::DownloadError> {
        let max = max.min(self.media_max_bytes);
        self.api
            .download(&file.id, file.mime_type.as_deref(), max)
            .await
    }

    fn media_limit(&self) -> u64 {
        self.media_max_bytes
    }
}

impl WhatsAppOutlet {
    async fn upload_and_send(
        &self,
        to: &Target,
        file: &crate::media::MediaRef,
        caption: &str,
        kind: &str,
    ) -> Result<String, SendFailure> {
        let bytes = crate::channels::media_out::upload_bytes(file, self.media_max_bytes).await?;
        let name = file.file_name.clone().unwrap_or_else(|| "file".to_string());
        let media_id = self
            .buckets
            .get("media")
            .call(true, || {
                self.api.upload(bytes.clone(), &file.content_type, &name)
            })
            .await
            .map_err(SendFailure::of)?;
        self.buckets
            .get("messages")
            .call(false, || {
                self.api
                    .send_media(&to.chat_id, kind, ("id", &media_id), caption, Some(&name))
            })
            .await
            .map_err(SendFailure::of)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_go_as_the_media_type_whatsapp_takes() {
        assert_eq!(kind_of("image/png"), "image");
        assert_eq!(
            kind_of("image/webp"),
            "document",
            "not a photo type it takes"
        );
        assert_eq!(kind_of("audio/ogg"), "audio");
        assert_eq!(kind_of("video/mp4"), "video");
        assert_eq!(kind_of("application/pdf"), "document");
    }
}
