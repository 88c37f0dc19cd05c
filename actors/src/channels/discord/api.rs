//! Discord's REST API over reqwest: the calls ferroclaw makes
//! (`GET /gateway/bot`, `GET /users/@me`, create and edit a message,
//! typing; for catch-up a channel's messages after one, the channel, a
//! guild member), with `Authorization: Bot <token>`. No retries here: each call
//! goes through its route's limiter (`sender::Buckets`, one per route with
//! its major parameter: `POST /channels/<id>/messages`), which waits out a
//! 429's `retry_after` for that route only; a global 429 closes the shared
//! global gate every call waits on.

use std::time::Duration;

use serde_json::{json, Value};

use crate::channels::limits::Failure;
use crate::channels::sender::{transport_error, CallError};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DiscordError {
    /// 429: this route (or every route, `global`) waits this long.
    #[error("rate limited: retry after {retry_after_ms} ms{}", if *global { " (global)" } else { "" })]
    RateLimited { retry_after_ms: u64, global: bool },
    /// 401: the token was refused.
    #[error("token refused: {0}")]
    Auth(String),
    /// Another 4xx (unknown channel, missing access, too long).
    #[error("refused ({code}): {message}")]
    Refused { code: u16, message: String },
    #[error("unreachable: {0}")]
    Unreachable(String),
    #[error("server error: {0}")]
    Server(String),
    #[error("no answer: {0}")]
    NoAnswer(String),
}

impl CallError for DiscordError {
    fn failure(&self) -> Failure {
        match self {
            DiscordError::RateLimited { retry_after_ms, .. } => Failure::RateLimited {
                retry_after_ms: Some(*retry_after_ms),
            },
            DiscordError::Unreachable(_) | DiscordError::Server(_) | DiscordError::NoAnswer(_) => {
                Failure::Transient
            }
            DiscordError::Auth(_) | DiscordError::Refused { .. } => Failure::Permanent,
        }
    }
    fn answered(&self) -> bool {
        !matches!(self, Self::Unreachable(_) | Self::NoAnswer(_))
    }
    fn unknown_outcome(&self) -> bool {
        matches!(self, Self::NoAnswer(_))
    }
}

#[derive(Clone)]
pub struct RestApi {
    http: reqwest::Client,
    base: String,
    token: String,
    limit: Duration,
}

impl std::fmt::Debug for RestApi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RestApi").field("base", &self.base).finish()
    }
}

impl RestApi {
    /// An attachment's bytes from Discord's CDN (no token: CDN URLs are
    /// signed), at most `max`; only from Discord's hosts (or the API's,
    /// for tests).
    pub async fn download(
        &self,
        url: &str,
        max: u64,
    ) -> Result<Vec<u8>, crate::channels::error::DownloadError> {
        crate::channels::media_in::platform_file(
            url,
            &["discordapp.com", "discordapp.net", "discord.com"],
            &self.base,
            &[],
            None,
            max,
        )
        .await
    }

    pub fn new(base: &str, token: &str, limit: Duration) -> RestApi {
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .user_agent("DiscordBot (https://github.com/ferroclaw, 0.1)")
            .build()
            .unwrap_or_default();
        RestApi {
            http,
            base: base.trim_end_matches('/').to_string(),
            token: token.to_string(),
            limit,
        }
    }

    async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Value, DiscordError> {
        let req = self
            .http
            .request(method, format!("{}{path}", self.base))
            .header("authorization", format!("Bot {}", self.token))
            .timeout(self.limit);
        let req = match body {
            Some(b) => req.json(b),
            // Discord wants a length on a POST without a body (typing).
            None => req.header("content-length", "0"),
        };
        self.answer(req).await
    }

    /// A file uploaded as a message's attachment (`multipart/form-data`:
    /// `payload_json` with the caption, `files[0]`); the message id.
    pub async fn send_file(
        &self,
        channel: &str,
        file: &crate::media::MediaRef,
        caption: &str,
    ) -> Result<String, DiscordError> {
        let bytes = tokio::fs::read(&file.path)
            .await
            .map_err(|e| DiscordError::Refused {
                code: 400,
                message: format!("the file to send: {e}"),
            })?;
        let name = file.file_name.clone().unwrap_or_else(|| "file".to_string());
        let payload = json!({
            "content": caption, "allowed_mentions": { "parse": [] },
            "attachments": [{ "id": 0, "filename": name }],
        });
        let part = reqwest::multipart::Part::bytes(bytes)
            .file_name(name)
            .mime_str(&file.content_type)
            .map_err(|e| DiscordError::Refused {
                code: 400,
                message: e.to_string(),
            })?;
        let form = reqwest::multipart::Form::new()
            .text("payload_json", payload.to_string())
            .part("files[0]", part);
        let req = self
            .http
            .post(format!("{}/channels/{channel}/messages", self.base))
            .header("authorization", format!("Bot {}", self.token))
            .timeout(self.limit.max(Duration::from_secs(60)))
            .multipart(form);
        let v = self.answer(req).await?;
        v["id"]
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| DiscordError::Server("message without id".into()))
    }

    /// Sends `req`; Discord's answer, or the error it is.
    async fn answer(&self, req: reqwest::RequestBuilder) -> Result<Value, DiscordError> {
        let resp = match req.send().await {
            Ok(r) => r,
            Err(e) if e.is_connect() => return Err(DiscordError::Unreachable(transport_error(&e))),
            Err(e) => return Err(DiscordError::NoAnswer(transport_error(&e))),
        };
        let status = resp.status().as_u16();
        let header_after = resp
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<f64>().ok());
        let global_header = resp.headers().get("x-ratelimit-global").is_some();
        let bytes = match resp.bytes().await {
            Ok(b) => b,
            Err(e) => return Err(DiscordError::NoAnswer(transport_error(&e))),
        };
        let v: Value = if bytes.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&bytes).unwrap_or(Value::Null)
        };
        match status {
            200..=299 => Ok(v),
            429 => {
                let secs = v["retry_after"]
                    .as_f64()
                    .or(header_after)
                    .filter(|s| s.is_finite() && *s >= 0.0)
                    .unwrap_or(1.0);
                Err(DiscordError::RateLimited {
                    retry_after_ms: (secs * 1000.0).ceil() as u64,
                    global: v["global"].as_bool().unwrap_or(global_header),
                })
            }
            401 => Err(DiscordError::Auth(
                v["message"]
                    .as_str()
                    .unwrap_or("401: Unauthorized")
                    .to_string(),
            )),
            500.. => Err(DiscordError::Server(format!("status {status}"))),
            _ => Err(DiscordError::Refused {
                code: status,
                message: v["message"].as_str().unwrap_or_default().to_string(),
            }),
        }
    }

    /// `GET /gateway/bot`: the gateway URL.
    pub async fn gateway_url(&self) -> Result<String, DiscordError> {
        let v = self
            .call(reqwest::Method::GET, "/gateway/bot", None)
            .await?;
        v["url"]
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| DiscordError::Server("gateway/bot without url".into()))
    }

    /// `GET /users/@me`: the bot's user id.
    pub async fn me(&self) -> Result<String, DiscordError> {
        let v = self.call(reqwest::Method::GET, "/users/@me", None).await?;
        v["id"]
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| DiscordError::Server("users/@me without id".into()))
    }

    /// Creates a message; reply: its id.
    pub async fn create_message(
        &self,
        channel: &str,
        content: &str,
        reply_to: Option<&str>,
    ) -> Result<String, DiscordError> {
        let mut body = json!({ "content": content, "allowed_mentions": { "parse": [] } });
        if let Some(r) = reply_to {
            body["message_reference"] = json!({ "message_id": r, "fail_if_not_exists": false });
        }
        let path = format!("/channels/{channel}/messages");
        let v = self.call(reqwest::Method::POST, &path, Some(&body)).await?;
        v["id"]
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| DiscordError::Server("message without id".into()))
    }

    pub async fn edit_message(
        &self,
        channel: &str,
        id: &str,
        content: &str,
    ) -> Result<(), DiscordError> {
        let path = format!("/channels/{channel}/messages/{id}");
        let body = json!({ "content": content, "allowed_mentions": { "parse": [] } });
        self.call(reqwest::Method::PATCH, &path, Some(&body))
            .await
            .map(|_| ())
    }

    /// The bot's reaction `emoji` (unicode, or `name:id` for a custom
    /// one) on a message, added or taken away.
    pub async fn react(
        &self,
        channel: &str,
        id: &str,
        emoji: &str,
        remove: bool,
    ) -> Result<(), DiscordError> {
        let encoded =
            percent_encoding::utf8_percent_encode(emoji, percent_encoding::NON_ALPHANUMERIC);
        let path = format!("/channels/{channel}/messages/{id}/reactions/{encoded}/@me");
        let method = if remove {
            reqwest::Method::DELETE
        } else {
            reqwest::Method::PUT
        };
        self.call(method, &path, None).await.map(|_| ())
    }

    pub async fn delete_message(&self, channel: &str, id: &str) -> Result<(), DiscordError> {
        let path = format!("/channels/{channel}/messages/{id}");
        self.call(reqwest::Method::DELETE, &path, None)
            .await
            .map(|_| ())
    }

    /// `GET /channels/{id}/messages?after=`: up to `limit` (1-100) of the
    /// messages after `after`, as Discord lists them (newest first).
    pub async fn messages_after(
        &self,
        channel: &str,
        after: &str,
        limit: usize,
    ) -> Result<Vec<Value>, DiscordError> {
        let path = format!("/channels/{channel}/messages?after={after}&limit={limit}");
        let v = self.call(reqwest::Method::GET, &path, None).await?;
        match v {
            Value::Array(list) => Ok(list),
            _ => Err(DiscordError::Server("messages: not a list".into())),
        }
    }

    /// `GET /channels/{id}`: the channel (its `guild_id`, a thread's
    /// `parent_id`).
    pub async fn channel(&self, channel: &str) -> Result<Value, DiscordError> {
        let path = format!("/channels/{channel}");
        self.call(reqwest::Method::GET, &path, None).await
    }

    /// `GET /guilds/{guild}/members/{user}`: a member (nick, roles).
    pub async fn member(&self, guild: &str, user: &str) -> Result<Value, DiscordError> {
        let path = format!("/guilds/{guild}/members/{user}");
        self.call(reqwest::Method::GET, &path, None).await
    }

    pub async fn typing(&self, channel: &str) -> Result<(), DiscordError> {
        let path = format!("/channels/{channel}/typing");
        self.call(reqwest::Method::POST, &path, None)
            .await
            .map(|_| ())
    }
}
