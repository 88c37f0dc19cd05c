//! `HookHub`: runs the command hooks of a point (in priority order for the
//! points that decide, all at once for those that only observe), applies
//! each hook's failure policy, counts runs, failures and latency per hook,
//! and records blocks and rewrites in the audit ledger.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use actix::prelude::*;

use super::event::{input, HookCtx, HookEvent};
use super::messages::{HooksStatus, Ran, RunHooks, SetHookTable};
use super::points::{HookKind, HookPoint};
use super::reply::{blocked, interpret, HookReply};
use super::table::{CommandHook, HookTable};
use super::HookStatus;
use crate::audit::{Activity, AuditLog, ControlActivity, End, Who};

#[derive(Debug, Default, Clone)]
struct Stat {
    runs: u64,
    failures: u64,
    last_error: Option<String>,
    last_ms: Option<u64>,
}

pub struct HookHub {
    table: Arc<HookTable>,
    /// The points with hooks, read in place by every `HookClient`.
    points: Arc<AtomicU32>,
    stats: HashMap<String, Stat>,
    workspace: PathBuf,
    audit: AuditLog,
    span: tracing::Span,
}

impl Actor for HookHub {
    type Context = Context<Self>;
}

impl HookHub {
    /// A hub for `table`; `points` gets the bits of its points.
    pub(super) fn new(
        table: HookTable,
        points: Arc<AtomicU32>,
        workspace: PathBuf,
        audit: AuditLog,
    ) -> HookHub {
        points.store(bits(&table), Ordering::Release);
        HookHub {
            table: Arc::new(table),
            points,
            stats: HashMap::new(),
            workspace,
            audit,
            span: tracing::info_span!("hooks"),
        }
    }

    fn current(&self) -> Arc<HookTable> {
        self.table.clone()
    }
}

/// The points `table` has hooks at.
fn bits(table: &HookTable) -> u32 {
    table.all().fold(0, |b, h| b | h.point.bit())
}

/// One hook's answer, its failure policy applied; the error for the counters.
async fn run_one(
    hook: &CommandHook,
    point: HookPoint,
    stdin: &[u8],
    workspace: &std::path::Path,
) -> (HookReply, u64, Option<String>) {
    let started = std::time::Instant::now();
    let outcome = super::command::run(hook, stdin, workspace)
        .await
        .and_then(|ran| interpret(point, hook.dialect, &ran));
    let took = started.elapsed().as_millis() as u64;
    match outcome {
        Ok(reply) => (reply, took, None),
        Err(e) => {
            tracing::warn!(hook = %hook.id, point = point.name(), error = %e, "hook failed");
            let reply = match hook.fail_closed {
                true => blocked(point, format!("hook {} failed: {e}", hook.id)),
                false => HookReply::default(),
            };
            (reply, took, Some(e.to_string()))
        }
    }
}

fn audit(log: &AuditLog, point: HookPoint, hook: &str, reply: &HookReply, subject: Option<&str>) {
    let action = match (&reply.block, reply.cancel, reply.changes()) {
        (Some(_), _, _) | (_, true, _) => "hook.blocked",
        (_, _, true) => "hook.rewrote",
        _ => return,
    };
    log.record(Activity::Control(ControlActivity {
        action: action.into(),
        outcome: if action == "hook.blocked" {
            End::Blocked
        } else {
            End::Succeeded
        },
        actor: Who::System(hook.to_string()),
        subject: Some(subject.map_or_else(
            || point.name().to_string(),
            |t| format!("{}:{t}", point.name()),
        )),
        decision: None,
        paths: Vec::new(),
    }));
}

impl Handler<RunHooks> for HookHub {
    type Result = ResponseFuture<HookReply>;
    fn handle(&mut self, msg: RunHooks, ctx: &mut Context<Self>) -> Self::Result {
        let _span = self.span.clone().entered();
        let RunHooks {
            point,
            event,
            ctx: hctx,
        } = msg;
        let table = self.current();
        let hooks: Vec<Arc<CommandHook>> = table
            .at(point)
            .iter()
            .filter(|h| h.matcher.matches(event.tool()))
            .cloned()
            .collect();
        let (me, workspace, log) = (ctx.address(), self.workspace.clone(), self.audit.clone());
        Box::pin(async move {
            let workspace = if hctx.workspace.as_os_str().is_empty() {
                workspace
            } else {
                hctx.workspace.clone()
            };
            if point.kind() == HookKind::Observe {
                let runs = hooks.iter().map(|h| {
                    let stdin = input(point, h.dialect, &event, &hctx);
                    let (me, workspace) = (me.clone(), workspace.clone());
                    async move {
                        let (_, took_ms, error) = run_one(h, point, &stdin, &workspace).await;
                        me.do_send(Ran {
                            id: h.id.clone(),
                            took_ms,
                            error,
                        });
                    }
                });
                futures_util::future::join_all(runs).await;
                return HookReply::default();
            }
            run_in_order(&hooks, point, &event, &hctx, &workspace, &me, &log).await
        })
    }
}

async fn run_in_order(
    hooks: &[Arc<CommandHook>],
    point: HookPoint,
    event: &HookEvent,
    hctx: &HookCtx,
    workspace: &std::path::Path,
    me: &Addr<HookHub>,
    log: &AuditLog,
) -> HookReply {
    let mut merged = HookReply::default();
    for h in hooks {
        let stdin = input(point, h.dialect, event, hctx);
        let (reply, took_ms, error) = run_one(h, point, &stdin, workspace).await;
        me.do_send(Ran {
            id: h.id.clone(),
            took_ms,
            error,
        });
        audit(log, point, &h.id, &reply, event.tool());
        if !merged.merge(reply) {
            break;
        }
    }
    merged
}

impl Handler<Ran> for HookHub {
    type Result = ();
    fn handle(&mut self, msg: Ran, _: &mut Context<Self>) {
        let s = self.stats.entry(msg.id).or_default();
        s.runs += 1;
        s.last_ms = Some(msg.took_ms);
        if msg.error.is_some() {
            s.failures += 1;
            s.last_error = msg.error;
        }
    }
}

impl Handler<SetHookTable> for HookHub {
    type Result = ();
    fn handle(&mut self, msg: SetHookTable, _: &mut Context<Self>) {
        let _span = self.span.clone().entered();
        tracing::info!(hooks = msg.table.all().count(), "hooks set");
        self.points.store(bits(&msg.table), Ordering::Release);
        self.table = msg.table;
    }
}

impl Handler<HooksStatus> for HookHub {
    type Result = MessageResult<HooksStatus>;
    fn handle(&mut self, _: HooksStatus, _: &mut Context<Self>) -> Self::Result {
        let table = self.current();
        let rows = table
            .all()
            .map(|h| {
                let s = self.stats.get(&h.id).cloned().unwrap_or_default();
                HookStatus {
                    id: h.id.clone(),
                    owner: h.owner.label(),
                    point: h.point.name(),
                    command: h.command.clone(),
                    timeout_ms: h.timeout.as_millis() as u64,
                    fail_closed: h.fail_closed,
                    runs: s.runs,
                    failures: s.failures,
                    last_error: s.last_error,
                    last_ms: s.last_ms,
                    blocked: None,
                }
            })
            .chain(table.unavailable.iter().map(|u| HookStatus {
                id: u.what.clone(),
                owner: u.owner.clone(),
                point: "",
                command: String::new(),
                timeout_ms: 0,
                fail_closed: false,
                runs: 0,
                failures: 0,
                last_error: None,
                last_ms: None,
                blocked: Some(u.why.clone()),
            }))
            .collect();
        MessageResult(rows)
    }
}
