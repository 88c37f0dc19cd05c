//! The WebSocket gateway: the upgrade handler (any path that is not an HTTP
//! route), the `WsConnection` actor, the handshake and the one method
//! dispatch. This is the only module that uses actix-web-actors (deprecated
//! upstream; keeping all of its glue here keeps a later swap contained).

mod ack_order;
pub(crate) mod caller;
mod connection;
pub mod event_bridge;
pub(crate) mod guard;
mod handshake;
pub mod messages;
pub mod methods;
mod send_timing;
mod window;

use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use actix_web::{web, HttpRequest, HttpResponse};
use actix_web_actors::ws;
use bytes::Bytes;
use futures_util::Stream;

use crate::state::SharedState;
use connection::WsConnection;

/// Where a socket came from, decided once at upgrade.
#[derive(Debug, Clone)]
pub struct Origin {
    /// The client address (peer, or X-Forwarded-For from a trusted proxy).
    pub ip: Option<IpAddr>,
    /// A direct loopback connection with a local Host header and no proxy headers.
    pub local: bool,
    /// The `Origin` header, if any (browser clients).
    pub origin_header: Option<String>,
    pub host_header: Option<String>,
}

fn header(req: &HttpRequest, name: &str) -> Option<String> {
    req.headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

fn origin_of(req: &HttpRequest, trusted_proxies: &[String]) -> Origin {
    let peer: Option<SocketAddr> = req.peer_addr();
    let forwarded = header(req, "x-forwarded-for");
    let real_ip = header(req, "x-real-ip");
    let host = header(req, "host");
    let ip = crate::http::auth::client_ip(req, trusted_proxies);
    let local = peer.is_some_and(|p| p.ip().is_loopback())
        && forwarded.is_none()
        && real_ip.is_none()
        && host
            .as_deref()
            .is_none_or(crate::http::same_origin::is_loopback_name);
    Origin {
        ip,
        local,
        origin_header: header(req, "origin"),
        host_header: host,
    }
}

/// Upgrades to the gateway WebSocket; plain HTTP requests get 404.
pub async fn upgrade(
    req: HttpRequest,
    payload: web::Payload,
    state: web::Data<SharedState>,
) -> HttpResponse {
    let state: SharedState = state.get_ref().clone();
    let mut res = match ws::handshake(&req) {
        Ok(res) => res,
        Err(_) if header(&req, "upgrade").is_none() => {
            return HttpResponse::NotFound()
                .content_type("text/plain")
                .body("Not Found")
        }
        Err(e) => {
            tracing::info!(error = %e, "websocket upgrade refused");
            return HttpResponse::BadRequest()
                .content_type("text/plain")
                .body(e.to_string());
        }
    };
    let settings = state.live.settings();
    let pending = state.preauth_sockets.fetch_add(1, Ordering::Relaxed);
    if pending >= settings.gateway.max_unauthenticated_sockets {
        state.preauth_sockets.fetch_sub(1, Ordering::Relaxed);
        tracing::warn!(pending, "too many unauthenticated sockets");
        return HttpResponse::ServiceUnavailable()
            .content_type("text/plain")
            .body("Too many unauthenticated sockets");
    }
    let origin = origin_of(&req, &settings.gateway.trusted_proxies);
    let buffered = Arc::new(AtomicUsize::new(0));
    let guard = guard::GuardShared::new(
        settings.gateway.max_preauth_payload,
        settings.gateway.max_in_flight_requests,
        settings.gateway.max_requests_per_second,
    );
    let input = guard::FrameGuard::new(payload, guard.clone());
    let (window, drains) = window::Window::new();
    let window = Arc::new(window);
    let sink = connection::Sink {
        buffered: buffered.clone(),
        window: window.clone(),
        drains: Some(drains),
    };
    let actor = WsConnection::new(state, settings, origin, sink, guard);
    let codec = actix_http::ws::Codec::new().max_size(actor.max_payload());
    let stream = ws::WebsocketContext::with_codec(actor, input, codec);
    res.streaming(Counted {
        inner: Box::pin(stream),
        buffered,
        window,
    })
}

/// Wraps the outgoing frame stream to know how many bytes are still queued
/// in the gateway (written by the actor, not yet taken by the socket): the
/// `bufferedAmount` the slow-consumer rule is about; and empties the send
/// window (`window.rs`) as the socket takes them.
struct Counted<S> {
    inner: Pin<Box<S>>,
    buffered: Arc<AtomicUsize>,
    window: Arc<window::Window>,
}

impl<S: Stream<Item = Result<Bytes, actix_web::Error>>> Stream for Counted<S> {
    type Item = Result<Bytes, actix_web::Error>;
    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let polled = self.inner.as_mut().poll_next(cx);
        if let Poll::Ready(Some(Ok(bytes))) = &polled {
            let n = bytes.len();
            let _ = self
                .buffered
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |b| {
                    Some(b.saturating_sub(n))
                });
            self.window.taken(n);
        }
        polled
    }
}

/// Encoded size of an unmasked server frame with this payload length.
pub(crate) fn frame_len(payload: usize) -> usize {
    payload
        + match payload {
            0..=125 => 2,
            126..=65535 => 4,
            _ => 10,
        }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_len_counts_the_header() {
        assert_eq!(frame_len(0), 2);
        assert_eq!(frame_len(125), 127);
        assert_eq!(frame_len(126), 130);
        assert_eq!(frame_len(70000), 70010);
    }
}
