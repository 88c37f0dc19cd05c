//! The method -> scope table (protocol.md 5.2), role rules, and the
//! discovery lists advertised in hello-ok `features`.

use ferroclaw_actors::scopes::{self, scope_allows, Role};

use super::errors::ErrorShape;

/// Methods this gateway implements (the `features.methods` discovery list).
pub const METHODS: &[&str] = &[
    "health",
    "browser.request",
    "status",
    "system-presence",
    "system-event",
    "models.list",
    "config.get",
    "config.set",
    "config.patch",
    "config.apply",
    "logs.tail",
    "device.pair.list",
    "device.pair.approve",
    "device.pair.reject",
    "device.pair.remove",
    "device.pair.rename",
    "device.pair.setupCode",
    "device.token.rotate",
    "device.token.revoke",
    "chat.send",
    "chat.history",
    "chat.abort",
    "chat.inject",
    "sessions.list",
    "sessions.patch",
    "sessions.reset",
    "sessions.delete",
    "sessions.export",
    "agent",
    "agent.wait",
    "skills.status",
    "agents.list",
    "agent.identity.get",
    "system.info",
    "diagnostics.lanes",
    "last-heartbeat",
    "tools.catalog",
    "tools.effective",
    "commands.list",
    "exec.approval.request",
    "exec.approval.waitDecision",
    "exec.approval.resolve",
    "exec.approvals.get",
    "exec.approvals.set",
    "sessions.subscribe",
    "sessions.unsubscribe",
    "sessions.messages.subscribe",
    "sessions.messages.unsubscribe",
    "sessions.describe",
    "sessions.get",
    "sessions.catalog.list",
    "chat.startup",
    "chat.metadata",
    "sessions.observer.visibility",
    "sessions.companion.state",
    "sessions.companion.ask",
    "sessions.companion.reset",
    "sessions.branches.list",
    "sessions.fork",
    "models.authStatus",
    "tasks.list",
    "tasks.get",
    "tasks.cancel",
    "talk.catalog",
    "progressCard.get",
    "progressCard.put",
    "plugins.list",
    "plugins.inspect",
    "themes.list",
    "skills.search",
    "skills.library.list",
    "config.schema",
    "config.schema.lookup",
    "exec.approval.list",
    "sessions.usage",
    "update.status",
    "plugin.approval.list",
    "openclaw.approval.list",
    "question.list",
    "question.request",
    "question.waitAnswer",
    "question.resolve",
    "question.get",
    "environments.list",
    "migrations.memory.plan",
    "migrations.memory.apply",
    "node.list",
    "node.describe",
    "node.pair.list",
    "node.pair.approve",
    "node.pair.reject",
    "node.pair.remove",
    "node.rename",
    "node.invoke",
    "node.invoke.result",
    "node.invoke.progress",
    "node.event",
    "node.skills.update",
    "node.pluginTools.update",
    "node.runnerInventory.update",
    "exec.approvals.node.get",
    "exec.approvals.node.set",
    "cron.list",
    "cron.runs",
    "cron.status",
    "cron.get",
    "cron.add",
    "cron.update",
    "cron.remove",
    "cron.run",
    "set-heartbeats",
    "channels.status",
    "send",
    "wake",
    "channels.logout",
    "channels.start",
    "channels.stop",
    "channels.pairing.list",
    "channels.pairing.approve",
    "channels.pairing.dismiss",
    "usage.status",
    "plugins.catalog.browse",
    "plugins.install",
    "plugins.setEnabled",
    "plugins.uninstall",
    "artifacts.list",
    "memory.search",
    "doctor.memory.status",
    "sessions.compact",
    "usage.cost",
    "users.list",
    "users.self",
    "secrets.reload",
    "hooks.status",
    "message.action",
    "diagnostics.stability",
    "exec.approval.grants.list",
    "exec.approval.grants.revoke",
    "audit.activity.list",
    "audit.list",
    "tts.status",
    "tts.providers",
    "tts.personas",
    "tts.enable",
    "tts.disable",
    "tts.convert",
    "tts.speak",
    "tts.setProvider",
    "tts.setPersona",
    "durable.health.get",
    "durable.obligations.list",
    "durable.wakes.list",
    "durable.wakes.inspect",
    "durable.uncertainty.list",
    "durable.deliveryAttempts.list",
    "gateway.restore.status",
];

/// OpenClaw's server capabilities this gateway honours
/// (`features.capabilities`), each checked against OpenClaw's meaning:
/// `published-model-catalog`: `models.list` answers the catalog clients
/// may pick from, with OpenClaw's params (`openclaw models list` needs it).
pub const CAPABILITIES: &[&str] = &["published-model-catalog"];

/// Events this gateway emits (`features.events`).
pub const EVENTS: &[&str] = &[
    "connect.challenge",
    "tick",
    "presence",
    "health",
    "shutdown",
    "device.pair.requested",
    "device.pair.resolved",
    "device.pair.changed",
    "node.pair.requested",
    "node.pair.resolved",
    "node.hostStats",
    "node.presence",
    "node.invoke.request",
    "node.invoke.cancel",
    "exec.approval.requested",
    "exec.approval.resolved",
    "question.requested",
    "question.resolved",
    "chat",
    "chat.side_result",
    "agent",
    "session.tool",
    "sessions.changed",
    "session.message",
    "chat.send_timing",
    "cron",
    "heartbeat",
    "progressCard.changed",
];

const NODE_ONLY: &[&str] = &[
    "node.invoke.result",
    "node.invoke.progress",
    "node.skills.update",
    "node.pluginTools.update",
    "node.runnerInventory.update",
    "node.pluginSurface.refresh",
    "node.event",
    "skills.bins",
    "node.pending.pull",
    "node.pending.ack",
    "node.pending.drain",
    "node.canvas.capability.refresh",
];

const READ: &[&str] = &[
    "health",
    "logs.tail",
    "channels.status",
    "status",
    "usage.status",
    "usage.cost",
    "tts.status",
    "tts.providers",
    "tts.personas",
    "models.list",
    "agents.list",
    "agent.identity.get",
    "system.info",
    "diagnostics.lanes",
    "skills.status",
    "voicewake.get",
    "sessions.list",
    "sessions.preview",
    "sessions.resolve",
    "sessions.usage",
    "sessions.usage.timeseries",
    "sessions.usage.logs",
    "cron.list",
    "cron.status",
    "cron.runs",
    "cron.get",
    "system-presence",
    "last-heartbeat",
    "node.list",
    "node.describe",
    "chat.history",
    "config.get",
    "talk.config",
    "agents.files.list",
    "agents.files.get",
    "commands.list",
    "tools.catalog",
    "tools.effective",
    "sessions.subscribe",
    "sessions.unsubscribe",
    "sessions.messages.subscribe",
    "sessions.messages.unsubscribe",
    "sessions.describe",
    "sessions.get",
    "sessions.catalog.list",
    "sessions.branches.list",
    "sessions.observer.visibility",
    "sessions.companion.state",
    "sessions.companion.ask",
    "chat.startup",
    "chat.metadata",
    "models.authStatus",
    "tasks.list",
    "tasks.get",
    "talk.catalog",
    "progressCard.get",
    "plugins.list",
    "plugins.inspect",
    "themes.list",
    "skills.search",
    "skills.library.list",
    "config.schema",
    "config.schema.lookup",
    "plugins.catalog.browse",
    "artifacts.list",
    "memory.search",
    "doctor.memory.status",
    // OpenClaw's is dynamic: write to place a runtime; ferroclaw only lists.
    "environments.list",
    "users.list",
    "users.self",
    "hooks.status",
    "diagnostics.stability",
    "audit.activity.list",
    "audit.list",
    // Read-only, as OpenClaw advertises them.
    "durable.health.get",
    "durable.obligations.list",
    "durable.wakes.list",
    "durable.wakes.inspect",
    "durable.uncertainty.list",
    "durable.deliveryAttempts.list",
    "gateway.restore.status",
];

const WRITE: &[&str] = &[
    "send",
    "message.action",
    "poll",
    "agent",
    "agent.wait",
    "wake",
    "talk.mode",
    "tts.enable",
    "tts.disable",
    "tts.convert",
    "tts.setProvider",
    "tts.setPersona",
    "tts.speak",
    "voicewake.set",
    "node.invoke",
    "chat.send",
    "chat.abort",
    "tasks.cancel",
    "sessions.fork",
    "sessions.companion.reset",
    "progressCard.put",
    "push.test",
];

const APPROVALS: &[&str] = &[
    "exec.approval.grants.list",
    "exec.approval.grants.revoke",
    "exec.approval.list",
    "plugin.approval.list",
    "openclaw.approval.list",
    "exec.approval.request",
    "exec.approval.waitDecision",
    "exec.approval.resolve",
];

/// What a method needs from the caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Requirement {
    /// Any authenticated connection (`health`).
    Anyone,
    /// Node role only.
    Node,
    /// Operator role with this scope.
    Scope(&'static str),
}

pub fn requirement(method: &str) -> Requirement {
    if method == "health" {
        return Requirement::Anyone;
    }
    if NODE_ONLY.contains(&method) {
        return Requirement::Node;
    }
    if READ.contains(&method) {
        return Requirement::Scope(scopes::READ);
    }
    if WRITE.contains(&method) {
        return Requirement::Scope(scopes::WRITE);
    }
    if APPROVALS.contains(&method) {
        return Requirement::Scope(scopes::APPROVALS);
    }
    if method.starts_with("question.") {
        return Requirement::Scope(scopes::QUESTIONS);
    }
    // A setup code mints pairing for whoever presents it: admin, as OpenClaw.
    if method.starts_with("node.pair.")
        || (method.starts_with("device.pair.") && method != "device.pair.setupCode")
        || method == "device.token.rotate"
        || method == "device.token.revoke"
        || method == "node.rename"
        || method == "channels.pairing.list"
        || method == "channels.pairing.approve"
        || method == "channels.pairing.dismiss"
    {
        return Requirement::Scope(scopes::PAIRING);
    }
    // Everything unclassified (config.*, exec.approvals.*, wizard.*, update.*,
    // sessions.patch, connect, unknown methods) is admin: default-deny.
    Requirement::Scope(scopes::ADMIN)
}

/// Whether this gateway answers `method` (what `features.methods`
/// advertises, and `connect`, refused after the handshake). Asked before
/// scopes, as OpenClaw does: a method ferroclaw lacks is `unknown method`
/// whoever asks, never a permission error.
pub fn answers(method: &str) -> bool {
    static KNOWN: std::sync::OnceLock<std::collections::HashSet<&'static str>> =
        std::sync::OnceLock::new();
    let known = KNOWN.get_or_init(|| METHODS.iter().copied().chain(["connect"]).collect());
    known.contains(method)
}

/// `sessions.patch` fields a writer may change (OpenClaw's
/// `SESSIONS_PATCH_WRITE_SCOPE_MUTATIONS`, and the envelope keys beside
/// them); any other field needs `operator.admin`.
const SESSIONS_PATCH_WRITE: &[&str] = &[
    "label",
    "autoLabel",
    "icon",
    "color",
    "category",
    "boardFace",
    "boardPresentation",
    "pinned",
    "archived",
    "unread",
    "model",
    "agentRuntime",
    "thinkingLevel",
    "fastMode",
    "permissionMode",
    "key",
    "agentId",
    "expectedSessionId",
    "expectedLifecycleRevision",
    "expectedPermissionMode",
    "expectedMarkedUnreadAt",
];

/// The scope a call needs where OpenClaw's rule reads its params: a
/// `sessions.patch` of writer fields needs `operator.write` (a full
/// permission mode or a sandbox change stays admin's).
fn scope_by_params(method: &str, params: &serde_json::Value) -> Option<&'static str> {
    if method != "sessions.patch" {
        return None;
    }
    // Not an object: the method refuses it as a writer would be refused.
    let Some(o) = params.as_object() else {
        return Some(scopes::WRITE);
    };
    let admin = o.get("permissionMode").and_then(|v| v.as_str()) == Some("full")
        || o.contains_key("sandboxMode")
        || o.keys()
            .any(|k| !SESSIONS_PATCH_WRITE.contains(&k.as_str()));
    (!admin).then_some(scopes::WRITE)
}

/// Checks role and scopes for a call with its params (OpenClaw's table,
/// with its params-aware rules: `sessions.patch` of writer fields, and
/// `question.*`, which a writer may read too).
pub fn authorize_call(
    method: &str,
    params: &serde_json::Value,
    role: Role,
    granted: &[String],
) -> Result<(), ErrorShape> {
    if role == Role::Operator {
        if let Some(scope) = scope_by_params(method, params) {
            return match scope_allows(granted, scope) {
                true => Ok(()),
                false => Err(ErrorShape::missing_scope(scope)),
            };
        }
        if method.starts_with("question.") && scope_allows(granted, scopes::WRITE) {
            return Ok(());
        }
    }
    authorize(method, role, granted)
}

/// Checks role and scopes for a call.
pub fn authorize(method: &str, role: Role, granted: &[String]) -> Result<(), ErrorShape> {
    match (requirement(method), role) {
        (Requirement::Anyone, _) => Ok(()),
        (Requirement::Node, Role::Node) => Ok(()),
        // OpenClaw lets an admin through; the node methods then act only
        // for the caller's own node id and connection (nothing, for an operator).
        (Requirement::Node, Role::Operator) if scope_allows(granted, scopes::ADMIN) => Ok(()),
        (Requirement::Node, Role::Operator) => {
            Err(ErrorShape::invalid("unauthorized role: operator"))
        }
        (Requirement::Scope(_), Role::Node) => Err(ErrorShape::invalid("unauthorized role: node")),
        (Requirement::Scope(s), Role::Operator) => {
            if scope_allows(granted, s) {
                Ok(())
            } else {
                Err(ErrorShape::missing_scope(s))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &[&str]) -> Vec<String> {
        s.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn scope_table_matches_protocol() {
        let check = |method: &str, role: Role, granted: &[&str], want: Result<(), &str>| {
            let got = authorize(method, role, &v(granted)).map_err(|e| e.message);
            assert_eq!(
                got,
                want.map_err(String::from),
                "{method} {role:?} {granted:?}"
            );
        };
        check("health", Role::Node, &[], Ok(()));
        check("health", Role::Operator, &[], Ok(()));
        check("status", Role::Operator, &[scopes::READ], Ok(()));
        check("status", Role::Operator, &[scopes::WRITE], Ok(()));
        check(
            "status",
            Role::Operator,
            &[],
            Err("missing scope: operator.read"),
        );
        check(
            "chat.send",
            Role::Operator,
            &[scopes::READ],
            Err("missing scope: operator.write"),
        );
        check("chat.send", Role::Node, &[], Err("unauthorized role: node"));
        check(
            "node.event",
            Role::Operator,
            &[scopes::WRITE],
            Err("unauthorized role: operator"),
        );
        check("node.event", Role::Operator, &[scopes::ADMIN], Ok(()));
        check("node.event", Role::Node, &[], Ok(()));
        check("config.get", Role::Operator, &[scopes::READ], Ok(()));
        check(
            "config.set",
            Role::Operator,
            &[scopes::WRITE],
            Err("missing scope: operator.admin"),
        );
        check("config.set", Role::Operator, &[scopes::ADMIN], Ok(()));
        check(
            "device.pair.approve",
            Role::Operator,
            &[scopes::PAIRING],
            Ok(()),
        );
        check(
            "exec.approval.resolve",
            Role::Operator,
            &[scopes::APPROVALS],
            Ok(()),
        );
        check(
            "exec.approvals.set",
            Role::Operator,
            &[scopes::APPROVALS],
            Err("missing scope: operator.admin"),
        );
        check(
            "no.such.method",
            Role::Operator,
            &[scopes::WRITE],
            Err("missing scope: operator.admin"),
        );
        check(
            "system-event",
            Role::Operator,
            &[scopes::WRITE],
            Err("missing scope: operator.admin"),
        );
    }
}
