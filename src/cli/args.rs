//! The command line's types (clap), kept out of main.rs.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "ferroclaw",
    version,
    about = "Self-hosted personal AI gateway, wire-compatible with OpenClaw"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    #[command(flatten)]
    pub paths: Paths,
    #[command(flatten)]
    pub client: ClientArgs,
}

/// How client commands reach a running gateway.
#[derive(clap::Args, Clone, Default)]
pub struct ClientArgs {
    /// Gateway WebSocket URL. Default: where the gateway running on the state dir listens (its gateway.runtime.json), else ws://127.0.0.1:<gateway.port>.
    #[arg(long, global = true)]
    pub url: Option<String>,
    /// Gateway token. Default: OPENCLAW_GATEWAY_TOKEN, gateway.auth.token, or <state dir>/gateway.token.
    #[arg(long, global = true)]
    pub token: Option<String>,
    /// Print JSON instead of text.
    #[arg(long, global = true)]
    pub json: bool,
}

#[derive(clap::Args, Clone, Default)]
pub struct Paths {
    /// Config file (JSON5). Default: <state dir>/ferroclaw.json.
    #[arg(long, global = true)]
    pub config: Option<PathBuf>,
    /// State dir (store, logs, workspace). Default: ~/.ferroclaw (or FERROCLAW_STATE_DIR).
    #[arg(long, global = true)]
    pub state_dir: Option<PathBuf>,
}

#[derive(Subcommand)]
pub enum Command {
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
        command: super::mcp::McpCommand,
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
        command: super::daemon::DaemonCommand,
    },
    /// First-run setup: provider and key, model, workspace, gateway token,
    /// channels, exec safety, the service (or all from flags: --non-interactive).
    Onboard(Box<super::onboard::OnboardArgs>),
    /// Backups of the state dir: create (also while the gateway runs),
    /// verify, restore.
    Backup {
        #[command(subcommand)]
        command: super::backup::BackupCommand,
    },
    /// The gateway's browser (OpenClaw's `browser` routes): status, start,
    /// stop, profiles, tabs, open, snapshot, screenshot.
    Browser {
        /// The browser profile (default: browser.defaultProfile).
        #[arg(long, global = true)]
        browser_profile: Option<String>,
        /// Print the gateway's answer as JSON.
        #[arg(long, global = true)]
        json: bool,
        #[command(subcommand)]
        command: super::browser::BrowserCommand,
    },
    /// Plugins (Agent Plugins, Codex, Claude and Cursor bundles): list,
    /// inspect, install, enable, disable, uninstall.
    Plugins {
        #[command(subcommand)]
        command: super::plugins::PluginsCommand,
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

#[derive(Subcommand)]
pub enum SessionsCommand {
    /// Every session, newest first.
    List,
    /// A session's messages.
    Show { key: String },
    /// Start a new transcript for a session (settings kept).
    Reset { key: String },
    /// Delete a session and its transcript.
    Delete { key: String },
}

#[derive(Subcommand)]
// Parsed once per process: the variants' sizes do not matter.
#[allow(clippy::large_enum_variant)]
pub enum CronCommand {
    /// Jobs, soonest first.
    List {
        /// Include disabled jobs.
        #[arg(long)]
        all: bool,
    },
    /// Add a job.
    Add(super::cron::AddArgs),
    /// Remove a job.
    Rm { id: String },
    /// Run a job now.
    Run { id: String },
    /// A job's runs, newest first.
    Runs {
        id: String,
        #[arg(long, default_value_t = 50)]
        limit: u32,
    },
}

#[derive(Subcommand)]
pub enum NodesCommand {
    /// Every known node, connected first.
    List,
    /// Nodes whose commands wait for approval.
    Pending,
    /// One node in full (id, id prefix or name).
    Describe { node: String },
    /// Approve a node's commands (the request id `pending` shows).
    Approve { request: String },
    /// Refuse a node's request.
    Reject { request: String },
    /// Give a node a name.
    Rename { node: String, name: String },
    /// Run a command the node offers, e.g. `system.which --params '{"bins":["git"]}'`.
    Invoke {
        node: String,
        command: String,
        #[arg(long, default_value = "{}")]
        params: String,
        #[arg(long, default_value_t = 30000)]
        timeout_ms: u64,
    },
}

#[derive(Subcommand)]
pub enum PairingCommand {
    /// Codes waiting for approval (all channels, or one).
    List { channel: Option<String> },
    /// Let the sender who got CODE talk to the agent.
    Approve { channel: String, code: String },
    /// Drop a code without admitting its sender.
    Dismiss { channel: String, code: String },
}

#[derive(Subcommand)]
pub enum SecurityCommand {
    /// The config and the state dir read cold: exposure, weak secrets, loose
    /// file modes, what strangers can reach. Exit 2 critical, 1 warnings, 0 clean.
    Audit,
}

#[derive(Subcommand)]
pub enum ConfigCommand {
    /// Check the config file and the environment; exit 2 when invalid
    /// (and, with --strict, when a key is not one ferroclaw reads).
    Validate {
        /// Unknown keys (typos, keys of other programs) fail the check.
        #[arg(long)]
        strict: bool,
    },
    /// Print the running gateway's config (secrets redacted), or one key (a.b.c).
    Get { key: Option<String> },
    /// Set one key on the running gateway (VALUE is JSON, else a string).
    Set { key: String, value: String },
}
