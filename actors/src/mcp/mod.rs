//! MCP client: the tools of the Model Context Protocol servers configured
//! under `mcp.servers` join the agent's tool bench. `McpHub` supervises one
//! `McpServer` actor per server (`server.rs`; the SDK side is `client.rs`,
//! the HTTP transport `http.rs`), publishes their tools into the shared
//! `McpCatalog` under OpenClaw's names (`names.rs`), and answers the runs'
//! calls of them.
//!
//! Trust: a server is the operator's choice, so its tool list is offered
//! like a built-in tool (through the same policy; never to a turn holding a
//! stranger's message unless the operator names the tool in the untrusted
//! profile); what a call returns is outside data, wrapped as external
//! content for the model.

mod bench;
mod catalog;
mod client;
mod error;
mod http;
mod hub;
mod lazy;
mod messages;
mod names;
mod probe;
mod server;
mod sse;
mod utility;

pub use crate::tool::is_mcp;
pub use bench::{Offer, OfferedTools, ToolBench};
pub use catalog::{McpCatalog, Route, ToolDef, ToolKind};
pub use error::McpError;
pub use hub::McpHub;
pub use messages::{McpReconfigure, McpStatus, ServerStatus};
pub use probe::{probe, ProbeReport, ProbedTool};
