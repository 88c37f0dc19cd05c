//! `/mcp` on the gateway's port: the conversation tools over MCP's
//! Streamable HTTP (rmcp's server transport; both revisions: stateless
//! 2026-07-28 requests, and 2025-11-25 sessions with `Mcp-Session-Id`).
//!
//! Trust: an MCP client here holds the gateway secret (a bearer, checked
//! like `/v1/*`: a wrong one is 401 and counts toward the per-client
//! lockout), so it is the operator's tool; the tools it may call are
//! `gateway.http.endpoints.mcp.allow` (default: the read-only ones; sending
//! needs opting in). The tools call the gateway's methods in process, as an
//! operator connection with the read, write and approvals scopes would.
//!
//! Config (ferroclaw's keys, beside OpenClaw's `chatCompletions` switch):
//! `gateway.http.endpoints.mcp.enabled` (default true) and `.allow` (tool
//! names, or `["all"]`). A browser's `GET /mcp` (no `text/event-stream`
//! in `Accept`) is not MCP: it falls through to the Control UI's route.

use std::net::IpAddr;
use std::sync::{Arc, Weak};
use std::time::Duration;

use actix_web::http::header;
use actix_web::{guard, web, HttpRequest, HttpResponse};
use bytes::Bytes;
use ferroclaw_actors::ids::ConnId;
use ferroclaw_actors::scopes::Role;
use futures_util::future::BoxFuture;
use http_body_util::BodyExt;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::{json, Value};

use super::events::McpEvents;
use super::{allowlist, Bridge, BridgeError, Calls, Events};
use crate::protocol::frames::RequestFrame;
use crate::state::{AppState, SharedState};
use crate::ws::methods::{dispatch, Caller};

/// Legacy (2025-11-25) sessions kept at once; an `initialize` beyond it
/// is answered 503 until one ends (idle sessions end after 5 minutes).
pub const MAX_SESSIONS: usize = 64;

/// The endpoint: rmcp's service and its session table, one per gateway.
pub struct McpHttp {
    service: StreamableHttpService<Bridge, LocalSessionManager>,
    sessions: Arc<LocalSessionManager>,
    /// The live event queue; its feed starts with the first request.
    events: Arc<Events>,
    feed: std::sync::OnceLock<actix::Addr<McpEvents>>,
}

/// The gateway's methods, called in process as `/mcp`'s operator.
struct InProcess {
    state: Weak<AppState>,
    caller: Arc<Caller>,
}

impl Calls for InProcess {
    fn call<'a>(
        &'a self,
        method: &'a str,
        params: Value,
    ) -> BoxFuture<'a, Result<Value, BridgeError>> {
        Box::pin(async move {
            let state = self.state.upgrade().ok_or(BridgeError::Stopping)?;
            let frame = RequestFrame {
                id: ulid::Ulid::generate().to_string(),
                method: method.to_string(),
                params,
            };
            let res = dispatch(state, self.caller.clone(), frame, None).await;
            let v: Value = serde_json::from_str(&res)?;
            if v["ok"] == json!(true) {
                Ok(v.get("payload").cloned().unwrap_or(Value::Null))
            } else {
                let msg = v["error"]["message"].as_str().unwrap_or("failed");
                Err(BridgeError::Method {
                    method: method.to_string(),
                    message: msg.to_string(),
                })
            }
        })
    }
}

fn enabled(state: &AppState) -> bool {
    state.live.settings().gateway.http.endpoints.mcp.enabled
}

/// The tools `gateway.http.endpoints.mcp.allow` lets `/mcp` offer (a bad
/// entry is logged and leaves the read-only default).
fn allowed(state: &AppState) -> Vec<String> {
    let settings = state.live.settings();
    let joined = settings
        .gateway
        .http
        .endpoints
        .mcp
        .allow
        .as_ref()
        .map(|n| n.join(","));
    allowlist(joined.as_deref()).unwrap_or_else(|e| {
        tracing::warn!(error = %e, "gateway.http.endpoints.mcp.allow: read-only tools only");
        allowlist(None).unwrap_or_default()
    })
}

impl McpHttp {
    /// The endpoint for the gateway whose state `state` will point to.
    pub fn new(state: Weak<AppState>, loopback_only: bool) -> McpHttp {
        let sessions = Arc::new(LocalSessionManager::default());
        let events = Events::new();
        let queue = events.clone();
        let caller = Arc::new(Caller {
            conn_id: ConnId::new("mcp-http".into()),
            role: Role::Operator,
            scopes: ["operator.read", "operator.write", "operator.approvals"]
                .map(String::from)
                .to_vec(),
            device_id: None,
            client_id: "mcp".into(),
            client_mode: "backend".into(),
            instance_id: None,
            ip: None::<IpAddr>,
            caps: Vec::new(),
        });
        let factory = move || {
            let allow = state.upgrade().map(|s| allowed(&s)).unwrap_or_default();
            let calls = InProcess {
                state: state.clone(),
                caller: caller.clone(),
            };
            Ok(Bridge::new(Arc::new(calls), allow, queue.clone()))
        };
        // With no gateway secret (auth "none", loopback only) the `Host`
        // check is what stands between a web page and the tools (DNS
        // rebinding); with a secret, the bearer is, and any name may be used.
        let mut config = StreamableHttpServerConfig::default()
            .with_sse_keep_alive(Some(Duration::from_secs(15)))
            .with_max_request_body_bytes(4 * 1024 * 1024);
        if !loopback_only {
            config = config.disable_allowed_hosts();
        }
        McpHttp {
            service: StreamableHttpService::new(factory, sessions.clone(), config),
            sessions,
            events,
            feed: std::sync::OnceLock::new(),
        }
    }
}

/// `/mcp`: POST and DELETE, and GET when it asks for an event stream;
/// anything else goes where an unmatched path would.
pub fn routes(cfg: &mut web::ServiceConfig) {
    let event_stream = guard::fn_guard(|ctx| {
        ctx.head()
            .headers()
            .get(header::ACCEPT)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|a| a.contains("text/event-stream"))
    });
    cfg.service(
        web::resource("/mcp")
            .route(web::post().to(serve))
            .route(web::delete().to(serve))
            .route(web::get().guard(event_stream).to(serve))
            .default_service(web::to(crate::default_route)),
    );
}

async fn serve(
    req: HttpRequest,
    body: Bytes,
    state: web::Data<SharedState>,
    mcp: web::Data<McpHttp>,
) -> HttpResponse {
    if !enabled(&state) {
        return HttpResponse::NotFound().json(json!({ "error": {
            "message": "/mcp is off (gateway.http.endpoints.mcp.enabled)", "type": "not_found" } }));
    }
    if let Err(refused) = crate::http::auth::check_bearer(&req, &state, "/mcp") {
        return refused.response();
    }
    mcp.feed
        .get_or_init(|| McpEvents::start(state.get_ref(), mcp.events.clone()));
    let new_session = req.headers().get("mcp-session-id").is_none()
        && req.method() == actix_web::http::Method::POST
        && body.windows(12).any(|w| w == b"\"initialize\"");
    if new_session && mcp.sessions.sessions.read().await.len() >= MAX_SESSIONS {
        tracing::info!(max = MAX_SESSIONS, "/mcp: session refused, table full");
        return HttpResponse::ServiceUnavailable()
            .insert_header((header::RETRY_AFTER, "60"))
            .json(
                json!({ "error": { "message": "too many MCP sessions", "type": "unavailable" } }),
            );
    }
    let Some(request) = to_http(&req, body) else {
        return HttpResponse::BadRequest().finish();
    };
    let response = mcp.service.handle(request).await;
    from_http(response)
}

/// actix's request as rmcp's (`http` 1.x) request.
fn to_http(req: &HttpRequest, body: Bytes) -> Option<http::Request<http_body_util::Full<Bytes>>> {
    let mut b = http::Request::builder()
        .method(req.method().as_str())
        .uri(req.uri().to_string());
    for (name, value) in req.headers() {
        b = b.header(name.as_str(), value.as_bytes());
    }
    b.body(http_body_util::Full::new(body)).ok()
}

/// rmcp's response as actix's, the body streamed as it comes (SSE).
fn from_http(
    response: http::Response<http_body_util::combinators::BoxBody<Bytes, std::convert::Infallible>>,
) -> HttpResponse {
    let (parts, body) = response.into_parts();
    let status = actix_web::http::StatusCode::from_u16(parts.status.as_u16())
        .unwrap_or(actix_web::http::StatusCode::INTERNAL_SERVER_ERROR);
    let mut out = HttpResponse::build(status);
    for (name, value) in &parts.headers {
        if name == http::header::CONTENT_LENGTH || name == http::header::TRANSFER_ENCODING {
            continue;
        }
        out.append_header((name.as_str(), value.as_bytes()));
    }
    out.streaming(body.into_data_stream())
}
