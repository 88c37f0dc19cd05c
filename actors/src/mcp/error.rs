//! What can go wrong reaching an MCP server, as the server's status and a
//! tool call's error text say it. Cloned to every call waiting for a lazy
//! server, so the SDK's errors are kept as their text.

use crate::settings::BadTransport;

#[derive(Debug, Clone, thiserror::Error)]
pub enum McpError {
    #[error(transparent)]
    Entry(#[from] BadTransport),
    #[error("cannot start {command:?}: {reason}")]
    Spawn { command: String, reason: String },
    #[error("header {name:?}: {reason}")]
    Header { name: String, reason: String },
    #[error("{url}: {reason}")]
    Url { url: String, reason: String },
    #[error("GET {url}: {reason}")]
    Get { url: String, reason: String },
    #[error("GET {url}: HTTP {status}")]
    Status { url: String, status: u16 },
    #[error("event stream: {0}")]
    Stream(String),
    #[error("endpoint {data:?}: {reason}")]
    Endpoint { data: String, reason: String },
    #[error("endpoint {post_to} is not on {url}'s origin")]
    CrossOrigin { post_to: String, url: String },
    #[error("{url} sent no endpoint event")]
    NoEndpoint { url: String },
    #[error("no endpoint event within {ms} ms")]
    EndpointTimeout { ms: u128 },
    #[error("handshake failed: {0}")]
    Handshake(String),
    #[error("no handshake answer within {ms} ms")]
    HandshakeTimeout { ms: u128 },
    #[error("tools/list took over {ms} ms")]
    ListTimeout { ms: u128 },
    #[error("tools/list failed: {0}")]
    List(String),
    #[error("the server's configuration changed")]
    Reconfigured,
    /// The server went down (its actor's report).
    #[error("{0}")]
    Down(String),
    #[error("MCP server {server} did not start: {cause}")]
    NotStarted {
        server: String,
        cause: Box<McpError>,
    },
    #[error("MCP server {server} did not start within {ms} ms")]
    StartTimeout { server: String, ms: u128 },
    #[error("unknown MCP server {0}")]
    UnknownServer(String),
    /// Disabled, down for now (`detail`: ": <its last error>" or empty).
    #[error("MCP server {server} is not available ({state}{detail})")]
    NotAvailable {
        server: String,
        state: &'static str,
        detail: String,
    },
}

impl McpError {
    pub fn header(name: &str, e: impl std::fmt::Display) -> McpError {
        McpError::Header {
            name: name.to_string(),
            reason: e.to_string(),
        }
    }
}
