//! Plugins without a JavaScript runtime: bundles in the Agent Plugins,
//! Codex, Claude and Cursor formats (`bundle.rs`: detected and read as
//! OpenClaw does), installed under the state dir (`store.rs`), mapped to
//! what ferroclaw runs (`components.rs`: skill roots, MCP servers, LSP
//! servers, Claude `settings.json` env, command hooks) and applied to the
//! running gateway when config or installs change (`registry.rs`, applied
//! by `PluginHost`: `host.rs`).
//! OpenClaw's native plugins (in-process JavaScript) are recognised and
//! refused.
//!
//! Trust: a bundle is untrusted content until an operator enables it.
//! Reading, installing and inspecting it run nothing; its MCP servers,
//! LSP servers and hooks start only once `plugins.entries.<id>.enabled`
//! is true (`ferroclaw plugins enable`), and its hooks reach the
//! conversation only with `hooks.allowConversationAccess`.

pub mod bundle;
pub mod components;
mod host;
mod messages;
pub mod registry;
pub mod store;

pub use host::{PluginHost, PluginTargets};
pub use messages::{ApplyPlugins, CurrentPlugins};

pub use bundle::{Bundle, BundleFormat, Detected};
pub use registry::{Installed, PluginSet};
pub use store::{InstallRecord, PluginDirs};

/// What went wrong with a plugin.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PluginError {
    #[error("cannot read {path}: {error}")]
    Read { path: String, error: String },
    #[error("cannot write: {0}")]
    Write(String),
    #[error("invalid plugin: {0}")]
    Invalid(String),
    #[error("{0}: leaves the plugin folder")]
    Outside(String),
    #[error("{0} is not a bundle (no Agent Plugins, Codex, Claude or Cursor layout)")]
    NotABundle(String),
    #[error("an OpenClaw native plugin (in-process JavaScript): ferroclaw runs bundles only")]
    Native,
    #[error("plugin {0} is already installed (uninstall it first, or --force)")]
    Exists(String),
    #[error("no installed plugin {0}")]
    Unknown(String),
}
