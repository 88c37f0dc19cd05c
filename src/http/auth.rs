//! The gateway secret on HTTP: `Authorization: Bearer <token|password>`
//! for every HTTP surface that takes it (admin `/presence`, `/v1/*`,
//! `/tools/invoke`, webhooks later). Failures count toward the same
//! per-client lockout as WebSocket handshakes (`gateway.auth.rateLimit`);
//! a locked-out client gets 429 with `Retry-After`, even with the right
//! secret, until the lockout ends.

use std::net::{IpAddr, SocketAddr};

use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse};
use ferroclaw_actors::devices::secret_eq;
use ferroclaw_actors::settings::AuthMode;
use serde_json::json;

use crate::state::SharedState;

/// The client address: the peer, or the first `X-Forwarded-For` hop when
/// the peer is a trusted proxy (`gateway.trustedProxies`).
pub(crate) fn client_ip(req: &HttpRequest, trusted_proxies: &[String]) -> Option<IpAddr> {
    let peer: Option<SocketAddr> = req.peer_addr();
    let peer_trusted =
        peer.is_some_and(|p| trusted_proxies.iter().any(|t| t == &p.ip().to_string()));
    let forwarded = req
        .headers()
        .get("x-forwarded-for")
        .and_then(|v| v.to_str().ok());
    match (forwarded, peer_trusted) {
        (Some(f), true) => f
            .split(',')
            .next()
            .and_then(|s| s.trim().parse().ok())
            .or(peer.map(|p| p.ip())),
        _ => peer.map(|p| p.ip()),
    }
}

fn bearer_of(req: &HttpRequest) -> Option<&str> {
    req.headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
}

fn bearer_matches(req: &HttpRequest, state: &SharedState) -> bool {
    let settings = state.live.settings();
    let auth = &settings.gateway.auth;
    let given = bearer_of(req);
    let expected = match auth.mode {
        AuthMode::None => return true,
        AuthMode::Token => auth.token.as_deref(),
        AuthMode::Password => auth.password.as_deref(),
    };
    matches!((expected, given), (Some(e), Some(g)) if !e.is_empty() && secret_eq(e, g))
}

/// What a refused request gets: 429 (locked out) or 401, in the body
/// shape of the surface (`{"error": {"message", "type"}}` everywhere).
pub(crate) enum Refusal {
    Locked { retry_after_ms: u64 },
    Unauthorized,
}

impl Refusal {
    pub(crate) fn response(&self) -> HttpResponse {
        match self {
            Refusal::Locked { retry_after_ms } => HttpResponse::TooManyRequests()
                .insert_header((
                    header::RETRY_AFTER,
                    retry_after_ms.div_ceil(1000).to_string(),
                ))
                .json(json!({ "error": {
                    "message": "Too many failed authentication attempts. Please try again later.",
                    "type": "rate_limited",
                } })),
            Refusal::Unauthorized => HttpResponse::Unauthorized()
                .insert_header((header::WWW_AUTHENTICATE, "Bearer"))
                .json(json!({ "error": { "message": "unauthorized", "type": "unauthorized" } })),
        }
    }
}

/// The client of a request, unless it is locked out (logged once here).
pub(crate) fn not_locked_out(
    req: &HttpRequest,
    state: &SharedState,
    path: &str,
) -> Result<Option<IpAddr>, Refusal> {
    let ip = client_ip(req, &state.live.settings().gateway.trusted_proxies);
    if let Err(retry_after_ms) = state.auth_locked(ip) {
        tracing::info!(
            path,
            ?ip,
            retry_after_ms,
            "http request refused: auth locked out"
        );
        return Err(Refusal::Locked { retry_after_ms });
    }
    Ok(ip)
}

/// Counts the outcome toward the lockout; a refusal is logged once here.
fn settle(state: &SharedState, ip: Option<IpAddr>, path: &str, ok: bool) -> Result<(), Refusal> {
    if !ok {
        state.auth_failed(ip);
        tracing::info!(path, ?ip, "unauthorized http request");
        return Err(Refusal::Unauthorized);
    }
    state.auth_succeeded(ip);
    Ok(())
}

/// Checks the bearer of a request to `path`: Ok when it carries the
/// gateway secret (or auth is off) and the client is not locked out.
/// A refusal is logged once and counted toward the lockout.
pub(crate) fn check_bearer(
    req: &HttpRequest,
    state: &SharedState,
    path: &str,
) -> Result<(), Refusal> {
    let ip = not_locked_out(req, state, path)?;
    settle(state, ip, path, bearer_matches(req, state))
}

/// As [`check_bearer`], and a paired device's operator token is accepted
/// too: the Control UI's HTTP reads (`control-ui-config.json`) carry the
/// device token the gateway gave it at hello-ok, as OpenClaw allows.
pub(crate) async fn check_bearer_or_device(
    req: &HttpRequest,
    state: &SharedState,
    path: &str,
) -> Result<(), Refusal> {
    let ip = not_locked_out(req, state, path)?;
    let authorized = match bearer_of(req) {
        _ if bearer_matches(req, state) => true,
        Some(token) if !token.is_empty() => {
            let find = ferroclaw_actors::devices::FindOperatorToken {
                token: token.to_string(),
            };
            matches!(state.gateway.devices.send(find).await, Ok(Ok(Some(_))))
        }
        _ => false,
    };
    settle(state, ip, path, authorized)
}
