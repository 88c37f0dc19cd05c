//! The Streamable HTTP transport: rmcp's `StreamableHttpClient` trait on
//! our reqwest 0.12 client (rmcp's own implementation is on reqwest 0.13,
//! which would put a second reqwest line in the tree). The SDK's worker does
//! the protocol (sessions, `Mcp-Protocol-Version`, resumption); this file
//! only moves bytes: POST a message and hand back the JSON answer or the SSE
//! stream, GET the server's stream, DELETE the session. Bodies are bounded
//! (a JSON answer at 16 MiB, an SSE event at 16 MiB, an error body at
//! 64 KiB): a server cannot make the gateway buffer without end.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use futures_util::stream::{BoxStream, StreamExt};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, ACCEPT, CONTENT_TYPE};
use reqwest::StatusCode;
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, ErrorData, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_client::{
    HttpStatusError, SseError, StreamableHttpClient, StreamableHttpClientTransportConfig,
    StreamableHttpError, StreamableHttpPostResponse,
};
use rmcp::transport::StreamableHttpClientTransport;
use sse_stream::{Sse, SseStream};

const SESSION_ID: &str = "Mcp-Session-Id";
const LAST_EVENT_ID: &str = "Last-Event-Id";
const JSON: &str = "application/json";
const EVENT_STREAM: &str = "text/event-stream";
const MAX_JSON: usize = 16 << 20;
const MAX_EVENT: usize = 16 << 20;
const MAX_ERROR_BODY: usize = 64 << 10;

type Error = StreamableHttpError<reqwest::Error>;

/// The reqwest 0.12 client as rmcp's HTTP client.
#[derive(Clone)]
pub struct Http(reqwest::Client);

/// A transport to `url` sending `headers` with every request.
pub fn transport(
    http: reqwest::Client,
    url: &str,
    headers: &BTreeMap<String, String>,
) -> Result<StreamableHttpClientTransport<Http>, super::McpError> {
    let mut config = StreamableHttpClientTransportConfig::with_uri(url.to_string());
    for (k, v) in headers {
        let name = HeaderName::try_from(k.as_str()).map_err(|e| super::McpError::header(k, e))?;
        let value = HeaderValue::try_from(v.as_str()).map_err(|e| super::McpError::header(k, e))?;
        config.custom_headers.insert(name, value);
    }
    Ok(StreamableHttpClientTransport::with_client(
        Http(http),
        config,
    ))
}

fn media(headers: &HeaderMap, want: &str) -> bool {
    headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|m| m.trim().eq_ignore_ascii_case(want))
}

fn with_headers(
    mut rb: reqwest::RequestBuilder,
    auth: Option<String>,
    custom: HashMap<HeaderName, HeaderValue>,
) -> reqwest::RequestBuilder {
    if let Some(token) = auth {
        rb = rb.bearer_auth(token);
    }
    for (k, v) in custom {
        rb = rb.header(k, v);
    }
    rb
}

/// A body read to at most `max` bytes (Err: it was longer).
async fn bounded(res: reqwest::Response, max: usize) -> Result<Vec<u8>, usize> {
    let mut body = Vec::new();
    let mut stream = res.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let Ok(chunk) = chunk else { break };
        if body.len() + chunk.len() > max {
            return Err(max);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// A request the server answered with an error status: the transport's
/// error for it, the handshake's discovery answer, or the JSON-RPC error
/// the server sent in the body.
async fn refused(
    res: reqwest::Response,
    message: &ClientJsonRpcMessage,
    session: bool,
    new_session: Option<String>,
) -> Result<StreamableHttpPostResponse, Error> {
    let status = res.status();
    if let Some(e) = status_error(status, res.headers()) {
        return Err(e);
    }
    let body = bounded(res, MAX_ERROR_BODY).await.unwrap_or_default();
    let body = String::from_utf8_lossy(&body).to_string();
    if let Some(r) = discover_rejected(message, session, status, &body) {
        return Ok(r);
    }
    if !matches!(status, StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN) {
        if let Ok(m @ ServerJsonRpcMessage::Error(_)) = serde_json::from_str(&body) {
            return Ok(StreamableHttpPostResponse::Json(m, new_session));
        }
    }
    Err(StreamableHttpError::UnexpectedServerResponse(Cow::Owned(
        format!(
            "HTTP {status}: {}",
            body.chars().take(500).collect::<String>()
        ),
    )))
}

/// 429 and 5xx keep their status (the SDK's retry reads it).
fn status_error(status: StatusCode, headers: &HeaderMap) -> Option<Error> {
    if status != StatusCode::TOO_MANY_REQUESTS && !status.is_server_error() {
        return None;
    }
    let retry = headers
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    Some(StreamableHttpError::HttpStatus(HttpStatusError::new(
        status.as_u16(),
        retry,
    )))
}

/// The stream cut when one event grows past `MAX_EVENT` bytes.
#[derive(Debug)]
struct EventTooLarge;

impl std::fmt::Display for EventTooLarge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "an SSE event exceeded {MAX_EVENT} bytes")
    }
}

impl std::error::Error for EventTooLarge {}

#[derive(Debug)]
enum BodyError {
    Read(reqwest::Error),
    TooLarge(EventTooLarge),
}

impl std::fmt::Display for BodyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BodyError::Read(e) => write!(f, "{e}"),
            BodyError::TooLarge(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for BodyError {}

/// The response's SSE events; the bytes since the last blank line are
/// counted, and more than `MAX_EVENT` of them end the stream with an error.
pub(super) fn sse(res: reqwest::Response) -> BoxStream<'static, Result<Sse, SseError>> {
    let mut pending = 0usize;
    let limited = res.bytes_stream().map(move |chunk| {
        let chunk = chunk.map_err(BodyError::Read)?;
        let tail = match chunk.windows(2).rposition(|w| w == b"\n\n") {
            Some(i) => chunk.len() - i - 2,
            None => pending + chunk.len(),
        };
        pending = tail;
        if pending > MAX_EVENT {
            return Err(BodyError::TooLarge(EventTooLarge));
        }
        Ok(chunk)
    });
    SseStream::from_bytes_stream(limited).boxed()
}

/// A legacy server rejects `server/discover` with a 4xx that cannot name the
/// request: answer it as an error of that request, so the SDK falls back
/// to `initialize`.
fn discover_rejected(
    message: &ClientJsonRpcMessage,
    session: bool,
    status: StatusCode,
    body: &str,
) -> Option<StreamableHttpPostResponse> {
    if session
        || !status.is_client_error()
        || matches!(status, StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN)
    {
        return None;
    }
    let ClientJsonRpcMessage::Request(request) = message else {
        return None;
    };
    if !matches!(request.request, ClientRequest::DiscoverRequest(_)) {
        return None;
    }
    let error = match serde_json::from_str::<ServerJsonRpcMessage>(body) {
        Ok(ServerJsonRpcMessage::Error(e)) => e.error,
        _ => ErrorData::invalid_request(
            format!("server/discover rejected with HTTP {status}: {body}"),
            None,
        ),
    };
    Some(StreamableHttpPostResponse::Json(
        ServerJsonRpcMessage::error(error, Some(request.id.clone())),
        None,
    ))
}

impl StreamableHttpClient for Http {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth: Option<String>,
        custom: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, Error> {
        let session = session_id.is_some();
        let mut rb = self
            .0
            .post(uri.as_ref())
            .header(ACCEPT, format!("{JSON}, {EVENT_STREAM}"));
        rb = with_headers(rb, auth, custom);
        if let Some(id) = session_id {
            rb = rb.header(SESSION_ID, id.as_ref());
        }
        let res = rb
            .json(&message)
            .send()
            .await
            .map_err(StreamableHttpError::Client)?;
        let status = res.status();
        let no_answer = !matches!(message, ClientJsonRpcMessage::Request(_));
        if matches!(status, StatusCode::ACCEPTED | StatusCode::NO_CONTENT) {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        if status == StatusCode::NOT_FOUND && session {
            return Err(StreamableHttpError::SessionExpired);
        }
        let new_session = res
            .headers()
            .get(SESSION_ID)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        if !status.is_success() {
            return refused(res, &message, session, new_session).await;
        }
        if media(res.headers(), EVENT_STREAM) {
            return Ok(StreamableHttpPostResponse::Sse(sse(res), new_session));
        }
        if media(res.headers(), JSON) {
            let body = bounded(res, MAX_JSON)
                .await
                .map_err(|max| StreamableHttpError::ResponseBodyTooLarge { max_size: max })?;
            return match serde_json::from_slice::<ServerJsonRpcMessage>(&body) {
                Ok(m) => Ok(StreamableHttpPostResponse::Json(m, new_session)),
                Err(_) if no_answer || body.is_empty() => Ok(StreamableHttpPostResponse::Accepted),
                Err(e) => Err(StreamableHttpError::Deserialize(e)),
            };
        }
        if no_answer {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        Err(StreamableHttpError::UnexpectedContentType(
            res.headers()
                .get(CONTENT_TYPE)
                .map(|v| String::from_utf8_lossy(v.as_bytes()).to_string()),
        ))
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth: Option<String>,
        custom: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), Error> {
        let rb = with_headers(self.0.delete(uri.as_ref()), auth, custom)
            .header(SESSION_ID, session_id.as_ref());
        let res = rb.send().await.map_err(StreamableHttpError::Client)?;
        if res.status() == StatusCode::METHOD_NOT_ALLOWED {
            return Ok(());
        }
        res.error_for_status()
            .map(|_| ())
            .map_err(StreamableHttpError::Client)
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth: Option<String>,
        custom: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, Error> {
        let mut rb = self
            .0
            .get(uri.as_ref())
            .header(ACCEPT, format!("{EVENT_STREAM}, {JSON}"));
        rb = with_headers(rb, auth, custom);
        if let Some(id) = session_id {
            rb = rb.header(SESSION_ID, id.as_ref());
        }
        if let Some(id) = last_event_id {
            rb = rb.header(LAST_EVENT_ID, id);
        }
        let res = rb.send().await.map_err(StreamableHttpError::Client)?;
        let status = res.status();
        if status == StatusCode::METHOD_NOT_ALLOWED {
            return Err(StreamableHttpError::ServerDoesNotSupportSse);
        }
        if let Some(e) = status_error(status, res.headers()) {
            return Err(e);
        }
        let res = res
            .error_for_status()
            .map_err(StreamableHttpError::Client)?;
        if !media(res.headers(), EVENT_STREAM) && !media(res.headers(), JSON) {
            return Err(StreamableHttpError::UnexpectedContentType(
                res.headers()
                    .get(CONTENT_TYPE)
                    .map(|v| String::from_utf8_lossy(v.as_bytes()).to_string()),
            ));
        }
        Ok(sse(res))
    }
}
