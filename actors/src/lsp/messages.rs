//! The LSP hub's and its servers' inboxes.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use actix::prelude::*;
use serde_json::Value;

use super::LspError;
use crate::settings::LspServerSettings;

/// The language servers in force (config and enabled bundles).
#[derive(Message)]
#[rtype(result = "()")]
pub struct LspReconfigure {
    pub servers: BTreeMap<String, LspServerSettings>,
}

/// Every server: its command, whether it runs, its last error.
#[derive(Message)]
#[rtype(result = "Vec<super::LspServerStatus>")]
pub struct LspStatus;

/// A request to one server.
#[derive(Message)]
#[rtype(result = "Result<Value, LspError>")]
pub struct Request {
    pub method: &'static str,
    pub params: Value,
    pub timeout: Duration,
}

/// Opens `path` on the server (or sends its current text again). Reply:
/// its URI and how many diagnostics reports it had before.
#[derive(Message)]
#[rtype(result = "Result<(String, u64), LspError>")]
pub struct SyncFile {
    pub path: PathBuf,
    pub language: String,
}

/// The diagnostics of `uri` from a report after the `after`th (waiting at
/// most `wait` for it; then the last ones known).
#[derive(Message)]
#[rtype(result = "Vec<Value>")]
pub struct WaitDiagnostics {
    pub uri: String,
    pub after: u64,
    pub wait: Duration,
}

/// One message the server sent.
#[derive(Message)]
#[rtype(result = "()")]
pub(super) struct Incoming {
    pub message: Result<Value, LspError>,
}

/// The server answered `initialize`: it is told `initialized`. (Every
/// tool is offered whatever the server's capabilities; one it lacks
/// answers the call with the server's own error.)
#[derive(Message)]
#[rtype(result = "()")]
pub(super) struct Initialized;

/// Stop the server (shutdown, exit, then the process group).
#[derive(Message)]
#[rtype(result = "()")]
pub struct StopServer;
