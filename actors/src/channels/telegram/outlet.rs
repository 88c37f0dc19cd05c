//! Telegram's `Outlet`: final texts go as HTML (from the model's markdown)
//! and, when Telegram refuses the entities, as plain text; previews go as
//! plain text. Every call takes its turn at the account's limiter. A new
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
}

#[derive(Clone)]
pub struct TgOutlet {
    pub api: BotApi,
    pub limiter: Limiter,
    pub chunk_limit: usize,
}

fn failure(e: TgError) -> SendFailure {
    SendFailure {
        unknown: e.unknown_outcome(),
        error: e.to_string(),
    }
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
                other => return other.map_err(failure),
            }
        }
        self.limiter
            .call(false, || self.api.send_message(to, text, false, reply_to))
            .await
            .map_err(failure)
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
                other => return other.map_err(failure),
            }
        }
        self.limiter
            .call(true, || self.api.edit_message(to, id, text, false))
            .await
            .map_err(failure)
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
            .map_err(failure)
    }

    fn split(&self, text: &str) -> Vec<String> {
        format::split(text, self.chunk_limit)
    }
}
