//! The node registry's inbox (from the edge's connections and methods, and
//! from the tool executor), what it sends a node's connection (`ToNode`)
//! and what it tells operators (`NodeNews`).

use actix::prelude::*;
use serde_json::Value;

use super::*;
use crate::ids::ConnId;
use crate::store::StoreError;

/// A node's connection finished its handshake. Reply after the record
/// (and any approval request) is flushed.
#[derive(Message)]
#[rtype(result = "Result<(), StoreError>")]
pub struct NodeConnected {
    pub conn_id: ConnId,
    pub node_id: String,
    pub declared: NodeDeclaration,
    pub sink: Recipient<ToNode>,
}

/// A node's connection closed: its calls in flight fail.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct NodeDisconnected {
    pub conn_id: ConnId,
    pub node_id: String,
}

/// Every known node, connected first. Reply: `(node, effective)` rows.
#[derive(Debug, Message)]
#[rtype(result = "Result<Vec<NodeView>, StoreError>")]
pub struct ListNodes;

/// Pending requests and approved nodes (`node.pair.list`).
#[derive(Debug, Message)]
#[rtype(result = "Result<(Vec<PendingView>, Vec<NodeView>), StoreError>")]
pub struct ListNodePairing;

/// Why a pairing decision was refused.
#[derive(Debug, Clone, PartialEq)]
pub enum PairRefusal {
    UnknownRequest,
    /// The approver lacks this scope (approving `system.run` needs admin).
    MissingScope(&'static str, Vec<&'static str>),
}

/// Approves a pending request. Reply: the node as now approved.
#[derive(Debug, Message)]
#[rtype(result = "Result<Result<NodeView, PairRefusal>, StoreError>")]
pub struct ApproveNode {
    pub request_id: String,
    pub caller_scopes: Vec<String>,
}

/// Rejects a pending request. Reply: the node it was for.
#[derive(Debug, Message)]
#[rtype(result = "Result<Option<String>, StoreError>")]
pub struct RejectNode {
    pub request_id: String,
}

/// Forgets a node (its record and approvals); its connection is closed.
/// Reply: whether it was known. The device's node role is the caller's to
/// remove (`DeviceRegistry`).
#[derive(Debug, Message)]
#[rtype(result = "Result<bool, StoreError>")]
pub struct RemoveNode {
    pub node_id: String,
}

/// Names a node. Reply: None when unknown.
#[derive(Debug, Message)]
#[rtype(result = "Result<Option<String>, StoreError>")]
pub struct RenameNode {
    pub node_id: String,
    pub display_name: String,
}

/// Asks a node to run a command and waits for its answer.
#[derive(Debug, Clone, Message)]
#[rtype(result = "Result<NodeAnswer, InvokeError>")]
pub struct InvokeNode {
    /// A node id or, for the agent, its display name.
    pub node_id: String,
    pub command: String,
    pub params: Option<Value>,
    pub timeout_ms: Option<u64>,
    pub idempotency_key: Option<String>,
    pub session_key: Option<String>,
    /// The gateway's own call (`exec.approvals.node.*`): the node's exec
    /// approvals file may be read and written.
    pub internal: bool,
}

/// Why an invocation has no answer from the node.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum InvokeError {
    #[error("unknown nodeId")]
    UnknownNode,
    #[error("{0}")]
    Invalid(String),
    #[error("node not connected")]
    NotConnected,
    /// The command is not one this node may run now (OpenClaw's hint).
    #[error("{0}")]
    NotAllowed(String),
    #[error("node invoke timed out")]
    Timeout,
    #[error("node disconnected during invoke")]
    Disconnected,
    /// The key was sent before (an earlier process, a lost connection)
    /// and never answered: it is not sent again.
    #[error("an earlier node.invoke with this idempotency key was sent to the node and its answer never came; it is not run again")]
    OutcomeUnknown { invoke_id: String },
    #[error("too many node invocations in flight")]
    Busy,
    #[error("{0}")]
    Store(String),
}

/// A node's `node.invoke.result`. Reply: whether a call was waiting for it.
#[derive(Debug, Message)]
#[rtype(result = "bool")]
pub struct InvokeResult {
    pub conn_id: ConnId,
    pub node_id: String,
    pub id: String,
    pub answer: NodeAnswer,
}

/// What a node publishes about itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpdateKind {
    Skills,
    PluginTools,
    RunnerInventory,
    HostStats,
}

/// A node's own update (`node.skills.update`, ...). Reply: whether the
/// node is connected on this connection.
#[derive(Debug, Message)]
#[rtype(result = "bool")]
pub struct NodeUpdate {
    pub conn_id: ConnId,
    pub node_id: String,
    pub kind: UpdateKind,
    pub value: Value,
}

/// A node's `node.event`: passed on to operators. Reply: whether the node
/// is connected on this connection.
#[derive(Debug, Message)]
#[rtype(result = "bool")]
pub struct NodeEventIn {
    pub conn_id: ConnId,
    pub node_id: String,
    pub event: String,
    pub payload: Option<Value>,
}

/// `gateway.nodes.commands` changed.
#[derive(Debug, Clone, Default, Message)]
#[rtype(result = "()")]
pub struct NodePolicy {
    pub allow: Vec<String>,
    pub deny: Vec<String>,
}

impl NodePolicy {
    pub fn from_settings(s: &crate::settings::Settings) -> NodePolicy {
        let c = &s.gateway.nodes.commands;
        NodePolicy {
            allow: c.allow.clone(),
            deny: c.deny.clone(),
        }
    }
}

/// What the registry sends one node's connection (the edge encodes it).
#[derive(Debug, Clone, Message)]
#[rtype(result = "()")]
pub enum ToNode {
    Invoke {
        id: String,
        node_id: String,
        command: String,
        params_json: Option<String>,
        timeout_ms: Option<u64>,
        idempotency_key: Option<String>,
        session_key: Option<String>,
    },
    Cancel {
        invoke_id: String,
        node_id: String,
    },
    PairResolved {
        request_id: String,
        node_id: String,
        decision: &'static str,
    },
    /// The node was removed, or replaced by a newer connection.
    Close {
        reason: &'static str,
    },
}

/// What operators hear (the edge turns it into `node.pair.*` and
/// `node.event` events).
#[derive(Debug, Clone, Message)]
#[rtype(result = "()")]
pub enum NodeNews {
    Requested(Box<PendingView>),
    Resolved {
        request_id: String,
        node_id: String,
        decision: &'static str,
    },
    Event {
        node_id: String,
        event: String,
        payload: Option<Value>,
    },
}
