//! The WhatsApp Cloud API (Meta's Graph API) over reqwest: `POST
//! /{phone-number-id}/messages` (text, reply context, reactions, read
//! receipts with the typing indicator, templates, media by link or by
//! upload id), `POST /{phone-number-id}/media` (an upload), `GET
//! /{media-id}` and the file behind it (an inbound attachment). A bearer
//! token on each. The client never retries: every call goes through the
//! account's limiter, which reads Meta's error codes as this module maps
//! them (a throughput or pair rate limit waits; a closed 24-hour window
//! or a refused token fails for good; a request with no answer has an
//! unknown outcome).

use std::time::Duration;

use serde_json::{json, Value};

use crate::channels::limits::Failure;
use crate::channels::sender::{transport_error, CallError};

/// Meta's codes this client reads.
pub mod codes {
    /// Cloud API throughput reached.
    pub const THROUGHPUT: i64 = 130429;
    /// Too many messages to one user in a short time (pair rate limit).
    pub const PAIR_RATE: i64 = 131056;
    /// More than 24 hours since the customer last wrote: only a template.
    pub const WINDOW_CLOSED: i64 = 131047;
    /// Application or account rate limits.
    pub const APP_RATE: [i64; 3] = [4, 80007, 130472];
    /// The access token is invalid or expired.
    pub const TOKEN: i64 = 190;
}

/// Why a call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WaError {
    /// HTTP 429 or a rate-limit code: wait this long.
    #[error("rate limited (code {code}): retry after {retry_after_ms} ms")]
    RateLimited { code: i64, retry_after_ms: u64 },
    /// 131047: free text is refused outside the 24-hour window.
    #[error("the 24-hour customer service window is closed (code 131047): WhatsApp takes only an approved template until the customer writes again")]
    WindowClosed,
    #[error("token refused (code {0}): {1}")]
    Auth(i64, String),
    /// Another Graph error (code, message).
    #[error("refused (code {0}): {1}")]
    Refused(i64, String),
    #[error("unreachable: {0}")]
    Unreachable(String),
    #[error("server error: {0}")]
    Server(String),
    /// The request left and no answer came: it may have landed.
    #[error("no answer: {0}")]
    NoAnswer(String),
}

impl CallError for WaError {
    fn failure(&self) -> Failure {
        match self {
            WaError::RateLimited { retry_after_ms, .. } => Failure::RateLimited {
                retry_after_ms: Some(*retry_after_ms),
            },
            WaError::Unreachable(_) | WaError::Server(_) | WaError::NoAnswer(_) => {
                Failure::Transient
            }
            WaError::WindowClosed | WaError::Auth(..) | WaError::Refused(..) => Failure::Permanent,
        }
    }
    fn answered(&self) -> bool {
        !matches!(self, Self::Unreachable(_) | Self::NoAnswer(_))
    }
    fn unknown_outcome(&self) -> bool {
        matches!(self, Self::NoAnswer(_))
    }
}

/// A Graph error body (`{"error": {"code", "message", ...}}`) with its
/// HTTP status, as the error it is.
pub fn graph_error(status: u16, body: &Value, retry_after_s: Option<f64>) -> WaError {
    let e = &body["error"];
    let code = e["code"].as_i64().unwrap_or(0);
    let message = e["message"].as_str().unwrap_or("").to_string();
    let wait = |default_s: f64| (retry_after_s.unwrap_or(default_s) * 1000.0) as u64;
    match code {
        codes::WINDOW_CLOSED => WaError::WindowClosed,
        codes::TOKEN => WaError::Auth(code, message),
        // Meta asks for a pause of seconds to a minute for these.
        codes::THROUGHPUT => WaError::RateLimited {
            code,
            retry_after_ms: wait(1.0),
        },
        codes::PAIR_RATE => WaError::RateLimited {
            code,
            retry_after_ms: wait(6.0),
        },
        c if codes::APP_RATE.contains(&c) => WaError::RateLimited {
            code,
            retry_after_ms: wait(60.0),
        },
        _ if status == 429 => WaError::RateLimited {
            code,
            retry_after_ms: wait(1.0),
        },
        _ if status >= 500 => WaError::Server(format!("status {status}: {message}")),
        _ if status == 401 => WaError::Auth(code, message),
        _ => WaError::Refused(code, message),
    }
}

/// An inbound attachment as the Graph API describes it.
#[derive(Debug, Clone, PartialEq)]
pub struct MediaInfo {
    pub url: String,
    pub mime_type: Option<String>,
    pub size: Option<u64>,
}

/// One business number's client.
#[derive(Clone)]
pub struct GraphApi {
    http: reqwest::Client,
    /// `<apiBaseUrl>/<apiVersion>`.
    base: String,
    phone_number_id: String,
    token: String,
    limit: Duration,
}

impl std::fmt::Debug for GraphApi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GraphApi")
            .field("base", &self.base)
            .finish()
    }
}

impl GraphApi {
    pub fn new(base: &str, phone_number_id: &str, token: &str, limit: Duration) -> GraphApi {
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .build()
            .unwrap_or_default();
        GraphApi {
            http,
            base: base.trim_end_matches('/').to_string(),
            phone_number_id: phone_number_id.to_string(),
            token: token.to_string(),
            limit,
        }
    }

    /// Sends `req`: the answer's JSON, or the error it is.
    async fn answer(req: reqwest::RequestBuilder) -> Result<Value, WaError> {
        let resp = match req.send().await {
            Ok(r) => r,
            Err(e) if e.is_connect() => return Err(WaError::Unreachable(transport_error(&e))),
            Err(e) => return Err(WaError::NoAnswer(transport_error(&e))),
        };
        let status = resp.status().as_u16();
        let retry_after = resp
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<f64>().ok())
            .filter(|s| s.is_finite() && *s >= 0.0);
        let body = match resp.bytes().await {
            Ok(b) => b,
            Err(e) => return Err(WaError::NoAnswer(transport_error(&e))),
        };
        let v: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        if (200..300).contains(&status) && v.get("error").is_none() {
            return Ok(v);
        }
        if v.get("error").is_none() && status >= 500 {
            return Err(WaError::Server(format!("status {status}")));
        }
        Err(graph_error(status, &v, retry_after))
    }

    /// `POST /{phone-number-id}/messages` with `message` (the fields after
    /// `messaging_product`): the new message's `wamid` (empty for a read
    /// receipt).
    async fn message(&self, mut message: Value) -> Result<String, WaError> {
        message["messaging_product"] = json!("whatsapp");
        let url = format!("{}/{}/messages", self.base, self.phone_number_id);
        let req = self
            .http
            .post(url)
            .bearer_auth(&self.token)
            .json(&message)
            .timeout(self.limit);
        let v = Self::answer(req).await?;
        Ok(v["messages"][0]["id"].as_str().unwrap_or("").to_string())
    }

    fn with_context(mut m: Value, reply_to: Option<&str>) -> Value {
        if let Some(id) = reply_to {
            m["context"] = json!({ "message_id": id });
        }
        m
    }

    pub async fn send_text(
        &self,
        to: &str,
        body: &str,
        reply_to: Option<&str>,
    ) -> Result<String, WaError> {
        let m = json!({ "recipient_type": "individual", "to": to, "type": "text",
            "text": { "body": body, "preview_url": false } });
        self.message(Self::with_context(m, reply_to)).await
    }

    /// An approved template (what the closed 24-hour window allows).
    pub async fn send_template(&self, to: &str, name: &str, lang: &str) -> Result<String, WaError> {
        let m = json!({ "recipient_type": "individual", "to": to, "type": "template",
            "template": { "name": name, "language": { "code": lang } } });
        self.message(m).await
    }

    /// `kind` (`image`, `audio`, `video`, `document`; `voice`: audio with
    /// `voice: true`, a voice note) by `link` or by upload `id`, with a
    /// caption where the kind takes one.
    pub async fn send_media(
        &self,
        to: &str,
        kind: &str,
        source: (&str, &str),
        caption: &str,
        filename: Option<&str>,
    ) -> Result<String, WaError> {
        let (kind, voice) = match kind {
            "voice" => ("audio", true),
            k => (k, false),
        };
        let mut media = json!({ source.0: source.1 });
        if voice {
            media["voice"] = json!(true);
        }
        if !caption.trim().is_empty() && kind != "audio" {
            media["caption"] = json!(caption);
        }
        if let (Some(f), "document") = (filename, kind) {
            media["filename"] = json!(f);
        }
        let m = json!({ "recipient_type": "individual", "to": to, "type": kind, kind: media });
        self.message(m).await
    }

    /// The customer's message `id` marked read, with the typing indicator
    /// (shown until the reply or 25 s).
    pub async fn mark_read(&self, id: &str, typing: bool) -> Result<(), WaError> {
        let mut m = json!({ "status": "read", "message_id": id });
        if typing {
            m["typing_indicator"] = json!({ "type": "text" });
        }
        self.message(m).await.map(drop)
    }

    /// The bot's reaction on message `id` (an empty emoji removes it).
    pub async fn react(&self, to: &str, id: &str, emoji: &str) -> Result<(), WaError> {
        let m = json!({ "recipient_type": "individual", "to": to, "type": "reaction",
            "reaction": { "message_id": id, "emoji": emoji } });
        self.message(m).await.map(drop)
    }

    /// The business number as Meta shows it (`GET /{phone-number-id}`):
    /// what the start checks the token with.
    pub async fn number(&self) -> Result<String, WaError> {
        let req = self
            .http
            .get(format!("{}/{}", self.base, self.phone_number_id))
            .query(&[("fields", "display_phone_number,verified_name")])
            .bearer_auth(&self.token)
            .timeout(self.limit);
        let v = Self::answer(req).await?;
        Ok(v["display_phone_number"].as_str().unwrap_or("").to_string())
    }

    /// Uploads a file: its media id.
    pub async fn upload(&self, bytes: Vec<u8>, mime: &str, name: &str) -> Result<String, WaError> {
        let part = reqwest::multipart::Part::bytes(bytes)
            .file_name(name.to_string())
            .mime_str(mime)
            .map_err(|e| WaError::Refused(0, format!("media type {mime}: {e}")))?;
        let form = reqwest::multipart::Form::new()
            .text("messaging_product", "whatsapp")
            .text("type", mime.to_string())
            .part("file", part);
        let url = format!("{}/{}/media", self.base, self.phone_number_id);
        let req = self
            .http
            .post(url)
            .bearer_auth(&self.token)
            .multipart(form)
            .timeout(self.limit);
        let v = Self::answer(req).await?;
        v["id"]
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| WaError::Server("an upload answer without an id".into()))
    }

    /// Where an inbound attachment is (`GET /{media-id}`).
    pub async fn media_info(&self, id: &str) -> Result<MediaInfo, WaError> {
        if id.is_empty() || !id.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(WaError::Refused(0, format!("not a media id: {id:?}")));
        }
        let req = self
            .http
            .get(format!("{}/{id}", self.base))
            .bearer_auth(&self.token)
            .timeout(self.limit);
        let v = Self::answer(req).await?;
        let url = v["url"]
            .as_str()
            .ok_or_else(|| WaError::Server("a media answer without a url".into()))?;
        Ok(MediaInfo {
            url: url.to_string(),
            mime_type: v["mime_type"].as_str().map(str::to_string),
            size: v["file_size"].as_u64(),
        })
    }

    /// An inbound attachment's bytes, at most `max`, from Meta's hosts (or
    /// the API's own, for tests), with the token.
    pub async fn download(
        &self,
        id: &str,
        expected: Option<&str>,
        max: u64,
    ) -> Result<Vec<u8>, crate::channels::error::DownloadError> {
        let info = self.media_info(id).await.map_err(|e| e.to_string())?;
        if info.size.is_some_and(|s| s > max) {
            return Err(crate::channels::error::DownloadError::from(format!(
                "the file is over the {max} byte limit"
            )));
        }
        let auth = vec![(
            "Authorization".to_string(),
            format!("Bearer {}", self.token),
        )];
        let expected = expected.or(info.mime_type.as_deref());
        crate::channels::media_in::platform_file(
            &info.url,
            &["fbcdn.net", "facebook.com", "whatsapp.net"],
            &self.base,
            &auth,
            expected,
            max,
        )
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(code: i64) -> Value {
        json!({ "error": { "message": "m", "type": "OAuthException", "code": code, "fbtrace_id": "x" } })
    }

    #[test]
    fn metas_codes_become_waits_notices_and_refusals() {
        use crate::channels::limits::Failure;
        assert_eq!(graph_error(400, &err(131047), None), WaError::WindowClosed);
        assert_eq!(
            graph_error(400, &err(131047), None).failure(),
            Failure::Permanent
        );
        let rate = |status, code, after| graph_error(status, &err(code), after).failure();
        assert_eq!(
            rate(400, 130429, None),
            Failure::RateLimited {
                retry_after_ms: Some(1000)
            }
        );
        assert_eq!(
            rate(400, 131056, None),
            Failure::RateLimited {
                retry_after_ms: Some(6000)
            }
        );
        assert_eq!(
            rate(429, 0, Some(2.5)),
            Failure::RateLimited {
                retry_after_ms: Some(2500)
            }
        );
        assert_eq!(
            rate(400, 80007, None),
            Failure::RateLimited {
                retry_after_ms: Some(60_000)
            }
        );
        assert!(matches!(
            graph_error(401, &err(190), None),
            WaError::Auth(190, _)
        ));
        assert!(matches!(
            graph_error(400, &err(100), None),
            WaError::Refused(100, _)
        ));
        assert!(matches!(
            graph_error(503, &err(2), None),
            WaError::Server(_)
        ));
        assert!(WaError::NoAnswer("t".into()).unknown_outcome());
        assert!(!WaError::WindowClosed.unknown_outcome());
    }
}
