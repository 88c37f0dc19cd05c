//! Run events as wire payloads (protocol.md 6.3): `chat` (delta, final,
//! error, aborted), `agent` (lifecycle, assistant, thinking, tool) and
//! `session.tool`, plus the `errorKind` strings and the usage shape. Pure
//! functions of the typed events; the per-run `seq` and the delta throttle
//! are the chat bridge's (`ws::chat_bridge`).

use ferroclaw_actors::provider::{ProviderError, Usage};
use ferroclaw_actors::run::FailureKind;
use ferroclaw_actors::tool::ToolOutcome;
use serde_json::{json, Value};

use ferroclaw_actors::provider::ToolCall;

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

/// `agent` lifecycle data: end (`silent`: the reply was not delivered).
pub fn lifecycle_end(ts: u64, silent: bool, aborted: bool) -> Value {
    let mut d = json!({ "phase": "end", "endedAt": ts });
    if silent {
        d["skipReason"] = json!("silent");
    }
    if aborted {
        d["aborted"] = json!(true);
    }
    d
}

/// `agent` lifecycle data: error.
pub fn lifecycle_error(error: &str, ts: u64) -> Value {
    json!({ "phase": "error", "error": error, "endedAt": ts })
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
