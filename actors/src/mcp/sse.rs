//! The legacy HTTP+SSE transport (MCP 2024-11-05, `transport: "sse"`):
//! a GET opens the server's event stream, whose first `endpoint` event
//! names where to POST; every server message then arrives as a `message`
//! event. rmcp 3 dropped its client for this transport; this one is the
//! spec's few steps on our reqwest client, its events bounded like the
//! Streamable HTTP ones (`http.rs`).

use std::collections::BTreeMap;

use futures_util::stream::{BoxStream, StreamExt};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, ACCEPT};
use rmcp::service::{RoleClient, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::streamable_http_client::SseError;
use rmcp::transport::Transport;
use sse_stream::Sse;

use super::McpError;

/// Open: the event stream and where to POST.
pub struct SseTransport {
    http: reqwest::Client,
    post_to: reqwest::Url,
    headers: HeaderMap,
    events: BoxStream<'static, Result<Sse, SseError>>,
}

#[derive(Debug)]
pub struct SseFailed(pub String);

impl std::fmt::Display for SseFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SseFailed {}

/// GETs `url` and waits for the `endpoint` event.
pub async fn open(
    http: reqwest::Client,
    url: &str,
    headers: &BTreeMap<String, String>,
) -> Result<SseTransport, McpError> {
    let base = reqwest::Url::parse(url).map_err(|e| McpError::Url {
        url: url.to_string(),
        reason: e.to_string(),
    })?;
    let mut map = HeaderMap::new();
    for (k, v) in headers {
        let name = HeaderName::try_from(k.as_str()).map_err(|e| McpError::header(k, e))?;
        let value = HeaderValue::try_from(v.as_str()).map_err(|e| McpError::header(k, e))?;
        map.insert(name, value);
    }
    let res = http
        .get(base.clone())
        .header(ACCEPT, "text/event-stream")
        .headers(map.clone())
        .send()
        .await
        .map_err(|e| McpError::Get {
            url: url.to_string(),
            reason: e.to_string(),
        })?;
    if !res.status().is_success() {
        return Err(McpError::Status {
            url: url.to_string(),
            status: res.status().as_u16(),
        });
    }
    let mut events = super::http::sse(res);
    while let Some(ev) = events.next().await {
        let ev = ev.map_err(|e| McpError::Stream(e.to_string()))?;
        if ev.event.as_deref() == Some("endpoint") {
            let data = ev.data.unwrap_or_default();
            let post_to = base.join(data.trim()).map_err(|e| McpError::Endpoint {
                data: data.clone(),
                reason: e.to_string(),
            })?;
            if post_to.origin() != base.origin() {
                return Err(McpError::CrossOrigin {
                    post_to: post_to.to_string(),
                    url: url.to_string(),
                });
            }
            return Ok(SseTransport {
                http,
                post_to,
                headers: map,
                events,
            });
        }
    }
    Err(McpError::NoEndpoint {
        url: url.to_string(),
    })
}

impl Transport<RoleClient> for SseTransport {
    type Error = SseFailed;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl std::future::Future<Output = Result<(), Self::Error>> + Send + 'static {
        let (http, url, headers) = (
            self.http.clone(),
            self.post_to.clone(),
            self.headers.clone(),
        );
        async move {
            let res = http
                .post(url)
                .headers(headers)
                .json(&item)
                .send()
                .await
                .map_err(|e| SseFailed(format!("POST: {e}")))?;
            if res.status().is_success() {
                Ok(())
            } else {
                Err(SseFailed(format!("POST: HTTP {}", res.status())))
            }
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        while let Some(ev) = self.events.next().await {
            let ev = ev.ok()?;
            if !matches!(ev.event.as_deref(), None | Some("message")) {
                continue;
            }
            match serde_json::from_str(ev.data.as_deref().unwrap_or_default()) {
                Ok(m) => return Some(m),
                Err(e) => {
                    tracing::warn!(error = %e, "mcp sse: a message that is not JSON-RPC, skipped")
                }
            }
        }
        None
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        Ok(())
    }
}
