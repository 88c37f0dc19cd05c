//! The session tools' bodies, one async function per tool, run outside
//! the actor with a copy of what it holds (`Cx`).

use std::time::Duration;

use actix::prelude::*;
use serde_json::{json, Value};

use super::*;
use crate::router::{CreateSession, GetSession, ListSessions, LookupSession, RouterActor};
use crate::runs::{wait_run, RunRegistry, Waited};
use crate::session::{AbortSession, GetStatus, SendChat, SessionEntry, SteerSession};
use crate::tool::ToolOutcome;
use crate::tool::{error, ok, str_arg, uint_arg};

/// What a session tool call works with.
#[derive(Clone)]
pub(super) struct Cx {
    pub(super) router: Addr<RouterActor>,
    pub(super) runs: Addr<RunRegistry>,
    pub(super) agent: String,
    /// `session.mainKey`: what `main` names.
    pub(super) main_key: String,
    pub(super) max_depth: u32,
    /// What the calling turn acts with: a message it sends, a sub-agent it
    /// spawns, carry it on (an untrusted turn causes only untrusted turns).
    pub(super) trust: crate::trust::Trust,
    /// Transcripts, read without waking their sessions (`readers.rs`).
    pub(super) store: crate::store::Store,
}

impl Cx {
    /// A message from the calling turn, carrying its trust.
    fn message(&self, text: &str, run_id: &str) -> SendChat {
        let mut m = SendChat::text(text, run_id);
        m.command_authorized = false;
        m.untrusted = self.trust.untrusted;
        m.channels = self.trust.channels.clone();
        m.kind = crate::run::RunKind::Subagent;
        m
    }
}

/// `sessions_list`.
pub(super) async fn list(cx: &Cx, _caller: &str, args: &Value) -> ToolOutcome {
    let name = "sessions_list";
    let Cx { router, .. } = cx;
    let limit = match uint_arg(name, args, "limit") {
        Ok(l) => l.unwrap_or(20).clamp(1, 200) as usize,
        Err(e) => return e,
    };
    let rows = match router.send(ListSessions).await {
        Ok(Ok(r)) => r,
        _ => return error("sessions_list: the session store is unavailable"),
    };
    let list: Vec<Value> = rows
        .iter()
        .take(limit)
        .map(|r| {
            json!({ "key": r.key, "label": r.entry.label, "updatedAt": r.entry.updated_at,
                    "model": r.entry.model, "spawnedBy": r.entry.spawned_by, "live": r.live,
                    "lastMessage": r.entry.last_message_preview })
        })
        .collect();
    ok(json!({ "count": rows.len(), "sessions": list }).to_string())
}

/// A run that ended before the registry saw it: its stored reply, judged
/// as the sub-agent run it was.
async fn recorded_reply(cx: &Cx, key: &SessionKey, run_id: &crate::ids::RunId) -> String {
    let stored = match cx.router.send(GetSession { key: key.clone() }).await {
        Ok(Ok((session, _))) => session
            .send(crate::session::GetReply {
                run_id: Some(run_id.clone()),
            })
            .await
            .ok()
            .and_then(Result::ok)
            .flatten(),
        _ => None,
    };
    let kind = crate::run::RunKind::Subagent;
    crate::run::Outcome::of_final(kind, &stored.unwrap_or_default())
        .text()
        .to_string()
}

/// `sessions_send`.
pub(super) async fn send(cx: &Cx, caller: &str, args: &Value) -> ToolOutcome {
    let name = "sessions_send";
    let Cx { router, runs, .. } = cx;
    let (raw, text) = match (
        str_arg(name, args, "sessionKey"),
        str_arg(name, args, "message"),
    ) {
        (Ok(k), Ok(t)) => (k, t),
        (Err(e), _) | (_, Err(e)) => return e,
    };
    let wait = match uint_arg(name, args, "timeoutSeconds") {
        Ok(t) => Duration::from_secs(t.unwrap_or(30).min(600)),
        Err(e) => return e,
    };
    let key = match canonical(cx, raw) {
        Ok(k) => k,
        Err(e) => return e,
    };
    if key.as_str() == caller {
        return error("sessions_send: a session cannot send to itself");
    }
    let run_id = ulid::Ulid::generate().to_string();
    let m = cx.message(&format!("[From session {}]\n{text}", caller), &run_id);
    let ack = match crate::router::deliver(router, key.clone(), m).await {
        Ok(a) => a,
        Err(e) => {
            return error(format!(
                "sessions_send: {key} did not take the message ({e})"
            ))
        }
    };
    if wait.is_zero() {
        return ok(
            json!({ "status": "accepted", "sessionKey": key.as_str(), "runId": ack.run_id })
                .to_string(),
        );
    }
    match wait_run(runs, &ack.run_id, None, wait).await {
        Waited::Ended(r) => {
            let reply = match &r.outcome {
                crate::run::Outcome::Recorded => recorded_reply(cx, &key, &ack.run_id).await,
                o => o.text().to_string(),
            };
            let (status, error) = (r.status().as_str(), r.outcome.error());
            ok(json!({ "status": status, "sessionKey": key.as_str(), "runId": ack.run_id, "reply": reply, "error": error }).to_string())
        }
        Waited::TimedOut { .. } | Waited::Busy => ok(
            json!({ "status": "timeout", "sessionKey": key.as_str(), "runId": ack.run_id })
                .to_string(),
        ),
        Waited::Down => error("sessions_send: the gateway is stopping"),
    }
}

/// The depth a sub-agent of `caller` would have: refused past
/// `maxSpawnDepth`.
async fn child_depth(cx: &Cx, caller: &str) -> Result<u32, ToolOutcome> {
    let parent = canonical(cx, caller)?;
    let depth = match cx.router.send(LookupSession { key: parent }).await {
        Ok(Ok(Some(e))) => e.spawn_depth + 1,
        Ok(Ok(None)) => 1,
        _ => return Err(error("sessions_spawn: the session store is unavailable")),
    };
    if depth > cx.max_depth {
        return Err(error(format!(
            "sessions_spawn: a sub-agent at depth {} may not spawn another (agents.defaults.subagents.maxSpawnDepth is {})",
            depth - 1,
            cx.max_depth
        )));
    }
    Ok(depth)
}

/// `sessions_spawn`.
pub(super) async fn spawn(cx: &Cx, caller: &str, args: &Value) -> ToolOutcome {
    let name = "sessions_spawn";
    let Cx { router, agent, .. } = cx;
    let task = match str_arg(name, args, "task") {
        Ok(t) => t.to_string(),
        Err(e) => return e,
    };
    let label = args.get("label").and_then(Value::as_str);
    let child_agent = args
        .get("agentId")
        .and_then(Value::as_str)
        .unwrap_or_else(|| match crate::ids::key::is_qualified(caller) {
            true => crate::ids::key::agent(caller),
            false => agent,
        })
        .to_ascii_lowercase();
    let depth = match child_depth(cx, caller).await {
        Ok(d) => d,
        Err(e) => return e,
    };
    let child = format!(
        "agent:{child_agent}:subagent:{}",
        ulid::Ulid::generate().to_string().to_lowercase()
    );
    let child_key = match canonical(cx, &child) {
        Ok(k) => k,
        Err(e) => return e,
    };
    let entry = match child_entry(caller, depth, label, args) {
        Ok(e) => e,
        Err(e) => return e,
    };
    // The router creates the child's row (with who spawned it) and its actor.
    let create = CreateSession {
        key: child_key.clone(),
        entry,
    };
    let Ok(Ok(_)) = router.send(create).await else {
        return error("sessions_spawn: cannot store the sub-agent session");
    };
    let run_id = ulid::Ulid::generate().to_string();
    let mut m = cx.message(&task, &run_id);
    if let Some(t) = args.get("runTimeoutSeconds").and_then(Value::as_u64) {
        m.timeout = Some(Duration::from_secs(t.max(1)));
    }
    match crate::router::deliver(router, child_key.clone(), m).await {
        Ok(_) => ok(format!(
            "{}\nThe sub-agent runs in the background; its result will arrive here as a message when it finishes. Use subagents to steer or kill it.",
            json!({ "status": "accepted", "childSessionKey": child_key.as_str(), "runId": run_id })
        )),
        _ => error("sessions_spawn: the sub-agent did not start"),
    }
}

/// The child's session row: who spawned it, how deep, its label, and the
/// model and skills the call names.
fn child_entry(
    caller: &str,
    depth: u32,
    label: Option<&str>,
    args: &Value,
) -> Result<SessionEntry, ToolOutcome> {
    let mut entry = SessionEntry::new(crate::now_ms());
    entry.spawned_by = Some(caller.to_string());
    entry.spawn_depth = depth;
    entry.label = label.map(str::to_string);
    if let Some(m) = args.get("model").and_then(Value::as_str) {
        entry.model_override = Some(m.to_string());
    }
    match args.get("skills") {
        None | Some(Value::Null) => {}
        Some(v) => match serde_json::from_value::<Vec<String>>(v.clone()) {
            Ok(list) => entry.skill_filter = Some(list),
            Err(_) => {
                return Err(error(
                    "sessions_spawn: `skills` must be a list of skill names",
                ))
            }
        },
    }
    Ok(entry)
}

/// `session_status`.
pub(super) async fn status(cx: &Cx, caller: &str, args: &Value) -> ToolOutcome {
    let _name = "session_status";
    let Cx { router, .. } = cx;
    // A stranger's turn asks only about its own session.
    let raw = args
        .get("sessionKey")
        .and_then(Value::as_str)
        .filter(|_| !cx.trust.untrusted)
        .unwrap_or(caller);
    let key = match canonical(cx, raw) {
        Ok(k) => k,
        Err(e) => return e,
    };
    match router.send(LookupSession { key: key.clone() }).await {
        Ok(Ok(Some(_))) => {}
        _ => return error(format!("session_status: no session {raw:?}")),
    }
    let Ok(Ok((session, _))) = router.send(GetSession { key }).await else {
        return error("session_status: the session store is unavailable");
    };
    match session.send(GetStatus).await {
        Ok(text) => ok(format!(
            "{text}\nTime: {}",
            crate::inbound::msg_context::envelope(
                crate::now_ms(),
                crate::inbound::msg_context::EnvelopeSettings {
                    timestamp: true,
                    utc: true
                }
            )
        )),
        Err(_) => error("session_status: the session is gone"),
    }
}

/// `kill` or `steer` on the sub-agent `key`, whose actor is `session`.
async fn act_on(
    cx: &Cx,
    args: &Value,
    action: &str,
    key: &str,
    session: Addr<crate::session::SessionActor>,
) -> ToolOutcome {
    let name = "subagents";
    match action {
        "kill" => match session.send(AbortSession).await {
            Ok(ids) if !ids.is_empty() => ok(format!(
                "Killed the run of {} ({}).",
                key,
                ids.join(", ")
            )),
            Ok(_) => ok(format!("{} has no active run.", key)),
            Err(_) => error("subagents: the session is gone"),
        },
        "steer" if cx.trust.untrusted => error(
            "subagents: a turn that holds a message from someone who is not the operator cannot steer a run; send it a message with sessions_send instead",
        ),
        "steer" => {
            let text = match str_arg(name, args, "message") {
                Ok(t) => t.to_string(),
                Err(e) => return e,
            };
            match session.send(SteerSession { text }).await {
                Ok(true) => ok(format!("Steered {}.", key)),
                Ok(false) => ok(format!(
                    "{} has no active run; send it a message with sessions_send instead.",
                    key
                )),
                Err(_) => error("subagents: the session is gone"),
            }
        }
        other => error(format!(
            "subagents: unknown action {other:?} (list, steer, kill)"
        )),
    }
}

/// `subagents`.
pub(super) async fn manage(cx: &Cx, caller: &str, args: &Value) -> ToolOutcome {
    let name = "subagents";
    let Cx { router, .. } = cx;
    let action = match str_arg(name, args, "action") {
        Ok(a) => a,
        Err(e) => return e,
    };
    let rows = match router.send(ListSessions).await {
        Ok(Ok(r)) => r,
        _ => return error("subagents: the session store is unavailable"),
    };
    let mine: Vec<_> = rows
        .into_iter()
        .filter(|r| r.entry.spawned_by.as_deref() == Some(caller))
        .collect();
    if action == "list" {
        let list: Vec<Value> = mine
            .iter()
            .map(|r| json!({ "key": r.key, "label": r.entry.label, "live": r.live, "lastMessage": r.entry.last_message_preview }))
            .collect();
        return ok(json!({ "subagents": list }).to_string());
    }
    let target = match str_arg(name, args, "target") {
        Ok(t) => t,
        Err(e) => return e,
    };
    let Some(row) = mine
        .iter()
        .find(|r| r.key == target || r.entry.label.as_deref() == Some(target))
    else {
        return error(format!(
            "subagents: {target:?} is not a sub-agent of this session (subagents list shows them)"
        ));
    };
    let key = match canonical(cx, &row.key) {
        Ok(k) => k,
        Err(e) => return e,
    };
    let Ok(Ok((session, _))) = router.send(GetSession { key }).await else {
        return error("subagents: the session store is unavailable");
    };
    act_on(cx, args, action, &row.key, session).await
}
