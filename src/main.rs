//! The `ferroclaw` binary: CLI -> config -> telemetry -> `ferroclaw::start`.
//! The only place that reads the environment, CLI flags and files for config.

use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod cli;
use cli::args::{
    ConfigCommand, CronCommand, NodesCommand, PairingCommand, SecurityCommand, SessionsCommand,
};
use ferroclaw::config::{self, ConfigSources, LoadedConfig};
use ferroclaw::{start, StartOptions};
use ferroclaw_actors::settings::{AuthMode, Settings};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::EnvFilter;

#[derive(Parser)]
#[command(
    name = "ferroclaw",
    version,
    about = "Self-hosted personal AI gateway, wire-compatible with OpenClaw"
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    paths: Paths,
    #[command(flatten)]
    client: ClientArgs,
}

/// How client commands reach a running gateway.
#[derive(clap::Args, Clone, Default)]
struct ClientArgs {
    /// Gateway WebSocket URL. Default: where the gateway running on the state dir listens (its gateway.runtime.json), else ws://127.0.0.1:<gateway.port>.
    #[arg(long, global = true)]
    url: Option<String>,
    /// Gateway token. Default: OPENCLAW_GATEWAY_TOKEN, gateway.auth.token, or <state dir>/gateway.token.
    #[arg(long, global = true)]
    token: Option<String>,
    /// Print JSON instead of text.
    #[arg(long, global = true)]
    json: bool,
}

#[derive(clap::Args, Clone, Default)]
struct Paths {
    /// Config file (JSON5). Default: <state dir>/ferroclaw.json.
    #[arg(long, global = true)]
    config: Option<PathBuf>,
    /// State dir (store, logs, workspace). Default: ~/.ferroclaw (or FERROCLAW_STATE_DIR).
    #[arg(long, global = true)]
    state_dir: Option<PathBuf>,
}

#[derive(Subcommand)]
enum Command {
    /// Run the gateway (the default).
    Gateway {
        /// Port for HTTP and WebSocket (overrides gateway.port).
        #[arg(long)]
        port: Option<u16>,
        /// loopback | lan | custom | <ip> (overrides gateway.bind).
        #[arg(long)]
        bind: Option<String>,
        /// A built OpenClaw Control UI folder to serve (overrides gateway.controlUi.root).
        #[arg(long = "control-ui", value_name = "DIR")]
        control_ui: Option<PathBuf>,
    },
    /// Inspect or change the configuration.
    Config {
        #[command(subcommand)]
        command: ConfigCommand,
    },
    /// Is the gateway up and healthy?
    Health,
    /// Check config, state dir, gateway, model and channels, with a verdict for each.
    Doctor,
    /// Security checks (no gateway needed).
    Security {
        #[command(subcommand)]
        command: SecurityCommand,
    },
    /// The MCP servers of the config: list, show, tools, probe.
    Mcp {
        #[command(subcommand)]
        command: cli::mcp::McpCommand,
    },
    /// Gateway status and recent sessions.
    Status,
    /// List, show, reset or delete sessions.
    Sessions {
        #[command(subcommand)]
        command: SessionsCommand,
    },
    /// Talk to the agent interactively (line editing, `/` directives; Ctrl-C stops a reply).
    Chat {
        /// Session key (default: main).
        #[arg(long, default_value = "main")]
        session: String,
    },
    /// Write sessions out of the running gateway as OpenClaw JSONL
    /// (agents/<id>/sessions/sessions.json + <sessionId>.jsonl under DIR).
    Export {
        /// Only this session (default: every session).
        #[arg(long)]
        session: Option<String>,
        /// A new (or empty) folder to write into.
        #[arg(long)]
        out: PathBuf,
    },
    /// Move an OpenClaw install (openclaw.json, sessions, workspace, skills,
    /// auth profiles) into the ferroclaw state dir; the gateway must be stopped.
    Import {
        /// The OpenClaw state dir (usually ~/.openclaw).
        #[arg(long)]
        from: PathBuf,
        /// Replace what already exists (old files kept as *.bak-<time>,
        /// replaced sessions exported to <state dir>/backup-<time>/).
        #[arg(long)]
        force: bool,
    },
    /// Channel DM pairing: list the codes strangers were given, approve or
    /// dismiss one (through the running gateway).
    Pairing {
        #[command(subcommand)]
        command: PairingCommand,
    },
    /// The gateway as a service of this user (systemd user unit; launchd
    /// on macOS): install, uninstall, status, start, stop, restart, logs.
    Daemon {
        #[command(subcommand)]
        command: cli::daemon::DaemonCommand,
    },
    /// First-run setup: provider and key, model, workspace, gateway token,
    /// channels, exec safety, the service (or all from flags: --non-interactive).
    Onboard(Box<cli::onboard::OnboardArgs>),
    /// Backups of the state dir: create (also while the gateway runs),
    /// verify, restore.
    Backup {
        #[command(subcommand)]
        command: cli::backup::BackupCommand,
    },
    /// Nodes (machines running `openclaw node run`): list, pending,
    /// describe, approve, reject, invoke, rename (through the running gateway).
    Nodes {
        #[command(subcommand)]
        command: NodesCommand,
    },
    /// Cron jobs: list, add, remove, run now, run history (through the
    /// running gateway).
    Cron {
        #[command(subcommand)]
        command: CronCommand,
    },
    /// Send one message to the agent and stream the reply.
    Agent {
        /// The message.
        #[arg(long, short)]
        message: String,
        /// Session key (default: main).
        #[arg(long, default_value = "main")]
        session: String,
        /// Thinking level: off, minimal, low, medium, high, xhigh.
        #[arg(long)]
        thinking: Option<String>,
    },
}

fn state_dir(paths: &Paths) -> PathBuf {
    if let Some(d) = &paths.state_dir {
        return d.clone();
    }
    if let Some(d) = std::env::var_os("FERROCLAW_STATE_DIR") {
        return PathBuf::from(d);
    }
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("."));
    home.join(".ferroclaw")
}

fn sources(paths: &Paths, state: &Path) -> ConfigSources {
    let path = paths
        .config
        .clone()
        .or_else(|| std::env::var_os("FERROCLAW_CONFIG").map(PathBuf::from))
        .unwrap_or_else(|| state.join("ferroclaw.json"));
    let env = std::env::vars()
        .filter(|(k, _)| {
            k.starts_with("FERROCLAW_") && k != "FERROCLAW_STATE_DIR" && k != "FERROCLAW_CONFIG"
        })
        .collect();
    ConfigSources {
        path,
        env,
        gateway_token: std::env::var("OPENCLAW_GATEWAY_TOKEN")
            .ok()
            .filter(|s| !s.is_empty()),
        gateway_password: std::env::var("OPENCLAW_GATEWAY_PASSWORD")
            .ok()
            .filter(|s| !s.is_empty()),
        generated_token: None,
    }
}

fn load_or_exit(paths: &Paths, state: &Path) -> Result<LoadedConfig, ExitCode> {
    match config::load(&sources(paths, state)) {
        Ok(c) => {
            for w in &c.warnings {
                eprintln!("warning: {w}");
            }
            Ok(c)
        }
        Err(e) => {
            eprintln!("error: invalid config: {e}");
            Err(ExitCode::from(2))
        }
    }
}

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

fn bind_addr(s: &Settings) -> Result<IpAddr, String> {
    match s.gateway.bind.as_str() {
        "loopback" | "localhost" => Ok(IpAddr::V4(Ipv4Addr::LOCALHOST)),
        "lan" | "auto" => Ok(IpAddr::V4(Ipv4Addr::UNSPECIFIED)),
        "custom" => s
            .gateway
            .host
            .as_deref()
            .ok_or("gateway.bind is \"custom\" but gateway.host is not set".to_string())?
            .parse()
            .map_err(|_| "gateway.host: expected an IP address".to_string()),
        other => other.parse().map_err(|_| {
            format!("gateway.bind: expected loopback, lan, custom or an IP address, got {other:?}")
        }),
    }
}

fn init_tracing(
    level: &str,
    log_file: &Path,
) -> Option<tracing_appender::non_blocking::WorkerGuard> {
    let filter = || EnvFilter::try_from_env("RUST_LOG").unwrap_or_else(|_| EnvFilter::new(level));
    let console = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
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

/// Where client commands connect, and with which token.
fn client_target(cli: &Cli, state: &Path) -> cli::Target {
    let loaded = config::load(&sources(&cli.paths, state)).ok();
    // `--url`, else where the gateway running on this state dir listens
    // (its runtime file: a `--port` start is found), else the config's port.
    let running = || ferroclaw::runtime::running(state).map(|r| r.url);
    let url = cli.client.url.clone().or_else(running).unwrap_or_else(|| {
        let port = loaded
            .as_ref()
            .map(|c| c.settings.gateway.port)
            .unwrap_or(18789);
        format!("ws://127.0.0.1:{port}")
    });
    let token = cli
        .client
        .token
        .clone()
        .or_else(|| {
            std::env::var("OPENCLAW_GATEWAY_TOKEN")
                .ok()
                .filter(|t| !t.is_empty())
        })
        .or_else(|| {
            loaded
                .as_ref()
                .and_then(|c| c.settings.gateway.auth.token.clone())
        })
        .or_else(|| {
            std::fs::read_to_string(state.join("gateway.token"))
                .ok()
                .map(|t| t.trim().to_string())
                .filter(|t| !t.is_empty())
        });
    cli::Target {
        url,
        token,
        json: cli.client.json,
    }
}

/// Runs a client command on a small runtime.
fn run_client<F>(f: F) -> ExitCode
where
    F: std::future::Future<Output = Result<(), cli::Failure>>,
{
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start: {e}");
            return ExitCode::from(1);
        }
    };
    match rt.block_on(f) {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => failure.exit(),
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let state = state_dir(&cli.paths);
    let target = client_target(&cli, &state);
    match cli.command {
        Some(Command::Health) => run_client(cli::health(&target)),
        Some(Command::Doctor) => {
            let loaded = config::load(&sources(&cli.paths, &state));
            let channels = loaded
                .as_ref()
                .ok()
                .map(|c| c.settings.channels.keys().cloned().collect())
                .unwrap_or_default();
            let control_ui = loaded.as_ref().ok().and_then(|c| {
                let ui = &c.settings.gateway.control_ui;
                ui.root.clone().map(|r| (r, ui.base_path.clone()))
            });
            let audit = loaded
                .as_ref()
                .ok()
                .map(|c| cli::audit::audit(&c.settings, &c.sources.path, &state));
            let verdict = loaded.map(|c| {
                if c.exists {
                    format!("{} is valid", c.sources.path.display())
                } else {
                    "no config file; defaults in use".to_string()
                }
            });
            run_client(cli::doctor(
                &target,
                verdict.map_err(|e| e.to_string()),
                &state,
                channels,
                control_ui,
                audit,
            ))
        }
        Some(Command::Security {
            command: SecurityCommand::Audit,
        }) => cli::audit::print(
            config::load(&sources(&cli.paths, &state)),
            &state,
            cli.client.json,
        ),
        Some(Command::Mcp {
            command: cli::mcp::McpCommand::Serve { allow },
        }) => match cli::mcp_serve::allowlist(allow.as_deref()) {
            Ok(allowed) => run_client(cli::mcp_serve::serve(&target, allowed)),
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::from(2)
            }
        },
        Some(Command::Mcp { command }) => match load_or_exit(&cli.paths, &state) {
            Ok(c) => cli::mcp::run(&c.settings.mcp, command, cli.client.json),
            Err(code) => code,
        },
        Some(Command::Status) => run_client(cli::status(&target)),
        Some(Command::Pairing { command }) => {
            use cli::pairing::Action;
            let action = match &command {
                PairingCommand::List { channel } => Action::List {
                    channel: channel.as_deref(),
                },
                PairingCommand::Approve { channel, code } => Action::Approve { channel, code },
                PairingCommand::Dismiss { channel, code } => Action::Dismiss { channel, code },
            };
            run_client(cli::pairing::pairing(&target, action))
        }
        Some(Command::Daemon { command }) => daemon(&cli.paths, &state, command),
        Some(Command::Onboard(args)) => {
            let cx = cli::onboard::Context {
                config: sources(&cli.paths, &state).path,
                state_dir: state.clone(),
                json: cli.client.json,
                env: ferroclaw_actors::provider::hub::process_env(),
            };
            match cli::onboard::run(*args, &cx) {
                Ok(done) if done.install_daemon => {
                    let install = cli::daemon::DaemonCommand::Install {
                        force: false,
                        no_start: false,
                        print: false,
                        launchd: false,
                    };
                    daemon(&cli.paths, &state, install)
                }
                Ok(_) => ExitCode::SUCCESS,
                Err(code) => code,
            }
        }
        Some(Command::Backup { command }) => match load_or_exit(&cli.paths, &state) {
            Ok(c) => {
                let ws = ferroclaw_actors::plan::plan(
                    &c.settings,
                    &state,
                    ferroclaw_actors::provider::hub::process_env(),
                )
                .map(|p| ferroclaw_actors::plan::agent_workspaces(&c.settings, &p.workspace))
                .unwrap_or_default();
                let cx = cli::backup::Context {
                    state_dir: state.clone(),
                    config: c.sources.path.clone(),
                    workspaces: ws,
                    home: std::env::var_os("HOME").map(PathBuf::from),
                    cwd: std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
                    target,
                };
                cli::backup::run(command, &cx)
            }
            Err(code) => code,
        },
        Some(Command::Nodes { command }) => {
            use cli::nodes::Action;
            let action = match &command {
                NodesCommand::List => Action::List,
                NodesCommand::Pending => Action::Pending,
                NodesCommand::Describe { node } => Action::Describe { node },
                NodesCommand::Approve { request } => Action::Approve { request },
                NodesCommand::Reject { request } => Action::Reject { request },
                NodesCommand::Rename { node, name } => Action::Rename { node, name },
                NodesCommand::Invoke {
                    node,
                    command,
                    params,
                    timeout_ms,
                } => Action::Invoke {
                    node,
                    command,
                    params,
                    timeout_ms: *timeout_ms,
                },
            };
            run_client(cli::nodes::nodes(&target, action))
        }
        Some(Command::Cron { command }) => {
            use cli::cron::Action;
            let action = match command {
                CronCommand::List { all } => Action::List { all },
                CronCommand::Rm { id } => Action::Remove { id },
                CronCommand::Run { id } => Action::Run { id },
                CronCommand::Runs { id, limit } => Action::Runs { id, limit },
                CronCommand::Add(args) => Action::Add(Box::new(args)),
            };
            run_client(cli::cron::cron(&target, action))
        }
        Some(Command::Sessions { command }) => {
            let (action, key) = match &command {
                SessionsCommand::List => ("list", None),
                SessionsCommand::Show { key } => ("show", Some(key.as_str())),
                SessionsCommand::Reset { key } => ("reset", Some(key.as_str())),
                SessionsCommand::Delete { key } => ("delete", Some(key.as_str())),
            };
            run_client(cli::sessions(&target, action, key))
        }
        Some(Command::Agent {
            message,
            session,
            thinking,
        }) => run_client(cli::agent(&target, &message, &session, thinking.as_deref())),
        Some(Command::Chat { session }) => run_client(cli::chat(&target, &session)),
        Some(Command::Export { session, out }) => {
            run_client(cli::export(&target, session.as_deref(), &out))
        }
        Some(Command::Import { from, force }) => run_client(cli::import(cli::ImportArgs {
            from,
            config_path: sources(&cli.paths, &state).path,
            state: state.clone(),
            home: std::env::var_os("HOME").map(PathBuf::from),
            force,
            json: cli.client.json,
        })),
        Some(Command::Config {
            command: ConfigCommand::Get { key },
        }) => run_client(cli::config_get(&target, key.as_deref())),
        Some(Command::Config {
            command: ConfigCommand::Set { key, value },
        }) => run_client(cli::config_set(&target, &key, &value)),
        Some(Command::Config {
            command: ConfigCommand::Validate,
        }) => {
            let c = match load_or_exit(&cli.paths, &state) {
                Ok(c) => c,
                Err(code) => return code,
            };
            let what = if c.exists {
                c.sources.path.display().to_string()
            } else {
                "defaults (no config file)".into()
            };
            // What the gateway would refuse at start (unknown providers,
            // bad sandbox or tool settings), without starting anything.
            if let Err(e) = ferroclaw_actors::plan::plan(
                &c.settings,
                &state,
                ferroclaw_actors::provider::hub::process_env(),
            ) {
                eprintln!("error: invalid config: {what}: {e}");
                return ExitCode::from(2);
            }
            if cli.client.json {
                let report = serde_json::json!({
                    "ok": true,
                    "config": c.exists.then(|| c.sources.path.display().to_string()),
                    "warnings": c.warnings,
                });
                println!("{report}");
            } else {
                println!("config ok: {what}");
            }
            ExitCode::SUCCESS
        }
        Some(Command::Gateway {
            port,
            bind,
            control_ui,
        }) => run_gateway(&cli.paths, &state, port, bind, control_ui),
        None => run_gateway(&cli.paths, &state, None, None, None),
    }
}

fn daemon(paths: &Paths, state: &Path, command: cli::daemon::DaemonCommand) -> ExitCode {
    match load_or_exit(paths, state) {
        Ok(c) => cli::daemon::run(
            command,
            &cli::daemon::Service::new(state, paths.config.as_deref(), &c.settings).homes(
                std::env::var_os("HOME"),
                std::env::var_os("XDG_CONFIG_HOME"),
            ),
        ),
        Err(code) => code,
    }
}

fn run_gateway(
    paths: &Paths,
    state: &Path,
    port: Option<u16>,
    bind: Option<String>,
    control_ui: Option<PathBuf>,
) -> ExitCode {
    let mut loaded = match load_or_exit(paths, state) {
        Ok(c) => c,
        Err(code) => return code,
    };
    // The state dir holds transcripts, device tokens and the gateway token:
    // 0700 from its creation (and an older, looser one tightened).
    if let Err(e) = ferroclaw_actors::fsutil::private_dir(state) {
        eprintln!("error: cannot make the state dir {}: {e}", state.display());
        return ExitCode::from(2);
    }
    {
        let mut s: Settings = (*loaded.settings).clone();
        if let Some(p) = port {
            s.gateway.port = p;
        }
        if let Some(b) = bind {
            s.gateway.bind = b;
        }
        if let Some(dir) = control_ui {
            s.gateway.control_ui.root = Some(dir.display().to_string());
        }
        loaded.settings = std::sync::Arc::new(s);
    }
    let log_file = loaded
        .settings
        .logging
        .file
        .as_ref()
        .map(PathBuf::from)
        .unwrap_or_else(|| state.join("logs").join("ferroclaw.log"));
    let _guard = init_tracing(&loaded.settings.logging.level, &log_file);
    match ensure_token(&mut loaded, state) {
        Ok(Some(path)) => {
            tracing::info!(path = %path.display(), "gateway token (no gateway.auth.token configured)")
        }
        Ok(None) => {}
        Err(e) => {
            eprintln!(
                "error: cannot create the gateway token in {}: {e}",
                state.display()
            );
            return ExitCode::from(2);
        }
    }
    let ip = match bind_addr(&loaded.settings) {
        Ok(ip) => ip,
        Err(e) => {
            eprintln!("error: invalid config: {e}");
            return ExitCode::from(2);
        }
    };
    let addr = SocketAddr::new(ip, loaded.settings.gateway.port);
    let listener = match TcpListener::bind(addr) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("error: cannot listen on {addr}: {e}");
            return ExitCode::from(1);
        }
    };
    let opts = StartOptions {
        config: loaded,
        state_dir: state.to_path_buf(),
        log_file,
        workers: None,
        env: ferroclaw_actors::provider::hub::process_env(),
    };
    let result = actix_rt::System::new().block_on(async move {
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
    });
    if result == ExitCode::from(RESTART) {
        // In place: the same pid, arguments and environment (what a
        // supervisor started keeps running under it).
        restart_in_place();
    }
    result
}

/// `run_gateway`'s answer when the gateway tool asked for a restart.
const RESTART: u8 = 75;

/// Replaces this process with a fresh run of the same command (every file
/// and socket this one held is closed on exec: they are opened close-on-exec).
fn restart_in_place() {
    use std::os::unix::process::CommandExt;
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => {
            eprintln!("error: cannot restart: {e}");
            return;
        }
    };
    eprintln!("ferroclaw restarting");
    let err = std::process::Command::new(exe)
        .args(std::env::args_os().skip(1))
        .exec();
    eprintln!("error: cannot restart: {err}");
}
