//! `ApprovalsActor`: exec security, allowlists, pending approvals, the approvals file.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

use actix::prelude::*;
use serde_json::Value;
use tokio::sync::oneshot;

use super::*;

mod mcp;

pub struct ApprovalsActor {
    /// The actor's span, entered by its handlers.
    span: tracing::Span,
    /// The edge, which sends requests and decisions to operators.
    edge: Recipient<ApprovalEvent>,
    path: PathBuf,
    file: Value,
    /// The file exists (it was found at start or written since).
    on_disk: bool,
    timeout: Duration,
    pending: HashMap<String, Pending>,
    /// Standing grants of cron jobs (`grants.rs`), and their file.
    grants: grants::Grants,
    grants_path: PathBuf,
    /// `notification` hooks (Claude Code's `Notification`): told of each request.
    hooks: crate::hooks::HookClient,
}

impl ApprovalsActor {
    /// Loads `path` (missing: empty; unreadable or invalid: an error).
    pub fn load(
        edge: Recipient<ApprovalEvent>,
        path: PathBuf,
        timeout: Duration,
    ) -> Result<ApprovalsActor, ApprovalError> {
        let (file, on_disk) = match std::fs::read_to_string(&path) {
            Ok(text) => {
                let bad = |e: String| ApprovalError::Invalid(format!("{}: {e}", path.display()));
                let v: Value = serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?;
                validate_file(&v).map_err(|e| bad(e.to_string()))?;
                (v, true)
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => (empty_file(), false),
            Err(e) => return Err(ApprovalError::Io(format!("{}: {e}", path.display()))),
        };
        let grants_path = path.with_file_name("exec-grants.json");
        let grants = match std::fs::read_to_string(&grants_path) {
            Ok(text) => serde_json::from_str(&text)
                .map_err(|e| ApprovalError::Invalid(format!("{}: {e}", grants_path.display())))?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => grants::Grants::default(),
            Err(e) => return Err(ApprovalError::Io(format!("{}: {e}", grants_path.display()))),
        };
        Ok(ApprovalsActor {
            span: tracing::info_span!("approvals"),
            edge,
            path,
            file,
            on_disk,
            timeout,
            pending: HashMap::new(),
            grants,
            grants_path,
            hooks: Default::default(),
        })
    }

    /// Each request is told to these hooks too.
    pub fn with_hooks(mut self, hooks: crate::hooks::HookClient) -> ApprovalsActor {
        self.hooks = hooks;
        self
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

    fn allowlisted(&self, agent: &str, bins: Option<&[String]>) -> bool {
        let Some(bins) = bins else {
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

    /// Writes the file (atomic, with its fsyncs) on the blocking pool, then
    /// runs `then` with the outcome. The actor takes no other message
    /// meanwhile, so decisions and sets stay in order.
    fn save_then<F>(&mut self, ctx: &mut Context<Self>, then: F)
    where
        F: FnOnce(&mut Self, Result<(), ApprovalError>) + 'static,
    {
        let path = self.path.clone();
        let text = serde_json::to_string_pretty(&self.file).map(|t| format!("{t}\n"));
        let write = async move {
            let text = text.map_err(|e| ApprovalError::Io(e.to_string()))?;
            let shown = path.display().to_string();
            tokio::task::spawn_blocking(move || crate::fsutil::write_atomic(&path, &text))
                .await
                .map_err(|e| ApprovalError::Io(e.to_string()))?
                .map_err(|e| ApprovalError::Io(format!("{shown}: {e}")))
        };
        ctx.wait(write.into_actor(self).map(move |r, act, _| {
            if r.is_ok() {
                act.on_disk = true;
            }
            then(act, r)
        }));
    }

    /// Writes the grants file (atomic) on the blocking pool; the actor
    /// takes no other message meanwhile.
    fn save_grants(&mut self, ctx: &mut Context<Self>) {
        let path = self.grants_path.clone();
        let text = serde_json::to_string_pretty(&self.grants).map(|t| format!("{t}\n"));
        let write = async move {
            let text = text.map_err(|e| e.to_string())?;
            tokio::task::spawn_blocking(move || crate::fsutil::write_atomic(&path, &text))
                .await
                .map_err(|e| e.to_string())?
                .map_err(|e| e.to_string())
        };
        ctx.wait(write.into_actor(self).map(|r, _, _| {
            if let Err(e) = r {
                tracing::error!(error = %e, "cannot store the exec grants");
            }
        }));
    }

    /// Adds the command's executables to the agent's allowlist.
    fn allow_always(&mut self, agent: &str, bins: Vec<String>, ctx: &mut Context<Self>) {
        super::file::allow_bins(&mut self.file, agent, bins);
        self.save_then(ctx, |_, r| {
            if let Err(e) = r {
                tracing::error!(error = %e, "cannot store the exec allowlist");
            }
        });
    }

    fn open(
        &mut self,
        id: Option<String>,
        request: Value,
        timeout: Duration,
        ctx: &mut Context<Self>,
    ) -> Result<Opened, ApprovalError> {
        let id = id.unwrap_or_else(uuid_like);
        if self.pending.contains_key(&id) {
            return Err(ApprovalError::Exists(id));
        }
        let created = crate::now_ms();
        let expires = created + timeout.as_millis() as u64;
        let (tx, rx) = oneshot::channel();
        self.pending.insert(
            id.clone(),
            Pending {
                request: request.clone(),
                created,
                expires,
                decision: None,
                waiters: vec![tx],
            },
        );
        let what = request
            .get("command")
            .or_else(|| request.get("toolName"))
            .and_then(Value::as_str)
            .unwrap_or("a tool call");
        let notice = crate::hooks::HookEvent::Notice {
            title: "Approval needed".into(),
            message: format!("ferroclaw needs your permission to run: {what}"),
        };
        let key = request
            .get("sessionKey")
            .and_then(Value::as_str)
            .unwrap_or("");
        let who = crate::hooks::HookCtx {
            session_key: key.to_string(),
            agent_id: crate::ids::key::agent(key).to_string(),
            ..Default::default()
        };
        self.hooks
            .notify(crate::hooks::HookPoint::Notification, notice, who);
        self.edge.do_send(ApprovalEvent::Requested {
            id: id.clone(),
            request,
            created_at_ms: created,
            expires_at_ms: expires,
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
        self.edge.do_send(ApprovalEvent::Resolved {
            id: id.to_string(),
            decision,
            resolved_by: by,
            ts: crate::now_ms(),
        });
        // Resolved entries stay a minute for late waitDecision calls.
        let now = crate::now_ms();
        self.pending
            .retain(|_, p| p.decision.is_none() || p.expires + 60_000 > now);
        true
    }
}

impl Actor for ApprovalsActor {
    type Context = Context<Self>;
}

/// A new approval's id, told first to the run whose command waits (so its
/// session knows before any client hears of the request, and a `/status`
/// after that says so).
fn tell_waiting(msg: &mut ExecGate) -> String {
    let id = uuid_like();
    if let Some(tell) = msg.waiting.take() {
        (tell.0)(&id, &msg.command);
    }
    id
}

impl Handler<ExecGate> for ApprovalsActor {
    type Result = ResponseActFuture<Self, Result<(), Refused>>;
    fn handle(&mut self, mut msg: ExecGate, ctx: &mut Context<Self>) -> Self::Result {
        let _span = self.span.clone().entered();
        let (security, ask, fallback) = self.effective(&msg.agent_id, msg.policy.clone());
        let hit =
            security == Security::Full || self.allowlisted(&msg.agent_id, msg.bins.as_deref());
        let refuse = |r: &str| Box::pin(actix::fut::ready(Err(Refused(r.into())))) as Self::Result;
        if security == Security::Deny {
            return refuse("exec is disabled for this session (security=deny); ask the user to change execSecurity");
        }
        let job = crate::ids::key::cron_job(msg.session_key.as_str()).map(str::to_string);
        if self.granted(&msg, job.as_deref(), ctx) {
            return Box::pin(actix::fut::ready(Ok(())));
        }
        let must_ask = ask == Ask::Always || (ask == Ask::OnMiss && !hit);
        if !must_ask {
            return if hit {
                Box::pin(actix::fut::ready(Ok(())))
            } else {
                refuse("this command is not in the exec allowlist (security=allowlist, ask=off)")
            };
        }
        let bins = msg.bins.clone().unwrap_or_default();
        let request = ExecRequest {
            command: &msg.command,
            cwd: &msg.cwd,
            host: msg.policy.host.as_str(),
            security: security.as_str(),
            ask: ask.as_str(),
            agent_id: &msg.agent_id,
            resolved_path: bins.first().map(String::as_str),
            session_key: &msg.session_key,
        }
        .to_value();
        let timeout = self.timeout;
        let id = tell_waiting(&mut msg);
        let (id, _, _, rx) = match self.open(Some(id), request, timeout, ctx) {
            Ok(x) => x,
            Err(e) => return refuse(&e.to_string()),
        };
        // Not the command: it may carry a secret (logs.tail readers).
        tracing::info!(approval = %id, session_key = %msg.session_key, bin = bins.first().map(String::as_str).unwrap_or("?"), untrusted = msg.untrusted, "exec approval requested");
        let asked = Asked {
            id,
            agent: msg.agent_id,
            untrusted: msg.untrusted,
            job,
            command: msg.command,
            cwd: msg.cwd,
            bins,
            fallback,
            hit,
            timeout,
        };
        Box::pin(
            async move { rx.await.ok().flatten() }
                .into_actor(self)
                .map(move |decision, act, ctx| act.decided(decision, asked, ctx)),
        )
    }
}

/// An exec that waits for an operator: what its decision is applied to.
struct Asked {
    id: String,
    agent: String,
    untrusted: bool,
    /// The cron job whose own session asked (a grant's binding).
    job: Option<String>,
    command: String,
    cwd: String,
    bins: Vec<String>,
    fallback: Security,
    hit: bool,
    timeout: Duration,
}

impl ApprovalsActor {
    /// A cron job's own session with a live standing grant for this exact
    /// command in this folder runs it without asking (the use is counted).
    fn granted(&mut self, msg: &ExecGate, job: Option<&str>, ctx: &mut Context<Self>) -> bool {
        let now = crate::now_ms();
        let found = job.filter(|_| !msg.untrusted).and_then(|j| {
            self.grants
                .find(&msg.agent_id, j, &msg.command, &msg.cwd, now)
        });
        let Some(i) = found else { return false };
        self.grants.used(i, now);
        self.save_grants(ctx);
        true
    }

    /// An operator's decision (None: none came in time) on an exec.
    fn decided(
        &mut self,
        decision: Option<Decision>,
        a: Asked,
        ctx: &mut Context<Self>,
    ) -> Result<(), Refused> {
        match decision {
            Some(Decision::AllowOnce) => Ok(()),
            Some(Decision::AllowAlways) if a.untrusted => Ok(()),
            // A cron job's: a standing grant for this command only.
            Some(Decision::AllowAlways) if a.job.is_some() => {
                self.grants.mint(grants::Grant {
                    grant_id: uuid_like(),
                    minted_by_approval_id: a.id,
                    agent_id: a.agent,
                    cron_job_id: a.job.unwrap_or_default(),
                    cron_job_name: None,
                    command: a.command,
                    cwd: Some(a.cwd),
                    created_at_ms: crate::now_ms(),
                    expires_at_ms: None,
                    revoked_at_ms: None,
                    revoked_by: None,
                    last_used_at_ms: None,
                    use_count: 0,
                });
                self.save_grants(ctx);
                Ok(())
            }
            Some(Decision::AllowAlways) => {
                self.allow_always(&a.agent, a.bins, ctx);
                Ok(())
            }
            Some(Decision::Deny) => Err(Refused(format!(
                "the operator denied this command (approval {})",
                a.id
            ))),
            None => match a.fallback {
                Security::Full => Ok(()),
                Security::Allowlist if a.hit => Ok(()),
                _ => Err(Refused(format!(
                    "no operator answered approval {} within {}s, so it was denied",
                    a.id,
                    a.timeout.as_secs()
                ))),
            },
        }
    }
}

impl Handler<RequestApproval> for ApprovalsActor {
    type Result = ResponseFuture<Result<(String, Option<Decision>, u64, u64), ApprovalError>>;
    fn handle(&mut self, msg: RequestApproval, ctx: &mut Context<Self>) -> Self::Result {
        let _span = self.span.clone().entered();
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
    type Result = Result<(), ApprovalError>;
    fn handle(&mut self, msg: ResolveApproval, _: &mut Context<Self>) -> Self::Result {
        let _span = self.span.clone().entered();
        if self.finish(&msg.id, Some(msg.decision), msg.by) {
            Ok(())
        } else {
            Err(ApprovalError::NotPending(msg.id))
        }
    }
}

impl Handler<WaitDecision> for ApprovalsActor {
    type Result = ResponseFuture<Result<Option<Decision>, ApprovalError>>;
    fn handle(&mut self, msg: WaitDecision, _: &mut Context<Self>) -> Self::Result {
        let _span = self.span.clone().entered();
        let Some(p) = self.pending.get_mut(&msg.id) else {
            let id = msg.id;
            return Box::pin(async move { Err(ApprovalError::Unknown(id)) });
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
    fn handle(&mut self, msg: GetApprovals, _: &mut Context<Self>) -> Self::Result {
        let _span = self.span.clone().entered();
        // No agent is named "": only the file's defaults apply.
        let (security, ask, ask_fallback) = self.effective("", msg.policy);
        MessageResult(ApprovalsView {
            path: self.path.display().to_string(),
            exists: self.on_disk,
            hash: hash_of(&self.file),
            file: self.file.clone(),
            security,
            ask,
            ask_fallback,
        })
    }
}

impl Handler<SetApprovals> for ApprovalsActor {
    type Result = ResponseFuture<Result<String, ApprovalError>>;
    fn handle(&mut self, msg: SetApprovals, ctx: &mut Context<Self>) -> Self::Result {
        let _span = self.span.clone().entered();
        let current = hash_of(&self.file);
        if msg.base_hash.as_deref() != Some(current.as_str()) {
            return Box::pin(async move { Err(ApprovalError::Stale) });
        }
        if let Err(e) = validate_file(&msg.file) {
            return Box::pin(async move { Err(ApprovalError::Invalid(e.to_string())) });
        }
        let old = std::mem::replace(&mut self.file, msg.file);
        let (tx, rx) = oneshot::channel();
        self.save_then(ctx, move |act, r| {
            let reply = match r {
                Ok(()) => Ok(hash_of(&act.file)),
                Err(e) => {
                    act.file = old;
                    Err(e)
                }
            };
            let _ = tx.send(reply);
        });
        Box::pin(async move { rx.await.unwrap_or(Err(ApprovalError::Stopped)) })
    }
}

impl Handler<ListPending> for ApprovalsActor {
    type Result = Vec<PendingApproval>;
    fn handle(&mut self, _: ListPending, _: &mut Context<Self>) -> Vec<PendingApproval> {
        let now = crate::now_ms();
        let mut out: Vec<PendingApproval> = self
            .pending
            .iter()
            .filter(|(_, p)| p.decision.is_none() && p.expires > now)
            .map(|(id, p)| PendingApproval {
                id: id.clone(),
                request: p.request.clone(),
                created_at_ms: p.created,
                expires_at_ms: p.expires,
            })
            .collect();
        out.sort_by(|a, b| (a.created_at_ms, &a.id).cmp(&(b.created_at_ms, &b.id)));
        out
    }
}
impl Handler<ListGrants> for ApprovalsActor {
    type Result = Vec<grants::Grant>;
    fn handle(&mut self, msg: ListGrants, _: &mut Context<Self>) -> Self::Result {
        let _span = self.span.clone().entered();
        self.grants.newest(msg.limit)
    }
}

impl Handler<RevokeGrant> for ApprovalsActor {
    type Result = grants::Revoked;
    fn handle(&mut self, msg: RevokeGrant, ctx: &mut Context<Self>) -> Self::Result {
        let _span = self.span.clone().entered();
        let outcome = self.grants.revoke(&msg.grant_id, &msg.by, crate::now_ms());
        if outcome == grants::Revoked::Revoked {
            tracing::info!(grant = %msg.grant_id, by = %msg.by, "exec grant revoked");
            self.save_grants(ctx);
        }
        outcome
    }
}
