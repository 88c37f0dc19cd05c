//! The Matrix Client-Server API (v3) over reqwest: `whoami`, a password
//! `login`, `/sync` (long poll), `PUT .../send/{type}/{txnId}` (a message,
//! an edit, a reaction: the txnId makes a repeat the same event),
//! redactions, typing, read markers, joins, and media (authenticated
//! `v1/media` downloads, `v3/upload`). No retries here: the account's
//! limiter reads the errors as mapped below (`M_LIMIT_EXCEEDED` waits
//! `retry_after_ms`, `M_UNKNOWN_TOKEN` fails for good, a request with no
//! answer has an unknown outcome).

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use crate::channels::limits::Failure;
use crate::channels::sender::{transport_error, CallError};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MxError {
    #[error("rate limited (M_LIMIT_EXCEEDED): retry after {0} ms")]
    RateLimited(u64),
    #[error("the access token was refused ({0}): {1}")]
    Auth(String, String),
    #[error("refused ({0}): {1}")]
    Refused(String, String),
    #[error("unreachable: {0}")]
    Unreachable(String),
    #[error("server error: {0}")]
    Server(String),
    #[error("no answer: {0}")]
    NoAnswer(String),
}

impl CallError for MxError {
    fn failure(&self) -> Failure {
        match self {
            MxError::RateLimited(ms) => Failure::RateLimited {
                retry_after_ms: Some(*ms),
            },
            MxError::Unreachable(_) | MxError::Server(_) | MxError::NoAnswer(_) => {
                Failure::Transient
            }
            MxError::Auth(..) | MxError::Refused(..) => Failure::Permanent,
        }
    }
    fn answered(&self) -> bool {
        !matches!(self, Self::Unreachable(_) | Self::NoAnswer(_))
    }
    fn unknown_outcome(&self) -> bool {
        matches!(self, Self::NoAnswer(_))
    }
}

/// A Matrix error body with its status, as the error it is.
pub fn mx_error(status: u16, body: &Value) -> MxError {
    let code = body["errcode"].as_str().unwrap_or("").to_string();
    let msg = body["error"].as_str().unwrap_or("").to_string();
    match (status, code.as_str()) {
        (_, "M_LIMIT_EXCEEDED") | (429, _) => {
            MxError::RateLimited(body["retry_after_ms"].as_u64().unwrap_or(1000))
        }
        (_, "M_UNKNOWN_TOKEN" | "M_MISSING_TOKEN") | (401, _) => MxError::Auth(code, msg),
        (s, _) if s >= 500 => MxError::Server(format!("status {s}: {code} {msg}")),
        _ => MxError::Refused(code, msg),
    }
}

/// A path segment, percent-encoded.
pub fn enc(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// What a password login gave (kept in the store: later starts reuse the
/// token, and a new login keeps the device, so transaction ids stay the
/// device's and a resent reply stays one event).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Login {
    pub user_id: String,
    pub access_token: String,
    pub device_id: String,
}

/// The most a `/sync` answer or a download may hold.
const MAX_SYNC: usize = 64 << 20;

#[derive(Clone)]
pub struct MatrixApi {
    http: reqwest::Client,
    base: String,
    /// The access token (empty until a login gives one): calls wait for it.
    token: Arc<tokio::sync::watch::Sender<String>>,
    limit: Duration,
}

impl std::fmt::Debug for MatrixApi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MatrixApi")
            .field("base", &self.base)
            .finish()
    }
}

impl MatrixApi {
    pub fn new(homeserver: &str, token: Option<&str>, limit: Duration) -> MatrixApi {
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .build()
            .unwrap_or_default();
        MatrixApi {
            http,
            base: homeserver.trim_end_matches('/').to_string(),
            token: Arc::new(tokio::sync::watch::channel(token.unwrap_or_default().to_string()).0),
            limit,
        }
    }

    /// The token, once there is one (a send queued while the account
    /// logs in waits for it, at most the request limit).
    async fn token(&self) -> String {
        let mut rx = self.token.subscribe();
        let ready = async move { rx.wait_for(|t| !t.is_empty()).await.map(|t| t.clone()) };
        match tokio::time::timeout(self.limit, ready).await {
            Ok(Ok(t)) => t,
            _ => String::new(),
        }
    }

    pub fn set_token(&self, token: &str) {
        self.token.send_replace(token.to_string());
    }

    async fn answer(req: reqwest::RequestBuilder, max: usize) -> Result<Value, MxError> {
        let mut resp = match req.send().await {
            Ok(r) => r,
            Err(e) if e.is_connect() => return Err(MxError::Unreachable(transport_error(&e))),
            Err(e) => return Err(MxError::NoAnswer(transport_error(&e))),
        };
        let status = resp.status().as_u16();
        let mut body = Vec::new();
        loop {
            match resp.chunk().await {
                Ok(Some(c)) if body.len() + c.len() <= max => body.extend_from_slice(&c),
                Ok(Some(_)) => return Err(MxError::Server("answer too large".into())),
                Ok(None) => break,
                Err(e) => return Err(MxError::NoAnswer(transport_error(&e))),
            }
        }
        let v: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        if (200..300).contains(&status) {
            return Ok(v);
        }
        Err(mx_error(status, &v))
    }

    async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<&Value>,
        limit: Duration,
    ) -> Result<Value, MxError> {
        let mut req = self
            .http
            .request(method, format!("{}/_matrix/client/v3{path}", self.base))
            .bearer_auth(self.token().await)
            .timeout(limit);
        if let Some(b) = body {
            req = req.json(b);
        }
        Self::answer(req, MAX_SYNC).await
    }

    /// Who the token belongs to.
    pub async fn whoami(&self) -> Result<String, MxError> {
        let v = self
            .call(reqwest::Method::GET, "/account/whoami", None, self.limit)
            .await?;
        Ok(v["user_id"].as_str().unwrap_or_default().to_string())
    }

    /// A password login as `device_id` (a new device when None): the user
    /// id, token and device; the token is kept for every later call.
    pub async fn login(
        &self,
        user: &str,
        password: &str,
        device_id: Option<&str>,
        device_name: &str,
    ) -> Result<Login, MxError> {
        let mut body = json!({ "type": "m.login.password",
            "identifier": { "type": "m.id.user", "user": user }, "password": password,
            "initial_device_display_name": device_name });
        if let Some(d) = device_id {
            body["device_id"] = json!(d);
        }
        let req = self
            .http
            .post(format!("{}/_matrix/client/v3/login", self.base))
            .json(&body)
            .timeout(self.limit);
        let v = Self::answer(req, 1 << 20).await?;
        let text = |k: &str| v[k].as_str().unwrap_or_default().to_string();
        let login = Login {
            user_id: text("user_id"),
            access_token: text("access_token"),
            device_id: text("device_id"),
        };
        if login.access_token.is_empty() {
            return Err(MxError::Server("login: no access_token".into()));
        }
        self.set_token(&login.access_token);
        Ok(login)
    }

    /// One long poll: what happened after `since` (all of the account's
    /// state when None), held up to `timeout_s` when nothing did.
    pub async fn sync(
        &self,
        since: Option<&str>,
        timeout_s: u64,
        filter: &str,
    ) -> Result<Value, MxError> {
        let mut path = format!("/sync?timeout={}&filter={}", timeout_s * 1000, enc(filter));
        if let Some(s) = since {
            path.push_str(&format!("&since={}", enc(s)));
        }
        let limit = self.limit + Duration::from_secs(timeout_s);
        self.call(reqwest::Method::GET, &path, None, limit).await
    }

    /// `PUT /rooms/{room}/send/{kind}/{txn}`: the event's id. The same
    /// txnId from the same device is the same event (the homeserver
    /// answers a repeat with the first one's id).
    pub async fn send(
        &self,
        room: &str,
        kind: &str,
        txn: &str,
        content: &Value,
    ) -> Result<String, MxError> {
        let path = format!("/rooms/{}/send/{}/{}", enc(room), enc(kind), enc(txn));
        let v = self
            .call(reqwest::Method::PUT, &path, Some(content), self.limit)
            .await?;
        v["event_id"]
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| MxError::Server("send: no event_id".into()))
    }

    pub async fn redact(&self, room: &str, event: &str, txn: &str) -> Result<(), MxError> {
        let path = format!("/rooms/{}/redact/{}/{}", enc(room), enc(event), enc(txn));
        self.call(reqwest::Method::PUT, &path, Some(&json!({})), self.limit)
            .await
            .map(drop)
    }

    pub async fn typing(&self, room: &str, user: &str, on: bool) -> Result<(), MxError> {
        let path = format!("/rooms/{}/typing/{}", enc(room), enc(user));
        let body = if on {
            json!({ "typing": true, "timeout": 30000 })
        } else {
            json!({ "typing": false })
        };
        self.call(reqwest::Method::PUT, &path, Some(&body), self.limit)
            .await
            .map(drop)
    }

    /// The read marker and receipt on `event`.
    pub async fn read(&self, room: &str, event: &str) -> Result<(), MxError> {
        let path = format!("/rooms/{}/read_markers", enc(room));
        let body = json!({ "m.fully_read": event, "m.read": event });
        self.call(reqwest::Method::POST, &path, Some(&body), self.limit)
            .await
            .map(drop)
    }

    /// `GET /rooms/{room}/messages`, backwards from `from`: up to `limit`
    /// messages (newest first) and the token past the last (`end`; none
    /// at the start of the room).
    pub async fn messages_before(
        &self,
        room: &str,
        from: &str,
        limit: usize,
    ) -> Result<(Vec<Value>, Option<String>), MxError> {
        let filter = json!({ "types": ["m.room.message"] }).to_string();
        let path = format!(
            "/rooms/{}/messages?dir=b&from={}&limit={limit}&filter={}",
            enc(room),
            enc(from),
            enc(&filter)
        );
        let v = self
            .call(reqwest::Method::GET, &path, None, self.limit)
            .await?;
        let chunk = v["chunk"].as_array().cloned().unwrap_or_default();
        Ok((chunk, v["end"].as_str().map(str::to_string)))
    }

    pub async fn join(&self, room: &str) -> Result<(), MxError> {
        let path = format!("/join/{}", enc(room));
        self.call(reqwest::Method::POST, &path, Some(&json!({})), self.limit)
            .await
            .map(drop)
    }

    /// An `mxc://server/id` file's bytes, at most `max`.
    pub async fn download(
        &self,
        mxc: &str,
        max: u64,
    ) -> Result<Vec<u8>, crate::channels::error::DownloadError> {
        let rest = mxc.strip_prefix("mxc://").ok_or("not an mxc:// URL")?;
        let (server, id) = rest.split_once('/').ok_or("not an mxc:// URL")?;
        let url = format!(
            "{}/_matrix/client/v1/media/download/{}/{}",
            self.base,
            enc(server),
            enc(id)
        );
        let token = self.token().await;
        let req = self.http.get(url).bearer_auth(token).timeout(self.limit);
        let mut resp = req.send().await.map_err(|e| transport_error(&e))?;
        if !resp.status().is_success() {
            return Err(crate::channels::error::DownloadError::from(format!(
                "download: status {}",
                resp.status()
            )));
        }
        if resp.content_length().is_some_and(|n| n > max) {
            return Err(crate::channels::error::DownloadError::from(format!(
                "the file is over {max} bytes"
            )));
        }
        let mut out = Vec::new();
        while let Some(c) = resp.chunk().await.map_err(|e| transport_error(&e))? {
            if (out.len() + c.len()) as u64 > max {
                return Err(crate::channels::error::DownloadError::from(format!(
                    "the file is over {max} bytes"
                )));
            }
            out.extend_from_slice(&c);
        }
        Ok(out)
    }

    /// Uploads a file: its `mxc://` URL.
    pub async fn upload(
        &self,
        bytes: Vec<u8>,
        content_type: &str,
        name: &str,
    ) -> Result<String, MxError> {
        let url = format!(
            "{}/_matrix/media/v3/upload?filename={}",
            self.base,
            enc(name)
        );
        let req = self
            .http
            .post(url)
            .bearer_auth(self.token().await)
            .header("Content-Type", content_type)
            .body(bytes)
            .timeout(self.limit);
        let v = Self::answer(req, 1 << 20).await?;
        v["content_uri"]
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| MxError::Server("upload: no content_uri".into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matrix_errors_map_to_the_limiter() {
        let e = mx_error(
            429,
            &json!({ "errcode": "M_LIMIT_EXCEEDED", "retry_after_ms": 2500 }),
        );
        assert_eq!(e, MxError::RateLimited(2500));
        let e = mx_error(
            401,
            &json!({ "errcode": "M_UNKNOWN_TOKEN", "error": "Invalid" }),
        );
        assert_eq!(e.failure(), Failure::Permanent);
        assert!(matches!(mx_error(502, &Value::Null), MxError::Server(_)));
        assert_eq!(enc("!room:server/x y"), "%21room%3Aserver%2Fx%20y");
    }
}
