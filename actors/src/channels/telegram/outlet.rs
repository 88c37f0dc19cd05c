//! Telegram's `Outlet`: final texts go as HTML (from the model's markdown)
//! and, when Telegram refuses the entities, as plain text; previews go as
//! plain text; photos are fetched for the model. Every call takes its turn at the account's limiter. A new
//! message is never retried after an unknown outcome; edits and typing are.

use base64::Engine;

use super::api::{BotApi, TgError};
use super::format;
use crate::channels::deliver::{Outlet, SendFailure, Target};
use crate::channels::dispatch::Incoming;
use crate::channels::sender::{CallError, Limiter};
use crate::provider::Image;

impl TgOutlet {
    /// A text cut into messages Telegram takes.
    pub fn split_text(&self, text: &str) -> Vec<String> {
        format::split(text, self.chunk_limit)
    }
}

#[derive(Clone)]
pub struct TgOutlet {
    pub api: BotApi,
    pub limiter: Limiter,
    pub chunk_limit: usize,
    /// Photos and documents larger than this are not downloaded.
    pub media_max_bytes: u64,
}

/// Worth trying again as plain text.
fn plain_may_help(e: &TgError) -> bool {
    matches!(e, TgError::Entities(_) | TgError::Refused { code: 400, .. })
}

impl Outlet for TgOutlet {
    async fn send(
        &self,
        to: &Target,
        text: &str,
        formatted: bool,
        reply_to: Option<&str>,
    ) -> Result<String, SendFailure> {
        if formatted {
            let html = format::to_html(text);
            let first = self
                .limiter
                .call(false, || self.api.send_message(to, &html, true, reply_to))
                .await;
            match first {
                Err(e) if plain_may_help(&e) => {
                    tracing::info!(error = %e, "telegram refused the formatted text: sent as plain text");
                }
                other => return other.map_err(SendFailure::of),
            }
        }
        self.limiter
            .call(false, || self.api.send_message(to, text, false, reply_to))
            .await
            .map_err(SendFailure::of)
    }

    async fn react(
        &self,
        to: &Target,
        id: &str,
        emoji: &str,
        remove: bool,
    ) -> Result<(), SendFailure> {
        // A bot has one reaction per message: removing sets none.
        let emoji = (!remove).then_some(emoji);
        self.limiter
            .call(true, || self.api.set_reaction(to, id, emoji))
            .await
            .map_err(SendFailure::of)
    }

    async fn delete(&self, to: &Target, id: &str) -> Result<(), SendFailure> {
        self.limiter
            .call(true, || self.api.delete_message(to, id))
            .await
            .map_err(SendFailure::of)
    }

    async fn edit(
        &self,
        to: &Target,
        id: &str,
        text: &str,
        formatted: bool,
    ) -> Result<(), SendFailure> {
        if formatted {
            let html = format::to_html(text);
            match self
                .limiter
                .call(true, || self.api.edit_message(to, id, &html, true))
                .await
            {
                Err(e) if plain_may_help(&e) => {
                    tracing::info!(error = %e, "telegram refused the formatted edit: sent as plain text");
                }
                other => return other.map_err(SendFailure::of),
            }
        }
        self.limiter
            .call(true, || self.api.edit_message(to, id, text, false))
            .await
            .map_err(SendFailure::of)
    }

    async fn typing(&self, to: &Target) {
        if let Err(e) = self.limiter.call(true, || self.api.typing(to)).await {
            tracing::debug!(error = %e, "typing indicator not shown");
        }
    }

    async fn send_media(
        &self,
        to: &Target,
        url: &str,
        caption: &str,
    ) -> Result<String, SendFailure> {
        self.limiter
            .call(false, || self.api.send_media(to, url, caption))
            .await
            .map_err(SendFailure::of)
    }

    fn split(&self, text: &str) -> Vec<String> {
        format::split(text, self.chunk_limit)
    }

    fn preview_limit(&self) -> usize {
        format::MAX_MESSAGE_CHARS - 96
    }

    /// Photos and image documents for the model (size-capped); other files
    /// and refused ones as a note in the text.
    async fn fetch_media(&self, inc: &Incoming) -> (Vec<Image>, Option<String>) {
        let mut images = Vec::new();
        let mut notes = Vec::new();
        for m in &inc.media {
            let mime = m
                .mime_type
                .clone()
                .unwrap_or_else(|| crate::inbound::finalize::UNKNOWN_MEDIA.to_string());
            let label = m.name.clone().unwrap_or_else(|| "file".to_string());
            if !mime.starts_with("image/") {
                notes.push(format!(
                    "[attachment: {label} ({mime}{})]",
                    m.size.map(|s| format!(", {s} bytes")).unwrap_or_default()
                ));
                continue;
            }
            if m.size.is_some_and(|s| s > self.media_max_bytes) {
                notes.push(format!(
                    "[image not loaded: larger than {} bytes]",
                    self.media_max_bytes
                ));
                continue;
            }
            let got = self
                .limiter
                .call(true, || self.api.download(&m.id, self.media_max_bytes))
                .await;
            match got {
                Ok(bytes) => images.push(Image {
                    mime_type: mime,
                    data: base64::engine::general_purpose::STANDARD.encode(bytes),
                }),
                Err(e) => {
                    tracing::warn!(channel = "telegram", error = %e, "telegram media not loaded");
                    notes.push(format!(
                        "[image not loaded: {}]",
                        if e.unknown_outcome() {
                            "no answer"
                        } else {
                            "refused"
                        }
                    ));
                }
            }
        }
        (images, (!notes.is_empty()).then(|| notes.join("\n")))
    }
}
