//! What the HTTP providers share: handing events to the reader, the retry
//! loop (3 attempts, `retry-after` honoured, 30 s cap, 10% jitter, only
//! before the first event reached the reader, so nothing is duplicated), and
//! cancellation when the reader drops the stream.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::LocalBoxFuture;
use tracing::Instrument;

use tokio::sync::mpsc;

use super::{CompletionRequest, ProviderError, ProviderEvent, STREAM_BUFFER};

/// Max attempts per completion, and the backoff cap.
pub const MAX_ATTEMPTS: u32 = 3;
pub const MAX_RETRY_DELAY: Duration = Duration::from_secs(30);

/// Hands events to the reader, counting them in `sent`.
pub(crate) async fn emit(
    tx: &mpsc::Sender<ProviderEvent>,
    events: Vec<ProviderEvent>,
    sent: &mut usize,
) -> Result<(), ProviderError> {
    for e in events {
        tx.send(e)
            .await
            .map_err(|_| ProviderError::Unavailable("cancelled".into()))?;
        *sent += 1;
    }
    Ok(())
}

/// `Retry-After` in milliseconds (seconds or an HTTP date).
pub(crate) fn retry_after_ms(headers: &reqwest::header::HeaderMap) -> Option<u64> {
    let v = headers.get(reqwest::header::RETRY_AFTER)?.to_str().ok()?;
    if let Ok(secs) = v.trim().parse::<f64>() {
        return Some((secs.max(0.0) * 1000.0) as u64);
    }
    let when = httpdate::parse_http_date(v).ok()?;
    Some(
        when.duration_since(std::time::SystemTime::now())
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0),
    )
}

/// Sends a request; a non-2xx answer becomes the provider's error kind.
/// The rate-limit windows any answer reports go to `limits`.
pub(crate) async fn send_checked(
    rb: reqwest::RequestBuilder,
    classify: fn(u16, &str, Option<u64>) -> ProviderError,
    limits: &super::limits::RateLimitSink,
) -> Result<reqwest::Response, ProviderError> {
    let res = rb
        .send()
        .await
        .map_err(|e| ProviderError::Unavailable(format!("request failed: {e}")))?;
    limits.record(res.headers());
    let status = res.status().as_u16();
    if (200..300).contains(&status) {
        return Ok(res);
    }
    let retry = retry_after_ms(res.headers());
    let text = res.text().await.unwrap_or_default();
    Err(classify(status, &text, retry))
}

pub(crate) fn backoff(attempt: u32, retry_after: Option<u64>) -> Duration {
    let base = retry_after
        .map(Duration::from_millis)
        .unwrap_or_else(|| Duration::from_millis(500 * 2u64.pow(attempt)))
        .min(MAX_RETRY_DELAY);
    // 10% jitter from the clock's low bits (spreads retries; no RNG needed).
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    (base + base.mul_f64((nanos % 1000) as f64 / 10_000.0)).min(MAX_RETRY_DELAY)
}

fn retryable(e: &ProviderError) -> Option<Option<u64>> {
    match e {
        ProviderError::RateLimited { retry_after_ms } => Some(*retry_after_ms),
        ProviderError::Unavailable(_) => Some(None),
        _ => None,
    }
}

/// The outcome of one attempt: events that reached the reader, and how it ended.
pub(crate) struct Attempt {
    pub sent: usize,
    pub result: Result<(), ProviderError>,
}

/// Runs `attempt` up to `max_attempts` (default and cap [`MAX_ATTEMPTS`]) times on the actix runtime; the
/// final error (if any) is the stream's last event. Stops as soon as the
/// One HTTP try of a provider: it streams what it reads into the channel
/// and counts the events it sent (a try that sent anything is not retried).
pub(crate) type TryOnce<C> = for<'a> fn(
    &'a reqwest::Client,
    &'a C,
    &'a bytes::Bytes,
    &'a mpsc::Sender<ProviderEvent>,
    &'a mut usize,
) -> LocalBoxFuture<'a, Result<(), ProviderError>>;

/// Streams `request` from an HTTP provider (`api`, for the span): each try
/// runs `once` with the same client, config and encoded body, retried by
/// [`spawn_with_retries`]; a body that could not be encoded is the stream's
/// only event. Reply: the stream.
pub(crate) fn stream_tries<C: 'static>(
    api: &'static str,
    request: &CompletionRequest,
    active: Arc<AtomicUsize>,
    (client, cfg, body): (reqwest::Client, Arc<C>, Result<bytes::Bytes, ProviderError>),
    once: TryOnce<C>,
) -> mpsc::Receiver<ProviderEvent> {
    let (tx, rx) = mpsc::channel(STREAM_BUFFER);
    let body = match body {
        Ok(body) => body,
        Err(e) => {
            let _ = tx.try_send(ProviderEvent::Error(e));
            return rx;
        }
    };
    let span = tracing::info_span!("provider", provider = api, model = %request.model);
    spawn_with_retries(span, tx, active, request.max_attempts, move |tx| {
        let (client, cfg, body) = (client.clone(), cfg.clone(), body.clone());
        async move {
            let mut sent = 0;
            let result = once(&client, &cfg, &body, &tx, &mut sent).await;
            Attempt { sent, result }
        }
    });
    rx
}

/// reader drops the stream (dropping the attempt closes its connection).
pub(crate) fn spawn_with_retries<F, Fut>(
    span: tracing::Span,
    tx: mpsc::Sender<ProviderEvent>,
    active: Arc<AtomicUsize>,
    max_attempts: Option<u32>,
    mut attempt: F,
) where
    F: FnMut(mpsc::Sender<ProviderEvent>) -> Fut + 'static,
    Fut: Future<Output = Attempt> + 'static,
{
    let max = max_attempts.unwrap_or(MAX_ATTEMPTS).clamp(1, MAX_ATTEMPTS);
    active.fetch_add(1, Ordering::Relaxed);
    actix::spawn(
        async move {
            for n in 0..max {
                let outcome = tokio::select! {
                    a = attempt(tx.clone()) => a,
                    _ = tx.closed() => break,
                };
                let e = match outcome.result {
                    Ok(()) => break,
                    Err(_) if tx.is_closed() => break,
                    Err(e) => e,
                };
                match retryable(&e) {
                    Some(after) if outcome.sent == 0 && n + 1 < max => {
                        tracing::info!(error = %e, attempt = n + 1, "provider retry");
                        actix::clock::sleep(backoff(n, after)).await;
                    }
                    _ => {
                        let _ = tx.send(ProviderEvent::Error(e)).await;
                        break;
                    }
                }
            }
            active.fetch_sub(1, Ordering::Relaxed);
        }
        .instrument(span),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_honours_retry_after_caps_at_30s_and_adds_at_most_10_percent() {
        let d = backoff(0, Some(2000));
        assert!(
            d >= Duration::from_millis(2000) && d <= Duration::from_millis(2200),
            "{d:?}"
        );
        assert_eq!(backoff(0, Some(120_000)), MAX_RETRY_DELAY);
        let d = backoff(1, None);
        assert!(
            d >= Duration::from_millis(1000) && d <= Duration::from_millis(1100),
            "{d:?}"
        );
    }
}
