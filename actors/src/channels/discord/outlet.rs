//! Discord's `Outlet`: messages created and edited by REST (Discord
//! renders markdown itself), typing, 2,000-character chunks. Each route
//! has its own limiter (`Buckets`, keyed by method and channel: Discord's
//! per-route buckets); a global 429 also closes the shared global gate
//! every call waits on. A new message is never retried after an unknown
//! outcome.

use std::future::Future;

use super::api::{DiscordError, RestApi};
use super::config::MAX_MESSAGE_CHARS;
use crate::channels::chunker::split;
use crate::channels::deliver::{Outlet, SendFailure, Target};
use crate::channels::keys::ReplyToMode;
use crate::channels::media_out::link_text;
use crate::channels::sender::{Buckets, Limiter};

#[derive(Clone)]
pub struct DiscordOutlet {
    pub api: RestApi,
    pub buckets: Buckets,
    /// Closed by a global 429.
    pub global: Limiter,
    pub chunk_limit: usize,
    pub reply_to_mode: ReplyToMode,
    /// `mediaMaxMb` in bytes.
    pub media_max_bytes: u64,
}

impl DiscordOutlet {
    /// Runs `op` on `route`'s limiter, after the global gate.
    pub async fn call<T, F, Fut>(
        &self,
        route: &str,
        idempotent: bool,
        mut op: F,
    ) -> Result<T, DiscordError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, DiscordError>>,
    {
        self.global.open().await;
        let global = self.global.clone();
        self.buckets
            .get(route)
            .call(idempotent, || {
                let fut = op();
                let global = global.clone();
                async move {
                    let r = fut.await;
                    if let Err(e @ DiscordError::RateLimited { global: true, .. }) = &r {
                        global.record(Err(e));
                    }
                    r
                }
            })
            .await
    }
}

impl Outlet for DiscordOutlet {
    async fn send(
        &self,
        to: &Target,
        text: &str,
        _formatted: bool,
        reply_to: Option<&str>,
    ) -> Result<String, SendFailure> {
        let reply = reply_to.filter(|_| self.reply_to_mode != ReplyToMode::Off);
        let route = format!("POST /channels/{}/messages", to.chat_id);
        self.call(&route, false, || {
            self.api.create_message(&to.chat_id, text, reply)
        })
        .await
        .map_err(SendFailure::of)
    }

    async fn edit(
        &self,
        to: &Target,
        id: &str,
        text: &str,
        _formatted: bool,
    ) -> Result<(), SendFailure> {
        let route = format!("PATCH /channels/{}/messages", to.chat_id);
        self.call(&route, true, || {
            self.api.edit_message(&to.chat_id, id, text)
        })
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
        let route = format!("PUT /channels/{}/messages/reactions", to.chat_id);
        self.call(&route, true, || {
            self.api.react(&to.chat_id, id, emoji.trim(), remove)
        })
        .await
        .map_err(SendFailure::of)
    }

    async fn delete(&self, to: &Target, id: &str) -> Result<(), SendFailure> {
        let route = format!("DELETE /channels/{}/messages", to.chat_id);
        self.call(&route, true, || self.api.delete_message(&to.chat_id, id))
            .await
            .map_err(SendFailure::of)
    }

    async fn typing(&self, to: &Target) {
        let route = format!("POST /channels/{}/typing", to.chat_id);
        if let Err(e) = self
            .call(&route, true, || self.api.typing(&to.chat_id))
            .await
        {
            tracing::debug!(error = %e, "discord typing not shown");
        }
    }

    async fn send_media(
        &self,
        to: &Target,
        url: &str,
        caption: &str,
    ) -> Result<String, SendFailure> {
        // Discord embeds a link; attaching a file needs a multipart upload.
        let text = link_text(url, caption);
        self.send(to, &text, false, None).await
    }

    /// An upload as a message attachment (the channel's message route).
    async fn send_file(
        &self,
        to: &Target,
        file: &crate::media::MediaRef,
        caption: &str,
    ) -> Result<String, SendFailure> {
        let route = format!("POST /channels/{}/messages", to.chat_id);
        self.call(&route, false, || {
            self.api.send_file(&to.chat_id, file, caption)
        })
        .await
        .map_err(SendFailure::of)
    }

    fn split(&self, text: &str) -> Vec<String> {
        split(text, self.chunk_limit)
    }

    fn preview_limit(&self) -> usize {
        self.chunk_limit.min(MAX_MESSAGE_CHARS) - 96
    }

    /// An attachment from its CDN URL.
    async fn download(
        &self,
        file: &crate::channels::dispatch::MediaRef,
        max: u64,
    ) -> Result<Vec<u8>, crate::channels::error::DownloadError> {
        let url = file
            .url
            .as_deref()
            .ok_or("Discord gave no attachment URL")?;
        self.api.download(url, max.min(self.media_max_bytes)).await
    }

    fn media_limit(&self) -> u64 {
        self.media_max_bytes
    }
}
