//! The audit ledger's records on the wire: OpenClaw's v1 activity records
//! (`audit.activity.list`; `AuditActivityEventV1Schema`), its older run
//! and tool records (`audit.list`; `AuditEventSchema`), and ferroclaw's
//! `control` records (same common fields, listed only for `kind:
//! "control"`). Each status carries the error, reason and stage codes
//! OpenClaw's schema pairs with it, and nothing else.

use ferroclaw_actors::audit::{
    Activity, ControlActivity, End, Entry, Flow, Inbound, MessageActivity, Outbound, Who,
};
use serde_json::{json, Map, Value};

/// A v1 activity record.
pub fn activity(e: &Entry) -> Value {
    let mut o = Map::new();
    o.insert("schemaVersion".into(), json!(1));
    common(e, &mut o);
    match &e.activity {
        Activity::AgentRun(r) => {
            o.insert("eventType".into(), json!("agent_run"));
            run_fields(
                &mut o,
                "agent.run",
                "run",
                &r.agent_id,
                &r.session_key,
                &r.run_id,
                r.end,
            );
        }
        Activity::ToolAction(t) => {
            o.insert("eventType".into(), json!("tool_action"));
            run_fields(
                &mut o,
                "tool.action",
                "tool",
                &t.agent_id,
                &t.session_key,
                &t.run_id,
                t.end,
            );
            tool_fields(&mut o, t.tool_call_id.as_deref(), &t.tool_name);
        }
        Activity::Message(m) => message(&mut o, m),
        Activity::Control(c) => control(&mut o, c),
    }
    Value::Object(o)
}

/// An `audit.list` record (runs and tools only: the caller filters the
/// others out): the v1 record without `schemaVersion` and `eventType`.
pub fn legacy(e: &Entry) -> Value {
    let mut v = activity(e);
    if let Some(o) = v.as_object_mut() {
        o.remove("schemaVersion");
        o.remove("eventType");
    }
    v
}

fn common(e: &Entry, o: &mut Map<String, Value>) {
    o.insert("eventId".into(), json!(e.event_id));
    o.insert("sequence".into(), json!(e.sequence));
    o.insert("sourceSequence".into(), json!(e.source_sequence()));
    o.insert("occurredAt".into(), json!(e.occurred_at));
    o.insert("redaction".into(), json!("metadata_only"));
    o.insert("kind".into(), json!(e.activity.kind()));
    o.insert("status".into(), json!(e.activity.status()));
}

fn put(o: &mut Map<String, Value>, k: &str, v: Option<&str>) {
    if let Some(v) = v.filter(|v| !v.is_empty()) {
        o.insert(k.into(), json!(v));
    }
}

/// A run's or a tool call's fields: `<family>.started|finished` and the
/// `<code>_*` error code of an end that did not succeed.
fn run_fields(
    o: &mut Map<String, Value>,
    family: &str,
    code: &str,
    agent: &str,
    session: &str,
    run: &str,
    end: Option<End>,
) {
    let phase = if end.is_some() { "finished" } else { "started" };
    o.insert("action".into(), json!(format!("{family}.{phase}")));
    let error = match end {
        None | Some(End::Succeeded) => None,
        Some(End::Failed) => Some("failed"),
        Some(End::Cancelled) => Some("cancelled"),
        Some(End::TimedOut) => Some("timed_out"),
        Some(End::Blocked) => Some("blocked"),
        Some(End::Unknown) => Some("outcome_unknown"),
    };
    if let Some(err) = error {
        o.insert("errorCode".into(), json!(format!("{code}_{err}")));
    }
    let agent = if agent.is_empty() { "main" } else { agent };
    o.insert("actor".into(), json!({ "type": "agent", "id": agent }));
    o.insert("agentId".into(), json!(agent));
    put(o, "sessionKey", Some(session));
    o.insert("runId".into(), json!(run));
}

fn tool_fields(o: &mut Map<String, Value>, call_id: Option<&str>, name: &str) {
    put(o, "toolCallId", call_id);
    put(o, "toolName", Some(name));
}

/// An outbound message's fields: who sent it and how its delivery went.
fn outbound(o: &mut Map<String, Value>, agent: Option<&str>, outcome: &Outbound, media: bool) {
    o.insert("eventType".into(), json!("outbound_message"));
    o.insert("action".into(), json!("message.outbound.finished"));
    o.insert("direction".into(), json!("outbound"));
    let actor = match agent {
        Some(a) if !a.is_empty() => json!({ "type": "agent", "id": a }),
        _ => json!({ "type": "system", "id": "gateway" }),
    };
    o.insert("actor".into(), actor);
    let kind = if media { "media" } else { "text" };
    let outcome = match outcome {
        Outbound::Sent => {
            o.insert("deliveryKind".into(), json!(kind));
            "sent"
        }
        Outbound::Suppressed => {
            o.insert("reasonCode".into(), json!("no_visible_payload"));
            "suppressed"
        }
        Outbound::Failed { partial } => {
            let code = if *partial {
                "message_delivery_partial_failure"
            } else {
                "message_delivery_failed"
            };
            o.insert("deliveryKind".into(), json!(kind));
            o.insert("errorCode".into(), json!(code));
            o.insert("failureStage".into(), json!("platform_send"));
            "failed"
        }
        Outbound::Unknown => {
            o.insert("failureStage".into(), json!("platform_send"));
            "unknown"
        }
    };
    o.insert("outcome".into(), json!(outcome));
}

fn message(o: &mut Map<String, Value>, m: &MessageActivity) {
    o.insert("channel".into(), json!(m.channel));
    o.insert("conversationKind".into(), json!(m.conversation.as_str()));
    if let Some(d) = m.duration_ms {
        o.insert("durationMs".into(), json!(d));
    }
    if let Some(n) = m.result_count {
        o.insert("resultCount".into(), json!(n));
    }
    put(o, "agentId", m.agent_id.as_deref());
    put(o, "runId", m.run_id.as_deref());
    put(o, "accountRef", m.account.as_deref());
    put(o, "conversationRef", m.chat.as_deref());
    put(o, "messageRef", m.message.as_deref());
    put(o, "targetRef", m.target.as_deref());
    match &m.flow {
        Flow::Inbound { sender, outcome } => {
            o.insert("eventType".into(), json!("inbound_message"));
            o.insert("action".into(), json!("message.inbound.processed"));
            o.insert("direction".into(), json!("inbound"));
            o.insert(
                "actor".into(),
                json!({ "type": "channel_sender", "id": sender }),
            );
            let outcome = match outcome {
                Inbound::Completed => "completed",
                Inbound::Refused => "skipped",
                Inbound::Failed => {
                    o.insert("errorCode".into(), json!("message_processing_failed"));
                    "failed"
                }
            };
            o.insert("outcome".into(), json!(outcome));
        }
        Flow::Outbound {
            agent,
            outcome,
            media,
        } => outbound(o, agent.as_deref(), outcome, *media),
    }
}

fn control(o: &mut Map<String, Value>, c: &ControlActivity) {
    o.insert("eventType".into(), json!("control"));
    o.insert("action".into(), json!(c.action));
    let (kind, id) = match &c.actor {
        Who::Operator(id) => ("operator", id),
        Who::ChannelSender(id) => ("channel_sender", id),
        Who::System(id) => ("system", id),
    };
    o.insert("actor".into(), json!({ "type": kind, "id": id }));
    put(o, "subject", c.subject.as_deref());
    put(o, "decision", c.decision.as_deref());
    if !c.paths.is_empty() {
        o.insert("paths".into(), json!(c.paths));
    }
}
