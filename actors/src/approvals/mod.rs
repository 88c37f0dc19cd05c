//! Exec safety (seed 004): where a command runs (`gateway | sandbox`), how
//! much is allowed (`deny | allowlist | full`) and when a person is asked
//! (`off | on-miss | always`). The policy comes per session
//! (`sessions.patch execHost/execSecurity/execAsk`) over `tools.exec`
//! defaults; the approvals file (`<state dir>/exec-approvals.json`,
//! OpenClaw's shape: `defaults` and per-agent `security`, `ask`,
//! `askFallback`, `allowlist`) can only make it stricter.
//!
//! `ApprovalsActor` owns the file and the pending approvals. `ExecGate`
//! decides one command: refused, allowed, or asked: it publishes
//! `exec.approval.requested` to `operator.approvals` clients and waits for
//! `exec.approval.resolve` (`allow-once`, `allow-always`: the command's
//! binary joins the agent's allowlist, `deny`); no answer before the
//! timeout means the ask fallback (deny by default).
//!
//! Files: `messages.rs` (its inbox), `actor.rs` (the actor and its
//! handlers); this file holds its pure state, with unit tests.

mod actor;
mod file;
pub mod grants;
mod messages;

use serde_json::{json, Value};
use tokio::sync::oneshot;

pub use actor::*;
pub use messages::*;

crate::reason_error! {
    /// What is wrong with an approvals setting or file.
    pub struct ApprovalsError;
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Security {
    Deny,
    Allowlist,
    Full,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Ask {
    Off,
    OnMiss,
    Always,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Host {
    Gateway,
    Sandbox,
    /// A paired node (`tools.exec.node` or the session's `execNode` names
    /// which): `system.run` there, its own approvals deciding too.
    Node,
}

impl Security {
    pub fn parse(s: &str) -> Result<Security, ApprovalsError> {
        match s {
            "deny" => Ok(Security::Deny),
            "allowlist" => Ok(Security::Allowlist),
            "full" => Ok(Security::Full),
            o => Err(ApprovalsError::from(format!(
                "{o:?} (deny, allowlist or full)"
            ))),
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Security::Deny => "deny",
            Security::Allowlist => "allowlist",
            Security::Full => "full",
        }
    }
}

impl Ask {
    pub fn parse(s: &str) -> Result<Ask, ApprovalsError> {
        match s {
            "off" => Ok(Ask::Off),
            "on-miss" => Ok(Ask::OnMiss),
            "always" => Ok(Ask::Always),
            o => Err(ApprovalsError::from(format!(
                "{o:?} (off, on-miss or always)"
            ))),
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Ask::Off => "off",
            Ask::OnMiss => "on-miss",
            Ask::Always => "always",
        }
    }
}

impl Host {
    pub fn parse(s: &str) -> Result<Host, ApprovalsError> {
        match s {
            "gateway" => Ok(Host::Gateway),
            "sandbox" => Ok(Host::Sandbox),
            "node" => Ok(Host::Node),
            o => Err(ApprovalsError::from(format!(
                "{o:?} (gateway, sandbox or node)"
            ))),
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Host::Gateway => "gateway",
            Host::Sandbox => "sandbox",
            Host::Node => "node",
        }
    }
}

/// One run's exec settings.
/// What an exec approval asks about (OpenClaw's `request` object).
#[derive(Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExecRequest<'a> {
    pub command: &'a str,
    pub cwd: &'a str,
    pub host: &'a str,
    pub security: &'a str,
    pub ask: &'a str,
    pub agent_id: &'a str,
    pub resolved_path: Option<&'a str>,
    pub session_key: &'a str,
}

impl ExecRequest<'_> {
    pub fn to_value(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or_default()
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecPolicy {
    pub host: Host,
    pub security: Security,
    pub ask: Ask,
    /// With host `node`: the node (id or name).
    pub node: Option<std::sync::Arc<str>>,
}

impl Default for ExecPolicy {
    fn default() -> Self {
        ExecPolicy {
            host: Host::Gateway,
            security: Security::Full,
            ask: Ask::Off,
            node: None,
        }
    }
}

/// An operator's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    AllowOnce,
    AllowAlways,
    Deny,
}

impl Decision {
    pub fn parse(s: &str) -> Result<Decision, ApprovalsError> {
        match s {
            "allow-once" => Ok(Decision::AllowOnce),
            "allow-always" => Ok(Decision::AllowAlways),
            "deny" => Ok(Decision::Deny),
            o => Err(ApprovalsError::from(format!(
                "invalid decision {o:?} (allow-once, allow-always or deny)"
            ))),
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::AllowOnce => "allow-once",
            Decision::AllowAlways => "allow-always",
            Decision::Deny => "deny",
        }
    }
}

/// The executables a command line runs, resolved on PATH; None when the
/// line uses substitutions (`$(`, backticks) an allowlist cannot judge.
pub fn executables(command: &str) -> Option<Vec<String>> {
    if command.contains("$(") || command.contains('`') {
        return None;
    }
    let mut out = Vec::new();
    for segment in command.split(['|', ';', '&', '\n']) {
        let word = segment
            .split_whitespace()
            .find(|w| !w.contains('=') || w.starts_with('='))
            .map(|w| w.trim_matches(|c| c == '(' || c == ')' || c == '{' || c == '}'));
        let Some(word) = word.filter(|w| !w.is_empty()) else {
            continue;
        };
        out.push(resolve_bin(word));
    }
    Some(out)
}

fn resolve_bin(word: &str) -> String {
    if word.contains('/') {
        return word.to_string();
    }
    crate::host::env()
        .which(word)
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| word.to_string())
}

fn pattern_matches(pattern: &str, bin: &str) -> bool {
    let home = crate::host::env()
        .home
        .as_ref()
        .map(|h| h.display().to_string())
        .unwrap_or_default();
    let pattern = match pattern.strip_prefix("~/") {
        Some(rest) => format!("{home}/{rest}"),
        None => pattern.to_string(),
    };
    let name = bin.rsplit('/').next().unwrap_or(bin);
    globset::Glob::new(&pattern)
        .map(|g| {
            let m = g.compile_matcher();
            m.is_match(bin) || (!pattern.contains('/') && m.is_match(name))
        })
        .unwrap_or(false)
}

/// An opened approval: id, created, expires, and where its decision arrives.
type Opened = (String, u64, u64, oneshot::Receiver<Option<Decision>>);

struct Pending {
    /// The request as the `exec.approval.requested` event carried it.
    request: Value,
    created: u64,
    expires: u64,
    decision: Option<Option<Decision>>,
    waiters: Vec<oneshot::Sender<Option<Decision>>>,
}

fn hash_of(v: &Value) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(v.to_string().as_bytes());
    digest.iter().take(16).map(|b| format!("{b:02x}")).collect()
}

fn empty_file() -> Value {
    json!({ "version": 1, "defaults": {}, "agents": {} })
}

pub fn validate_file(v: &Value) -> Result<(), ApprovalsError> {
    let obj = v.as_object().ok_or("file must be an object")?;
    if obj.get("version").and_then(Value::as_u64) != Some(1) {
        return Err("file.version must be 1".into());
    }
    let check = |scope: &str, o: &Value| -> Result<(), ApprovalsError> {
        if let Some(s) = o.get("security").and_then(Value::as_str) {
            Security::parse(s).map_err(|e| format!("{scope}.security: {e}"))?;
        }
        if let Some(s) = o.get("ask").and_then(Value::as_str) {
            Ask::parse(s).map_err(|e| format!("{scope}.ask: {e}"))?;
        }
        if let Some(s) = o.get("askFallback").and_then(Value::as_str) {
            Security::parse(s).map_err(|e| format!("{scope}.askFallback: {e}"))?;
        }
        if let Some(list) = o.get("allowlist") {
            let list = list
                .as_array()
                .ok_or(format!("{scope}.allowlist must be an array"))?;
            for (i, e) in list.iter().enumerate() {
                let p = e
                    .get("pattern")
                    .and_then(Value::as_str)
                    .ok_or(format!("{scope}.allowlist[{i}].pattern is required"))?;
                globset::Glob::new(p)
                    .map_err(|e| format!("{scope}.allowlist[{i}].pattern: {e}"))?;
            }
        }
        Ok(())
    };
    if let Some(d) = obj.get("defaults") {
        check("defaults", d)?;
    }
    if let Some(agents) = obj.get("agents") {
        let agents = agents.as_object().ok_or("agents must be an object")?;
        for (id, a) in agents {
            check(&format!("agents.{id}"), a)?;
        }
    }
    Ok(())
}

fn uuid_like() -> String {
    ulid::Ulid::generate().to_string().to_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;
    use actix::prelude::*;

    #[test]
    fn command_lines_resolve_to_their_executables() {
        let sh = resolve_bin("sh");
        assert!(sh.ends_with("/sh"), "{sh}");
        assert_eq!(
            executables("FOO=1 ls -la | grep x && echo ok")
                .unwrap()
                .len(),
            3
        );
        assert_eq!(
            executables("./run.sh arg").unwrap(),
            vec!["./run.sh".to_string()]
        );
        assert!(executables("echo $(whoami)").is_none());
        assert!(executables("echo `id`").is_none());
        assert!(pattern_matches("/usr/bin/*", "/usr/bin/git"));
        assert!(pattern_matches("git", "/usr/bin/git"));
        assert!(!pattern_matches("/opt/**", "/usr/bin/git"));
    }

    /// Collects what the approvals actor tells the edge.
    struct Edge(std::sync::Arc<std::sync::Mutex<Vec<String>>>);
    impl Actor for Edge {
        type Context = Context<Self>;
    }
    impl Handler<ApprovalEvent> for Edge {
        type Result = ();
        fn handle(&mut self, e: ApprovalEvent, _: &mut Context<Self>) {
            if let ApprovalEvent::Requested { id, .. } = e {
                self.0.lock().unwrap().push(id);
            }
        }
    }

    /// The trust side of standing grants: a grant a cron job holds lets
    /// that job's operator-made turn run its command unasked, but a turn
    /// holding a stranger's message is asked (and never mints one).
    #[actix::test]
    async fn a_standing_grant_never_lets_a_strangers_turn_through() {
        let dir = tempfile::tempdir().unwrap();
        let asked = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let edge = Edge(asked.clone()).start().recipient();
        let path = dir.path().join("exec-approvals.json");
        let grant = grants::sample("g1", "j1");
        let file = grants::Grants {
            grants: vec![grant],
        };
        std::fs::write(
            dir.path().join("exec-grants.json"),
            serde_json::to_string(&file).unwrap(),
        )
        .unwrap();
        let actor = ApprovalsActor::load(edge, path, std::time::Duration::from_millis(200))
            .unwrap()
            .start();
        let gate = |untrusted: bool| ExecGate {
            agent_id: "main".into(),
            session_key: crate::ids::SessionKey::canonical("agent:main:cron:j1", "main", "main")
                .unwrap(),
            command: "echo hi".into(),
            bins: Some(vec!["/usr/bin/echo".into()]),
            cwd: "/w".into(),
            policy: ExecPolicy {
                host: Host::Gateway,
                security: Security::Allowlist,
                ask: Ask::OnMiss,
                node: None,
            },
            untrusted,
            waiting: None,
        };
        assert_eq!(actor.send(gate(false)).await.unwrap(), Ok(()));
        assert!(
            asked.lock().unwrap().is_empty(),
            "the operator's turn was not asked"
        );
        // The stranger's turn is asked; nobody answers, so it is denied.
        let r = actor.send(gate(true)).await.unwrap();
        assert!(r.is_err(), "{r:?}");
        assert_eq!(asked.lock().unwrap().len(), 1);
    }

    /// An MCP tool grant (`agents.<id>.mcpTools`) answers `auto` calls of
    /// the operator's turns only: a stranger's turn is asked, and its
    /// allow-always would mint nothing.
    #[actix::test]
    async fn an_mcp_tool_grant_never_lets_a_strangers_turn_through() {
        let dir = tempfile::tempdir().unwrap();
        let asked = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let edge = Edge(asked.clone()).start().recipient();
        let path = dir.path().join("exec-approvals.json");
        let mut file = empty_file();
        file["agents"] = json!({"main": {"mcpTools": [
            {"server": "docs", "tool": "write", "source": "allow-always", "addedAt": 1}
        ]}});
        std::fs::write(&path, file.to_string()).unwrap();
        let actor = ApprovalsActor::load(edge, path, std::time::Duration::from_millis(200))
            .unwrap()
            .start();
        let gate = |untrusted: bool, grantable: bool| McpGate {
            agent_id: "main".into(),
            session_key: crate::ids::SessionKey::canonical("agent:main:main", "main", "main")
                .unwrap(),
            server: "docs".into(),
            tool: "write".into(),
            arguments: "{}".into(),
            grantable,
            untrusted,
        };
        assert_eq!(actor.send(gate(false, true)).await.unwrap(), Ok(()));
        assert!(asked.lock().unwrap().is_empty(), "the grant answered");
        // `prompt` asks even with a grant; nobody answers: denied.
        assert!(actor.send(gate(false, false)).await.unwrap().is_err());
        assert_eq!(asked.lock().unwrap().len(), 1);
        // A stranger's turn is asked despite the grant.
        let r = actor.send(gate(true, true)).await.unwrap();
        assert!(r.is_err(), "{r:?}");
        assert_eq!(asked.lock().unwrap().len(), 2);
    }

    #[test]
    fn file_validation_names_the_bad_key() {
        assert!(validate_file(&empty_file()).is_ok());
        assert!(validate_file(&json!({"version": 2}))
            .unwrap_err()
            .to_string()
            .contains("version"));
        assert!(
            validate_file(&json!({"version": 1, "defaults": {"security": "open"}}))
                .unwrap_err()
                .to_string()
                .contains("defaults.security")
        );
        assert!(validate_file(
            &json!({"version": 1, "agents": {"main": {"allowlist": [{"pattern": "a{b"}]}}})
        )
        .unwrap_err()
        .to_string()
        .contains("agents.main.allowlist[0].pattern"));
        assert!(
            validate_file(&json!({"version": 1, "agents": {"main": {"ask": "sometimes"}}}))
                .is_err()
        );
    }

    #[test]
    fn levels_order_from_strict_to_loose() {
        assert!(Security::Deny < Security::Allowlist && Security::Allowlist < Security::Full);
        assert!(Ask::Off < Ask::OnMiss && Ask::OnMiss < Ask::Always);
        assert_eq!(Decision::parse("allow-always"), Ok(Decision::AllowAlways));
        assert!(Decision::parse("maybe").is_err());
        assert_eq!(Host::parse("sandbox"), Ok(Host::Sandbox));
    }
}
