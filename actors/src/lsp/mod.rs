//! Language servers for the agent (`tools.lsp.servers`, and enabled
//! bundles' `.lsp.json` and manifest `lspServers`): `LspHub` (`hub.rs`)
//! starts a stdio server per name for the agent's workspace on its first
//! tool call (`server.rs`: an `LspServer` actor over LSP's base protocol,
//! `framing.rs`, `wire.rs`), and answers the `lsp_*` tools (`ops.rs`),
//! published in the servers' catalog beside the MCP tools
//! (`McpCatalog::publish_lsp`). The tools are the
//! `bundle-lsp` group, confined to the workspace like the file tools, and
//! never offered to a turn holding a stranger's message; what a server
//! answers is wrapped as outside data (it reads files anyone may have
//! written).

mod framing;
mod hub;
mod messages;
pub mod ops;
mod server;
mod wire;

pub use hub::LspHub;
pub use messages::{LspReconfigure, LspStatus};

/// How an LSP call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LspError {
    #[error("cannot start the language server: {0}")]
    Start(String),
    #[error("the language server {0} exited")]
    Exited(String),
    #[error("{0} timed out after {1:?}")]
    Timeout(String, std::time::Duration),
    #[error("the language server answered an error: {0}")]
    Server(String),
    #[error("LSP framing error: {0}")]
    Framing(String),
    #[error("{0}")]
    File(String),
    #[error("{0}")]
    Args(String),
}

/// One server as operators see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LspServerStatus {
    pub name: String,
    pub command: String,
    pub running: bool,
    pub last_error: Option<String>,
}
