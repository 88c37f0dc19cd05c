//! The subcommands' argument types (clap), kept out of main.rs.

use clap::Subcommand;

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
    /// Check the config file and the environment; exit 2 when invalid.
    Validate,
    /// Print the running gateway's config (secrets redacted), or one key (a.b.c).
    Get { key: Option<String> },
    /// Set one key on the running gateway (VALUE is JSON, else a string).
    Set { key: String, value: String },
}
