//! `anthropic-messages` provider: POST `<baseUrl>/v1/messages` with
//! `stream: true`. The Anthropic wire format is private to this module:
//! `message_start`, `content_block_start|delta|stop` (text, `tool_use` with
//! `input_json_delta`, thinking), `message_delta`, `message_stop`, `ping`,
//! `error`. The system prompt is sent as one text block marked
//! `cache_control: ephemeral`, so its stable prefix stays in the prompt cache
//! across turns. Thinking gets a `budget_tokens` from the thinking level.

use std::collections::BTreeMap;
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use eventsource_stream::Eventsource;
use futures_util::StreamExt;
use serde_json::Value;
use tokio::sync::mpsc;

use super::http::{emit, send_checked, stream_tries};
use super::*;
use futures_util::future::LocalBoxFuture;

mod wire;
use wire::Blocks;
pub use wire::{build_body, classify};

pub const ANTHROPIC_VERSION: &str = "2023-06-01";
/// `max_tokens` is required by the API; used when the request sets none.
pub const DEFAULT_MAX_TOKENS: u32 = 8192;

#[derive(Debug, Clone)]
pub struct AnthropicConfig {
    /// e.g. `https://api.anthropic.com` (a trailing `/v1` is accepted).
    pub base_url: String,
    pub api_key: Option<String>,
    pub headers: BTreeMap<String, String>,
    pub request_timeout: Duration,
    /// Where the answers' rate-limit windows are reported (the hub).
    pub limits: crate::provider::limits::RateLimitSink,
}

fn attempt<'a>(
    client: &'a reqwest::Client,
    cfg: &'a AnthropicConfig,
    body: &'a bytes::Bytes,
    tx: &'a mpsc::Sender<ProviderEvent>,
    sent: &'a mut usize,
) -> LocalBoxFuture<'a, Result<(), ProviderError>> {
    Box::pin(async move {
        let base = cfg.base_url.trim_end_matches('/').trim_end_matches("/v1");
        let mut rb = client
            .post(format!("{base}/v1/messages"))
            .header("anthropic-version", ANTHROPIC_VERSION)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body.clone())
            .timeout(cfg.request_timeout);
        if let Some(key) = &cfg.api_key {
            rb = rb.header("x-api-key", key);
        }
        for (k, v) in &cfg.headers {
            rb = rb.header(k.as_str(), v.as_str());
        }
        let res = send_checked(rb, classify, &cfg.limits).await?;
        let mut blocks = Blocks::default();
        let mut stream = res.bytes_stream().eventsource();
        while let Some(item) = stream.next().await {
            let ev = item.map_err(|e| ProviderError::Unavailable(format!("stream broken: {e}")))?;
            if ev.data.trim().is_empty() {
                continue;
            }
            let v: Value = serde_json::from_str(&ev.data)
                .map_err(|e| ProviderError::Malformed(format!("bad stream event: {e}")))?;
            let kind = if ev.event.is_empty() || ev.event == "message" {
                v["type"].as_str().unwrap_or("").to_string()
            } else {
                ev.event.clone()
            };
            let events = blocks.absorb(&kind, &v)?;
            emit(tx, events, sent).await?;
            if blocks.finished {
                return Ok(());
            }
        }
        Err(ProviderError::Unavailable(
            "stream ended before message_stop".into(),
        ))
    })
}

pub struct AnthropicProvider {
    /// The actor's span, entered by its handler.
    span: tracing::Span,
    client: reqwest::Client,
    config: Arc<AnthropicConfig>,
    active: Arc<AtomicUsize>,
}

impl AnthropicProvider {
    pub fn new(config: AnthropicConfig) -> AnthropicProvider {
        AnthropicProvider {
            span: tracing::info_span!("provider_actor", provider = "anthropic"),
            client: reqwest::Client::new(),
            config: Arc::new(config),
            active: Arc::default(),
        }
    }

    pub fn active(&self) -> Arc<AtomicUsize> {
        self.active.clone()
    }
}

impl Actor for AnthropicProvider {
    type Context = Context<Self>;
}

impl Handler<StreamCompletion> for AnthropicProvider {
    type Result = MessageResult<StreamCompletion>;
    fn handle(&mut self, msg: StreamCompletion, _: &mut Context<Self>) -> Self::Result {
        let _span = self.span.clone().entered();
        let (client, mut cfg) = (self.client.clone(), self.config.clone());
        if let Some(key) = msg.request.api_key.clone() {
            Arc::make_mut(&mut cfg).api_key = Some(key);
        }
        // Encoded once: every retry sends the same bytes.
        let body = serde_json::to_vec(&build_body(&msg.request))
            .map(bytes::Bytes::from)
            .map_err(|e| ProviderError::BadRequest(format!("cannot encode the request: {e}")));
        let parts = (client, cfg, body);
        let active = self.active.clone();
        MessageResult(stream_tries(
            "anthropic-messages",
            &msg.request,
            active,
            parts,
            attempt,
        ))
    }
}
