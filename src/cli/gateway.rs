//! `ferroclaw gateway`: the config loaded and overridden by the flags, the
//! log set up, the gateway token made when none is configured, the listener
//! bound, then the gateway run until a signal (or a restart it asked for).

use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use ferroclaw::config::{self, LoadedConfig};
use ferroclaw::{start, StartOptions};
use ferroclaw_actors::settings::{AuthMode, Settings};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::EnvFilter;

use super::dispatch::Host;

/// What `ferroclaw gateway`'s flags override in the config.
#[derive(Debug, Default)]
pub struct Overrides {
    pub port: Option<u16>,
    pub bind: Option<String>,
    pub control_ui: Option<PathBuf>,
}

/// `ferroclaw gateway`: runs until SIGTERM, SIGINT or a restart the
/// gateway tool asked for ([`RESTART`]: main.rs then execs itself again).
pub fn run(host: &Host, overrides: Overrides) -> ExitCode {
    let state = host.state.as_path();
    let mut loaded = match host.load() {
        Ok(c) => c,
        Err(code) => return code,
    };
    // The state dir holds transcripts, device tokens and the gateway token:
    // 0700 from its creation (and an older, looser one tightened).
    if let Err(e) = ferroclaw_actors::fsutil::private_dir(state) {
        eprintln!("error: cannot make the state dir {}: {e}", state.display());
        return ExitCode::from(2);
    }
    overrides.apply(&mut loaded);
    let log_file = loaded
        .settings
        .logging
        .file
        .as_ref()
        .map(PathBuf::from)
        .unwrap_or_else(|| state.join("logs").join("ferroclaw.log"));
    let _guard = init_tracing(
        &loaded.settings.logging.level,
        host.rust_log.as_deref(),
        &log_file,
    );
    let listener = match token_and_listener(&mut loaded, state) {
        Ok(l) => l,
        Err(code) => return code,
    };
    let opts = StartOptions {
        config: loaded,
        state_dir: state.to_path_buf(),
        log_file,
        workers: None,
        env: host.env.clone(),
    };
    actix_rt::System::new().block_on(serve(opts, listener))
}

impl Overrides {
    fn apply(self, loaded: &mut LoadedConfig) {
        let mut s: Settings = (*loaded.settings).clone();
        if let Some(p) = self.port {
            s.gateway.port = p;
        }
        if let Some(b) = self.bind {
            s.gateway.bind = b;
        }
        if let Some(dir) = self.control_ui {
            s.gateway.control_ui.root = Some(dir.display().to_string());
        }
        loaded.settings = std::sync::Arc::new(s);
    }
}

/// The gateway token made when none is configured, then the listener on
/// the configured address.
fn token_and_listener(loaded: &mut LoadedConfig, state: &Path) -> Result<TcpListener, ExitCode> {
    match ensure_token(loaded, state) {
        Ok(Some(path)) => {
            tracing::info!(path = %path.display(), "gateway token (no gateway.auth.token configured)")
        }
        Ok(None) => {}
        Err(e) => {
            eprintln!(
                "error: cannot create the gateway token in {}: {e}",
                state.display()
            );
            return Err(ExitCode::from(2));
        }
    }
    let ip = bind_addr(&loaded.settings).map_err(|e| {
        eprintln!("error: invalid config: {e}");
        ExitCode::from(2)
    })?;
    let addr = SocketAddr::new(ip, loaded.settings.gateway.port);
    TcpListener::bind(addr).map_err(|e| {
        let taken = e.kind() == std::io::ErrorKind::AddrInUse;
        match taken && answers_as_gateway(addr) {
            true => eprintln!(
                "error: cannot listen on {addr}: a gateway is already running there (its /health answers); \
                 stop it, or start this one with --port or another gateway.port"
            ),
            false => eprintln!("error: cannot listen on {addr}: {e}"),
        }
        ExitCode::from(1)
    })
}

/// Whether what listens on `addr` answers `GET /health` as a gateway does
/// (`{"ok":true,...}`), within half a second.
fn answers_as_gateway(addr: SocketAddr) -> bool {
    use std::io::{Read, Write};
    let limit = std::time::Duration::from_millis(500);
    let probe = addr_for_probe(addr);
    let Ok(mut s) = std::net::TcpStream::connect_timeout(&probe, limit) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(limit));
    let _ = s.set_write_timeout(Some(limit));
    let ask = format!("GET /health HTTP/1.1\r\nHost: {probe}\r\nConnection: close\r\n\r\n");
    if s.write_all(ask.as_bytes()).is_err() {
        return false;
    }
    let mut answer = Vec::new();
    let _ = s.take(4096).read_to_end(&mut answer);
    let text = String::from_utf8_lossy(&answer);
    text.starts_with("HTTP/1.1 200") && text.contains("\"ok\":true")
}

/// Where to reach a listener bound to `addr` (an unspecified address is
/// reached on loopback).
fn addr_for_probe(addr: SocketAddr) -> SocketAddr {
    match addr.ip().is_unspecified() {
        true if addr.is_ipv4() => SocketAddr::from(([127, 0, 0, 1], addr.port())),
        true => SocketAddr::from((std::net::Ipv6Addr::LOCALHOST, addr.port())),
        false => addr,
    }
}

/// Starts the gateway and serves until a signal or a restart request.
async fn serve(opts: StartOptions, listener: TcpListener) -> ExitCode {
    // Before the address is printed: a SIGTERM sent as soon as a
    // supervisor sees it must stop the gateway cleanly, not kill it.
    use tokio::signal::unix::{signal, SignalKind};
    let (mut term, mut int) = match (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) {
        (Ok(t), Ok(i)) => (t, i),
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("error: cannot install signal handler: {e}");
            return ExitCode::from(1);
        }
    };
    let gw = match start(opts, listener).await {
        Ok(gw) => gw,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    eprintln!(
        "ferroclaw {} listening on ws://{}",
        ferroclaw::VERSION,
        gw.addr
    );
    eprintln!("web chat: http://{}/chat", gw.addr);
    let restart = gw.state.restart.clone();
    restart
        .supported
        .store(true, std::sync::atomic::Ordering::Release);
    let restarting = tokio::select! {
        _ = term.recv() => false,
        _ = int.recv() => false,
        _ = restart.notify.notified() => true,
    };
    gw.shutdown(if restarting {
        "gateway restarting"
    } else {
        "gateway stopping"
    })
    .await;
    match gw.wait().await {
        Ok(()) if restarting => ExitCode::from(RESTART),
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(1)
        }
    }
}

/// [`run`]'s answer when the gateway tool asked for a restart.
pub const RESTART: u8 = 75;

/// With token auth and no token configured, use (or create) one in the state dir.
fn ensure_token(c: &mut LoadedConfig, state: &Path) -> std::io::Result<Option<PathBuf>> {
    if c.settings.gateway.auth.mode != AuthMode::Token || c.settings.gateway.auth.token.is_some() {
        return Ok(None);
    }
    let path = state.join("gateway.token");
    let token = match std::fs::read_to_string(&path) {
        Ok(t) if !t.trim().is_empty() => t.trim().to_string(),
        _ => {
            ferroclaw_actors::fsutil::private_dir(state)?;
            // Typed after `--token` on command lines: never one that starts
            // with `-` (1 in 64 base64url tokens would, and read as a flag).
            let t = std::iter::repeat_with(ferroclaw_actors::devices::random_token)
                .find(|t| !t.starts_with('-'))
                .unwrap_or_default();
            // 0600 from its creation.
            config::write_atomic(&path, &format!("{t}\n"))?;
            t
        }
    };
    let mut s: Settings = (*c.settings).clone();
    s.gateway.auth.token = Some(token.clone());
    c.settings = std::sync::Arc::new(s);
    c.sources.generated_token = Some(token);
    Ok(Some(path))
}

/// `gateway.bind` (with `gateway.host`) that names no address.
#[derive(Debug, thiserror::Error)]
enum BindError {
    #[error("gateway.bind is \"custom\" but gateway.host is not set")]
    NoHost,
    #[error("gateway.host: expected an IP address")]
    BadHost,
    #[error("gateway.bind: expected loopback, lan, custom or an IP address, got {0:?}")]
    BadBind(String),
}

fn bind_addr(s: &Settings) -> Result<IpAddr, BindError> {
    match s.gateway.bind.as_str() {
        "loopback" | "localhost" => Ok(IpAddr::V4(Ipv4Addr::LOCALHOST)),
        "lan" | "auto" => Ok(IpAddr::V4(Ipv4Addr::UNSPECIFIED)),
        "custom" => s
            .gateway
            .host
            .as_deref()
            .ok_or(BindError::NoHost)?
            .parse()
            .map_err(|_| BindError::BadHost),
        other => other
            .parse()
            .map_err(|_| BindError::BadBind(other.to_string())),
    }
}

/// Logs to stderr and (JSON) to `log_file`, at `rust_log` (the process's
/// `RUST_LOG`, as main.rs read it) else the configured `level`.
fn init_tracing(
    level: &str,
    rust_log: Option<&str>,
    log_file: &Path,
) -> Option<tracing_appender::non_blocking::WorkerGuard> {
    let filter = || {
        rust_log
            .and_then(|r| EnvFilter::try_new(r).ok())
            .unwrap_or_else(|| EnvFilter::new(level))
    };
    // Colour only on a terminal: a service manager's log file (systemd's
    // journal, launchd's StandardErrorPath) gets plain text.
    let console = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_filter_layer(filter());
    let (dir, name) = (log_file.parent()?, log_file.file_name()?);
    // Private: the log names sessions and what happened in them.
    let private = ferroclaw_actors::fsutil::private_dir(dir).and_then(|()| {
        ferroclaw_actors::fsutil::private_options()
            .create(true)
            .append(true)
            .open(log_file)?;
        ferroclaw_actors::fsutil::make_private(log_file)
    });
    if private.is_err() {
        tracing_subscriber::registry().with(console).init();
        return None;
    }
    // The default queue holds 128,000 lines: 4 MB resident from the start
    // for a log that sees a few lines a second. 8,192 lines still absorbs a
    // burst; past that lines are dropped (lossy), never blocking a request.
    let (writer, guard) = tracing_appender::non_blocking::NonBlockingBuilder::default()
        .buffered_lines_limit(LOG_QUEUE_LINES)
        .finish(tracing_appender::rolling::never(dir, name));
    let file = tracing_subscriber::fmt::layer()
        .json()
        .with_writer(writer)
        .with_filter_layer(filter());
    tracing_subscriber::registry()
        .with(console)
        .with(file)
        .init();
    Some(guard)
}

/// Log lines the file writer's queue holds before it drops new ones.
const LOG_QUEUE_LINES: usize = 8_192;

trait WithFilter<S>: Sized {
    fn with_filter_layer(
        self,
        f: EnvFilter,
    ) -> tracing_subscriber::filter::Filtered<Self, EnvFilter, S>;
}

impl<S, L: tracing_subscriber::Layer<S>> WithFilter<S> for L
where
    S: tracing::Subscriber,
{
    fn with_filter_layer(
        self,
        f: EnvFilter,
    ) -> tracing_subscriber::filter::Filtered<Self, EnvFilter, S> {
        tracing_subscriber::Layer::with_filter(self, f)
    }
}
