//! Which function runs each subcommand, given what main.rs read from the
//! process ([`Host`]): nothing here reads the environment.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

use ferroclaw::config::{self, ConfigSources, LoadedConfig};
use ferroclaw_actors::provider::hub::EnvReader;

use super::args::{
    Command, ConfigCommand, CronCommand, NodesCommand, PairingCommand, SecurityCommand,
    SessionsCommand,
};
use super::{gateway, Target};

/// What main.rs read from the process for a command (the one place that
/// reads the environment, flags and paths).
pub struct Host {
    pub state: PathBuf,
    /// Where the config comes from (the file, `FERROCLAW_*`, the token
    /// variables).
    pub sources: ConfigSources,
    /// `--config`, as given (the service unit names it).
    pub config_flag: Option<PathBuf>,
    /// Where client commands connect, and with which token (worked out
    /// when a command first asks).
    pub target: std::cell::LazyCell<Target, Box<dyn FnOnce() -> Target>>,
    /// `--json`.
    pub json: bool,
    /// The process environment, read when asked (providers' keys).
    pub env: EnvReader,
    pub home: Option<PathBuf>,
    pub xdg_config_home: Option<OsString>,
    pub cwd: PathBuf,
    /// `RUST_LOG`, over the configured log level.
    pub rust_log: Option<String>,
}

impl Host {
    /// The config, its warnings printed; an invalid one printed and exit 2.
    pub fn load(&self) -> Result<LoadedConfig, ExitCode> {
        match config::load(&self.sources) {
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
}

/// Runs a client command on a small runtime.
pub fn run_client<F>(f: F) -> ExitCode
where
    F: std::future::Future<Output = Result<(), super::Failure>>,
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

/// Runs `command` (none: the gateway).
pub fn dispatch(command: Option<Command>, host: &Host) -> ExitCode {
    let t = &host.target;
    match command {
        None => gateway::run(host, gateway::Overrides::default()),
        Some(Command::Gateway {
            port,
            bind,
            control_ui,
        }) => gateway::run(
            host,
            gateway::Overrides {
                port,
                bind,
                control_ui,
            },
        ),
        Some(Command::Health) => run_client(super::health(t)),
        Some(Command::Status) => run_client(super::status(t)),
        Some(Command::Doctor) => doctor(host),
        Some(Command::Security {
            command: SecurityCommand::Audit,
        }) => audit(host),
        Some(Command::Mcp { command }) => mcp(host, command),
        Some(Command::Pairing { command }) => pairing(t, &command),
        Some(Command::Daemon { command }) => daemon(host, command),
        Some(Command::Onboard(args)) => onboard(host, *args),
        Some(Command::Backup { command }) => backup(host, command),
        Some(Command::Nodes { command }) => nodes(t, &command),
        Some(Command::Plugins { command }) => plugins(host, command),
        Some(c @ Command::Browser { .. }) => browser(t, c),
        Some(Command::Cron { command }) => cron(t, command),
        Some(Command::Sessions { command }) => sessions(t, &command),
        Some(Command::Agent {
            message,
            session,
            thinking,
        }) => run_client(super::agent(t, &message, &session, thinking.as_deref())),
        Some(Command::Chat { session }) => run_client(super::chat(t, &session)),
        Some(Command::Export { session, out }) => {
            run_client(super::export(t, session.as_deref(), &out))
        }
        Some(Command::Import { from, force }) => run_client(super::import(super::ImportArgs {
            from,
            config_path: host.sources.path.clone(),
            state: host.state.clone(),
            home: host.home.clone(),
            force,
            json: host.json,
        })),
        Some(Command::Config { command }) => config_command(host, command),
    }
}

fn config_command(host: &Host, command: ConfigCommand) -> ExitCode {
    match command {
        ConfigCommand::Get { key } => run_client(super::config_get(&host.target, key.as_deref())),
        ConfigCommand::Set { key, value } => {
            run_client(super::config_set(&host.target, &key, &value))
        }
        ConfigCommand::Validate { strict } => validate(host, strict),
    }
}

/// `config validate`: the checks a start runs, nothing started. The
/// warnings (unknown keys, each with its "did you mean") are printed by
/// [`Host::load`]; `--strict` makes them fatal.
fn validate(host: &Host, strict: bool) -> ExitCode {
    let c = match host.load() {
        Ok(c) => c,
        Err(code) => return code,
    };
    let what = if c.exists {
        c.sources.path.display().to_string()
    } else {
        "defaults (no config file)".into()
    };
    // What the gateway would refuse at start (unknown providers, bad
    // sandbox or tool settings), without starting anything.
    if let Err(e) = ferroclaw_actors::plan::plan(&c.settings, &host.state, host.env.clone()) {
        eprintln!("error: invalid config: {what}: {e}");
        return ExitCode::from(2);
    }
    let ok = !strict || c.warnings.is_empty();
    if host.json {
        let report = serde_json::json!({
            "ok": ok,
            "config": c.exists.then(|| c.sources.path.display().to_string()),
            "warnings": c.warnings,
        });
        println!("{report}");
    } else if !ok {
        eprintln!(
            "error: {what}: {} unknown key(s) (--strict)",
            c.warnings.len()
        );
    } else if c.warnings.is_empty() {
        println!("config ok: {what}");
    } else {
        println!("config ok: {what} ({} warning(s) above)", c.warnings.len());
    }
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(2)
    }
}

fn doctor(host: &Host) -> ExitCode {
    let loaded = config::load(&host.sources);
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
        .map(|c| super::audit::audit(&c.settings, &c.sources.path, &host.state));
    let verdict = loaded.map(|c| {
        let mut v = if c.exists {
            format!("{} is valid", c.sources.path.display())
        } else {
            "no config file; defaults in use".to_string()
        };
        for w in &c.warnings {
            v.push_str(&format!("\n  {w}"));
        }
        v
    });
    run_client(super::doctor(
        &host.target,
        verdict,
        &host.state,
        channels,
        control_ui,
        audit,
    ))
}

fn audit(host: &Host) -> ExitCode {
    super::audit::print(config::load(&host.sources), &host.state, host.json)
}

fn mcp(host: &Host, command: super::mcp::McpCommand) -> ExitCode {
    if let super::mcp::McpCommand::Serve { allow } = &command {
        return match super::mcp_serve::allowlist(allow.as_deref()) {
            Ok(allowed) => run_client(super::mcp_serve::serve(&host.target, allowed)),
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::from(2)
            }
        };
    }
    match host.load() {
        Ok(c) => super::mcp::run(&c.settings.mcp, command, host.json),
        Err(code) => code,
    }
}

fn pairing(t: &Target, command: &PairingCommand) -> ExitCode {
    use super::pairing::Action;
    let action = match command {
        PairingCommand::List { channel } => Action::List {
            channel: channel.as_deref(),
        },
        PairingCommand::Approve { channel, code } => Action::Approve { channel, code },
        PairingCommand::Dismiss { channel, code } => Action::Dismiss { channel, code },
    };
    run_client(super::pairing::pairing(t, action))
}

fn daemon(host: &Host, command: super::daemon::DaemonCommand) -> ExitCode {
    match host.load() {
        Ok(c) => super::daemon::run(
            command,
            &super::daemon::Service::new(&host.state, host.config_flag.as_deref(), &c.settings)
                .homes(
                    host.home.clone().map(OsString::from),
                    host.xdg_config_home.clone(),
                ),
        ),
        Err(code) => code,
    }
}

fn onboard(host: &Host, args: super::onboard::OnboardArgs) -> ExitCode {
    let cx = super::onboard::Context {
        config: host.sources.path.clone(),
        state_dir: host.state.clone(),
        json: host.json,
        env: host.env.clone(),
    };
    match super::onboard::run(args, &cx) {
        Ok(done) if done.install_daemon => {
            let install = super::daemon::DaemonCommand::Install {
                force: false,
                no_start: false,
                print: false,
                launchd: false,
            };
            daemon(host, install)
        }
        Ok(_) => ExitCode::SUCCESS,
        Err(code) => code,
    }
}

fn backup(host: &Host, command: super::backup::BackupCommand) -> ExitCode {
    let c = match host.load() {
        Ok(c) => c,
        Err(code) => return code,
    };
    let ws = ferroclaw_actors::plan::plan(&c.settings, &host.state, host.env.clone())
        .map(|p| ferroclaw_actors::plan::agent_workspaces(&c.settings, &p.workspace))
        .unwrap_or_default();
    let cx = super::backup::Context {
        state_dir: host.state.clone(),
        config: c.sources.path.clone(),
        workspaces: ws,
        home: host.home.clone(),
        cwd: host.cwd.clone(),
        target: host.target.clone(),
    };
    super::backup::run(command, &cx)
}

fn browser(t: &Target, c: Command) -> ExitCode {
    let Command::Browser {
        browser_profile,
        json,
        command,
    } = c
    else {
        return ExitCode::from(2);
    };
    let profile = browser_profile.as_deref();
    run_client(super::browser::browser(t, &command, profile, json))
}

fn plugins(host: &Host, command: super::plugins::PluginsCommand) -> ExitCode {
    let Ok(config) = host.load() else {
        return ExitCode::from(2);
    };
    let local = super::plugins::Local {
        state: &host.state,
        config: &host.sources.path,
        settings: &config.settings,
    };
    run_client(super::plugins::plugins(&host.target, local, command))
}

fn nodes(t: &Target, command: &NodesCommand) -> ExitCode {
    use super::nodes::Action;
    let action = match command {
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
    run_client(super::nodes::nodes(t, action))
}

fn cron(t: &Target, command: CronCommand) -> ExitCode {
    use super::cron::Action;
    let action = match command {
        CronCommand::List { all } => Action::List { all },
        CronCommand::Rm { id } => Action::Remove { id },
        CronCommand::Run { id } => Action::Run { id },
        CronCommand::Runs { id, limit } => Action::Runs { id, limit },
        CronCommand::Add(args) => Action::Add(Box::new(args)),
    };
    run_client(super::cron::cron(t, action))
}

fn sessions(t: &Target, command: &SessionsCommand) -> ExitCode {
    let (action, key) = match command {
        SessionsCommand::List => ("list", None),
        SessionsCommand::Show { key } => ("show", Some(key.as_str())),
        SessionsCommand::Reset { key } => ("reset", Some(key.as_str())),
        SessionsCommand::Delete { key } => ("delete", Some(key.as_str())),
    };
    run_client(super::sessions(t, action, key))
}
