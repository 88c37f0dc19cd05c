//! The `ferroclaw` binary: parses the command line, reads what the commands
//! need from the process (the only place that reads the environment, flags
//! and paths), and dispatches (`cli::dispatch`; the gateway itself in
//! `cli::gateway`).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use std::sync::Arc;

use clap::Parser;
use ferroclaw_actors::host::{EnvReader, HostEnv};

mod cli;
use cli::args::{Cli, ClientArgs, Paths};
use ferroclaw::config::{self, ConfigSources};

fn main() -> ExitCode {
    let cli = Cli::parse();
    let env: EnvReader = Arc::new(|name: &str| std::env::var(name).ok());
    ferroclaw_actors::host::install(HostEnv::from_vars(env.clone()));
    let state = state_dir(&cli.paths);
    let host = cli::dispatch::Host {
        sources: sources(&cli.paths, &state),
        config_flag: cli.paths.config.clone(),
        // Read only by the client commands: a gateway start does not load
        // its config a second time for it.
        target: std::cell::LazyCell::new({
            let (paths, client, state) = (cli.paths.clone(), cli.client.clone(), state.clone());
            Box::new(move || client_target(&paths, &client, &state))
        }),
        json: cli.client.json,
        env,
        home: std::env::var_os("HOME").map(PathBuf::from),
        xdg_config_home: std::env::var_os("XDG_CONFIG_HOME"),
        cwd: std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
        rust_log: std::env::var("RUST_LOG").ok().filter(|v| !v.is_empty()),
        state,
    };
    let code = cli::dispatch::dispatch(cli.command, &host);
    if code == ExitCode::from(cli::gateway::RESTART) {
        // In place: the same pid, arguments and environment (what a
        // supervisor started keeps running under it).
        restart_in_place();
    }
    code
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

/// Where client commands connect, and with which token.
fn client_target(paths: &Paths, client: &ClientArgs, state: &Path) -> cli::Target {
    let loaded = config::load(&sources(paths, state)).ok();
    // `--url`, else where the gateway running on this state dir listens
    // (its runtime file: a `--port` start is found), else the config's port.
    let running = || ferroclaw::runtime::running(state).map(|r| r.url);
    let url = client.url.clone().or_else(running).unwrap_or_else(|| {
        let port = loaded
            .as_ref()
            .map(|c| c.settings.gateway.port)
            .unwrap_or(18789);
        format!("ws://127.0.0.1:{port}")
    });
    let token = client
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
        json: client.json,
    }
}

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
