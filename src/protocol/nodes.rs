//! Nodes on the wire: the events a node's connection is sent
//! (`node.invoke.request`, `node.invoke.cancel`, `node.pair.resolved`),
//! what operators hear (`node.pair.requested|resolved`, `node.hostStats`,
//! `node.presence`), and `node.invoke`'s answers and errors in OpenClaw's
//! shapes.

use ferroclaw_actors::nodes::{InvokeError, NodeAnswer, NodeNews, ToNode};
use serde_json::{json, Value};

use super::errors::{ErrorCode, ErrorShape};
use super::frames;

/// The event frame a node's connection sends for `msg` (None: a close).
pub fn to_node_frame(msg: &ToNode) -> Option<String> {
    let ts = ferroclaw_actors::now_ms();
    let (name, payload) = match msg {
        ToNode::Invoke {
            id,
            node_id,
            command,
            params_json,
            timeout_ms,
            idempotency_key,
            session_key,
        } => {
            let mut p = json!({ "id": id, "nodeId": node_id, "command": command });
            if let Some(j) = params_json {
                p["paramsJSON"] = json!(j);
            }
            if let Some(t) = timeout_ms {
                p["timeoutMs"] = json!(t);
            }
            if let Some(k) = idempotency_key {
                p["idempotencyKey"] = json!(k);
            }
            if let Some(s) = session_key {
                p["sessionKey"] = json!(s);
            }
            ("node.invoke.request", p)
        }
        ToNode::Cancel { invoke_id, node_id } => (
            "node.invoke.cancel",
            json!({ "invokeId": invoke_id, "nodeId": node_id }),
        ),
        ToNode::PairResolved {
            request_id,
            node_id,
            decision,
        } => (
            "node.pair.resolved",
            json!({ "requestId": request_id, "nodeId": node_id, "decision": decision, "ts": ts }),
        ),
        ToNode::Close { .. } => return None,
    };
    let raw = serde_json::value::to_raw_value(&payload).ok()?;
    Some(frames::event(name, &raw, None, None))
}

/// The broadcast an operator event becomes: its name and payload (None:
/// a node event operators are not sent).
pub fn news(n: &NodeNews) -> Option<(&'static str, Value)> {
    let ts = ferroclaw_actors::now_ms();
    Some(match n {
        NodeNews::Requested(view) => (
            "node.pair.requested",
            serde_json::to_value(view).unwrap_or(Value::Null),
        ),
        NodeNews::Resolved {
            request_id,
            node_id,
            decision,
        } => (
            "node.pair.resolved",
            json!({ "requestId": request_id, "nodeId": node_id, "decision": decision, "ts": ts }),
        ),
        NodeNews::Event {
            node_id,
            event,
            payload,
        } => {
            let name = match event.as_str() {
                "node.hostStats" | "host.stats" | "hostStats" => "node.hostStats",
                "node.presence" | "presence" | "node.presence.alive" => "node.presence",
                _ => return None,
            };
            (
                name,
                json!({ "nodeId": node_id, "event": event, "payload": payload, "ts": ts }),
            )
        }
    })
}

/// A node's answer as `node.invoke` returns it: its payload, or its
/// error as `UNAVAILABLE <code>: <message>` with the node's error kept.
pub fn answer(node_id: &str, command: &str, a: &NodeAnswer) -> Result<Value, ErrorShape> {
    if a.ok {
        let payload = match (&a.payload, &a.payload_json) {
            (Some(p), _) => p.clone(),
            (None, Some(j)) => {
                serde_json::from_str(j).unwrap_or_else(|_| json!({ "payloadJSON": j }))
            }
            (None, None) => Value::Null,
        };
        let mut v =
            json!({ "ok": true, "nodeId": node_id, "command": command, "payload": payload });
        if let Some(j) = &a.payload_json {
            v["payloadJSON"] = json!(j);
        }
        return Ok(v);
    }
    let err = a.error.clone().unwrap_or(Value::Null);
    let code = err.get("code").and_then(Value::as_str).unwrap_or("");
    let message = err
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or("node invoke failed");
    let text = if code.is_empty() {
        message.to_string()
    } else {
        format!("{code}: {message}")
    };
    Err(ErrorShape::unavailable(text)
        .with_details(json!({ "nodeError": err, "nodeCommandDispatched": true })))
}

/// `node.invoke`'s failures before or around the node, in OpenClaw's codes.
pub fn invoke_error(e: &InvokeError) -> ErrorShape {
    let node_error = |code: &str, message: &str, dispatched: bool| {
        ErrorShape::unavailable(if code == "NOT_CONNECTED" {
            message.to_string()
        } else {
            format!("{code}: {message}")
        })
        .with_details(json!({
            "code": code,
            "nodeError": { "code": code, "message": message },
            "nodeCommandDispatched": dispatched,
        }))
    };
    match e {
        InvokeError::UnknownNode => ErrorShape::invalid("unknown nodeId"),
        InvokeError::Invalid(m) => ErrorShape::invalid(m.clone()),
        InvokeError::NotAllowed(m) => ErrorShape::invalid(m.clone()),
        InvokeError::NotConnected => node_error("NOT_CONNECTED", "node not connected", false),
        InvokeError::Timeout => node_error("TIMEOUT", "node invoke timed out", true),
        InvokeError::Disconnected => {
            node_error("DISCONNECTED", "node disconnected during invoke", true)
        }
        InvokeError::OutcomeUnknown { invoke_id } => {
            ErrorShape::new(ErrorCode::Unavailable, e.to_string()).with_details(json!({
                "code": "OUTCOME_UNKNOWN", "invokeId": invoke_id, "nodeCommandDispatched": true,
            }))
        }
        InvokeError::Busy => ErrorShape::unavailable(e.to_string()).retry_after(1000),
        InvokeError::Store(m) => {
            tracing::error!(error = %m, "node invoke failed");
            ErrorShape::unavailable(format!("store unavailable: {m}")).retry_after(1000)
        }
    }
}
