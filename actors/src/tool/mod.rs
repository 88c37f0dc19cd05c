//! Tool executors. `ToolExecutor` answers `ExecuteTool` for the built-in
//! tools: `exec` and `process` (real child processes, their whole group
//! killed on timeout or abort; in a bubblewrap sandbox when the session's
//! policy says so: `sandbox.rs`), the file tools (`read`, `write`, `edit`,
//! `apply_patch`, `ls`, `find`, `grep`, confined to the workspace by
//! `confine.rs`), `web_fetch` (`ssrf.rs` guards the addresses), the memory
//! tools; session tools go to `SessionTools`. `policy.rs` decides what a run
//! is offered (allow/deny layers, the untrusted profile, hooks, result
//! caps); `specs.rs` is the catalogue; `untrusted.rs` each tool's standing
//! with a stranger's turn. Every call carries the turn's
//! `Trust`. Arguments are validated; every failure is a tool result with
//! `is_error` so the model can correct itself.

mod actor;
mod agent_specs;
pub mod browser_spec;
pub(crate) mod confine;
mod exec;
pub use exec::{BackgroundTask, Processes};
mod files;
mod memory;
mod messages;
mod nodes;
mod patch;
pub mod policy;
pub mod read;
pub mod sandbox;
mod search;
mod specs;
pub mod ssrf;
pub mod turn_end;
pub mod untrusted;
pub mod web_fetch;
pub mod web_search;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

pub use actor::ToolExecutor;
pub(crate) use exec::kill_group;
pub use messages::{ExecuteTool, ProgressSink, Route, ToolOutcome, ToolProgress};

/// Limits of the built-in tools.
#[derive(Debug, Clone)]
pub struct ToolLimits {
    pub exec_timeout: Duration,
    pub exec_max_timeout: Duration,
    /// Bytes of command output kept (head); the rest is counted, not kept.
    pub output_cap: usize,
    /// Bytes of a file `read` returns at most.
    pub read_cap: usize,
    /// `web_fetch` (`tools.web.fetch`).
    pub fetch: web_fetch::FetchSettings,
    /// `agents.defaults.sandbox`.
    pub sandbox: sandbox::SandboxSettings,
    /// `tools.fs.workspaceOnly`: file tools stay inside the workspace.
    pub workspace_only: bool,
    /// `web_search` (`tools.web.search`, the providers' keys).
    pub search: web_search::SearchSettings,
}

/// `exec`'s timeout when a call names none, and the most it may name.
pub const EXEC_TIMEOUT: Duration = Duration::from_secs(120);
pub const EXEC_MAX_TIMEOUT: Duration = Duration::from_secs(1800);
/// Bytes of command output, and of a file `read`, kept.
pub const OUTPUT_CAP: usize = 200_000;
pub const READ_CAP: usize = 200_000;

/// The shipped settings (`config/default.json5`), for unit tests.
#[cfg(test)]
impl Default for ToolLimits {
    fn default() -> Self {
        ToolLimits {
            exec_timeout: EXEC_TIMEOUT,
            exec_max_timeout: EXEC_MAX_TIMEOUT,
            output_cap: OUTPUT_CAP,
            read_cap: READ_CAP,
            fetch: web_fetch::FetchSettings::shipped(),
            sandbox: sandbox::SandboxSettings::default(),
            workspace_only: true,
            search: web_search::SearchSettings::default(),
        }
    }
}

/// Whether an offered tool name is an MCP tool's (`<server>__<tool>`;
/// built-in names never hold `__`). The executor sends these to the MCP hub.
pub fn is_mcp(name: &str) -> bool {
    name.contains("__")
}

/// The operations of the language servers' tools (`lsp::ops`).
pub const LSP_OPS: [&str; 6] = [
    "hover",
    "definition",
    "references",
    "diagnostics",
    "symbols",
    "rename",
];

/// `lsp_<op>_<server>` taken apart (a server's name may hold `_`).
pub fn lsp_parts(name: &str) -> Option<(&'static str, &str)> {
    let rest = name.strip_prefix("lsp_")?;
    LSP_OPS.iter().find_map(|op| {
        let server = rest.strip_prefix(op)?.strip_prefix('_')?;
        (!server.is_empty()).then_some((*op, server))
    })
}

/// Whether `name` is a language server's tool (`lsp_<op>_<server>`).
pub fn is_lsp(name: &str) -> bool {
    lsp_parts(name).is_some()
}

pub(crate) fn error(text: impl Into<String>) -> ToolOutcome {
    ToolOutcome::error(text)
}

pub(crate) fn ok(text: impl Into<String>) -> ToolOutcome {
    ToolOutcome::ok(text)
}

/// An error result for a call refused before it ran (see `ToolOutcome::blocked`).
pub(crate) fn blocked(text: impl Into<String>) -> ToolOutcome {
    ToolOutcome::refused(text)
}

/// A string argument, or the error result naming it.
pub(crate) fn str_arg<'a>(tool: &str, args: &'a Value, name: &str) -> Result<&'a str, ToolOutcome> {
    match args.get(name) {
        Some(Value::String(s)) if !s.trim().is_empty() => Ok(s),
        Some(_) => Err(error(format!(
            "{tool}: `{name}` must be a non-empty string"
        ))),
        None => Err(error(format!("{tool}: `{name}` (string) is required"))),
    }
}

/// An optional non-negative integer argument.
pub(crate) fn uint_arg(tool: &str, args: &Value, name: &str) -> Result<Option<u64>, ToolOutcome> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_u64()
            .map(Some)
            .ok_or_else(|| error(format!("{tool}: `{name}` must be a non-negative integer"))),
    }
}

/// The agent workspace the file tools work in, and whether they are kept
/// inside it (`tools.fs.workspaceOnly`, default true). Relative paths always
/// resolve in it. For an untrusted turn they always stay inside, and never
/// reach the protected files (`trust::protected`).
#[derive(Debug, Clone)]
pub struct Workspace {
    pub root: PathBuf,
    pub only: bool,
    pub untrusted: bool,
}

impl Workspace {
    /// This workspace as an untrusted turn may use it.
    pub fn for_turn(&self, trust: &crate::trust::Trust) -> Workspace {
        Workspace {
            root: self.root.clone(),
            only: self.only || trust.untrusted,
            untrusted: trust.untrusted,
        }
    }
}

impl From<&Path> for Workspace {
    fn from(p: &Path) -> Workspace {
        Workspace {
            root: p.to_path_buf(),
            only: true,
            untrusted: false,
        }
    }
}

impl From<&Workspace> for Workspace {
    fn from(w: &Workspace) -> Workspace {
        w.clone()
    }
}

impl std::ops::Deref for Workspace {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.root
    }
}

pub(crate) use confine::{confine, confined};

/// Tools answered by the session tools actor (`subagents/`).
pub const SESSION_TOOLS: &[&str] = &[
    "sessions_list",
    "sessions_history",
    "sessions_search",
    "agents_list",
    "sessions_send",
    "sessions_spawn",
    "session_status",
    "subagents",
];

/// Tools the edge answers (`src/tools/`): they drive the gateway's own
/// methods (`cron.*`, `message.action`, `config.*`), as OpenClaw's tools call
/// its gateway. `cron` is OpenClaw's permanent alias of `automations`.
pub const GATEWAY_TOOLS: &[&str] = &[
    "automations",
    "cron",
    "message",
    "gateway",
    "ask_user",
    "tts",
    "progress_card",
];

/// Tools the media tools actor answers (`media::tools`).
pub const MEDIA_TOOLS: &[&str] = &["view_image", "pdf"];

/// Where the edge's tools go (set by the edge once its state exists).
pub type EdgeTools = std::sync::Arc<std::sync::OnceLock<actix::Recipient<ExecuteTool>>>;

#[cfg(test)]
mod tests;
