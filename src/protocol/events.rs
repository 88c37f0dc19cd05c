//! Events on the wire (protocol.md 6): who may see each event (the
//! event -> scope table, failing closed), the close codes the bus's reasons
//! become, and the payloads of the tree's typed events: `chat` (delta,
//! final, error, aborted), `agent` (lifecycle, assistant, thinking, tool),
//! `session.tool`, `presence`, `health`, `exec.approval.*`, `cron`,
//! `tick`, `shutdown`, with the `errorKind` strings and the usage shape. Pure
//! functions; the per-run `seq` and the delta throttle are the event
//! bridge's (`ws::event_bridge`).

use ferroclaw_actors::approvals::{ApprovalEvent, Decision};
use ferroclaw_actors::bus::{Audience, BusEvent, CloseReason, StateVersion};
use ferroclaw_actors::cron::CronEvent;
use ferroclaw_actors::gateway::HealthSnapshot;
use ferroclaw_actors::presence::PresenceEntry;
use ferroclaw_actors::provider::{ProviderError, ToolCall, Usage};
use ferroclaw_actors::run::FailureKind;
use ferroclaw_actors::scopes::{self, Role};
use ferroclaw_actors::tool::ToolOutcome;
use serde_json::{json, Value};

/// The `cron` event's payload (OpenClaw's: `jobId`, `action`
/// `added|updated|removed|started|finished`, `job`, and a run's fields).
pub fn cron(event: &CronEvent) -> Value {
    use super::cron::{job as shown, run};
    match event {
        CronEvent::Changed { job_id, added, job } => {
            let action = if *added { "added" } else { "updated" };
            json!({ "jobId": job_id, "action": action, "job": shown(job) })
        }
        CronEvent::Removed { job_id } => json!({ "jobId": job_id, "action": "removed" }),
        CronEvent::Started {
            job_id,
            run_id,
            run_at_ms,
            job,
        } => json!({
            "jobId": job_id, "action": "started", "runId": run_id,
            "runAtMs": run_at_ms, "job": job.as_deref().map(shown),
        }),
        CronEvent::Finished {
            entry,
            job_name,
            job,
        } => {
            let mut v = run(entry, Some(job_name));
            v["job"] = shown(job);
            v
        }
    }
}

/// Which connections may see a broadcast event (protocol.md 6.2). Unknown
/// events reach nobody.
pub fn audience(event: &str) -> Audience {
    let scope = |scope| Audience::Scope {
        scope,
        nodes: false,
    };
    match event {
        "health" | "heartbeat" | "presence" | "shutdown" | "tick" | "update.available" => {
            Audience::Everyone
        }
        "voicewake.changed" => Audience::Scope {
            scope: scopes::READ,
            nodes: true,
        },
        "agent" | "chat" | "chat.side_result" | "cron" | "session.tool" => scope(scopes::READ),
        "progressCard.changed" => scope(scopes::READ),
        // What nodes say about themselves, for dashboards.
        "node.hostStats" | "node.presence" => scope(scopes::READ),
        // Only to connections watching the session (sessions.subscribe,
        // sessions.messages.subscribe).
        "sessions.changed" | "session.message" => Audience::Watchers {
            scope: scopes::READ,
        },
        // Only to the sender (targeted), never broadcast.
        "chat.send_timing" => Audience::Watchers {
            scope: scopes::READ,
        },
        "talk.mode" => scope(scopes::WRITE),
        e if e.starts_with("exec.approval.") || e.starts_with("plugin.approval.") => {
            scope(scopes::APPROVALS)
        }
        e if e.starts_with("device.pair.") || e.starts_with("node.pair.") => scope(scopes::PAIRING),
        "question.requested" | "question.resolved" => scope(scopes::QUESTIONS),
        e if e.starts_with("plugin.") => scope(scopes::WRITE),
        _ => Audience::Nobody,
    }
}

/// Whether a connection with `role` and `granted` scopes sees `event`.
pub fn may_receive(event: &str, role: Role, granted: &[String]) -> bool {
    audience(event).admits(role, granted)
}

/// A broadcast event with its audience from the table.
pub fn bus_event(event: &str, payload: &impl serde::Serialize, drop_if_slow: bool) -> BusEvent {
    BusEvent::new(event, payload, drop_if_slow, audience(event))
}

/// The close code and reason of each of the bus's reasons.
pub fn close_frame(reason: CloseReason) -> (u16, &'static str) {
    match reason {
        CloseReason::SlowConsumer => (1008, "slow consumer"),
        CloseReason::ServiceRestart => (1012, "service restart"),
    }
}

/// `tick`.
pub fn tick(ts: u64) -> BusEvent {
    bus_event("tick", &json!({ "ts": ts }), false)
}

/// `shutdown` (no restart is announced).
pub fn shutdown(reason: &str) -> BusEvent {
    // OpenClaw's `restartExpectedMs` is an integer when a restart is
    // expected, absent otherwise (null fails its schema).
    let payload = json!({ "reason": reason });
    bus_event("shutdown", &payload, false)
}

/// `presence`: every row (droppable: the next one carries them all).
pub fn presence(entries: &[PresenceEntry], version: StateVersion) -> BusEvent {
    let mut e = bus_event("presence", &json!({ "presence": entries }), true);
    e.state_version = Some(version);
    e
}

/// `health`: the summary, serialised once by the root.
pub fn health(snapshot: HealthSnapshot, version: StateVersion) -> BusEvent {
    BusEvent {
        event: "health".to_string(),
        payload: snapshot.summary,
        drop_if_slow: false,
        state_version: Some(version),
        audience: audience("health"),
        topic: None,
    }
}

/// `exec.approval.requested` / `exec.approval.resolved` (an expired one is
/// denied with `reason: "timeout"`).
pub fn approval(event: ApprovalEvent) -> BusEvent {
    match event {
        ApprovalEvent::Requested {
            id,
            request,
            created_at_ms,
            expires_at_ms,
        } => {
            let payload = json!({ "id": id, "request": request, "createdAtMs": created_at_ms, "expiresAtMs": expires_at_ms });
            bus_event("exec.approval.requested", &payload, false)
        }
        ApprovalEvent::Resolved {
            id,
            decision,
            resolved_by,
            ts,
        } => {
            let word = decision.map(Decision::as_str).unwrap_or("deny");
            let mut payload = json!({ "id": id, "decision": word, "ts": ts });
            if decision.is_none() {
                payload["reason"] = json!("timeout");
            }
            if let Some(by) = resolved_by {
                payload["resolvedBy"] = json!(by);
            }
            bus_event("exec.approval.resolved", &payload, false)
        }
    }
}

/// `question.requested` (the record) / `question.resolved` (`{id, status,
/// answers?}`).
pub fn question(event: ferroclaw_actors::questions::QuestionEvent) -> BusEvent {
    use ferroclaw_actors::questions::QuestionEvent;
    match event {
        QuestionEvent::Requested(record) => {
            bus_event("question.requested", &record.to_json(), false)
        }
        QuestionEvent::Resolved { id, outcome } => {
            let mut payload = outcome.to_json();
            payload["id"] = json!(id);
            bus_event("question.resolved", &payload, false)
        }
    }
}

/// The wire's `errorKind` of a failed run (`chat` error events).
pub fn error_kind(kind: &FailureKind) -> &'static str {
    match kind {
        FailureKind::Provider(Some(ProviderError::RateLimited { .. })) => "rate_limit",
        FailureKind::Provider(Some(ProviderError::ContextOverflow(_))) => "context_length",
        FailureKind::Timeout => "timeout",
        _ => "unknown",
    }
}

/// `{input, output, cacheRead, cacheWrite, totalTokens}`, or null when a
/// run's usage is not known (failed, aborted, answered from its record).
pub fn usage(u: Option<&Usage>) -> Value {
    let Some(u) = u else {
        return Value::Null;
    };
    let total = u.input + u.output + u.cache_read + u.cache_write;
    json!({ "input": u.input, "output": u.output, "cacheRead": u.cache_read,
            "cacheWrite": u.cache_write, "totalTokens": total })
}

/// Where a run event stands: its run, session, per-run `seq` and time.
#[derive(Debug, Clone, Copy)]
pub struct At<'a> {
    pub run_id: &'a str,
    pub session_key: &'a str,
    pub seq: u64,
    pub ts: u64,
}

/// An assistant message as `chat` events carry it.
pub fn assistant_message(text: &str, ts: u64) -> Value {
    json!({ "role": "assistant", "content": [{ "type": "text", "text": text }], "timestamp": ts })
}

/// An `agent` event.
pub fn agent(at: At, stream: &str, data: Value) -> Value {
    json!({
        "runId": at.run_id, "seq": at.seq, "stream": stream, "ts": at.ts,
        "data": data, "sessionKey": at.session_key,
    })
}

/// An `agent` assistant event: the text so far and the increment,
/// serialized from borrowed text (no copy of the reply per token).
pub fn agent_text<'a>(at: At<'a>, text: &'a str, delta: &'a str) -> impl serde::Serialize + 'a {
    #[derive(serde::Serialize)]
    struct Data<'a> {
        text: &'a str,
        delta: &'a str,
    }
    #[derive(serde::Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Agent<'a> {
        run_id: &'a str,
        seq: u64,
        stream: &'static str,
        ts: u64,
        data: Data<'a>,
        session_key: &'a str,
    }
    Agent {
        run_id: at.run_id,
        seq: at.seq,
        stream: "assistant",
        ts: at.ts,
        data: Data { text, delta },
        session_key: at.session_key,
    }
}

/// A `chat` delta: the new text since the last one (`replace` when the
/// text was rewritten rather than extended) and the whole text so far.
pub fn chat_delta(at: At, delta_text: &str, text: &str, replace: bool) -> Value {
    let mut p = json!({
        "runId": at.run_id, "sessionKey": at.session_key, "seq": at.seq, "state": "delta",
        "deltaText": delta_text, "message": assistant_message(text, at.ts),
    });
    if replace {
        p["replace"] = json!(true);
    }
    p
}

/// A `chat` final; a silent reply (`NO_REPLY`) carries no message and says
/// `skipReason: "silent"`.
pub fn chat_final(at: At, text: &str, stop_reason: &str, u: &Usage, silent: bool) -> Value {
    let mut p = json!({
        "runId": at.run_id, "sessionKey": at.session_key, "seq": at.seq, "state": "final",
        "stopReason": stop_reason, "usage": usage(Some(u)),
    });
    if !silent && !text.is_empty() {
        p["message"] = assistant_message(text, at.ts);
        // The stored reply carries the same key (`transcript::reply_key`).
        p["message"]["__openclaw"] = json!({
            "runId": at.run_id,
            "idempotencyKey": ferroclaw_actors::transcript::reply_key(at.run_id),
        });
    }
    if silent {
        p["skipReason"] = json!("silent");
    }
    p
}

/// A `chat` error.
pub fn chat_error(at: At, error: &str, kind: &FailureKind) -> Value {
    json!({
        "runId": at.run_id, "sessionKey": at.session_key, "seq": at.seq, "state": "error",
        "errorMessage": error, "errorKind": error_kind(kind),
    })
}

/// A `chat` aborted, with the text the run had produced.
pub fn chat_aborted(at: At, text: &str) -> Value {
    let mut p = json!({
        "runId": at.run_id, "sessionKey": at.session_key, "seq": at.seq, "state": "aborted",
        "stopReason": "aborted",
    });
    if !text.is_empty() {
        p["message"] = assistant_message(text, at.ts);
    }
    p
}

/// `agent` lifecycle data: start.
pub fn lifecycle_start(ts: u64) -> Value {
    json!({ "phase": "start", "startedAt": ts })
}

/// A `chat` status while a run starts (OpenClaw's startup phases; ferroclaw
/// has one: `starting_model`, the first model call is next).
pub fn chat_status(at: At, phase: &str) -> Value {
    json!({
        "runId": at.run_id, "sessionKey": at.session_key, "seq": at.seq,
        "state": "status", "phase": phase,
    })
}

/// How a run ended, for its lifecycle events (OpenClaw's terminal fields).
pub struct Ending<'a> {
    pub started_at: u64,
    pub ended_at: u64,
    pub stop_reason: &'a str,
    pub aborted: bool,
    /// OpenClaw's `livenessState`: `working` when the run did its work,
    /// `blocked` when it failed or was stopped before it produced anything.
    pub working: bool,
}

impl Ending<'_> {
    fn data(&self, phase: &str) -> Value {
        json!({
            "phase": phase, "startedAt": self.started_at, "endedAt": self.ended_at,
            "aborted": self.aborted, "stopReason": self.stop_reason,
            "livenessState": if self.working { "working" } else { "blocked" },
        })
    }
}

/// `agent` lifecycle data: finishing (the reply is complete; its final
/// follows), as OpenClaw's runtime says it before the final.
pub fn lifecycle_finishing(e: &Ending) -> Value {
    e.data("finishing")
}

/// `agent` lifecycle data: end (`silent`: the reply was not delivered).
pub fn lifecycle_end(e: &Ending, silent: bool) -> Value {
    let mut d = e.data("end");
    d["executionSettled"] = json!(true);
    if silent {
        d["skipReason"] = json!("silent");
    }
    d
}

/// `agent` lifecycle data: error.
pub fn lifecycle_error(e: &Ending, error: &str) -> Value {
    let mut d = e.data("error");
    d["executionSettled"] = json!(true);
    d["error"] = json!(error);
    d
}

/// `session.tool` for a call that started.
pub fn session_tool_running(run_id: &str, key: &str, call: &ToolCall) -> Value {
    json!({
        "runId": run_id, "sessionKey": key, "toolName": call.name,
        "toolCallId": call.id, "input": call.arguments, "state": "running",
    })
}

/// `session.tool` for a call that ended (`full`: with its output).
pub fn session_tool_done(
    run_id: &str,
    key: &str,
    call: &ToolCall,
    outcome: &ToolOutcome,
    full: bool,
) -> Value {
    let mut p = json!({
        "runId": run_id, "sessionKey": key, "toolName": call.name, "toolCallId": call.id,
        "state": if outcome.is_error { "error" } else { "done" }, "isError": outcome.is_error,
    });
    if full {
        p["output"] = json!(outcome.text);
    }
    p
}

/// `agent` tool data for a call that started.
pub fn tool_start(call: &ToolCall) -> Value {
    json!({ "phase": "start", "name": call.name, "toolCallId": call.id, "args": call.arguments })
}

/// `agent` tool data for a running call's progress (`phase: "update"`,
/// OpenClaw's `partialResult` carrying the progress a tool reported).
pub fn tool_update(
    call: &ToolCall,
    progress: f64,
    total: Option<f64>,
    message: Option<&str>,
) -> Value {
    let mut partial = json!({ "progress": progress });
    if let Some(t) = total {
        partial["total"] = json!(t);
    }
    if let Some(m) = message {
        partial["message"] = json!(m);
    }
    json!({ "phase": "update", "name": call.name, "toolCallId": call.id, "partialResult": partial })
}

/// `agent` tool data for a call that ended (`full`: with its result text).
pub fn tool_result(call: &ToolCall, outcome: &ToolOutcome, skipped: bool, full: bool) -> Value {
    let mut d = json!({
        "phase": "result", "name": call.name, "toolCallId": call.id,
        "result": outcome.text, "isError": outcome.is_error, "skipped": skipped,
    });
    if !full {
        if let Some(o) = d.as_object_mut() {
            o.remove("result");
        }
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_filtered_by_scope_and_role_and_fail_closed() {
        let s = |x: &[&str]| x.iter().map(|v| v.to_string()).collect::<Vec<_>>();
        let check = |event: &str, role: Role, granted: &[&str], want: bool| {
            assert_eq!(
                may_receive(event, role, &s(granted)),
                want,
                "{event} {role:?} {granted:?}"
            );
        };
        check("tick", Role::Operator, &[], true);
        check("presence", Role::Node, &[], true);
        check("chat", Role::Operator, &[], false);
        check("chat", Role::Operator, &[scopes::READ], true);
        check("chat", Role::Operator, &[scopes::WRITE], true);
        check("chat", Role::Node, &[scopes::ADMIN], false);
        check(
            "device.pair.requested",
            Role::Operator,
            &[scopes::READ],
            false,
        );
        check(
            "device.pair.requested",
            Role::Operator,
            &[scopes::PAIRING],
            true,
        );
        check(
            "exec.approval.requested",
            Role::Operator,
            &[scopes::ADMIN],
            true,
        );
        check("talk.mode", Role::Operator, &[scopes::READ], false);
        check("made.up", Role::Operator, &[scopes::ADMIN], false);
        check("voicewake.changed", Role::Node, &[], true);
    }

    #[test]
    fn the_bus_reasons_close_with_the_protocol_codes() {
        assert_eq!(
            close_frame(CloseReason::SlowConsumer),
            (1008, "slow consumer")
        );
        assert_eq!(
            close_frame(CloseReason::ServiceRestart),
            (1012, "service restart")
        );
    }

    #[test]
    fn error_kinds_follow_the_failure() {
        let rl = FailureKind::Provider(Some(ProviderError::RateLimited {
            retry_after_ms: None,
        }));
        assert_eq!(error_kind(&rl), "rate_limit");
        assert_eq!(error_kind(&FailureKind::Timeout), "timeout");
        assert_eq!(error_kind(&FailureKind::Stopped), "unknown");
    }

    #[test]
    fn usage_adds_up_and_is_null_when_unknown() {
        let u = Usage {
            input: 3,
            output: 4,
            cache_read: 1,
            cache_write: 2,
            context: 0,
        };
        assert_eq!(usage(Some(&u))["totalTokens"], 10);
        assert_eq!(usage(None), Value::Null);
    }

    #[test]
    fn a_silent_final_carries_no_message() {
        let u = Usage::default();
        let at = At {
            run_id: "r",
            session_key: "k",
            seq: 1,
            ts: 0,
        };
        let p = chat_final(at, "", "stop", &u, true);
        assert_eq!(p["skipReason"], "silent");
        assert!(p.get("message").is_none());
        let p = chat_final(at, "hi", "stop", &u, false);
        assert_eq!(p["message"]["content"][0]["text"], "hi");
    }
}
