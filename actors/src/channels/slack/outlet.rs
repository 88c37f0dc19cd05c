//! Slack's `Outlet`: final texts go as a markdown block (Slack renders the
//! model's markdown) with the plain text as fallback, previews as plain
//! text, edits by `chat.update`. Each method has its own limiter
//! (`Buckets`: Slack rate-limits per method), and a new message is never
//! retried after an unknown outcome. Slack has no typing indicator for
//! bots outside assistant threads: typing shows nothing.

use super::api::{SlackError, WebApi};
use super::config::{ReplyToMode, MAX_MESSAGE_CHARS};
use crate::channels::chunker::split;
use crate::channels::deliver::{Outlet, SendFailure, Target};
use crate::channels::media_out::link_text;
use crate::channels::sender::Buckets;

#[derive(Clone)]
pub struct SlackOutlet {
    pub api: WebApi,
    pub buckets: Buckets,
    pub chunk_limit: usize,
    pub reply_to_mode: ReplyToMode,
    /// `mediaMaxMb` in bytes.
    pub media_max_bytes: u64,
}

/// Worth trying again without the markdown block.
fn plain_may_help(e: &SlackError) -> bool {
    matches!(e, SlackError::Refused(code) if code.contains("block"))
}

impl SlackOutlet {
    async fn post(
        &self,
        to: &Target,
        text: &str,
        formatted: bool,
        thread: Option<&str>,
    ) -> Result<String, SlackError> {
        let limiter = self.buckets.get("chat.postMessage");
        if formatted {
            let first = limiter
                .call(false, || {
                    self.api.post_message(&to.chat_id, text, thread, true)
                })
                .await;
            match first {
                Err(e) if plain_may_help(&e) => {
                    tracing::info!(error = %e, "slack refused the markdown block: sent as plain text");
                }
                other => return other,
            }
        }
        limiter
            .call(false, || {
                self.api.post_message(&to.chat_id, text, thread, false)
            })
            .await
    }
}

impl Outlet for SlackOutlet {
    async fn send(
        &self,
        to: &Target,
        text: &str,
        formatted: bool,
        reply_to: Option<&str>,
    ) -> Result<String, SendFailure> {
        let thread = to
            .thread_id
            .as_deref()
            .or(reply_to.filter(|_| self.reply_to_mode != ReplyToMode::Off));
        self.post(to, text, formatted, thread)
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
        let limiter = self.buckets.get("chat.update");
        if formatted {
            match limiter
                .call(true, || self.api.update(&to.chat_id, id, text, true))
                .await
            {
                Err(e) if plain_may_help(&e) => {
                    tracing::info!(error = %e, "slack refused the markdown edit: sent as plain text");
                }
                other => return other.map_err(SendFailure::of),
            }
        }
        limiter
            .call(true, || self.api.update(&to.chat_id, id, text, false))
            .await
            .map_err(SendFailure::of)
    }

    async fn typing(&self, _: &Target) {}

    async fn react(
        &self,
        to: &Target,
        id: &str,
        emoji: &str,
        remove: bool,
    ) -> Result<(), SendFailure> {
        // Slack names its emoji (`thumbsup`, `:thumbsup:`); a picture
        // character is not a name it knows.
        let name = emoji.trim().trim_matches(':');
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "_-+'".contains(c))
        {
            return Err(SendFailure {
                unknown: false,
                error: format!("slack reactions take an emoji name like thumbsup, not {emoji:?}"),
                retry_after_ms: None,
            });
        }
        let method = if remove {
            "reactions.remove"
        } else {
            "reactions.add"
        };
        self.buckets
            .get(method)
            .call(true, || self.api.react(&to.chat_id, id, name, remove))
            .await
            .map_err(SendFailure::of)
    }

    async fn delete(&self, to: &Target, id: &str) -> Result<(), SendFailure> {
        self.buckets
            .get("chat.delete")
            .call(true, || self.api.delete(&to.chat_id, id))
            .await
            .map_err(SendFailure::of)
    }

    async fn send_media(
        &self,
        to: &Target,
        url: &str,
        caption: &str,
    ) -> Result<String, SendFailure> {
        // Slack unfurls a link; uploading a file needs the files scopes.
        let text = link_text(url, caption);
        self.post(to, &text, false, to.thread_id.as_deref())
            .await
            .map_err(SendFailure::of)
    }

    fn split(&self, text: &str) -> Vec<String> {
        split(text, self.chunk_limit)
    }

    fn preview_limit(&self) -> usize {
        self.chunk_limit.min(MAX_MESSAGE_CHARS) - 96
    }

    /// An upload by Slack's external flow (`upload.rs`): the slot and the
    /// bytes may be tried again; sharing it (the new message) is not.
    async fn send_file(
        &self,
        to: &Target,
        file: &crate::media::MediaRef,
        caption: &str,
    ) -> Result<String, SendFailure> {
        let bytes = crate::channels::media_out::upload_bytes(file, u64::MAX).await?;
        let name = file.file_name.clone().unwrap_or_else(|| "file".to_string());
        let slot = self
            .buckets
            .get("files.getUploadURLExternal")
            .call(true, || self.api.upload_slot(&name, bytes.len() as u64))
            .await
            .map_err(SendFailure::of)?;
        self.api
            .upload_bytes(&slot, bytes)
            .await
            .map_err(SendFailure::of)?;
        let thread = to.thread_id.as_deref();
        self.buckets
            .get("files.completeUploadExternal")
            .call(false, || {
                self.api
                    .complete_upload(&slot, &name, &to.chat_id, caption, thread)
            })
            .await
            .map_err(SendFailure::of)
    }

    /// A shared file by its `url_private_download`, with the bot token.
    async fn download(
        &self,
        file: &crate::channels::dispatch::MediaRef,
        max: u64,
    ) -> Result<Vec<u8>, crate::channels::error::DownloadError> {
        let url = file.url.as_deref().ok_or("Slack gave no download URL")?;
        let max = max.min(self.media_max_bytes);
        self.api.download(url, file.mime_type.as_deref(), max).await
    }

    fn media_limit(&self) -> u64 {
        self.media_max_bytes
    }
}
