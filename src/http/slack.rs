//! Slack's Events API (`channels.slack.mode: "http"`): `POST <webhookPath>`
//! (default `/slack/events`) is passed as it came (signature headers, raw
//! body of at most 1 MiB) to the account that answers on the path; its
//! receiver verifies the signature (401 when it does not), answers
//! `url_verification`, and records messages before the 200.

use actix_web::http::{Method, StatusCode};
use actix_web::{web, HttpRequest, HttpResponse};
use ferroclaw_actors::channels::messages::Webhook;
use ferroclaw_actors::channels::slack::config::http_paths;
use ferroclaw_actors::channels::RouteWebhook;
use serde_json::json;

use crate::state::SharedState;

const MAX_BODY: usize = 1 << 20;

/// Whether an HTTP-mode Slack account answers on `path` (the section, or
/// an account that inherits from it, over `channels.defaults.slack`).
pub(crate) fn answers_on(state: &SharedState, path: &str) -> bool {
    let settings = state.live.settings();
    let Some(section) = settings.channels.get("slack") else {
        return false;
    };
    let defaults = settings.channels.defaults.layer("slack");
    http_paths(&section.other, &defaults)
        .iter()
        .any(|p| p == path)
}

fn header(req: &HttpRequest, name: &str) -> Option<String> {
    req.headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

/// The Events API, when the request is for one of its paths.
pub async fn serve(
    req: &HttpRequest,
    payload: &mut web::Payload,
    state: &SharedState,
) -> Option<HttpResponse> {
    if !answers_on(state, req.path()) {
        return None;
    }
    let path = req.path().to_string();
    if req.method() != Method::POST {
        return Some(
            HttpResponse::MethodNotAllowed()
                .insert_header(("Allow", "POST"))
                .json(json!({ "ok": false, "error": "use POST" })),
        );
    }
    let body = match super::hooks::read_body(payload, MAX_BODY, "1 MiB").await {
        Ok(b) => b,
        Err(res) => return Some(res),
    };
    let hook = Webhook {
        path,
        timestamp: header(req, "x-slack-request-timestamp"),
        signature: header(req, "x-slack-signature"),
        retry_num: header(req, "x-slack-retry-num"),
        body: body.into(),
    };
    let answer = state
        .gateway
        .channels
        .send(RouteWebhook { webhook: hook })
        .await;
    Some(match answer {
        Ok(Some(r)) => HttpResponse::build(
            StatusCode::from_u16(r.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
        )
        .content_type("application/json")
        .body(r.body),
        Ok(None) => HttpResponse::NotFound()
            .json(json!({ "ok": false, "error": "no running slack account answers here" })),
        Err(_) => HttpResponse::ServiceUnavailable()
            .json(json!({ "ok": false, "error": "the gateway is stopping" })),
    })
}
