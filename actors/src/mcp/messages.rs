//! What a server actor tells its supervisor (`hub.rs`): the hub hands each
//! server a `HubLink` of recipients, so a server knows no hub type.

use actix::prelude::*;

use super::catalog::ToolDef;

/// A server connected and listed its tools.
#[derive(Message)]
#[rtype(result = "()")]
pub struct ServerUp {
    pub name: String,
    pub generation: u64,
    pub tools: Vec<ToolDef>,
    pub protocol: String,
    pub server_info: String,
    pub pid: Option<u32>,
}

/// A server's tools changed (`tools/list_changed`, then `tools/list`).
#[derive(Message)]
#[rtype(result = "()")]
pub struct ServerTools {
    pub name: String,
    pub generation: u64,
    pub tools: Vec<ToolDef>,
}

/// A server's connection failed or ended; its actor has stopped.
#[derive(Message)]
#[rtype(result = "()")]
pub struct ServerDown {
    pub name: String,
    pub generation: u64,
    pub error: String,
}

/// The hub's inbox, as a server sees it.
#[derive(Clone)]
pub struct HubLink {
    pub up: Recipient<ServerUp>,
    pub tools: Recipient<ServerTools>,
    pub down: Recipient<ServerDown>,
}
