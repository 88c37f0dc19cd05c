//! Slack's external upload flow (the one `files.upload` was retired for):
//! `files.getUploadURLExternal` (name and length) gives a signed upload
//! URL and a file id; the bytes are POSTed there (no token: the URL is
//! signed); `files.completeUploadExternal` shares the file in the channel
//! with its caption, which is when the message appears. Only that last
//! step is a new message: it is never retried after an unknown outcome.

use serde_json::{json, Value};

use super::api::{SlackError, WebApi};
use crate::channels::sender::transport_error;

/// A file id and where to send its bytes.
pub struct UploadSlot {
    pub url: String,
    pub file_id: String,
}

impl WebApi {
    /// `files.getUploadURLExternal`.
    pub async fn upload_slot(&self, name: &str, length: u64) -> Result<UploadSlot, SlackError> {
        let fields = [
            ("filename", name.to_string()),
            ("length", length.to_string()),
        ];
        let v = self
            .call_form("files.getUploadURLExternal", &fields)
            .await?;
        let get = |k: &str| {
            v.get(k)
                .and_then(Value::as_str)
                .map(str::to_string)
                .ok_or_else(|| SlackError::Server(format!("answer without {k}")))
        };
        Ok(UploadSlot {
            url: get("upload_url")?,
            file_id: get("file_id")?,
        })
    }

    /// The bytes to the slot's URL (Slack's own hosts, or the API's for
    /// tests; never anywhere else).
    pub async fn upload_bytes(&self, slot: &UploadSlot, bytes: Vec<u8>) -> Result<(), SlackError> {
        let host = |u: &str| {
            reqwest::Url::parse(u)
                .ok()
                .and_then(|u| u.host_str().map(str::to_string))
        };
        let to = host(&slot.url).unwrap_or_default();
        let ours =
            to == "slack.com" || to.ends_with(".slack.com") || Some(to.clone()) == host(&self.base);
        if !ours {
            return Err(SlackError::Refused(format!(
                "upload URL on {to}, not Slack's"
            )));
        }
        let resp = self
            .http
            .post(&slot.url)
            .body(bytes)
            .timeout(std::time::Duration::from_secs(120))
            .send()
            .await
            .map_err(|e| SlackError::NoAnswer(transport_error(&e)))?;
        match resp.status().as_u16() {
            200..=299 => Ok(()),
            s if s >= 500 => Err(SlackError::Server(format!("upload status {s}"))),
            s => Err(SlackError::Refused(format!("upload status {s}"))),
        }
    }

    /// `files.completeUploadExternal`: the file shared in `channel` (in
    /// `thread`), `caption` as its comment. The file id.
    pub async fn complete_upload(
        &self,
        slot: &UploadSlot,
        title: &str,
        channel: &str,
        caption: &str,
        thread: Option<&str>,
    ) -> Result<String, SlackError> {
        let files = json!([{ "id": slot.file_id, "title": title }]).to_string();
        let mut fields = vec![("files", files), ("channel_id", channel.to_string())];
        if !caption.is_empty() {
            fields.push(("initial_comment", caption.to_string()));
        }
        if let Some(t) = thread {
            fields.push(("thread_ts", t.to_string()));
        }
        self.call_form("files.completeUploadExternal", &fields)
            .await?;
        Ok(slot.file_id.clone())
    }
}
