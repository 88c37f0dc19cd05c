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
    let mut out = String::with_capacity(2048);
    if let Some(h) = ferroclaw_actors::gateway::heap::stats() {
        metric(
            &mut out,
            "ferroclaw_heap_bytes",
            "gauge",
            "Heap held by the allocator: in use, and free but still mapped.",
            &[
                ("{state=\"in_use\"}", h.in_use as i64),
                ("{state=\"free\"}", h.free as i64),
            ],
        );
    }
    for (name, kind, help, samples) in gateway_series(&state.gateway.metrics) {
        metric(&mut out, name, kind, help, &samples);
    }
    backlog_metrics(&mut out, &state).await;
    channel_metrics(&mut out, &state.gateway.channel_health);
    if let Ok(servers) = state
        .gateway
        .mcp
        .send(ferroclaw_actors::mcp::McpStatus)
        .await
    {
        mcp_metrics(&mut out, &servers);
    }
    if let Some(browser) = &state.gateway.browser {
        if let Ok(profiles) = browser
            .send(ferroclaw_actors::browser::GetBrowserStates)
            .await
        {
            browser_metrics(&mut out, &profiles);
        }
    }
    HttpResponse::Ok()
        .content_type("text/plain; version=0.0.4; charset=utf-8")
        .body(out)
}

/// One metric in the text exposition format: its help, type and samples.
fn metric(out: &mut String, name: &str, kind: &str, help: &str, samples: &[(&str, i64)]) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
    for (labels, v) in samples {
        let _ = writeln!(out, "{name}{labels} {v}");
    }
}

/// `(name, kind, help, [(labels, value)])`.
type Series = (
    &'static str,
    &'static str,
    &'static str,
    Vec<(&'static str, i64)>,
);

/// The gateway's own counters and gauges (a declared table).
fn gateway_series(m: &ferroclaw_actors::metrics::Metrics) -> Vec<Series> {
    let get = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed) as i64;
    let geti = |a: &std::sync::atomic::AtomicI64| a.load(Ordering::Relaxed).max(0);
    vec![
        ("ferroclaw_connections", "gauge", "Open WebSocket connections.", vec![("", geti(&m.connections_open))]),
        ("ferroclaw_connections_total", "counter", "WebSocket connections accepted.", vec![("", get(&m.connections_total))]),
        ("ferroclaw_frames_in_total", "counter", "Frames received, by type.", vec![("{type=\"req\"}", get(&m.frames_in_req)), ("{type=\"invalid\"}", get(&m.frames_in_invalid)),]),
        ("ferroclaw_frames_out_total", "counter", "Frames sent, by type.", vec![("{type=\"res\"}", get(&m.frames_out_res)), ("{type=\"event\"}", get(&m.frames_out_event)),]),
        ("ferroclaw_events_dropped_slow_total", "counter", "Droppable events skipped for slow consumers.", vec![("", get(&m.events_dropped_slow))]),
        ("ferroclaw_slow_consumer_closes_total", "counter", "Connections closed as slow consumers.", vec![("", get(&m.slow_consumer_closes))]),
        ("ferroclaw_auth_failures_total", "counter", "Failed authentication attempts.", vec![("", get(&m.auth_failures))]),
        ("ferroclaw_mailbox_depth", "gauge", "Messages waiting in singleton actor mailboxes.", vec![("{actor=\"event_bus\"}", geti(&m.bus_mailbox)), ("{actor=\"presence\"}", geti(&m.presence_mailbox)), ("{actor=\"devices\"}", geti(&m.devices_mailbox)), ("{actor=\"idempotency\"}", geti(&m.idempotency_mailbox)),]),
        ("ferroclaw_sessions_live", "gauge", "Session actors alive (idle sessions stop and come back from the store).", vec![("", geti(&m.sessions_live))]),
        ("ferroclaw_session_watchers", "gauge", "Connections watching sessions (the Control UI's session subscriptions).", vec![("", geti(&m.session_watchers))]),
        ("ferroclaw_runs_started_total", "counter", "Agent runs started (restarts of failed runs included).", vec![("", get(&m.runs_started))]),
        ("ferroclaw_runs_restarted_total", "counter", "Failed agent runs started again from their last step (agents.defaults.runRestarts).", vec![("", get(&m.runs_restarted))]),
        ("ferroclaw_compactions_total", "counter", "Context compactions (automatic, after an overflow, and /compact).", vec![("", get(&m.compactions))]),
        ("ferroclaw_agent_waiters", "gauge", "agent.wait calls waiting for a live run.", vec![("", geti(&m.waiters))]),
        ("ferroclaw_agent_waits_refused_total", "counter", "agent.wait calls refused at the waiter bound (retryable).", vec![("", get(&m.waits_refused))]),
        ("ferroclaw_store_writes_total", "counter", "Store writes (puts, batches, removes, transactions).", vec![("", get(&m.store.writes))]),
        ("ferroclaw_store_bytes_written_total", "counter", "Bytes of values encoded for store writes.", vec![("", get(&m.store.bytes_written))]),
        ("ferroclaw_store_flushes_total", "counter", "Store flushes (sled syncing its log).", vec![("", get(&m.store.flushes))]),
        ("ferroclaw_store_flushes_shared_total", "counter", "Durability points answered by another caller's flush (group commit) or with nothing new to flush.", vec![("", get(&m.store.flushes_shared))]),
        ("ferroclaw_store_bytes_flushed_total", "counter", "Bytes the store wrote out at its flushes.", vec![("", get(&m.store.bytes_flushed))]),
        ("ferroclaw_audit_dropped_total", "counter", "Audit records dropped because the ledger was behind.", vec![("", get(&m.audit_dropped))]),
        ("ferroclaw_uptime_seconds", "gauge", "Seconds since the gateway started.", vec![("", (m.uptime_ms() / 1000) as i64)]),
    ]
}

/// What the channels still owe: messages not yet handed on, replies not
/// yet settled, chunks in the outbox.
async fn backlog_metrics(out: &mut String, state: &SharedState) {
    let backlog = state
        .gateway
        .channels
        .send(ferroclaw_actors::channels::messages::ChannelsBacklog)
        .await;
    let b = match backlog {
        Ok(Ok(b)) => b,
        Ok(Err(e)) => {
            return tracing::warn!(error = %e, "metrics: the channel backlog is unreadable")
        }
        Err(e) => return tracing::warn!(error = %e, "metrics: the channel supervisor is down"),
    };
    for (name, help, v) in [
        (
            "ferroclaw_channel_dispatch_waiting",
            "Channel messages taken and not yet handed to their session.",
            b.dispatch,
        ),
        (
            "ferroclaw_channel_deliveries_open",
            "Runs that owe a chat a reply not yet settled.",
            b.deliveries,
        ),
        (
            "ferroclaw_channel_outbox_pending",
            "Reply chunks waiting in the outbox to be sent.",
            b.outbox_pending,
        ),
    ] {
        metric(out, name, "gauge", help, &[("", v as i64)]);
    }
}

/// Seconds from `t` (ms) to `now` (s); -1 for never.
fn age(t: Option<u64>, now_s: u64) -> i64 {
    t.map_or(-1, |t| now_s.saturating_sub(t / 1000) as i64)
}

/// Which number of an account a channel series shows (now in seconds).
type Pick = fn(&ferroclaw_actors::channels::health::AccountSnapshot, u64) -> i64;

/// The channel accounts' series (a declared table).
fn channel_series() -> [(&'static str, &'static str, &'static str, Pick); 12] {
    use ferroclaw_actors::channels::health::HealthState;
    [
        (
            "ferroclaw_channel_up",
            "gauge",
            "1 when the account runs and had a successful round trip within the stale threshold.",
            |a, _| i64::from(a.state == HealthState::Healthy),
        ),
        (
            "ferroclaw_channel_degraded",
            "gauge",
            "1 when the account runs but had no successful round trip within the stale threshold.",
            |a, _| i64::from(a.state == HealthState::Degraded),
        ),
        (
            "ferroclaw_channel_inbound_total",
            "counter",
            "Platform messages handed to sessions.",
            |a, _| a.inbound as i64,
        ),
        (
            "ferroclaw_channel_outbound_total",
            "counter",
            "Reply messages the platform accepted.",
            |a, _| a.outbound as i64,
        ),
        (
            "ferroclaw_channel_replays_total",
            "counter",
            "Updates delivered again by the platform and not run twice.",
            |a, _| a.replays as i64,
        ),
        (
            "ferroclaw_channel_rate_limits_total",
            "counter",
            "429 answers (retry_after honoured for every method).",
            |a, _| a.rate_limits as i64,
        ),
        (
            "ferroclaw_channel_restarts_total",
            "counter",
            "Restarts of the account's actor after failures.",
            |a, _| a.restarts as i64,
        ),
        (
            "ferroclaw_channel_reconnects_total",
            "counter",
            "Connections replaced (dropped, closed by the platform, found silent).",
            |a, _| a.reconnects as i64,
        ),
        (
            "ferroclaw_channel_zombies_total",
            "counter",
            "Connections found open but silent past their heartbeat window.",
            |a, _| a.zombies as i64,
        ),
        (
            "ferroclaw_channel_last_outbound_age_seconds",
            "gauge",
            "Seconds since the platform last accepted a reply message (-1: never).",
            |a, now| age(a.last_outbound_ms, now),
        ),
        (
            "ferroclaw_channel_last_inbound_age_seconds",
            "gauge",
            "Seconds since the last message in (-1: never).",
            |a, now| age(a.last_inbound_ms, now),
        ),
        (
            "ferroclaw_channel_last_round_trip_age_seconds",
            "gauge",
            "Seconds since the platform last answered a call (-1: never).",
            |a, now| age(a.last_round_trip_ms, now),
        ),
    ]
}

/// Every channel account's measured health, labelled by channel and account.
fn channel_metrics(out: &mut String, board: &ferroclaw_actors::channels::health::HealthBoard) {
    let accounts = board.snapshot(ferroclaw_actors::now_ms());
    let now_s = ferroclaw_actors::now_ms() / 1000;
    for (name, kind, help, pick) in channel_series() {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
        for a in &accounts {
            let v = pick(a, now_s);
            let _ = writeln!(
                out,
                "{name}{{channel=\"{}\",account=\"{}\"}} {v}",
                a.channel, a.account_id
            );
        }
    }
}

/// Each configured MCP server: up or not, its tools on offer, its restarts.
fn mcp_metrics(out: &mut String, servers: &[ferroclaw_actors::mcp::ServerStatus]) {
    if servers.is_empty() {
        return;
    }
    let label = |n: &str| n.replace('\\', "\\\\").replace('"', "\\\"");
    let _ = writeln!(out, "# HELP ferroclaw_mcp_server_up MCP server connected and listed (1), else 0.\n# TYPE ferroclaw_mcp_server_up gauge");
    for s in servers {
        let _ = writeln!(
            out,
            "ferroclaw_mcp_server_up{{server=\"{}\",state=\"{}\"}} {}",
            label(&s.name),
            s.state,
            i32::from(s.state == "ready")
        );
    }
    let _ = writeln!(out, "# HELP ferroclaw_mcp_tools MCP tools offered, by server.\n# TYPE ferroclaw_mcp_tools gauge");
    for s in servers {
        let _ = writeln!(
            out,
            "ferroclaw_mcp_tools{{server=\"{}\"}} {}",
            label(&s.name),
            s.tools
        );
    }
    let _ = writeln!(out, "# HELP ferroclaw_mcp_server_restarts_total MCP server connections that ended and were started again.\n# TYPE ferroclaw_mcp_server_restarts_total counter");
    for s in servers {
        let _ = writeln!(
            out,
            "ferroclaw_mcp_server_restarts_total{{server=\"{}\"}} {}",
            label(&s.name),
            s.restarts
        );
    }
}

/// One browser series: name, kind, help, its value for a profile.
type BrowserSeries = (
    &'static str,
    &'static str,
    &'static str,
    fn(&ferroclaw_actors::browser::BrowserState) -> u64,
);

/// Each browser profile: running, its tabs, its restarts.
fn browser_metrics(out: &mut String, profiles: &[ferroclaw_actors::browser::BrowserState]) {
    let series: [BrowserSeries; 3] = [
        (
            "ferroclaw_browser_up",
            "gauge",
            "The profile's browser runs (1), else 0.",
            |s| u64::from(s.running),
        ),
        (
            "ferroclaw_browser_tabs",
            "gauge",
            "Tabs the browser tool knows, by profile.",
            |s| s.tabs as u64,
        ),
        (
            "ferroclaw_browser_restarts_total",
            "counter",
            "Restarts tried after the profile's browser died.",
            |s| u64::from(s.restarts),
        ),
    ];
    for (name, kind, help, value) in series {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
        for s in profiles {
            let _ = writeln!(out, "{name}{{profile=\"{}\"}} {}", s.profile, value(s));
        }
    }
}
