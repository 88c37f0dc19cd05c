//! Who is calling on a connection: fixed by the handshake at hello-ok,
//! read by every method handler.

use std::net::IpAddr;

use ferroclaw_actors::ids::ConnId;
use ferroclaw_actors::scopes::Role;

/// Who is calling: fixed at hello-ok.
#[derive(Debug)]
pub struct Caller {
    pub conn_id: ConnId,
    pub role: Role,
    pub scopes: Vec<String>,
    pub device_id: Option<String>,
    pub client_id: String,
    pub client_mode: String,
    pub instance_id: Option<String>,
    pub ip: Option<IpAddr>,
    /// `connect.caps` (e.g. `tool-events`).
    pub caps: Vec<String>,
}
