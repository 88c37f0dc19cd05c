//! Matrix's `Outlet`: a reply chunk is `PUT` with its outbox key as the
//! txnId, so a send repeated after an unknown outcome (a timeout, a crash
//! between the request and its record) is the same event: the homeserver
//! answers the repeat with the first event's id. Replies go in the thread
//! of the message answered (`m.thread`, falling back to a reply for older
//! clients) or as a reply (`m.in_reply_to`) in groups; previews are
//! edited with `m.replace`; typing and the read marker (on the message
//! being answered) while the agent works; reactions are `m.annotation`s,
//! deletes redactions; files go up to the media repository.

use serde_json::{json, Value};

use super::api::{MatrixApi, MxError};
use super::config::MAX_MESSAGE_CHARS;
use crate::channels::chunker::split;
use crate::channels::deliver::{Outlet, SendFailure, Target};
use crate::channels::media_out::link_text;
use crate::channels::sender::Limiter;

#[derive(Clone)]
pub struct MatrixOutlet {
    pub api: MatrixApi,
    pub limiter: Limiter,
    pub user_id: String,
    pub chunk_limit: usize,
    pub media_max_bytes: u64,
    pub read_markers: bool,
    /// threadReplies "always": a reply starts a thread under the message.
    pub thread_always: bool,
}

fn txn() -> String {
    format!("fc{}", ulid::Ulid::generate())
}

fn relation(to: &Target, reply_to: Option<&str>, thread_always: bool) -> Option<Value> {
    match (&to.thread_id, reply_to) {
        (None, Some(r)) if thread_always => Some(json!({ "rel_type": "m.thread", "event_id": r,
            "is_falling_back": true, "m.in_reply_to": { "event_id": r } })),
        (Some(root), r) => Some(json!({ "rel_type": "m.thread", "event_id": root,
            "is_falling_back": r.is_none(),
            "m.in_reply_to": { "event_id": r.unwrap_or(root) } })),
        (None, Some(r)) => Some(json!({ "m.in_reply_to": { "event_id": r } })),
        (None, None) => None,
    }
}

fn media_kind(content_type: &str) -> &'static str {
    match content_type.split('/').next().unwrap_or("") {
        "image" => "m.image",
        "audio" => "m.audio",
        "video" => "m.video",
        _ => "m.file",
    }
}

impl MatrixOutlet {
    async fn put(
        &self,
        room: &str,
        kind: &str,
        txn: &str,
        content: &Value,
    ) -> Result<String, MxError> {
        // Idempotent: the txnId makes a repeat the same event.
        self.limiter
            .call(true, || self.api.send(room, kind, txn, content))
            .await
    }
}

impl Outlet for MatrixOutlet {
    async fn send(
        &self,
        to: &Target,
        text: &str,
        formatted: bool,
        reply_to: Option<&str>,
    ) -> Result<String, SendFailure> {
        self.send_keyed(to, text, formatted, reply_to, &txn()).await
    }

    async fn send_keyed(
        &self,
        to: &Target,
        text: &str,
        _formatted: bool,
        reply_to: Option<&str>,
        key: &str,
    ) -> Result<String, SendFailure> {
        let mut content = json!({ "msgtype": "m.text", "body": text });
        if let Some(r) = relation(to, reply_to, self.thread_always) {
            content["m.relates_to"] = r;
        }
        self.put(&to.chat_id, "m.room.message", key, &content)
            .await
            .map_err(SendFailure::of)
    }

    fn idempotent_sends(&self) -> bool {
        true
    }

    async fn edit(&self, to: &Target, id: &str, text: &str, _: bool) -> Result<(), SendFailure> {
        let content = json!({ "msgtype": "m.text", "body": format!("* {text}"),
            "m.new_content": { "msgtype": "m.text", "body": text },
            "m.relates_to": { "rel_type": "m.replace", "event_id": id } });
        self.put(&to.chat_id, "m.room.message", &txn(), &content)
            .await
            .map(drop)
            .map_err(SendFailure::of)
    }

    async fn typing(&self, to: &Target) {
        if let Err(e) = self
            .limiter
            .call(true, || self.api.typing(&to.chat_id, &self.user_id, true))
            .await
        {
            tracing::debug!(error = %e, "matrix typing notice not sent");
        }
    }

    /// The bot's read marker moves to the message taken.
    async fn mark_read(&self, to: &Target, id: &str) {
        if !self.read_markers {
            return;
        }
        if let Err(e) = self
            .limiter
            .call(true, || self.api.read(&to.chat_id, id))
            .await
        {
            tracing::debug!(error = %e, "matrix read marker not set");
        }
    }

    async fn react(
        &self,
        to: &Target,
        id: &str,
        emoji: &str,
        remove: bool,
    ) -> Result<(), SendFailure> {
        if remove {
            return Err(SendFailure {
                unknown: false,
                error: "Matrix removes a reaction by redacting its own event, which ferroclaw does not keep".into(),
             retry_after_ms: None, });
        }
        let content = json!({ "m.relates_to": { "rel_type": "m.annotation", "event_id": id, "key": emoji.trim() } });
        self.put(&to.chat_id, "m.reaction", &txn(), &content)
            .await
            .map(drop)
            .map_err(SendFailure::of)
    }

    async fn delete(&self, to: &Target, id: &str) -> Result<(), SendFailure> {
        let t = txn();
        self.limiter
            .call(true, || self.api.redact(&to.chat_id, id, &t))
            .await
            .map_err(SendFailure::of)
    }

    async fn send_media(
        &self,
        to: &Target,
        url: &str,
        caption: &str,
    ) -> Result<String, SendFailure> {
        self.send(to, &link_text(url, caption), false, None).await
    }

    async fn send_file(
        &self,
        to: &Target,
        file: &crate::media::MediaRef,
        caption: &str,
    ) -> Result<String, SendFailure> {
        self.upload(to, file, caption, false).await
    }

    /// `m.audio` with the voice flags (Ogg/Opus), else a file.
    async fn send_voice(
        &self,
        to: &Target,
        file: &crate::media::MediaRef,
        caption: &str,
    ) -> Result<String, SendFailure> {
        let voice = file.content_type == "audio/ogg";
        let caption = if voice && caption.is_empty() {
            "Voice message"
        } else {
            caption
        };
        self.upload(to, file, caption, voice).await
    }

    fn voice_notes(&self) -> bool {
        true
    }

    fn split(&self, text: &str) -> Vec<String> {
        split(text, self.chunk_limit.min(MAX_MESSAGE_CHARS))
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
                "the file is over {max} bytes"
            )));
        }
        self.api.download(&file.id, max).await
    }

    fn media_limit(&self) -> u64 {
        self.media_max_bytes
    }
}

impl MatrixOutlet {
    /// Uploaded to the media repository, then sent as a room message.
    async fn upload(
        &self,
        to: &Target,
        file: &crate::media::MediaRef,
        caption: &str,
        voice: bool,
    ) -> Result<String, SendFailure> {
        let bytes = crate::channels::media_out::upload_bytes(file, self.media_max_bytes).await?;
        let name = file.file_name.clone().unwrap_or_else(|| "file".into());
        let url = self
            .limiter
            .call(true, || {
                self.api.upload(bytes.clone(), &file.content_type, &name)
            })
            .await
            .map_err(SendFailure::of)?;
        let body = if caption.trim().is_empty() {
            name.clone()
        } else {
            caption.to_string()
        };
        let mut content = json!({ "msgtype": media_kind(&file.content_type), "body": body,
            "filename": name, "url": url,
            "info": { "mimetype": file.content_type, "size": file.size } });
        if voice {
            // MSC3245: clients show it as a voice message.
            content["org.matrix.msc1767.audio"] = json!({});
            content["org.matrix.msc3245.voice"] = json!({});
        }
        self.put(&to.chat_id, "m.room.message", &txn(), &content)
            .await
            .map_err(SendFailure::of)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_go_in_the_thread_or_as_a_reply() {
        let t = |thread: Option<&str>| Target {
            chat_id: "!r:hs".into(),
            thread_id: thread.map(str::to_string),
            answering: None,
        };
        let r = relation(&t(Some("$root")), Some("$m"), false).unwrap();
        assert_eq!(r["rel_type"], "m.thread");
        assert_eq!(r["m.in_reply_to"]["event_id"], "$m");
        assert_eq!(r["is_falling_back"], false);
        let r = relation(&t(None), Some("$m"), false).unwrap();
        assert_eq!(r, json!({ "m.in_reply_to": { "event_id": "$m" } }));
        let r = relation(&t(None), Some("$m"), true).unwrap();
        assert_eq!(
            (r["rel_type"].as_str(), r["event_id"].as_str()),
            (Some("m.thread"), Some("$m"))
        );
        assert!(relation(&t(None), None, false).is_none());
        assert_eq!(media_kind("image/png"), "m.image");
        assert_eq!(media_kind("application/pdf"), "m.file");
    }
}
