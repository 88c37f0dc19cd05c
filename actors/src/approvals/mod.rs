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

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

use actix::prelude::*;
use serde_json::{json, Value};
use tokio::sync::oneshot;

use crate::bus::{BusEvent, EventBus, Publish};

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
}

impl Security {
    pub fn parse(s: &str) -> Result<Security, String> {
        match s {
            "deny" => Ok(Security::Deny),
            "allowlist" => Ok(Security::Allowlist),
            "full" => Ok(Security::Full),
            o => Err(format!("{o:?} (deny, allowlist or full)")),
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
    pub fn parse(s: &str) -> Result<Ask, String> {
        match s {
            "off" => Ok(Ask::Off),
            "on-miss" => Ok(Ask::OnMiss),
            "always" => Ok(Ask::Always),
            o => Err(format!("{o:?} (off, on-miss or always)")),
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
    pub fn parse(s: &str) -> Result<Host, String> {
        match s {
            "gateway" => Ok(Host::Gateway),
            "sandbox" => Ok(Host::Sandbox),
            o => Err(format!("{o:?} (gateway or sandbox)")),
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Host::Gateway => "gateway",
            Host::Sandbox => "sandbox",
        }
    }
}

/// One run's exec settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExecPolicy {
    pub host: Host,
    pub security: Security,
    pub ask: Ask,
}

impl Default for ExecPolicy {
    fn default() -> Self {
        ExecPolicy {
            host: Host::Gateway,
            security: Security::Full,
            ask: Ask::Off,
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
    pub fn parse(s: &str) -> Result<Decision, String> {
        match s {
            "allow-once" => Ok(Decision::AllowOnce),
            "allow-always" => Ok(Decision::AllowAlways),
            "deny" => Ok(Decision::Deny),
            o => Err(format!(
                "invalid decision {o:?} (allow-once, allow-always or deny)"
            )),
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
    std::env::var_os("PATH")
        .and_then(|p| {
            std::env::split_paths(&p)
                .map(|d| d.join(word))
                .find(|c| c.is_file())
        })
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| word.to_string())
}

fn pattern_matches(pattern: &str, bin: &str) -> bool {
    let home = std::env::var("HOME").unwrap_or_default();
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

/// Decides one command. Reply: Ok to run it, Err(reason) to refuse.
#[derive(Debug, Message)]
#[rtype(result = "Result<(), String>")]
pub struct ExecGate {
    pub agent_id: String,
    pub session_key: String,
    pub command: String,
    pub cwd: String,
    pub policy: ExecPolicy,
}

/// `exec.approval.request`: asks and waits. Reply: (id, decision, created,
/// expires); decision None when nobody answered in time.
#[derive(Debug, Message)]
#[rtype(result = "Result<(String, Option<Decision>, u64, u64), String>")]
pub struct RequestApproval {
    pub id: Option<String>,
    pub request: Value,
    pub timeout: Option<Duration>,
}

/// `exec.approval.resolve`. Err: unknown or already resolved id.
#[derive(Debug, Message)]
#[rtype(result = "Result<(), String>")]
pub struct ResolveApproval {
    pub id: String,
    pub decision: Decision,
    pub by: Option<String>,
}

/// `exec.approval.waitDecision`. Reply: the decision (None: expired).
#[derive(Debug, Message)]
#[rtype(result = "Result<Option<Decision>, String>")]
pub struct WaitDecision {
    pub id: String,
}

/// `exec.approvals.get`. Reply: (path, exists, hash, file).
#[derive(Debug, Message)]
#[rtype(result = "(String, bool, String, Value)")]
pub struct GetApprovals;

/// `exec.approvals.set` (optimistic: `base_hash` must match). Reply: the new hash.
#[derive(Debug, Message)]
#[rtype(result = "Result<String, String>")]
pub struct SetApprovals {
    pub file: Value,
    pub base_hash: Option<String>,
}

/// An opened approval: id, created, expires, and where its decision arrives.
type Opened = (String, u64, u64, oneshot::Receiver<Option<Decision>>);

struct Pending {
    expires: u64,
    decision: Option<Option<Decision>>,
    waiters: Vec<oneshot::Sender<Option<Decision>>>,
}

pub struct ApprovalsActor {
    bus: Addr<EventBus>,
    path: PathBuf,
    file: Value,
    timeout: Duration,
    pending: HashMap<String, Pending>,
}

fn hash_of(v: &Value) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(v.to_string().as_bytes());
    digest.iter().take(16).map(|b| format!("{b:02x}")).collect()
}

fn empty_file() -> Value {
    json!({ "version": 1, "defaults": {}, "agents": {} })
}

pub fn validate_file(v: &Value) -> Result<(), String> {
    let obj = v.as_object().ok_or("file must be an object")?;
    if obj.get("version").and_then(Value::as_u64) != Some(1) {
        return Err("file.version must be 1".into());
    }
    let check = |scope: &str, o: &Value| -> Result<(), String> {
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

impl ApprovalsActor {
    /// Loads `path` (missing: empty; unreadable or invalid: an error).
    pub fn load(
        bus: Addr<EventBus>,
        path: PathBuf,
        timeout: Duration,
    ) -> Result<ApprovalsActor, String> {
        let file = match std::fs::read_to_string(&path) {
            Ok(text) => {
                let v: Value =
                    serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
                validate_file(&v).map_err(|e| format!("{}: {e}", path.display()))?;
                v
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => empty_file(),
            Err(e) => return Err(format!("{}: {e}", path.display())),
        };
        Ok(ApprovalsActor {
            bus,
            path,
            file,
            timeout,
            pending: HashMap::new(),
        })
    }

    fn scoped(&self, agent: &str, key: &str) -> Option<&Value> {
        self.file
            .get("agents")
            .and_then(|a| a.get(agent))
            .and_then(|a| a.get(key))
            .or_else(|| self.file.get("defaults").and_then(|d| d.get(key)))
    }

    /// The stricter of the run's policy and the file's.
    fn effective(&self, agent: &str, p: ExecPolicy) -> (Security, Ask, Security) {
        let sec = self
            .scoped(agent, "security")
            .and_then(Value::as_str)
            .and_then(|s| Security::parse(s).ok())
            .map_or(p.security, |f| f.min(p.security));
        let ask = self
            .scoped(agent, "ask")
            .and_then(Value::as_str)
            .and_then(|s| Ask::parse(s).ok())
            .map_or(p.ask, |f| f.max(p.ask));
        let fallback = self
            .scoped(agent, "askFallback")
            .and_then(Value::as_str)
            .and_then(|s| Security::parse(s).ok())
            .unwrap_or(Security::Deny);
        (sec, ask, fallback)
    }

    fn allowlisted(&self, agent: &str, command: &str) -> bool {
        let Some(bins) = executables(command) else {
            return false;
        };
        let patterns: Vec<&str> = self
            .file
            .get("agents")
            .and_then(|a| a.get(agent))
            .and_then(|a| a.get("allowlist"))
            .and_then(Value::as_array)
            .map(|l| {
                l.iter()
                    .filter_map(|e| e.get("pattern").and_then(Value::as_str))
                    .collect()
            })
            .unwrap_or_default();
        !bins.is_empty()
            && bins
                .iter()
                .all(|b| patterns.iter().any(|p| pattern_matches(p, b)))
    }

    fn save(&self) -> Result<(), String> {
        let text = serde_json::to_string_pretty(&self.file).map_err(|e| e.to_string())?;
        crate::fsutil::write_atomic(&self.path, &format!("{text}\n"))
            .map_err(|e| format!("{}: {e}", self.path.display()))
    }

    /// Adds the command's executables to the agent's allowlist.
    fn allow_always(&mut self, agent: &str, command: &str) {
        let bins = executables(command).unwrap_or_default();
        if !self.file.get("agents").is_some_and(Value::is_object) {
            self.file["agents"] = json!({});
        }
        let a = &mut self.file["agents"][agent];
        if !a.is_object() {
            *a = json!({});
        }
        if !a.get("allowlist").is_some_and(Value::is_array) {
            a["allowlist"] = json!([]);
        }
        if let Some(list) = a["allowlist"].as_array_mut() {
            for bin in bins {
                if !list
                    .iter()
                    .any(|e| e.get("pattern").and_then(Value::as_str) == Some(bin.as_str()))
                {
                    list.push(json!({ "id": ulid::Ulid::generate().to_string(), "pattern": bin, "lastUsedAt": crate::now_ms() }));
                }
            }
        }
        if let Err(e) = self.save() {
            tracing::error!(error = %e, "cannot store the exec allowlist");
        }
    }

    fn open(
        &mut self,
        id: Option<String>,
        request: Value,
        timeout: Duration,
        ctx: &mut Context<Self>,
    ) -> Result<Opened, String> {
        let id = id.unwrap_or_else(uuid_like);
        if self.pending.contains_key(&id) {
            return Err(format!("approval {id} already exists"));
        }
        let created = crate::now_ms();
        let expires = created + timeout.as_millis() as u64;
        let (tx, rx) = oneshot::channel();
        self.pending.insert(
            id.clone(),
            Pending {
                expires,
                decision: None,
                waiters: vec![tx],
            },
        );
        self.bus.do_send(Publish {
            event: BusEvent::new(
                "exec.approval.requested",
                &json!({ "id": id, "request": request, "createdAtMs": created, "expiresAtMs": expires }),
                false,
            ),
        });
        let expired_id = id.clone();
        ctx.run_later(timeout, move |act, _| {
            act.finish(&expired_id, None, None);
        });
        Ok((id, created, expires, rx))
    }

    /// Records a decision (None: expired), wakes the waiters, tells clients.
    fn finish(&mut self, id: &str, decision: Option<Decision>, by: Option<String>) -> bool {
        let Some(p) = self.pending.get_mut(id) else {
            return false;
        };
        if p.decision.is_some() {
            return false;
        }
        p.decision = Some(decision);
        for w in p.waiters.drain(..) {
            let _ = w.send(decision);
        }
        let mut payload = json!({ "id": id, "decision": decision.map(Decision::as_str).unwrap_or("deny"), "ts": crate::now_ms() });
        if decision.is_none() {
            payload["reason"] = json!("timeout");
        }
        if let Some(by) = by {
            payload["resolvedBy"] = json!(by);
        }
        self.bus.do_send(Publish {
            event: BusEvent::new("exec.approval.resolved", &payload, false),
        });
        // Resolved entries stay a minute for late waitDecision calls.
        let now = crate::now_ms();
        self.pending
            .retain(|_, p| p.decision.is_none() || p.expires + 60_000 > now);
        true
    }
}

fn uuid_like() -> String {
    ulid::Ulid::generate().to_string().to_lowercase()
}

impl Actor for ApprovalsActor {
    type Context = Context<Self>;
}

impl Handler<ExecGate> for ApprovalsActor {
    type Result = ResponseActFuture<Self, Result<(), String>>;
    fn handle(&mut self, msg: ExecGate, ctx: &mut Context<Self>) -> Self::Result {
        let (security, ask, fallback) = self.effective(&msg.agent_id, msg.policy);
        let hit = security == Security::Full || self.allowlisted(&msg.agent_id, &msg.command);
        let refuse = |r: String| Box::pin(actix::fut::ready(Err(r))) as Self::Result;
        if security == Security::Deny {
            return refuse("exec is disabled for this session (security=deny); ask the user to change execSecurity".into());
        }
        let must_ask = ask == Ask::Always || (ask == Ask::OnMiss && !hit);
        if !must_ask {
            return if hit {
                Box::pin(actix::fut::ready(Ok(())))
            } else {
                refuse(
                    "this command is not in the exec allowlist (security=allowlist, ask=off)"
                        .into(),
                )
            };
        }
        let bins = executables(&msg.command).unwrap_or_default();
        let request = json!({
            "command": msg.command, "cwd": msg.cwd, "host": msg.policy.host.as_str(),
            "security": security.as_str(), "ask": ask.as_str(), "agentId": msg.agent_id,
            "resolvedPath": bins.first(), "sessionKey": msg.session_key,
        });
        let timeout = self.timeout;
        let (id, _, _, rx) = match self.open(None, request, timeout, ctx) {
            Ok(x) => x,
            Err(e) => return refuse(e),
        };
        tracing::info!(approval = %id, session_key = %msg.session_key, command = %msg.command, "exec approval requested");
        let (agent, command) = (msg.agent_id, msg.command);
        Box::pin(async move { rx.await.ok().flatten() }.into_actor(self).map(
            move |decision, act, _| match decision {
                Some(Decision::AllowOnce) => Ok(()),
                Some(Decision::AllowAlways) => {
                    act.allow_always(&agent, &command);
                    Ok(())
                }
                Some(Decision::Deny) => {
                    Err(format!("the operator denied this command (approval {id})"))
                }
                None => match fallback {
                    Security::Full => Ok(()),
                    Security::Allowlist if hit => Ok(()),
                    _ => Err(format!(
                        "no operator answered approval {id} within {}s, so it was denied",
                        timeout.as_secs()
                    )),
                },
            },
        ))
    }
}

impl Handler<RequestApproval> for ApprovalsActor {
    type Result = ResponseFuture<Result<(String, Option<Decision>, u64, u64), String>>;
    fn handle(&mut self, msg: RequestApproval, ctx: &mut Context<Self>) -> Self::Result {
        let timeout = msg
            .timeout
            .unwrap_or(self.timeout)
            .min(Duration::from_secs(3600));
        match self.open(msg.id, msg.request, timeout, ctx) {
            Ok((id, created, expires, rx)) => Box::pin(async move {
                let d = rx.await.ok().flatten();
                Ok((id, d, created, expires))
            }),
            Err(e) => Box::pin(async move { Err(e) }),
        }
    }
}

impl Handler<ResolveApproval> for ApprovalsActor {
    type Result = Result<(), String>;
    fn handle(&mut self, msg: ResolveApproval, _: &mut Context<Self>) -> Self::Result {
        if self.finish(&msg.id, Some(msg.decision), msg.by) {
            Ok(())
        } else {
            Err(format!(
                "unknown or already resolved approval id {:?}",
                msg.id
            ))
        }
    }
}

impl Handler<WaitDecision> for ApprovalsActor {
    type Result = ResponseFuture<Result<Option<Decision>, String>>;
    fn handle(&mut self, msg: WaitDecision, _: &mut Context<Self>) -> Self::Result {
        let Some(p) = self.pending.get_mut(&msg.id) else {
            let id = msg.id;
            return Box::pin(async move { Err(format!("unknown approval id {id:?}")) });
        };
        if let Some(d) = p.decision {
            return Box::pin(async move { Ok(d) });
        }
        let (tx, rx) = oneshot::channel();
        p.waiters.push(tx);
        Box::pin(async move { Ok(rx.await.ok().flatten()) })
    }
}

impl Handler<GetApprovals> for ApprovalsActor {
    type Result = MessageResult<GetApprovals>;
    fn handle(&mut self, _: GetApprovals, _: &mut Context<Self>) -> Self::Result {
        MessageResult((
            self.path.display().to_string(),
            self.path.exists(),
            hash_of(&self.file),
            self.file.clone(),
        ))
    }
}

impl Handler<SetApprovals> for ApprovalsActor {
    type Result = Result<String, String>;
    fn handle(&mut self, msg: SetApprovals, _: &mut Context<Self>) -> Self::Result {
        let current = hash_of(&self.file);
        if msg.base_hash.as_deref() != Some(current.as_str()) {
            return Err(
                "exec approvals changed since they were read; get them again (baseHash mismatch)"
                    .into(),
            );
        }
        validate_file(&msg.file)?;
        let old = std::mem::replace(&mut self.file, msg.file);
        if let Err(e) = self.save() {
            self.file = old;
            return Err(e);
        }
        Ok(hash_of(&self.file))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn file_validation_names_the_bad_key() {
        assert!(validate_file(&empty_file()).is_ok());
        assert!(validate_file(&json!({"version": 2}))
            .unwrap_err()
            .contains("version"));
        assert!(
            validate_file(&json!({"version": 1, "defaults": {"security": "open"}}))
                .unwrap_err()
                .contains("defaults.security")
        );
        assert!(validate_file(
            &json!({"version": 1, "agents": {"main": {"allowlist": [{"pattern": "a{b"}]}}})
        )
        .unwrap_err()
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
