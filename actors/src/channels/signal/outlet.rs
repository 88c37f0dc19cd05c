//! Signal's `Outlet`, through signal-cli's JSON-RPC: texts (quoting the
//! message answered; sent plain when the quote is refused), edits of the
//! bot's own messages (`editTimestamp`: streamed previews), reactions,
//! remote deletes, typing, read receipts for direct chats, files as data
//! URIs (the daemon may run on another host), and attachments read from
//! signal-cli's data directory when it is on this host, else fetched with
//! `getAttachment`. A message is named by its timestamp; in a group by
//! `<timestamp>:<author>`, and a bare timestamp there is the bot's own.

use super::api::{SigError, SignalRpc};
use super::config::MAX_MESSAGE_CHARS;
use crate::channels::chunker::split;
use crate::channels::deliver::{Outlet, SendFailure, Target};
use crate::channels::media_out::link_text;
use crate::channels::sender::Limiter;

#[derive(Clone)]
pub struct SignalOutlet {
    pub rpc: SignalRpc,
    pub limiter: Limiter,
    pub number: String,
    pub chunk_limit: usize,
    pub media_max_bytes: u64,
    pub read_receipts: bool,
    pub attachments_dir: Option<String>,
}

impl SignalOutlet {
    /// A message id as (timestamp, author).
    fn about<'a>(&'a self, to: &'a Target, id: &'a str) -> (&'a str, &'a str) {
        match id.split_once(':') {
            Some((ts, author)) => (ts, author),
            None if to.chat_id.starts_with("group:") => (id, self.number.as_str()),
            None => (id, to.chat_id.as_str()),
        }
    }

    async fn send_text(
        &self,
        chat: &str,
        text: &str,
        quote: Option<(&str, &str)>,
    ) -> Result<String, SigError> {
        self.limiter
            .call(false, || self.rpc.send(chat, text, quote, None, &[]))
            .await
    }
}

impl Outlet for SignalOutlet {
    async fn send(
        &self,
        to: &Target,
        text: &str,
        _formatted: bool,
        reply_to: Option<&str>,
    ) -> Result<String, SendFailure> {
        let quote = reply_to.map(|id| self.about(to, id));
        match self.send_text(&to.chat_id, text, quote).await {
            // OpenClaw's fallback: a refused quote, sent as a plain message.
            Err(SigError::Refused(..)) if quote.is_some() => self
                .send_text(&to.chat_id, text, None)
                .await
                .map_err(SendFailure::of),
            r => r.map_err(SendFailure::of),
        }
    }

    async fn edit(&self, to: &Target, id: &str, text: &str, _: bool) -> Result<(), SendFailure> {
        let (ts, _) = self.about(to, id);
        self.limiter
            .call(true, || {
                self.rpc.send(&to.chat_id, text, None, Some(ts), &[])
            })
            .await
            .map(drop)
            .map_err(SendFailure::of)
    }

    async fn typing(&self, to: &Target) {
        if let Err(e) = self
            .limiter
            .call(true, || self.rpc.typing(&to.chat_id, false))
            .await
        {
            tracing::debug!(error = %e, "signal typing indicator not shown");
        }
    }

    /// A read receipt, in direct chats only.
    async fn mark_read(&self, to: &Target, id: &str) {
        if !self.read_receipts || to.chat_id.starts_with("group:") {
            return;
        }
        let sent = self
            .limiter
            .call(true, || self.rpc.read(&to.chat_id, id))
            .await;
        if let Err(e) = sent {
            tracing::debug!(error = %e, "signal read receipt not sent");
        }
    }

    async fn react(
        &self,
        to: &Target,
        id: &str,
        emoji: &str,
        remove: bool,
    ) -> Result<(), SendFailure> {
        let (ts, author) = self.about(to, id);
        self.limiter
            .call(true, || {
                self.rpc
                    .react(&to.chat_id, ts, author, emoji.trim(), remove)
            })
            .await
            .map_err(SendFailure::of)
    }

    async fn delete(&self, to: &Target, id: &str) -> Result<(), SendFailure> {
        let (ts, _) = self.about(to, id);
        self.limiter
            .call(true, || self.rpc.delete(&to.chat_id, ts))
            .await
            .map_err(SendFailure::of)
    }

    /// Signal cannot send a file by URL: the link goes as text.
    async fn send_media(
        &self,
        to: &Target,
        url: &str,
        caption: &str,
    ) -> Result<String, SendFailure> {
        self.send_text(&to.chat_id, &link_text(url, caption), None)
            .await
            .map_err(SendFailure::of)
    }

    async fn send_file(
        &self,
        to: &Target,
        file: &crate::media::MediaRef,
        caption: &str,
    ) -> Result<String, SendFailure> {
        use base64::Engine;
        let bytes = crate::channels::media_out::upload_bytes(file, self.media_max_bytes).await?;
        let name: String = file
            .file_name
            .clone()
            .unwrap_or_else(|| "file".into())
            .chars()
            .filter(|c| !matches!(c, ';' | ',' | '\n' | '\r'))
            .collect();
        let uri = format!(
            "data:{};filename={name};base64,{}",
            file.content_type,
            base64::engine::general_purpose::STANDARD.encode(&bytes)
        );
        let files = [uri];
        self.limiter
            .call(false, || {
                self.rpc.send(&to.chat_id, caption, None, None, &files)
            })
            .await
            .map_err(SendFailure::of)
    }

    fn split(&self, text: &str) -> Vec<String> {
        split(text, self.chunk_limit.min(MAX_MESSAGE_CHARS))
    }

    /// A voice note: Telegram's `sendVoice` (what `send_file` sends an
    /// Ogg file as); Signal's audio attachment.
    fn voice_notes(&self) -> bool {
        true
    }

    fn preview_limit(&self) -> usize {
        self.chunk_limit
    }

    async fn download(
        &self,
        file: &crate::channels::dispatch::MediaRef,
        max: u64,
    ) -> Result<Vec<u8>, crate::channels::error::DownloadError> {
        let max = max.min(self.media_max_bytes);
        if file.size.is_some_and(|s| s > max) {
            return Err(crate::channels::error::DownloadError::from(format!(
                "the attachment is over {max} bytes"
            )));
        }
        let name = std::path::Path::new(&file.id)
            .file_name()
            .and_then(|n| n.to_str())
            .filter(|n| *n == file.id)
            .ok_or_else(|| format!("attachment id {:?} is not a file name", file.id))?;
        if let Some(dir) = &self.attachments_dir {
            let path = std::path::Path::new(dir).join(name);
            if let Ok(meta) = tokio::fs::metadata(&path).await {
                if meta.len() > max {
                    return Err(crate::channels::error::DownloadError::from(format!(
                        "the attachment is over {max} bytes"
                    )));
                }
                return tokio::fs::read(&path)
                    .await
                    .map_err(|e| format!("attachment {name}: {e}").into());
            }
        }
        let bytes = self.rpc.attachment(name).await?;
        if bytes.len() as u64 > max {
            return Err(crate::channels::error::DownloadError::from(format!(
                "the attachment is over {max} bytes"
            )));
        }
        Ok(bytes)
    }

    fn media_limit(&self) -> u64 {
        self.media_max_bytes
    }
}
