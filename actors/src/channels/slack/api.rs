//! Slack's Web API over reqwest: the four methods ferroclaw calls
//! (`auth.test`, `apps.connections.open`, `chat.postMessage`,
//! `chat.update`; `POST <apiBaseUrl>/<method>`, JSON with a bearer token,
//! `{ok, ... | error}` back). The client never retries by itself: every
//! call goes through the account's per-method limiter (`sender::Buckets`),
//! which waits out a 429's `Retry-After` for that method and leaves a new
//! message with an unknown outcome to the outbox (Slack SDK retries
//! double-posted replies: OpenClaw #22780).

use std::time::Duration;

use serde_json::{json, Value};

use crate::channels::limits::Failure;
use crate::channels::sender::{transport_error, CallError};

/// Why a call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SlackError {
    /// 429: this method waits this long.
    #[error("rate limited: retry after {retry_after_ms} ms")]
    RateLimited { retry_after_ms: u64 },
    /// The token was refused: retrying cannot help.
    #[error("token refused: {0}")]
    Auth(String),
    /// `ok: false` with Slack's error code.
    #[error("refused: {0}")]
    Refused(String),
    #[error("unreachable: {0}")]
    Unreachable(String),
    #[error("server error: {0}")]
    Server(String),
    /// The request left and no answer came: it may have landed.
    #[error("no answer: {0}")]
    NoAnswer(String),
}

impl CallError for SlackError {
    fn failure(&self) -> Failure {
        match self {
            SlackError::RateLimited { retry_after_ms } => Failure::RateLimited {
                retry_after_ms: Some(*retry_after_ms),
            },
            SlackError::Unreachable(_) | SlackError::Server(_) | SlackError::NoAnswer(_) => {
                Failure::Transient
            }
            SlackError::Auth(_) | SlackError::Refused(_) => Failure::Permanent,
        }
    }
    fn answered(&self) -> bool {
        !matches!(self, Self::Unreachable(_) | Self::NoAnswer(_))
    }
    fn unknown_outcome(&self) -> bool {
        matches!(self, Self::NoAnswer(_))
    }
}

/// The bot as `auth.test` names it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BotIdentity {
    pub user_id: String,
    pub team_id: String,
}

/// One Slack app's client.
#[derive(Clone)]
pub struct WebApi {
    pub(super) http: reqwest::Client,
    pub(super) base: String,
    pub(super) bot_token: String,
    app_token: Option<String>,
    limit: Duration,
}

impl std::fmt::Debug for WebApi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebApi").field("base", &self.base).finish()
    }
}

fn auth_error(code: &str) -> bool {
    matches!(
        code,
        "invalid_auth" | "not_authed" | "token_revoked" | "token_expired" | "account_inactive"
    )
}

impl WebApi {
    /// A shared file's bytes (`url_private_download`, with the bot token),
    /// at most `max`; only from Slack's hosts (or the API's, for tests).
    pub async fn download(
        &self,
        url: &str,
        expected: Option<&str>,
        max: u64,
    ) -> Result<Vec<u8>, crate::channels::error::DownloadError> {
        let auth = vec![(
            "Authorization".to_string(),
            format!("Bearer {}", self.bot_token),
        )];
        crate::channels::media_in::platform_file(
            url,
            &["slack.com", "slack-edge.com"],
            &self.base,
            &auth,
            expected,
            max,
        )
        .await
    }

    pub fn new(base: &str, bot_token: &str, app_token: Option<&str>, limit: Duration) -> WebApi {
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .build()
            .unwrap_or_default();
        WebApi {
            http,
            base: base.trim_end_matches('/').to_string(),
            bot_token: bot_token.to_string(),
            app_token: app_token.map(str::to_string),
            limit,
        }
    }

    async fn call(&self, method: &str, token: &str, body: &Value) -> Result<Value, SlackError> {
        let url = format!("{}/{method}", self.base);
        let req = self
            .http
            .post(url)
            .bearer_auth(token)
            .json(body)
            .timeout(self.limit);
        Self::answer(req).await
    }

    /// A method called with form fields (the ones Slack takes only so:
    /// `files.getUploadURLExternal`), with the bot token.
    pub(super) async fn call_form(
        &self,
        method: &str,
        fields: &[(&str, String)],
    ) -> Result<Value, SlackError> {
        let req = self
            .http
            .post(format!("{}/{method}", self.base))
            .bearer_auth(&self.bot_token)
            .form(fields)
            .timeout(self.limit);
        Self::answer(req).await
    }

    /// Sends `req`: the Web API's answer, or the error it is.
    async fn answer(req: reqwest::RequestBuilder) -> Result<Value, SlackError> {
        let sent = req.send().await;
        let resp = match sent {
            Ok(r) => r,
            Err(e) if e.is_connect() => return Err(SlackError::Unreachable(transport_error(&e))),
            Err(e) => return Err(SlackError::NoAnswer(transport_error(&e))),
        };
        let status = resp.status().as_u16();
        if status == 429 {
            let secs = resp
                .headers()
                .get("retry-after")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse::<f64>().ok())
                .filter(|s| s.is_finite() && *s >= 0.0)
                .unwrap_or(1.0);
            return Err(SlackError::RateLimited {
                retry_after_ms: (secs * 1000.0) as u64,
            });
        }
        let body = match resp.bytes().await {
            Ok(b) => b,
            Err(e) => return Err(SlackError::NoAnswer(transport_error(&e))),
        };
        let v: Value = match serde_json::from_slice(&body) {
            Ok(v) => v,
            Err(_) if status >= 500 => return Err(SlackError::Server(format!("status {status}"))),
            Err(_) => {
                return Err(SlackError::Server(format!(
                    "status {status}: not a Web API answer"
                )))
            }
        };
        if v.get("ok").and_then(Value::as_bool) == Some(true) {
            return Ok(v);
        }
        let code = v
            .get("error")
            .and_then(Value::as_str)
            .unwrap_or("unknown_error")
            .to_string();
        if status >= 500 {
            return Err(SlackError::Server(format!("status {status}: {code}")));
        }
        if code == "ratelimited" {
            return Err(SlackError::RateLimited {
                retry_after_ms: 1000,
            });
        }
        Err(if auth_error(&code) {
            SlackError::Auth(code)
        } else {
            SlackError::Refused(code)
        })
    }

    fn field(v: &Value, key: &str) -> Result<String, SlackError> {
        v.get(key)
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| SlackError::Server(format!("answer without {key}")))
    }

    /// `auth.test`: who the bot is.
    pub async fn auth_test(&self) -> Result<BotIdentity, SlackError> {
        let v = self.call("auth.test", &self.bot_token, &json!({})).await?;
        Ok(BotIdentity {
            user_id: Self::field(&v, "user_id")?,
            team_id: v
                .get("team_id")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
        })
    }

    /// `conversations.history`: a conversation's messages after `oldest`
    /// (exclusive), newest first, at most `limit`.
    pub async fn history(
        &self,
        channel: &str,
        oldest: &str,
        limit: usize,
    ) -> Result<Vec<Value>, SlackError> {
        let fields = [
            ("channel", channel.to_string()),
            ("oldest", oldest.to_string()),
            ("inclusive", "false".to_string()),
            ("limit", limit.to_string()),
        ];
        let v = self.call_form("conversations.history", &fields).await?;
        Ok(v["messages"].as_array().cloned().unwrap_or_default())
    }

    /// `apps.connections.open`: a Socket Mode URL (with the app token).
    pub async fn connections_open(&self) -> Result<String, SlackError> {
        let token = self
            .app_token
            .clone()
            .ok_or_else(|| SlackError::Auth("no app token".into()))?;
        let v = self
            .call("apps.connections.open", &token, &json!({}))
            .await?;
        Self::field(&v, "url")
    }

    fn message(channel: &str, text: &str, markdown: bool) -> Value {
        let mut body = json!({
            "channel": channel,
            "text": text,
            "unfurl_links": false,
            "unfurl_media": false,
        });
        if markdown {
            // Slack renders standard markdown in a markdown block; `text`
            // stays the notification's plain fallback.
            body["blocks"] = json!([{ "type": "markdown", "text": text }]);
        }
        body
    }

    /// `chat.postMessage`; reply: the new message's `ts`.
    pub async fn post_message(
        &self,
        channel: &str,
        text: &str,
        thread_ts: Option<&str>,
        markdown: bool,
    ) -> Result<String, SlackError> {
        let mut body = Self::message(channel, text, markdown);
        if let Some(t) = thread_ts {
            body["thread_ts"] = json!(t);
        }
        let v = self
            .call("chat.postMessage", &self.bot_token, &body)
            .await?;
        Self::field(&v, "ts")
    }

    /// `reactions.add` / `reactions.remove` of emoji `name` (no colons).
    pub async fn react(
        &self,
        channel: &str,
        ts: &str,
        name: &str,
        remove: bool,
    ) -> Result<(), SlackError> {
        let method = if remove {
            "reactions.remove"
        } else {
            "reactions.add"
        };
        let body = json!({ "channel": channel, "timestamp": ts, "name": name });
        match self.call(method, &self.bot_token, &body).await {
            // Already as asked (a repeat, or a retry whose first try landed).
            Err(SlackError::Refused(e)) if e == "already_reacted" || e == "no_reaction" => Ok(()),
            other => other.map(|_| ()),
        }
    }

    /// `chat.delete` of the message `ts`.
    pub async fn delete(&self, channel: &str, ts: &str) -> Result<(), SlackError> {
        let body = json!({ "channel": channel, "ts": ts });
        self.call("chat.delete", &self.bot_token, &body)
            .await
            .map(|_| ())
    }

    /// `chat.update` of the message `ts`.
    pub async fn update(
        &self,
        channel: &str,
        ts: &str,
        text: &str,
        markdown: bool,
    ) -> Result<(), SlackError> {
        let mut body = Self::message(channel, text, markdown);
        body["ts"] = json!(ts);
        if !markdown {
            body["blocks"] = json!([]);
        }
        self.call("chat.update", &self.bot_token, &body)
            .await
            .map(|_| ())
    }
}
