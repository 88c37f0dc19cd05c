//! Admin HTTP: `/health` `/healthz` (liveness), `/ready` `/readyz`
//! (readiness), `/presence` (gateway token required), `/metrics`
//! (Prometheus text). Wrong methods get 405 with `Allow`.

use std::fmt::Write;
use std::sync::atomic::Ordering;

use actix_web::http::header;
use actix_web::{web, HttpRequest, HttpResponse};
use ferroclaw_actors::presence::ListPresence;
use serde_json::json;

use crate::state::SharedState;

pub fn routes(cfg: &mut web::ServiceConfig) {
    for path in ["/health", "/healthz"] {
        cfg.service(get_head(path, health));
    }
    for path in ["/ready", "/readyz"] {
        cfg.service(get_head(path, ready));
    }
    cfg.service(get_head("/presence", presence));
    cfg.service(get_head("/metrics", metrics));
}

/// A resource answering GET and HEAD with `handler`, 405 + `Allow` otherwise.
pub(crate) fn get_head<F, Args>(path: &str, handler: F) -> actix_web::Resource
where
    F: actix_web::Handler<Args> + Clone,
    Args: actix_web::FromRequest + 'static,
    F::Output: actix_web::Responder + 'static,
{
    web::resource(path)
        .route(web::get().to(handler.clone()))
        .route(web::head().to(handler))
        .default_service(web::to(|| async {
            HttpResponse::MethodNotAllowed()
                .insert_header((header::ALLOW, "GET, HEAD"))
                .content_type("text/plain")
                .body("Method Not Allowed")
        }))
}

async fn health() -> HttpResponse {
    HttpResponse::Ok().json(json!({ "ok": true, "status": "live" }))
}

async fn ready(req: HttpRequest, state: web::Data<SharedState>) -> HttpResponse {
    let ready = state.ready.load(Ordering::Relaxed);
    let local = req.peer_addr().is_some_and(|p| p.ip().is_loopback());
    let mut body = json!({ "ready": ready });
    if local {
        body["uptimeMs"] = json!(state.gateway.metrics.uptime_ms());
        body["failing"] = json!(if ready { vec![] } else { vec!["startup"] });
    }
    if ready {
        HttpResponse::Ok().json(body)
    } else {
        HttpResponse::ServiceUnavailable().json(body)
    }
}

async fn presence(req: HttpRequest, state: web::Data<SharedState>) -> HttpResponse {
    if let Err(refused) = super::auth::check_bearer(&req, &state, "/presence") {
        return refused.response();
    }
    match state.gateway.presence.send(ListPresence).await {
        Ok(list) => HttpResponse::Ok().json(list),
        Err(_) => HttpResponse::ServiceUnavailable()
            .json(json!({ "error": { "message": "presence unavailable", "type": "unavailable" } })),
    }
}

async fn metrics(state: web::Data<SharedState>) -> HttpResponse {
    let m = &state.gateway.metrics;
    let mut out = String::with_capacity(2048);
    let mut metric = |name: &str, kind: &str, help: &str, samples: &[(&str, i64)]| {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
        for (labels, v) in samples {
            let _ = writeln!(out, "{name}{labels} {v}");
        }
    };
    let get = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed) as i64;
    let geti = |a: &std::sync::atomic::AtomicI64| a.load(Ordering::Relaxed).max(0);
    if let Some(h) = ferroclaw_actors::gateway::heap::stats() {
        metric(
            "ferroclaw_heap_bytes",
            "gauge",
            "Heap held by the allocator: in use, and free but still mapped.",
            &[
                ("{state=\"in_use\"}", h.in_use as i64),
                ("{state=\"free\"}", h.free as i64),
            ],
        );
    }
    metric(
        "ferroclaw_connections",
        "gauge",
        "Open WebSocket connections.",
        &[("", geti(&m.connections_open))],
    );
    metric(
        "ferroclaw_connections_total",
        "counter",
        "WebSocket connections accepted.",
        &[("", get(&m.connections_total))],
    );
    metric(
        "ferroclaw_frames_in_total",
        "counter",
        "Frames received, by type.",
        &[
            ("{type=\"req\"}", get(&m.frames_in_req)),
            ("{type=\"invalid\"}", get(&m.frames_in_invalid)),
        ],
    );
    metric(
        "ferroclaw_frames_out_total",
        "counter",
        "Frames sent, by type.",
        &[
            ("{type=\"res\"}", get(&m.frames_out_res)),
            ("{type=\"event\"}", get(&m.frames_out_event)),
        ],
    );
    metric(
        "ferroclaw_events_dropped_slow_total",
        "counter",
        "Droppable events skipped for slow consumers.",
        &[("", get(&m.events_dropped_slow))],
    );
    metric(
        "ferroclaw_slow_consumer_closes_total",
        "counter",
        "Connections closed as slow consumers.",
        &[("", get(&m.slow_consumer_closes))],
    );
    metric(
        "ferroclaw_auth_failures_total",
        "counter",
        "Failed authentication attempts.",
        &[("", get(&m.auth_failures))],
    );
    metric(
        "ferroclaw_mailbox_depth",
        "gauge",
        "Messages waiting in singleton actor mailboxes.",
        &[
            ("{actor=\"event_bus\"}", geti(&m.bus_mailbox)),
            ("{actor=\"presence\"}", geti(&m.presence_mailbox)),
            ("{actor=\"devices\"}", geti(&m.devices_mailbox)),
            ("{actor=\"idempotency\"}", geti(&m.idempotency_mailbox)),
        ],
    );
    metric(
        "ferroclaw_sessions_live",
        "gauge",
        "Session actors alive (idle sessions stop and come back from the store).",
        &[("", geti(&m.sessions_live))],
    );
    metric(
        "ferroclaw_session_watchers",
        "gauge",
        "Connections watching sessions (the Control UI's session subscriptions).",
        &[("", geti(&m.session_watchers))],
    );
    metric(
        "ferroclaw_runs_started_total",
        "counter",
        "Agent runs started (restarts of failed runs included).",
        &[("", get(&m.runs_started))],
    );
    metric(
        "ferroclaw_agent_waiters",
        "gauge",
        "agent.wait calls waiting for a live run.",
        &[("", geti(&m.waiters))],
    );
    metric(
        "ferroclaw_agent_waits_refused_total",
        "counter",
        "agent.wait calls refused at the waiter bound (retryable).",
        &[("", get(&m.waits_refused))],
    );
    metric(
        "ferroclaw_uptime_seconds",
        "gauge",
        "Seconds since the gateway started.",
        &[("", (m.uptime_ms() / 1000) as i64)],
    );
    HttpResponse::Ok()
        .content_type("text/plain; version=0.0.4; charset=utf-8")
        .body(out)
}
