//! ferroclaw: a self-hosted personal AI gateway, wire-compatible with
//! OpenClaw's gateway protocol, on actix actors. This crate is the edge:
//! config loading, the wire protocol, HTTP and WebSocket. The actor tree
//! lives in `ferroclaw-actors`. See ARCHITECTURE.md.

pub mod config;
pub mod config_keys;
pub mod config_legacy;
pub mod http;
pub mod mcp;
pub mod media_links;
pub mod protocol;
pub mod runtime;
pub mod state;
mod tools;
pub mod ws;

use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use actix_web::{web, App, HttpServer};
use ferroclaw_actors::bus::BroadcastShutdown;
use ferroclaw_actors::gateway::Shutdown;
use ferroclaw_actors::metrics::Metrics;
use ferroclaw_actors::presence::PresenceEntry;
use ferroclaw_actors::settings::AuthMode;
use ferroclaw_actors::store::{Store, StoreError};
use ferroclaw_actors::tree::Gateway;

use crate::config::{LiveConfig, LoadedConfig};
use crate::state::{AppState, SharedState, SlidingLimiter};

/// The version reported in `hello-ok.server.version`.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("{0}")]
    Runtime(#[from] ferroclaw_actors::plan::StartError),
    #[error("{0}")]
    Config(String),
    #[error("cannot serve: {0}")]
    Io(#[from] std::io::Error),
}

/// What `start` needs beyond the config.
pub struct StartOptions {
    pub config: LoadedConfig,
    pub state_dir: PathBuf,
    /// The gateway log file read by `logs.tail`.
    pub log_file: PathBuf,
    /// HTTP worker threads (None: one; the actors, where the work is, run
    /// on the main thread whatever the count).
    pub workers: Option<usize>,
    /// Reads provider API keys from the environment (`OPENAI_API_KEY`, ...).
    /// The binary passes the process environment; tests pass none.
    pub env: ferroclaw_actors::provider::hub::EnvReader,
}

/// A running gateway. Dropping it does not stop it; call `shutdown`.
pub struct RunningGateway {
    pub addr: SocketAddr,
    pub state: SharedState,
    /// The state dir's store, as opened (tests inject faults through it;
    /// the methods reach state only through the actors).
    pub store: Store,
    server: actix_web::dev::ServerHandle,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl RunningGateway {
    /// Tells every client (`shutdown` event, close 1012), then stops serving.
    pub async fn shutdown(&self, reason: &str) {
        let gw = &self.state.gateway;
        gw.metrics.bus_mailbox.fetch_add(1, Ordering::Relaxed);
        let told = gw
            .bus
            .send(BroadcastShutdown {
                event: protocol::events::shutdown(reason),
            })
            .await
            .unwrap_or(0);
        if gw.root.send(Shutdown).await.is_err() {
            tracing::warn!("the actor tree stopped before its last flush");
        } else if self.state.restored.is_some() {
            // A clean stop: a restored state dir is not reported restored again.
            ferroclaw_actors::backup::receipt::settle(&self.state.state_dir);
        }
        tracing::info!(clients = told, "gateway stopping");
        runtime::forget(&self.state.state_dir, self.addr);
        self.server.stop(true).await;
    }

    /// Resolves when the server has stopped.
    pub async fn wait(self) -> std::io::Result<()> {
        self.task.await.unwrap_or(Ok(()))
    }
}

fn is_loopback_listener(addr: &SocketAddr) -> bool {
    addr.ip().is_loopback()
}

/// Starts the actor tree and serves HTTP + WebSocket on a listener the
/// caller bound (tests bind port 0). Must run inside an actix system.
pub async fn start(
    opts: StartOptions,
    listener: TcpListener,
) -> Result<RunningGateway, StartError> {
    let addr = listener.local_addr()?;
    let settings = opts.config.settings.clone();
    let control_ui = checked(&settings, &addr)?;
    let store = Store::open(&opts.state_dir)?;
    let opened = store.clone();
    let restored = ferroclaw_actors::backup::receipt::load(&opts.state_dir).map(|(r, sha)| {
        tracing::info!(operation = %r.operation_id, "this state dir was restored from a backup");
        ferroclaw_actors::backup::receipt::Restored::new(r, sha, ferroclaw_actors::now_ms())
    });
    let media_links = Arc::new(crate::media_links::MediaLinks::new());
    let (gateway, event_bridge) = start_tree(&settings, store, &opts.env, &addr, &media_links)?;
    let state: SharedState = Arc::new(AppState {
        live: Arc::new(LiveConfig::new(opts.config)),
        gateway,
        auth_limiter: SlidingLimiter::new(),
        control_plane_limiter: SlidingLimiter::new(),
        preauth_sockets: AtomicUsize::new(0),
        ready: AtomicBool::new(false),
        log_file: opts.log_file,
        state_dir: opts.state_dir,
        config_write: tokio::sync::Mutex::new(()),
        memory_import: tokio::sync::Mutex::new(()),
        restored,
        server_version: VERSION,
        control_ui,
        event_bridge,
        media_links,
        restart: Default::default(),
    });
    tools::after_restart(&state);
    // The agent's tools that drive the gateway's methods (`src/tools/`).
    let _ = state
        .gateway
        .edge_tools
        .set(actix::Actor::start(tools::GatewayTools::new(Arc::downgrade(&state))).recipient());
    let server = serve(&state, &settings, listener, opts.workers)?;
    let handle = server.handle();
    let task = tokio::task::spawn_local(server);
    state.ready.store(true, Ordering::Relaxed);
    tracing::info!(%addr, "gateway listening");
    runtime::record(&state.state_dir, addr);
    // What the start alone needed (the config's layers, its schema and
    // defaults for the unknown-key check) is free now: given back to the
    // OS on the event loop's next turn, after this returns, not kept resident.
    actix::spawn(async { ferroclaw_actors::gateway::heap::release_free_memory() });
    Ok(RunningGateway {
        addr,
        state,
        store: opened,
        server: handle,
        task,
    })
}

/// What the edge checks before anything starts: auth `none` only on
/// loopback, the hooks, the Control UI's folder (loaded when served).
fn checked(
    settings: &ferroclaw_actors::settings::Settings,
    addr: &SocketAddr,
) -> Result<Option<http::ui_root::ControlUiRoot>, StartError> {
    if settings.gateway.auth.mode == AuthMode::None && !is_loopback_listener(addr) {
        return Err(StartError::Config(format!(
            "gateway.auth.mode \"none\" is only allowed on loopback; {addr} is not (set gateway.auth.token or bind loopback)"
        )));
    }
    http::hooks::check(&settings.hooks).map_err(|e| StartError::Config(e.to_string()))?;
    match &settings.gateway.control_ui {
        c if !c.enabled => Ok(None),
        c => c
            .root
            .as_deref()
            .map(|root| http::ui_root::ControlUiRoot::load(root, c.base_path.as_deref()))
            .transpose()
            .map_err(|e| StartError::Config(e.to_string())),
    }
}

/// This gateway as a presence entry.
fn self_entry(addr: &SocketAddr) -> PresenceEntry {
    PresenceEntry {
        ts: ferroclaw_actors::now_ms(),
        host: Some(hostname()),
        ip: Some(addr.ip().to_string()),
        version: Some(VERSION.to_string()),
        platform: Some(std::env::consts::OS.to_string()),
        mode: Some("gateway".to_string()),
        reason: Some("self".to_string()),
        instance_id: Some(format!("gateway-{}", hostname())),
        ..Default::default()
    }
}

/// The actor tree, its events going to the edge's event bridge (which
/// turns them into wire events on the bus).
fn start_tree(
    settings: &Arc<ferroclaw_actors::settings::Settings>,
    store: Store,
    env: &ferroclaw_actors::provider::hub::EnvReader,
    addr: &SocketAddr,
    links: &Arc<crate::media_links::MediaLinks>,
) -> Result<(Gateway, actix::Addr<crate::ws::event_bridge::EventBridge>), StartError> {
    let metrics = Arc::new(Metrics {
        store: store.stats(),
        ..Metrics::default()
    });
    let mut bridge = None;
    let gateway = Gateway::start(
        settings.clone(),
        store,
        self_entry(addr),
        metrics,
        env.clone(),
        protocol::events::tick,
        |bus, metrics| {
            use actix::Actor;
            let b = crate::ws::event_bridge::EventBridge::new(bus, metrics, links.clone()).start();
            bridge = Some(b.clone());
            ferroclaw_actors::tree::EdgeSinks {
                runs: b.clone().recipient(),
                sessions: b.clone().recipient(),
                presence: b.clone().recipient(),
                health: b.clone().recipient(),
                approvals: b.clone().recipient(),
                nodes: b.clone().recipient(),
                cron: b.clone().recipient(),
                heartbeat: b.clone().recipient(),
                questions: b.recipient(),
            }
        },
    )?;
    let bridge = bridge.ok_or_else(|| StartError::Config("chat bridge did not start".into()))?;
    Ok((gateway, bridge))
}

/// The HTTP server on `listener`: every route, the WebSocket upgrade as
/// the default one.
fn serve(
    state: &SharedState,
    settings: &ferroclaw_actors::settings::Settings,
    listener: TcpListener,
    workers: Option<usize>,
) -> std::io::Result<actix_web::dev::Server> {
    let data = web::Data::new(state.clone());
    let mcp = web::Data::new(mcp::http::McpHttp::new(
        Arc::downgrade(state),
        settings.gateway.auth.mode == AuthMode::None,
    ));
    let max_payload = settings.gateway.max_payload;
    let server = HttpServer::new(move || {
        App::new()
            .app_data(data.clone())
            .app_data(mcp.clone())
            .app_data(web::PayloadConfig::new(max_payload))
            .wrap(actix_web::middleware::from_fn(http::same_origin::guard))
            .configure(http::admin::routes)
            .configure(http::backup::routes)
            .configure(http::openai::routes)
            .configure(http::webchat::routes)
            .configure(http::media::routes)
            .configure(mcp::http::routes)
            .default_service(web::to(default_route))
    })
    // Nagle off: a `res` written right after an event frame must not wait
    // for the client's delayed ACK (40 ms on Linux).
    .on_connect(|conn, _| {
        if let Some(tcp) = conn.downcast_ref::<actix_web::rt::net::TcpStream>() {
            if let Err(e) = tcp.set_nodelay(true) {
                tracing::debug!(error = %e, "TCP_NODELAY not set");
            }
        }
    })
    .disable_signals()
    .shutdown_timeout(5)
    .listen(listener)?;
    Ok(server.workers(workers.unwrap_or(1)).run())
}

/// What is not an HTTP route: the Control UI to a browser (when one is
/// served), else a WebSocket upgrade.
pub(crate) async fn default_route(
    req: actix_web::HttpRequest,
    mut payload: web::Payload,
    state: web::Data<SharedState>,
) -> actix_web::HttpResponse {
    if let Some(res) = http::hooks::serve(&req, &mut payload, state.get_ref()).await {
        return res;
    }
    if let Some(res) = http::slack::serve(&req, &mut payload, state.get_ref()).await {
        return res;
    }
    if let Some(res) = http::whatsapp::serve(&req, &mut payload, state.get_ref()).await {
        return res;
    }
    if let Some(res) = http::control_ui::serve(&req, state.get_ref()).await {
        return res;
    }
    ws::upgrade(req, payload, state).await
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "localhost".to_string())
}
