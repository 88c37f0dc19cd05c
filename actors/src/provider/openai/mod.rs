//! `openai-completions` provider (OpenAI, OpenRouter, vLLM, Ollama, LM
//! Studio): POST `<baseUrl>/chat/completions`, always `stream: true`, SSE
//! parsed by `eventsource-stream`. The OpenAI wire format is private to this
//! module. Handles native `tool_calls` whose arguments arrive in fragments,
//! tool calls embedded in content (seed 003), a non-streaming JSON answer
//! from a proxy, and classifies HTTP failures into `ProviderError` kinds.
//! Retries (shared with the other HTTP providers in `http.rs`) happen
//! only before the first event reached the reader, so nothing is duplicated.

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
pub use wire::{apply_overrides, build_body, classify, detect_compat, Compat, MaxTokensField};
use wire::{Assembly, TextChunk};

/// Where and how to reach one configured provider.
#[derive(Debug, Clone)]
pub struct OpenAiConfig {
    pub base_url: String,
    pub api_key: Option<String>,
    pub headers: BTreeMap<String, String>,
    /// model id -> its `compat` overrides.
    pub model_compat: BTreeMap<String, Value>,
    pub request_timeout: Duration,
    /// Where the answers' rate-limit windows are reported (the hub).
    pub limits: crate::provider::limits::RateLimitSink,
}

/// The `chat/completions` POST of `body`, with the key and headers.
fn request(
    client: &reqwest::Client,
    cfg: &OpenAiConfig,
    body: &bytes::Bytes,
) -> reqwest::RequestBuilder {
    let url = format!("{}/chat/completions", cfg.base_url.trim_end_matches('/'));
    let mut rb = client
        .post(&url)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(body.clone())
        .timeout(cfg.request_timeout);
    if let Some(key) = &cfg.api_key {
        rb = rb.bearer_auth(key);
    }
    for (k, v) in &cfg.headers {
        rb = rb.header(k.as_str(), v.as_str());
    }
    rb
}

/// An `error` object inside the stream, classified like an HTTP one.
fn stream_error(err: &Value) -> ProviderError {
    let msg = err
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or("provider error");
    let code = err.get("code").map(|c| c.to_string()).unwrap_or_default();
    classify(
        if code.contains("rate") { 429 } else { 500 },
        &format!("{code} {msg}"),
        None,
    )
}

/// A proxy that answered with one JSON body instead of a stream (seed
/// 003's empty-stream trap): its events, then the finish.
async fn whole_body(
    res: reqwest::Response,
    tx: &mpsc::Sender<ProviderEvent>,
    sent: &mut usize,
) -> Result<(), ProviderError> {
    let text = res
        .text()
        .await
        .map_err(|e| ProviderError::Unavailable(format!("read failed: {e}")))?;
    let v: Value = serde_json::from_str(&text)
        .map_err(|e| ProviderError::Malformed(format!("response is not JSON: {e}")))?;
    let mut asm = Assembly::default();
    let events = asm.absorb(&v);
    emit(tx, events, sent).await?;
    emit(tx, asm.finish(), sent).await
}

/// One attempt. `sent` counts events that reached the reader (no retry after one).
fn attempt<'a>(
    client: &'a reqwest::Client,
    cfg: &'a OpenAiConfig,
    body: &'a bytes::Bytes,
    tx: &'a mpsc::Sender<ProviderEvent>,
    sent: &'a mut usize,
) -> LocalBoxFuture<'a, Result<(), ProviderError>> {
    Box::pin(async move {
        let res = send_checked(request(client, cfg, body), classify, &cfg.limits).await?;
        let is_sse = res
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.contains("text/event-stream"));
        if !is_sse {
            return whole_body(res, tx, sent).await;
        }
        let mut asm = Assembly::default();
        let mut stream = res.bytes_stream().eventsource();
        let mut done = false;
        while let Some(item) = stream.next().await {
            let ev = item.map_err(|e| ProviderError::Unavailable(format!("stream broken: {e}")))?;
            let data = ev.data.trim();
            if data.is_empty() {
                continue;
            }
            if data == "[DONE]" {
                done = true;
                break;
            }
            if let Ok(quick) = serde_json::from_str::<TextChunk>(data) {
                if let Some(events) = asm.absorb_text(&quick) {
                    emit(tx, events, sent).await?;
                    continue;
                }
            }
            let chunk: Value = serde_json::from_str(data)
                .map_err(|e| ProviderError::Malformed(format!("bad stream chunk: {e}")))?;
            if let Some(err) = chunk.get("error") {
                return Err(stream_error(err));
            }
            let events = asm.absorb(&chunk);
            emit(tx, events, sent).await?;
        }
        if !done && asm.finish.is_none() {
            return Err(ProviderError::Unavailable(
                "stream ended before the answer was complete".into(),
            ));
        }
        emit(tx, asm.finish(), sent).await
    })
}

pub struct OpenAiProvider {
    /// The actor's span, entered by its handler.
    span: tracing::Span,
    client: reqwest::Client,
    config: Arc<OpenAiConfig>,
    active: Arc<AtomicUsize>,
}

impl OpenAiProvider {
    pub fn new(config: OpenAiConfig) -> OpenAiProvider {
        OpenAiProvider {
            span: tracing::info_span!("provider_actor", provider = "openai"),
            client: reqwest::Client::new(),
            config: Arc::new(config),
            active: Arc::default(),
        }
    }

    pub fn active(&self) -> Arc<AtomicUsize> {
        self.active.clone()
    }
}

impl Actor for OpenAiProvider {
    type Context = Context<Self>;
}

impl Handler<StreamCompletion> for OpenAiProvider {
    type Result = MessageResult<StreamCompletion>;
    fn handle(&mut self, msg: StreamCompletion, _: &mut Context<Self>) -> Self::Result {
        let _span = self.span.clone().entered();
        let (client, mut cfg, active) = (
            self.client.clone(),
            self.config.clone(),
            self.active.clone(),
        );
        if let Some(key) = msg.request.api_key.clone() {
            Arc::make_mut(&mut cfg).api_key = Some(key);
        }
        let compat = apply_overrides(
            detect_compat(&cfg.base_url),
            cfg.model_compat.get(&msg.request.model),
        );
        let parts = (client, cfg, build_body(&msg.request, compat));
        MessageResult(stream_tries(
            "openai-completions",
            &msg.request,
            active,
            parts,
            attempt,
        ))
    }
}
