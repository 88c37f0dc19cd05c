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

impl Caller {
    /// The owner's agent calling a method through the `gateway` tool
    /// (audited as `client:agent:<id>`).
    pub fn agent_tool(agent_id: &str) -> Caller {
        Caller {
            conn_id: ConnId::new(format!("agent-tool:{agent_id}")),
            role: Role::Operator,
            scopes: vec!["operator.admin".into()],
            device_id: None,
            client_id: format!("agent:{agent_id}"),
            client_mode: "backend".into(),
            instance_id: None,
            ip: None,
            caps: Vec::new(),
        }
    }
}
