//! WhatsApp's Cloud API webhooks (`channels.whatsapp`, `mode: "cloud"`) on
//! each account's `webhookPath` (default `/whatsapp/webhook`):
//! - `GET` is Meta's verification: `hub.mode=subscribe` with the
//!   account's `hub.verify_token` gets `hub.challenge` back as plain text;
//!   anything else gets 403 and counts toward the client's lockout;
//! - `POST` is passed as it came (`X-Hub-Signature-256`, the raw body of
//!   at most 1 MiB) to the account answering on the path, whose receiver
//!   verifies the signature (401, counted toward the lockout), records
//!   messages before the 200 and takes status callbacks.

use actix_web::http::{Method, StatusCode};
use actix_web::{web, HttpRequest, HttpResponse};
use ferroclaw_actors::channels::messages::Webhook;
use ferroclaw_actors::channels::whatsapp::config::webhooks;
use ferroclaw_actors::channels::RouteWebhook;
use ferroclaw_actors::devices::secret_eq;
use serde_json::json;

use crate::state::SharedState;

const MAX_BODY: usize = 1 << 20;

/// The verify tokens of the accounts answering on `path` (none: the path
/// is not WhatsApp's).
/// Whether a WhatsApp account takes its webhooks on `path`.
pub(crate) fn answers_on(state: &SharedState, path: &str) -> bool {
    accounts_on(state, path).is_some()
}

fn accounts_on(state: &SharedState, path: &str) -> Option<Vec<Option<String>>> {
    let settings = state.live.settings();
    let section = settings.channels.get("whatsapp")?;
    let defaults = settings.channels.defaults.layer("whatsapp");
    let tokens: Vec<Option<String>> = webhooks(&section.other, &defaults)
        .into_iter()
        .filter(|(p, _)| p == path)
        .map(|(_, t)| t)
        .collect();
    (!tokens.is_empty()).then_some(tokens)
}

/// Meta's verification request from `ip`.
fn verify(
    req: &HttpRequest,
    tokens: &[Option<String>],
    state: &SharedState,
    ip: Option<std::net::IpAddr>,
) -> HttpResponse {
    let q = web::Query::<std::collections::HashMap<String, String>>::from_query(req.query_string())
        .map(|q| q.into_inner())
        .unwrap_or_default();
    let given = q.get("hub.verify_token").map(String::as_str).unwrap_or("");
    let subscribe = q.get("hub.mode").map(String::as_str) == Some("subscribe");
    let known = tokens
        .iter()
        .flatten()
        .any(|t| !given.is_empty() && secret_eq(t, given));
    match (subscribe && known, q.get("hub.challenge")) {
        (true, Some(challenge)) => {
            state.auth_succeeded(ip);
            HttpResponse::Ok()
                .content_type("text/plain")
                .body(challenge.clone())
        }
        _ => {
            state.auth_failed(ip);
            tracing::info!(
                path = req.path(),
                ?ip,
                "whatsapp webhook verification refused"
            );
            HttpResponse::Forbidden().json(json!({ "error": "verification failed" }))
        }
    }
}

/// The Cloud API's webhook, when the request is for one of its paths.
pub async fn serve(
    req: &HttpRequest,
    payload: &mut web::Payload,
    state: &SharedState,
) -> Option<HttpResponse> {
    let tokens = accounts_on(state, req.path())?;
    let ip = match crate::http::auth::not_locked_out(req, state, req.path()) {
        Ok(ip) => ip,
        Err(refusal) => return Some(refusal.response()),
    };
    if req.method() == Method::GET {
        return Some(verify(req, &tokens, state, ip));
    }
    if req.method() != Method::POST {
        return Some(
            HttpResponse::MethodNotAllowed()
                .insert_header(("Allow", "GET, POST"))
                .json(json!({ "error": "use POST (or GET to verify)" })),
        );
    }
    let body = match super::hooks::read_body(payload, MAX_BODY, "1 MiB").await {
        Ok(b) => b,
        Err(res) => return Some(res),
    };
    let signature = req
        .headers()
        .get("x-hub-signature-256")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let hook = Webhook {
        path: req.path().to_string(),
        timestamp: None,
        signature,
        retry_num: None,
        body: body.into(),
    };
    let answer = state
        .gateway
        .channels
        .send(RouteWebhook { webhook: hook })
        .await;
    Some(match answer {
        Ok(Some(r)) => {
            if r.status == 401 {
                state.auth_failed(ip);
            }
            HttpResponse::build(
                StatusCode::from_u16(r.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
            )
            .content_type("application/json")
            .body(r.body)
        }
        Ok(None) => HttpResponse::ServiceUnavailable()
            .json(json!({ "error": "no running whatsapp account answers here" })),
        Err(_) => {
            HttpResponse::ServiceUnavailable().json(json!({ "error": "the gateway is stopping" }))
        }
    })
}
