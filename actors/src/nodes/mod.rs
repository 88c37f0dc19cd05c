//! Nodes: other machines connected with `role: node` (OpenClaw's node host,
//! its apps). The records and the pure rules live here: what a node
//! declared, the command surface an operator approved, the request that
//! waits for approval, and the view `node.list` shows. `registry.rs` is the
//! `NodeRegistry` actor (live connections, invocations in flight, the only
//! writer of the `nodes` and `node_invokes` trees); `policy.rs` which
//! commands a node may be asked to run; `messages.rs` the inbox.
//!
//! Trust: a node is the operator's machine, paired by the operator; what it
//! returns is the output of a command the operator's agent asked for. It is
//! never reached by a turn that holds a stranger's message.

mod messages;
pub mod policy;
mod registry;
#[cfg(test)]
mod registry_tests;

pub use messages::*;
pub use registry::*;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What a node says about itself when it connects.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeDeclaration {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub platform: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_family: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_identifier: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_mode: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_ip: Option<String>,
    #[serde(default)]
    pub caps: Vec<String>,
    #[serde(default)]
    pub commands: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permissions: Option<BTreeMap<String, bool>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path_env: Option<String>,
}

/// A command surface: approved, or waiting for approval.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Surface {
    pub caps: Vec<String>,
    pub commands: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permissions: Option<BTreeMap<String, bool>>,
}

impl Surface {
    fn of(d: &NodeDeclaration) -> Surface {
        Surface {
            caps: policy::normalize(&d.caps),
            commands: policy::normalize(&d.commands),
            permissions: d.permissions.clone(),
        }
    }

    fn covers(&self, other: &Surface) -> bool {
        other.caps.iter().all(|c| self.caps.contains(c))
            && other.commands.iter().all(|c| self.commands.contains(c))
            && other
                .permissions
                .iter()
                .flatten()
                .all(|(k, v)| !v || self.permissions.as_ref().and_then(|p| p.get(k)) == Some(&true))
    }
}

/// A request for an operator to approve what a node declared.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingSurface {
    pub request_id: String,
    pub surface: Surface,
    pub ts: u64,
}

/// One node as stored (`nodes` tree, keyed by its device id).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeRecord {
    pub node_id: String,
    /// What it declared when it last connected.
    pub declared: NodeDeclaration,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approved: Option<Surface>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approved_at_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending: Option<PendingSurface>,
    /// The name an operator gave it (`node.rename`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operator_name: Option<String>,
    pub created_at_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_connected_at_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_disconnected_at_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_host_stats: Option<Value>,
}

/// What a connect did to a node's record.
#[derive(Debug, Clone, PartialEq)]
pub enum Admission {
    /// Its declared surface is approved (or it declares nothing).
    Approved,
    /// The same request still waits.
    StillPending,
    /// A new request waits; the one it replaces, if any, is superseded.
    Requested { superseded: Option<String> },
}

/// The record after a connect: the declaration kept, and a request made
/// when the node declares more than was approved.
pub fn admit(
    existing: Option<NodeRecord>,
    node_id: &str,
    declared: NodeDeclaration,
    now: u64,
) -> (NodeRecord, Admission) {
    let mut rec = existing.unwrap_or_else(|| NodeRecord {
        node_id: node_id.to_string(),
        declared: NodeDeclaration::default(),
        approved: None,
        approved_at_ms: None,
        pending: None,
        operator_name: None,
        created_at_ms: now,
        last_connected_at_ms: None,
        last_disconnected_at_ms: None,
        last_host_stats: None,
    });
    let wanted = Surface::of(&declared);
    rec.declared = declared;
    rec.last_connected_at_ms = Some(now);
    let nothing = wanted.caps.is_empty() && wanted.commands.is_empty();
    if nothing || rec.approved.as_ref().is_some_and(|a| a.covers(&wanted)) {
        rec.pending = None;
        return (rec, Admission::Approved);
    }
    if rec.pending.as_ref().is_some_and(|p| p.surface == wanted) {
        return (rec, Admission::StillPending);
    }
    let superseded = rec.pending.take().map(|p| p.request_id);
    rec.pending = Some(PendingSurface {
        request_id: ulid::Ulid::generate().to_string().to_lowercase(),
        surface: wanted,
        ts: now,
    });
    (rec, Admission::Requested { superseded })
}

impl NodeRecord {
    /// Where its approval stands, in OpenClaw's words.
    fn approval_state(&self) -> &'static str {
        match (&self.pending, &self.approved) {
            (Some(_), Some(_)) => "pending-reapproval",
            (Some(_), None) => "pending-approval",
            (None, Some(_)) => "approved",
            (None, None) => "unapproved",
        }
    }

    /// When it was last seen, and whether that was a connect or a
    /// disconnect.
    fn last_seen(&self) -> (Option<u64>, Option<&'static str>) {
        match (self.last_connected_at_ms, self.last_disconnected_at_ms) {
            (Some(c), Some(d)) if d > c => (Some(d), Some("disconnect")),
            (Some(c), _) => (Some(c), Some("connect")),
            (None, d) => (d, d.map(|_| "disconnect")),
        }
    }

    /// The commands it may be invoked with now: declared, approved and
    /// allowed on its platform.
    pub fn effective(
        &self,
        declared: &NodeDeclaration,
        allowed: &std::collections::BTreeSet<String>,
    ) -> Vec<String> {
        let Some(approved) = &self.approved else {
            return Vec::new();
        };
        policy::normalize(&declared.commands)
            .into_iter()
            .filter(|c| approved.commands.contains(c) && allowed.contains(c))
            .collect()
    }

    pub fn display_name(&self) -> Option<&str> {
        self.operator_name
            .as_deref()
            .or(self.declared.display_name.as_deref())
    }

    pub fn platform_id(&self) -> &'static str {
        policy::platform_id(
            self.declared.platform.as_deref(),
            self.declared.device_family.as_deref(),
        )
    }
}

/// A pending request as `node.pair.list` and `node.pair.requested` show it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingView {
    pub request_id: String,
    pub node_id: String,
    #[serde(flatten)]
    pub declared: NodeDeclaration,
    #[serde(rename = "declaredCaps")]
    pub caps: Vec<String>,
    #[serde(rename = "declaredCommands")]
    pub commands: Vec<String>,
    pub required_approve_scopes: Vec<&'static str>,
    pub ts: u64,
}

impl PendingView {
    pub fn of(rec: &NodeRecord) -> Option<PendingView> {
        let p = rec.pending.as_ref()?;
        let mut declared = rec.declared.clone();
        declared.caps = p.surface.caps.clone();
        declared.commands = p.surface.commands.clone();
        declared.permissions = p.surface.permissions.clone();
        declared.display_name = rec.display_name().map(str::to_string);
        declared.path_env = None;
        Some(PendingView {
            request_id: p.request_id.clone(),
            node_id: rec.node_id.clone(),
            caps: p.surface.caps.clone(),
            commands: p.surface.commands.clone(),
            required_approve_scopes: policy::approval_scopes(&p.surface.commands),
            declared,
            ts: p.ts,
        })
    }
}

/// What a node is doing now, beside its record (memory only).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LiveFacts {
    pub connected_at_ms: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host_stats: Option<Value>,
    #[serde(rename = "nodeSkills", skip_serializing_if = "Option::is_none")]
    pub skills: Option<Value>,
    #[serde(rename = "nodePluginTools", skip_serializing_if = "Option::is_none")]
    pub plugin_tools: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runner_inventory: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_active_at_ms: Option<u64>,
}

/// One row of `node.list` / `node.describe` (OpenClaw's known-node shape).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeView {
    pub node_id: String,
    #[serde(flatten)]
    pub declared: NodeDeclaration,
    pub approval_state: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pending_request_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pending_declared_commands: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pending_declared_caps: Option<Vec<String>>,
    /// What it declared when it connected (commands may be fewer: approved ones).
    pub declared_commands: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approved_at_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_connected_at_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_disconnected_at_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_seen_at_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_seen_reason: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none", flatten)]
    pub live: Option<LiveFacts>,
    pub paired: bool,
    pub connected: bool,
}

impl NodeView {
    /// `effective`: the commands it may be invoked with (None: offline,
    /// the approved ones are shown).
    pub fn of(
        rec: &NodeRecord,
        live: Option<(&NodeDeclaration, LiveFacts, Vec<String>)>,
    ) -> NodeView {
        let connected = live.is_some();
        let (mut declared, facts, commands) = match live {
            Some((d, f, eff)) => (d.clone(), Some(f), eff),
            None => (
                rec.declared.clone(),
                None,
                rec.approved
                    .as_ref()
                    .map(|a| a.commands.clone())
                    .unwrap_or_default(),
            ),
        };
        let declared_commands = policy::normalize(&declared.commands);
        declared.commands = commands;
        declared.caps = policy::normalize(&declared.caps);
        if declared.permissions.is_none() {
            declared.permissions = rec.approved.as_ref().and_then(|a| a.permissions.clone());
        }
        declared.display_name = rec.display_name().map(str::to_string);
        let mut host_stats_offline = None;
        if !connected {
            host_stats_offline = rec.last_host_stats.clone();
        }
        let (seen, reason) = rec.last_seen();
        NodeView {
            node_id: rec.node_id.clone(),
            approval_state: rec.approval_state(),
            pending_request_id: rec.pending.as_ref().map(|p| p.request_id.clone()),
            pending_declared_commands: rec.pending.as_ref().map(|p| p.surface.commands.clone()),
            pending_declared_caps: rec.pending.as_ref().map(|p| p.surface.caps.clone()),
            declared_commands,
            approved_at_ms: rec.approved_at_ms,
            last_connected_at_ms: rec.last_connected_at_ms,
            last_disconnected_at_ms: if connected {
                None
            } else {
                rec.last_disconnected_at_ms
            },
            last_seen_at_ms: seen,
            last_seen_reason: reason,
            live: facts.or(host_stats_offline.map(|h| LiveFacts {
                host_stats: Some(h),
                ..Default::default()
            })),
            paired: true,
            connected,
            declared,
        }
    }
}

/// A node's answer to one invocation (kept for its idempotency key).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeAnswer {
    pub ok: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload_json: Option<String>,
    /// The node's `{code, message}` when it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<Value>,
}

/// One `node.invoke` with an idempotency key (`node_invokes` tree):
/// written and flushed before the node is asked; the answer added when it
/// comes. A key found without an answer was sent and never answered: it
/// is not sent again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InvokeRecord {
    pub invoke_id: String,
    pub command: String,
    pub at_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<NodeAnswer>,
}

/// How long an answered or lost invocation's key is remembered.
pub const INVOKE_KEY_TTL_MS: u64 = 24 * 60 * 60 * 1000;

#[cfg(test)]
mod tests {
    use super::*;

    fn decl(commands: &[&str]) -> NodeDeclaration {
        NodeDeclaration {
            platform: Some("linux".into()),
            device_family: Some("Linux".into()),
            commands: commands.iter().map(|c| c.to_string()).collect(),
            ..Default::default()
        }
    }

    #[test]
    fn a_new_surface_waits_and_an_approved_one_does_not() {
        let (mut rec, a) = admit(None, "n1", decl(&["system.run", "system.which"]), 1);
        assert!(matches!(a, Admission::Requested { superseded: None }));
        let first = rec.pending.clone().unwrap().request_id;
        let (again, a) = admit(
            Some(rec.clone()),
            "n1",
            decl(&["system.which", "system.run"]),
            2,
        );
        assert_eq!(
            a,
            Admission::StillPending,
            "the same surface keeps its request"
        );
        assert_eq!(again.pending.unwrap().request_id, first);
        rec.approved = rec.pending.take().map(|p| p.surface);
        let (rec2, a) = admit(Some(rec.clone()), "n1", decl(&["system.run"]), 3);
        assert_eq!(a, Admission::Approved, "fewer commands need nothing");
        let (rec3, a) = admit(
            Some(rec2),
            "n1",
            decl(&["system.run", "screen.snapshot"]),
            4,
        );
        assert_eq!(a, Admission::Requested { superseded: None });
        let allowed = policy::allowlist("linux", &[], &[]);
        assert_eq!(
            rec3.effective(&decl(&["system.run", "screen.snapshot"]), &allowed),
            ["system.run"],
            "a re-approval keeps what was approved usable"
        );
        let (_, a) = admit(Some(rec3.clone()), "n1", decl(&["location.get"]), 5);
        let Admission::Requested { superseded } = a else {
            panic!("{a:?}")
        };
        assert_eq!(superseded, rec3.pending.map(|p| p.request_id));
    }

    #[test]
    fn the_view_says_what_openclaw_shows() {
        let (rec, _) = admit(None, "n1", decl(&["system.run"]), 1);
        let v = serde_json::to_value(NodeView::of(&rec, None)).unwrap();
        assert_eq!(v["approvalState"], "pending-approval");
        assert_eq!(v["commands"], serde_json::json!([]));
        assert_eq!(v["declaredCommands"], serde_json::json!(["system.run"]));
        assert_eq!(v["connected"], false);
        assert_eq!(v["paired"], true);
        assert!(v.get("pathEnv").is_none());
    }
}
