//! signal-cli's HTTP daemon (man signal-cli-jsonrpc(5)) over reqwest:
//! JSON-RPC 2.0 on `POST /api/v1/rpc` (`send`, `sendTyping`,
//! `sendReaction`, `sendReceipt`, `remoteDelete`, `getAttachment`), the
//! event stream `GET /api/v1/events` (read by `stream.rs`) and `GET
//! /api/v1/check`. No retries here: calls go through the account's
//! limiter, which reads signal-cli's error codes as mapped below (-5 a
//! rate limit, -3 an IO error whose outcome is unknown, -1 and the
//! JSON-RPC codes refused for good).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use crate::channels::limits::Failure;
use crate::channels::sender::{transport_error, CallError};

/// Why a call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SigError {
    #[error("rate limited by Signal (code -5): {0}")]
    RateLimited(String),
    /// signal-cli could not reach Signal (code -3): the message may have gone.
    #[error("signal-cli could not reach Signal (code -3): {0}")]
    Io(String),
    #[error("refused (code {0}): {1}")]
    Refused(i64, String),
    #[error("the daemon is unreachable: {0}")]
    Unreachable(String),
    #[error("daemon error: {0}")]
    Server(String),
    /// The request left and no answer came: it may have landed.
    #[error("no answer: {0}")]
    NoAnswer(String),
}

impl CallError for SigError {
    fn failure(&self) -> Failure {
        match self {
            SigError::RateLimited(_) => Failure::RateLimited {
                retry_after_ms: Some(5000),
            },
            SigError::Io(_)
            | SigError::Unreachable(_)
            | SigError::Server(_)
            | SigError::NoAnswer(_) => Failure::Transient,
            SigError::Refused(..) => Failure::Permanent,
        }
    }
    fn answered(&self) -> bool {
        !matches!(self, Self::Unreachable(_) | Self::NoAnswer(_))
    }
    fn unknown_outcome(&self) -> bool {
        matches!(self, Self::NoAnswer(_) | Self::Io(_))
    }
}

/// A JSON-RPC error object as the error it is.
pub fn rpc_error(e: &Value) -> SigError {
    let code = e["code"].as_i64().unwrap_or(0);
    let message = e["message"].as_str().unwrap_or("").to_string();
    match code {
        -5 => SigError::RateLimited(message),
        -3 => SigError::Io(message),
        _ => SigError::Refused(code, message),
    }
}

/// Whom a call is about: a number or `uuid:<ACI>` (a direct chat), or
/// `group:<id>`.
pub fn target(chat: &str) -> Value {
    match chat.strip_prefix("group:") {
        Some(g) => json!({ "groupId": g }),
        None => json!({ "recipient": [chat.strip_prefix("uuid:").unwrap_or(chat)] }),
    }
}

/// One daemon's client.
#[derive(Clone)]
pub struct SignalRpc {
    http: reqwest::Client,
    base: String,
    limit: Duration,
    next_id: Arc<AtomicU64>,
}

impl std::fmt::Debug for SignalRpc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SignalRpc")
            .field("base", &self.base)
            .finish()
    }
}

/// The most an RPC answer may hold (an attachment's base64 in it).
const MAX_ANSWER: usize = 200 << 20;

impl SignalRpc {
    pub fn new(base: &str, limit: Duration) -> SignalRpc {
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .build()
            .unwrap_or_default();
        SignalRpc {
            http,
            base: base.trim_end_matches('/').to_string(),
            limit,
            next_id: Arc::new(AtomicU64::new(1)),
        }
    }

    pub fn http(&self) -> &reqwest::Client {
        &self.http
    }

    pub fn events_url(&self, account: &str) -> String {
        let q: String = account
            .chars()
            .map(|c| {
                if c == '+' {
                    "%2B".to_string()
                } else {
                    c.to_string()
                }
            })
            .collect();
        format!("{}/api/v1/events?account={q}", self.base)
    }

    /// `GET /api/v1/check`: the daemon answers.
    pub async fn check(&self) -> Result<(), SigError> {
        let url = format!("{}/api/v1/check", self.base);
        match self.http.get(url).timeout(self.limit).send().await {
            Ok(r) if r.status().is_success() => Ok(()),
            Ok(r) => Err(SigError::Server(format!("check: status {}", r.status()))),
            Err(e) => Err(SigError::Unreachable(transport_error(&e))),
        }
    }

    /// One JSON-RPC call: its `result`, or the error it is.
    pub async fn call(&self, method: &str, params: Value) -> Result<Value, SigError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let body = json!({ "jsonrpc": "2.0", "method": method, "params": params, "id": id });
        let req = self
            .http
            .post(format!("{}/api/v1/rpc", self.base))
            .json(&body)
            .timeout(self.limit);
        let mut resp = match req.send().await {
            Ok(r) => r,
            Err(e) if e.is_connect() => return Err(SigError::Unreachable(transport_error(&e))),
            Err(e) => return Err(SigError::NoAnswer(transport_error(&e))),
        };
        let status = resp.status().as_u16();
        let mut body = Vec::new();
        loop {
            match resp.chunk().await {
                Ok(Some(c)) if body.len() + c.len() <= MAX_ANSWER => body.extend_from_slice(&c),
                Ok(Some(_)) => return Err(SigError::Server("answer too large".into())),
                Ok(None) => break,
                Err(e) => return Err(SigError::NoAnswer(transport_error(&e))),
            }
        }
        if status == 201 {
            return Ok(Value::Null);
        }
        let v: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        if status >= 500 || (status >= 400 && v.is_null()) {
            return Err(SigError::Server(format!("{method}: status {status}")));
        }
        if let Some(e) = v.get("error").filter(|e| !e.is_null()) {
            return Err(rpc_error(e));
        }
        match v.get("result") {
            Some(r) => Ok(r.clone()),
            None => Err(SigError::Server(format!("{method}: not a JSON-RPC answer"))),
        }
    }

    /// `send`: the new message's timestamp (Signal's id for it). `quote`:
    /// the message answered (its timestamp and author); `edit`: the
    /// timestamp of the bot's message this text replaces.
    pub async fn send(
        &self,
        chat: &str,
        text: &str,
        quote: Option<(&str, &str)>,
        edit: Option<&str>,
        attachments: &[String],
    ) -> Result<String, SigError> {
        let mut p = target(chat);
        p["message"] = json!(text);
        if let Some((ts, author)) = quote.and_then(|(t, a)| Some((t.parse::<u64>().ok()?, a))) {
            p["quoteTimestamp"] = json!(ts);
            p["quoteAuthor"] = json!(author.strip_prefix("uuid:").unwrap_or(author));
        }
        if let Some(ts) = edit.and_then(|t| t.parse::<u64>().ok()) {
            p["editTimestamp"] = json!(ts);
        }
        if !attachments.is_empty() {
            p["attachments"] = json!(attachments);
        }
        let r = self.call("send", p).await?;
        sent_timestamp(&r)
    }

    pub async fn typing(&self, chat: &str, stop: bool) -> Result<(), SigError> {
        let mut p = target(chat);
        if stop {
            p["stop"] = json!(true);
        }
        self.call("sendTyping", p).await.map(drop)
    }

    pub async fn react(
        &self,
        chat: &str,
        ts: &str,
        author: &str,
        emoji: &str,
        remove: bool,
    ) -> Result<(), SigError> {
        let mut p = target(chat);
        p["emoji"] = json!(emoji);
        p["targetAuthor"] = json!(author.strip_prefix("uuid:").unwrap_or(author));
        p["targetTimestamp"] = json!(parse_ts(ts)?);
        if remove {
            p["remove"] = json!(true);
        }
        self.call("sendReaction", p).await.map(drop)
    }

    pub async fn delete(&self, chat: &str, ts: &str) -> Result<(), SigError> {
        let mut p = target(chat);
        p["targetTimestamp"] = json!(parse_ts(ts)?);
        self.call("remoteDelete", p).await.map(drop)
    }

    /// A read receipt for a direct message.
    pub async fn read(&self, sender: &str, ts: &str) -> Result<(), SigError> {
        let mut p = target(sender);
        p["targetTimestamp"] = json!([parse_ts(ts)?]);
        p["type"] = json!("read");
        self.call("sendReceipt", p).await.map(drop)
    }

    /// An attachment's bytes (`getAttachment`, base64 in the answer).
    pub async fn attachment(
        &self,
        id: &str,
    ) -> Result<Vec<u8>, crate::channels::error::DownloadError> {
        use base64::Engine;
        let p = json!({ "id": id });
        let r = self
            .call("getAttachment", p)
            .await
            .map_err(|e| e.to_string())?;
        let data = r["data"].as_str().or(r.as_str()).unwrap_or_default();
        base64::engine::general_purpose::STANDARD
            .decode(data)
            .map_err(|e| format!("attachment {id}: not base64: {e}").into())
    }
}

fn parse_ts(ts: &str) -> Result<u64, SigError> {
    ts.parse::<u64>()
        .map_err(|_| SigError::Refused(-1, format!("{ts:?} is not a Signal message timestamp")))
}

/// The timestamp a `send` answer names.
fn sent_timestamp(r: &Value) -> Result<String, SigError> {
    let failed: Vec<&str> = r["results"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|x| x["type"].as_str())
        .filter(|t| *t != "SUCCESS")
        .collect();
    if !failed.is_empty() && failed.len() == r["results"].as_array().map_or(0, Vec::len) {
        if failed.contains(&"RATE_LIMIT_FAILURE") {
            return Err(SigError::RateLimited(failed.join(", ")));
        }
        return Err(SigError::Refused(-1, failed.join(", ")));
    }
    match r["timestamp"].as_u64() {
        Some(t) => Ok(t.to_string()),
        None => Err(SigError::Server("send: no timestamp in the answer".into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signal_cli_codes_map_to_the_limiter() {
        let rate = rpc_error(&json!({ "code": -5, "message": "slow down" }));
        assert!(matches!(rate.failure(), Failure::RateLimited { .. }));
        let io = rpc_error(&json!({ "code": -3, "message": "timeout" }));
        assert!(
            io.unknown_outcome(),
            "an IO error may have sent the message"
        );
        let user = rpc_error(&json!({ "code": -1, "message": "Invalid group id" }));
        assert_eq!(user.failure(), Failure::Permanent);
    }

    #[test]
    fn targets_and_send_answers_read_as_signal_cli_writes_them() {
        assert_eq!(target("group:ab=="), json!({ "groupId": "ab==" }));
        assert_eq!(target("uuid:u-1"), json!({ "recipient": ["u-1"] }));
        assert_eq!(target("+1555"), json!({ "recipient": ["+1555"] }));
        let ok = json!({ "timestamp": 1700000000123u64, "results": [{ "type": "SUCCESS" }] });
        assert_eq!(sent_timestamp(&ok).unwrap(), "1700000000123");
        let unreg = json!({ "timestamp": 1, "results": [{ "type": "UNREGISTERED_FAILURE" }] });
        assert!(matches!(sent_timestamp(&unreg), Err(SigError::Refused(..))));
    }
}
