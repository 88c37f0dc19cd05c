//! Telegram's `Outlet`: final texts go as HTML (from the model's markdown)
//! and, when Telegram refuses the entities, as plain text; previews go as
//! plain text; photos are fetched for the model. Every call takes its turn at the account's limiter. A new
//! message is never retried after an unknown outcome; edits and typing are.

use super::api::{BotApi, TgError};
use super::format;
use crate::channels::deliver::{Outlet, SendFailure, Target};
use crate::channels::sender::{CallError, Limiter};

impl TgOutlet {
    /// A text cut into messages Telegram takes.
    pub fn split_text(&self, text: &str) -> Vec<String> {
        format::split(text, self.chunk_limit)
    }

    /// A new message (with an inline keyboard when `rows` has buttons):
    /// as HTML when `formatted`, as plain text when Telegram refuses that.
    async fn send_rows(
        &self,
        to: &Target,
        text: &str,
        formatted: bool,
        reply_to: Option<&str>,
        rows: &[Vec<crate::questions::Button>],
    ) -> Result<String, SendFailure> {
        if formatted {
            let html = format::to_html(text);
            let first = self
                .limiter
                .call(false, || {
                    self.api.send_with_keyboard(to, &html, true, reply_to, rows)
                })
                .await;
            match first {
                Err(e) if plain_may_help(&e) => {
                    tracing::info!(error = %e, "telegram refused the formatted text: sent as plain text");
                }
                other => return other.map_err(SendFailure::of),
            }
        }
        self.limiter
            .call(false, || {
                self.api.send_with_keyboard(to, text, false, reply_to, rows)
            })
            .await
            .map_err(SendFailure::of)
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
        self.send_rows(to, text, formatted, reply_to, &[]).await
    }

    async fn send_buttons(
        &self,
        to: &Target,
        text: &str,
        formatted: bool,
        _key: &str,
        buttons: &[Vec<crate::questions::Button>],
    ) -> Result<String, SendFailure> {
        self.send_rows(to, text, formatted, None, buttons).await
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

    /// An upload: never retried by the limiter (a new message).
    async fn send_file(
        &self,
        to: &Target,
        file: &crate::media::MediaRef,
        caption: &str,
    ) -> Result<String, SendFailure> {
        self.limiter
            .call(false, || self.api.send_file(to, file, caption))
            .await
            .map_err(SendFailure::of)
    }

    fn split(&self, text: &str) -> Vec<String> {
        format::split(text, self.chunk_limit)
    }

    /// A voice note: Telegram's `sendVoice` (what `send_file` sends an
    /// Ogg file as); Signal's audio attachment.
    fn voice_notes(&self) -> bool {
        true
    }

    fn preview_limit(&self) -> usize {
        format::MAX_MESSAGE_CHARS - 96
    }

    /// A file's bytes (`getFile`, then its URL), at most `max`, in the
    /// account's turn at the limiter.
    async fn download(
        &self,
        file: &crate::channels::dispatch::MediaRef,
        max: u64,
    ) -> Result<Vec<u8>, crate::channels::error::DownloadError> {
        let max = max.min(self.media_max_bytes);
        self.limiter
            .call(true, || self.api.download(&file.id, max))
            .await
            .map_err(|e| match e.unknown_outcome() {
                true => "no answer".into(),
                false => e.to_string().into(),
            })
    }

    fn media_limit(&self) -> u64 {
        self.media_max_bytes
    }
}
