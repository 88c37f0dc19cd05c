//! Telegram's Bot API over reqwest: the dozen types ferroclaw reads and
//! the methods it calls (`POST <apiBaseUrl>/bot<token>/<method>`, JSON in,
//! `{ok, result | error_code, description, parameters}` out). The wire
//! format is private to this module: callers get typed values and a
//! `TgError` that says what retrying can do.
//!
//! Written here rather than taken from a types crate: ferroclaw reads 12
//! types and calls 8 methods; the crates that cover the Bot API bring
//! their own HTTP stack or a second reqwest line.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::channels::limits::Failure;
use crate::channels::sender::transport_error;

#[derive(Debug, Clone, Deserialize)]
pub struct Update {
    pub update_id: i64,
    #[serde(default)]
    pub message: Option<Message>,
    #[serde(default)]
    pub edited_message: Option<Message>,
    #[serde(default)]
    pub channel_post: Option<Message>,
    /// A press of one of the bot's inline buttons.
    #[serde(default)]
    pub callback_query: Option<CallbackQuery>,
}

/// Telegram's `CallbackQuery`: who pressed which button under which message.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CallbackQuery {
    pub id: String,
    pub from: User,
    #[serde(default)]
    pub message: Option<Message>,
    #[serde(default)]
    pub data: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Message {
    pub message_id: i64,
    #[serde(default)]
    pub message_thread_id: Option<i64>,
    #[serde(default)]
    pub is_topic_message: Option<bool>,
    #[serde(default)]
    pub from: Option<User>,
    pub date: i64,
    pub chat: Chat,
    #[serde(default)]
    pub text: Option<String>,
    #[serde(default)]
    pub caption: Option<String>,
    #[serde(default)]
    pub entities: Option<Vec<MessageEntity>>,
    #[serde(default)]
    pub caption_entities: Option<Vec<MessageEntity>>,
    #[serde(default)]
    pub photo: Option<Vec<PhotoSize>>,
    #[serde(default)]
    pub document: Option<Document>,
    /// A voice note (OGG/Opus), an audio file, a round video, a video, a
    /// sticker: each read with the fields a document has.
    #[serde(default)]
    pub voice: Option<Document>,
    #[serde(default)]
    pub audio: Option<Document>,
    #[serde(default)]
    pub video_note: Option<Document>,
    #[serde(default)]
    pub video: Option<Document>,
    #[serde(default)]
    pub sticker: Option<Document>,
    #[serde(default)]
    pub reply_to_message: Option<Box<Message>>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Chat {
    pub id: i64,
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub title: Option<String>,
    #[serde(default)]
    pub username: Option<String>,
    #[serde(default)]
    pub is_forum: Option<bool>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct User {
    pub id: i64,
    #[serde(default)]
    pub is_bot: bool,
    #[serde(default)]
    pub first_name: String,
    #[serde(default)]
    pub last_name: Option<String>,
    #[serde(default)]
    pub username: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MessageEntity {
    #[serde(rename = "type")]
    pub kind: String,
    pub offset: usize,
    pub length: usize,
    #[serde(default)]
    pub user: Option<User>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PhotoSize {
    pub file_id: String,
    #[serde(default)]
    pub width: u32,
    #[serde(default)]
    pub height: u32,
    #[serde(default)]
    pub file_size: Option<u64>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Document {
    pub file_id: String,
    #[serde(default)]
    pub file_name: Option<String>,
    #[serde(default)]
    pub mime_type: Option<String>,
    #[serde(default)]
    pub file_size: Option<u64>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct File {
    #[serde(default)]
    pub file_size: Option<u64>,
    #[serde(default)]
    pub file_path: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BotCommand {
    pub command: String,
    pub description: String,
}

#[derive(Debug, Deserialize)]
struct Envelope {
    ok: bool,
    #[serde(default)]
    result: Option<Value>,
    #[serde(default)]
    error_code: Option<u16>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    parameters: Option<Parameters>,
}

#[derive(Debug, Deserialize)]
struct Parameters {
    #[serde(default)]
    retry_after: Option<u64>,
}

/// Why a call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TgError {
    /// 429: wait this long before any call with this token.
    #[error("rate limited: retry after {retry_after_ms} ms")]
    RateLimited { retry_after_ms: u64 },
    /// 409: another poller (or a webhook) holds this token.
    #[error("conflict: {0}")]
    Conflict(String),
    /// 400 "can't parse entities": the formatted text was refused.
    #[error("cannot parse entities: {0}")]
    Entities(String),
    /// 400 "message is not modified": an edit to the same text.
    #[error("message is not modified")]
    NotModified,
    /// 401/403/404 and other refusals: retrying the same call cannot help.
    #[error("refused ({code}): {description}")]
    Refused { code: u16, description: String },
    /// The call did not reach Telegram (connection refused, DNS): safe to
    /// retry.
    #[error("unreachable: {0}")]
    Unreachable(String),
    /// 5xx, or an answer that is not the Bot API's.
    #[error("server error: {0}")]
    Server(String),
    /// The request left and no answer came (timeout, reset): it may or may
    /// not have landed.
    #[error("no answer: {0}")]
    NoAnswer(String),
}

impl TgError {
    /// As the retry policy sees it.
    pub fn failure(&self) -> Failure {
        match self {
            TgError::RateLimited { retry_after_ms } => Failure::RateLimited {
                retry_after_ms: Some(*retry_after_ms),
            },
            TgError::Unreachable(_) | TgError::Server(_) | TgError::NoAnswer(_) => {
                Failure::Transient
            }
            TgError::Conflict(_)
            | TgError::Entities(_)
            | TgError::NotModified
            | TgError::Refused { .. } => Failure::Permanent,
        }
    }
}

/// One bot token's client.
#[derive(Clone)]
pub struct BotApi {
    http: reqwest::Client,
    base: String,
    token: String,
    /// A send, edit or lookup without an answer by then has an unknown
    /// outcome.
    limit: Duration,
}

impl std::fmt::Debug for BotApi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the token.
        f.debug_struct("BotApi").field("base", &self.base).finish()
    }
}

pub use crate::channels::deliver::Target;

fn chat_id_value(id: &str) -> Value {
    id.parse::<i64>()
        .map(Value::from)
        .unwrap_or_else(|_| json!(id))
}

impl BotApi {
    pub fn new(base: &str, token: &str, limit: Duration) -> BotApi {
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .build()
            .unwrap_or_default();
        BotApi {
            http,
            base: base.trim_end_matches('/').to_string(),
            token: token.to_string(),
            limit,
        }
    }

    /// Calls `method` with `params`; `limit`: the whole call's timeout.
    pub async fn call(
        &self,
        method: &str,
        params: &Value,
        limit: Duration,
    ) -> Result<Value, TgError> {
        let url = format!("{}/bot{}/{method}", self.base, self.token);
        let sent = self.http.post(url).json(params).timeout(limit).send().await;
        answer(sent).await
    }

    /// A file uploaded (`multipart/form-data`): a photo as `sendPhoto`, an
    /// OGG voice note as `sendVoice`, other audio as `sendAudio`, anything
    /// else as `sendDocument`. The message id.
    pub async fn send_file(
        &self,
        to: &Target,
        file: &crate::media::MediaRef,
        caption: &str,
    ) -> Result<String, TgError> {
        let ct = file.content_type.as_str();
        let (method, field) = match ct {
            "image/jpeg" | "image/png" | "image/webp" if file.size <= 10 << 20 => {
                ("sendPhoto", "photo")
            }
            "audio/ogg" => ("sendVoice", "voice"),
            t if t.starts_with("audio/") => ("sendAudio", "audio"),
            _ => ("sendDocument", "document"),
        };
        let bytes = tokio::fs::read(&file.path)
            .await
            .map_err(|e| TgError::Refused {
                code: 400,
                description: format!("the file to send: {e}"),
            })?;
        let name = file
            .file_name
            .clone()
            .unwrap_or_else(|| format!("file.{}", ct.rsplit('/').next().unwrap_or("bin")));
        let part = reqwest::multipart::Part::bytes(bytes)
            .file_name(name)
            .mime_str(ct)
            .map_err(|e| TgError::Refused {
                code: 400,
                description: e.to_string(),
            })?;
        let mut form = reqwest::multipart::Form::new()
            .text("chat_id", to.chat_id.clone())
            .part(field, part);
        if !caption.is_empty() {
            form = form.text("caption", caption.chars().take(1024).collect::<String>());
        }
        if let Some(t) = to.thread_id.as_deref().filter(|t| t.parse::<i64>().is_ok()) {
            form = form.text("message_thread_id", t.to_string());
        }
        let url = format!("{}/bot{}/{method}", self.base, self.token);
        // An upload takes longer than a call: a minute, whatever the limit.
        let limit = self.limit.max(Duration::from_secs(60));
        let sent = self
            .http
            .post(url)
            .multipart(form)
            .timeout(limit)
            .send()
            .await;
        let m: Message = decode(answer(sent).await?)?;
        Ok(m.message_id.to_string())
    }
}

/// The Bot API's answer to a request: its `result`, or the error it is.
async fn answer(sent: Result<reqwest::Response, reqwest::Error>) -> Result<Value, TgError> {
    {
        let resp = match sent {
            Ok(r) => r,
            Err(e) if e.is_connect() => return Err(TgError::Unreachable(transport_error(&e))),
            Err(e) => return Err(TgError::NoAnswer(transport_error(&e))),
        };
        let status = resp.status().as_u16();
        let body = match resp.bytes().await {
            Ok(b) => b,
            Err(e) => return Err(TgError::NoAnswer(transport_error(&e))),
        };
        let Ok(env) = serde_json::from_slice::<Envelope>(&body) else {
            return Err(if status >= 500 {
                TgError::Server(format!("status {status}"))
            } else {
                TgError::Server(format!("status {status}: not a Bot API answer"))
            });
        };
        if env.ok {
            return Ok(env.result.unwrap_or(Value::Null));
        }
        let code = env.error_code.unwrap_or(status);
        let description = env.description.unwrap_or_default();
        Err(classify(
            code,
            description,
            env.parameters.and_then(|p| p.retry_after),
        ))
    }
}

impl BotApi {
    pub async fn get_me(&self) -> Result<User, TgError> {
        let v = self.call("getMe", &json!({}), self.limit).await?;
        decode(v)
    }

    /// Long poll from `offset`, holding up to `timeout_s` seconds.
    pub async fn get_updates(
        &self,
        offset: Option<i64>,
        timeout_s: u64,
    ) -> Result<Vec<Value>, TgError> {
        let mut params = json!({
            "timeout": timeout_s,
            "allowed_updates": ["message", "edited_message", "channel_post", "callback_query"],
        });
        if let Some(o) = offset {
            params["offset"] = json!(o);
        }
        let limit = Duration::from_secs(timeout_s + 15);
        let v = self.call("getUpdates", &params, limit).await?;
        match v {
            Value::Array(list) => Ok(list),
            _ => Err(TgError::Server("getUpdates: result is not a list".into())),
        }
    }

    /// `sendMessage`; `html`: the text is Telegram HTML. Reply: the new
    /// message's id.
    pub async fn send_message(
        &self,
        to: &Target,
        text: &str,
        html: bool,
        reply_to: Option<&str>,
    ) -> Result<String, TgError> {
        self.send_with_keyboard(to, text, html, reply_to, &[]).await
    }

    /// `sendMessage` with an inline keyboard: one row per inner list, each
    /// button's press coming back as a `callback_query` with its data.
    pub async fn send_with_keyboard(
        &self,
        to: &Target,
        text: &str,
        html: bool,
        reply_to: Option<&str>,
        rows: &[Vec<crate::questions::Button>],
    ) -> Result<String, TgError> {
        let mut params = json!({
            "chat_id": chat_id_value(&to.chat_id),
            "text": text,
            "link_preview_options": { "is_disabled": true },
        });
        if html {
            params["parse_mode"] = json!("HTML");
        }
        if let Some(t) = to.thread_id.as_deref().and_then(|t| t.parse::<i64>().ok()) {
            params["message_thread_id"] = json!(t);
        }
        if let Some(r) = reply_to.and_then(|r| r.parse::<i64>().ok()) {
            params["reply_parameters"] =
                json!({ "message_id": r, "allow_sending_without_reply": true });
        }
        if !rows.is_empty() {
            let keyboard: Vec<Vec<Value>> = rows
                .iter()
                .map(|row| {
                    row.iter()
                        .map(|b| json!({ "text": b.label, "callback_data": b.data }))
                        .collect()
                })
                .collect();
            params["reply_markup"] = json!({ "inline_keyboard": keyboard });
        }
        let v = self.call("sendMessage", &params, self.limit).await?;
        let m: Message = decode(v)?;
        Ok(m.message_id.to_string())
    }

    /// `sendPhoto` (an image URL) or `sendDocument` (anything else), by URL:
    /// Telegram fetches it. Reply: the new message's id.
    pub async fn send_media(
        &self,
        to: &Target,
        url: &str,
        caption: &str,
    ) -> Result<String, TgError> {
        let lower = url.to_ascii_lowercase();
        let path = lower.split(['?', '#']).next().unwrap_or_default();
        let photo = [".jpg", ".jpeg", ".png", ".gif", ".webp"]
            .iter()
            .any(|e| path.ends_with(e));
        let (method, field) = if photo {
            ("sendPhoto", "photo")
        } else {
            ("sendDocument", "document")
        };
        let mut params = json!({ "chat_id": chat_id_value(&to.chat_id) });
        params[field] = json!(url);
        if !caption.is_empty() {
            params["caption"] = json!(caption.chars().take(1024).collect::<String>());
        }
        if let Some(t) = to.thread_id.as_deref().and_then(|t| t.parse::<i64>().ok()) {
            params["message_thread_id"] = json!(t);
        }
        let v = self.call(method, &params, self.limit).await?;
        let m: Message = decode(v)?;
        Ok(m.message_id.to_string())
    }

    /// `editMessageText` (an unchanged text is not an error).
    pub async fn edit_message(
        &self,
        to: &Target,
        message_id: &str,
        text: &str,
        html: bool,
    ) -> Result<(), TgError> {
        let mut params = json!({
            "chat_id": chat_id_value(&to.chat_id),
            "message_id": message_id.parse::<i64>().unwrap_or_default(),
            "text": text,
            "link_preview_options": { "is_disabled": true },
        });
        if html {
            params["parse_mode"] = json!("HTML");
        }
        match self.call("editMessageText", &params, self.limit).await {
            Ok(_) | Err(TgError::NotModified) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// `setMessageReaction`: the bot's reaction to a message (`None`
    /// takes it away).
    pub async fn set_reaction(
        &self,
        to: &Target,
        message_id: &str,
        emoji: Option<&str>,
    ) -> Result<(), TgError> {
        let reaction = match emoji {
            Some(e) => json!([{ "type": "emoji", "emoji": e }]),
            None => json!([]),
        };
        let params = json!({
            "chat_id": chat_id_value(&to.chat_id),
            "message_id": message_id_value(message_id)?,
            "reaction": reaction,
        });
        self.call("setMessageReaction", &params, self.limit)
            .await
            .map(|_| ())
    }

    /// `deleteMessage`.
    pub async fn delete_message(&self, to: &Target, message_id: &str) -> Result<(), TgError> {
        let params = json!({
            "chat_id": chat_id_value(&to.chat_id),
            "message_id": message_id_value(message_id)?,
        });
        self.call("deleteMessage", &params, self.limit)
            .await
            .map(|_| ())
    }

    /// `answerCallbackQuery`: the pressed button stops spinning, with a
    /// short notice when `text` says one.
    pub async fn answer_callback(&self, id: &str, text: Option<&str>) -> Result<(), TgError> {
        let mut params = json!({ "callback_query_id": id });
        if let Some(t) = text {
            params["text"] = json!(t);
        }
        self.call("answerCallbackQuery", &params, self.limit)
            .await
            .map(|_| ())
    }

    /// `sendChatAction typing`.
    pub async fn typing(&self, to: &Target) -> Result<(), TgError> {
        let mut params = json!({ "chat_id": chat_id_value(&to.chat_id), "action": "typing" });
        if let Some(t) = to.thread_id.as_deref().and_then(|t| t.parse::<i64>().ok()) {
            params["message_thread_id"] = json!(t);
        }
        self.call("sendChatAction", &params, self.limit)
            .await
            .map(|_| ())
    }

    pub async fn get_my_commands(&self) -> Result<Vec<BotCommand>, TgError> {
        let v = self.call("getMyCommands", &json!({}), self.limit).await?;
        decode(v)
    }

    pub async fn set_my_commands(&self, commands: &[BotCommand]) -> Result<(), TgError> {
        let params = json!({ "commands": commands });
        self.call("setMyCommands", &params, self.limit)
            .await
            .map(|_| ())
    }

    /// A file's bytes (`getFile`, then the file URL), refused past `max`.
    pub async fn download(&self, file_id: &str, max: u64) -> Result<Vec<u8>, TgError> {
        let v = self
            .call("getFile", &json!({ "file_id": file_id }), self.limit)
            .await?;
        let f: File = decode(v)?;
        if f.file_size.is_some_and(|s| s > max) {
            return Err(TgError::Refused {
                code: 413,
                description: "file too large".into(),
            });
        }
        let Some(path) = f.file_path else {
            return Err(TgError::Server("getFile: no file_path".into()));
        };
        let url = format!(
            "{}/file/bot{}/{}",
            self.base,
            self.token,
            path.trim_start_matches('/')
        );
        let resp = self
            .http
            .get(url)
            .timeout(Duration::from_secs(60))
            .send()
            .await
            .map_err(|e| TgError::NoAnswer(transport_error(&e)))?;
        if !resp.status().is_success() {
            return Err(TgError::Server(format!(
                "file status {}",
                resp.status().as_u16()
            )));
        }
        let mut out = Vec::new();
        let mut stream = resp;
        while let Some(chunk) = stream
            .chunk()
            .await
            .map_err(|e| TgError::NoAnswer(transport_error(&e)))?
        {
            if out.len() as u64 + chunk.len() as u64 > max {
                return Err(TgError::Refused {
                    code: 413,
                    description: "file too large".into(),
                });
            }
            out.extend_from_slice(&chunk);
        }
        Ok(out)
    }
}

fn decode<T: serde::de::DeserializeOwned>(v: Value) -> Result<T, TgError> {
    serde_json::from_value(v).map_err(|e| TgError::Server(format!("unexpected result: {e}")))
}

/// The error kind of a Bot API refusal.
pub fn classify(code: u16, description: String, retry_after_s: Option<u64>) -> TgError {
    let lower = description.to_ascii_lowercase();
    match code {
        429 => TgError::RateLimited {
            retry_after_ms: retry_after_s.unwrap_or(1).saturating_mul(1000),
        },
        409 => TgError::Conflict(description),
        400 if lower.contains("can't parse entities") || lower.contains("can't find end") => {
            TgError::Entities(description)
        }
        400 if lower.contains("message is not modified") => TgError::NotModified,
        c if c >= 500 => TgError::Server(format!("{c}: {description}")),
        c => TgError::Refused {
            code: c,
            description,
        },
    }
}

impl crate::channels::sender::CallError for TgError {
    fn failure(&self) -> Failure {
        TgError::failure(self)
    }
    fn answered(&self) -> bool {
        !matches!(self, Self::Unreachable(_) | Self::NoAnswer(_))
    }
    fn unknown_outcome(&self) -> bool {
        matches!(self, Self::NoAnswer(_))
    }
}

/// A Telegram message id (a number), or the refusal a wrong one gets.
fn message_id_value(id: &str) -> Result<i64, TgError> {
    id.trim().parse().map_err(|_| TgError::Refused {
        code: 400,
        description: format!("Bad Request: message id {id:?} is not a Telegram message id"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_are_classified_by_code_and_text() {
        assert_eq!(
            classify(429, "Too Many Requests: retry after 7".into(), Some(7)),
            TgError::RateLimited {
                retry_after_ms: 7000
            }
        );
        assert!(matches!(
            classify(409, "Conflict".into(), None),
            TgError::Conflict(_)
        ));
        assert!(matches!(
            classify(
                400,
                "Bad Request: can't parse entities: unclosed tag".into(),
                None
            ),
            TgError::Entities(_)
        ));
        assert_eq!(
            classify(400, "Bad Request: message is not modified".into(), None),
            TgError::NotModified
        );
        assert!(matches!(
            classify(502, "Bad Gateway".into(), None),
            TgError::Server(_)
        ));
        assert!(matches!(
            classify(403, "Forbidden: bot was blocked by the user".into(), None),
            TgError::Refused { code: 403, .. }
        ));
    }

    #[test]
    fn only_transient_failures_are_retried() {
        assert_eq!(TgError::Server("x".into()).failure(), Failure::Transient);
        assert_eq!(TgError::NoAnswer("x".into()).failure(), Failure::Transient);
        assert_eq!(TgError::Entities("x".into()).failure(), Failure::Permanent);
        assert_eq!(
            TgError::RateLimited {
                retry_after_ms: 3000
            }
            .failure(),
            Failure::RateLimited {
                retry_after_ms: Some(3000)
            }
        );
    }

    #[test]
    fn updates_of_every_kind_parse() {
        let u: Update = serde_json::from_value(json!({
            "update_id": 5,
            "message": {
                "message_id": 9, "date": 1700000000, "message_thread_id": 3, "is_topic_message": true,
                "chat": {"id": -100123, "type": "supergroup", "title": "T", "is_forum": true},
                "from": {"id": 42, "is_bot": false, "first_name": "Ann", "username": "ann"},
                "text": "@bot hi", "entities": [{"type": "mention", "offset": 0, "length": 4}],
                "photo": [{"file_id": "p1", "file_unique_id": "u", "width": 90, "height": 90}]
            }
        }))
        .unwrap();
        let m = u.message.unwrap();
        assert_eq!(m.chat.kind, "supergroup");
        assert_eq!(m.message_thread_id, Some(3));
        assert_eq!(m.photo.unwrap()[0].file_id, "p1");
    }
}
