//! The tools that end the run's turn with a final text of their own:
//! `sessions_yield` (wait for sub-agents' results, which come back as the
//! session's next message; `acknowledgment` is the reply meanwhile, else
//! nothing is said) and `heartbeat_respond` (a heartbeat's structured
//! answer: `notify: false` is the heartbeat acknowledgement, which is
//! never delivered; `notify: true` delivers `notificationText` as its
//! alert). The run loop ends the turn after either succeeds
//! (`ToolOutcome::ends_turn`).

use serde_json::Value;

use super::{error, ToolOutcome};
/// The heartbeat acknowledgement and the silent reply, as the run judges
/// them (`run::reply`, `context::prompt`; equal by the run's tests).
pub const HEARTBEAT_TOKEN: &str = "HEARTBEAT_OK";
pub const SILENT_REPLY: &str = "NO_REPLY";

fn text<'a>(args: &'a Value, key: &str) -> Option<&'a str> {
    args.get(key)
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
}

fn ending(result: String, final_text: String) -> ToolOutcome {
    ToolOutcome {
        text: result,
        is_error: false,
        blocked: false,
        images: Vec::new(),
        ends_turn: Some(final_text),
    }
}

/// `sessions_yield`: `waitFor` ("message"), `message` (private context for
/// the next turn), `acknowledgment`.
pub fn sessions_yield(args: &Value) -> ToolOutcome {
    if let Some(w) = args.get("waitFor").filter(|w| !w.is_null()) {
        if w.as_str() != Some("message") {
            return error("sessions_yield: waitFor can only be \"message\"");
        }
    }
    let note = text(args, "message").unwrap_or("");
    let ack = text(args, "acknowledgment").unwrap_or("");
    let result = match note {
        "" => "Yielded: this turn ends; results come back as the next message.".to_string(),
        n => format!(
            "Yielded: this turn ends; results come back as the next message. Note for then: {n}"
        ),
    };
    // Nothing to say: the silent reply.
    let final_text = match ack {
        "" => SILENT_REPLY.to_string(),
        a => a.to_string(),
    };
    ending(result, final_text)
}

const OUTCOMES: &[&str] = &[
    "no_change",
    "progress",
    "done",
    "blocked",
    "needs_attention",
];

/// `heartbeat_respond`: `outcome`, `notify`, `summary` (required),
/// `notificationText` (required with notify), `reason`, `priority`,
/// `nextCheck`, `scratch`.
pub fn heartbeat_respond(args: &Value) -> ToolOutcome {
    let Some(outcome) = text(args, "outcome").filter(|o| OUTCOMES.contains(o)) else {
        return error(format!(
            "heartbeat_respond: outcome must be one of {}",
            OUTCOMES.join(", ")
        ));
    };
    let Some(notify) = args.get("notify").and_then(Value::as_bool) else {
        return error("heartbeat_respond: notify (true or false) is required");
    };
    let Some(summary) = text(args, "summary") else {
        return error("heartbeat_respond: summary is required");
    };
    if let Some(p) = text(args, "priority") {
        if !["low", "normal", "high"].contains(&p) {
            return error("heartbeat_respond: priority must be low, normal or high");
        }
    }
    match (notify, text(args, "notificationText")) {
        (true, None) => error("heartbeat_respond: notify=true needs a concise notificationText"),
        (true, Some(alert)) => ending(
            format!("Accepted ({outcome}): the alert is delivered. {summary}"),
            alert.to_string(),
        ),
        (false, _) => ending(
            format!("Accepted ({outcome}): nothing is sent. {summary}"),
            HEARTBEAT_TOKEN.to_string(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_heartbeat_answer_is_an_alert_or_the_silent_acknowledgement() {
        let quiet = heartbeat_respond(
            &json!({"outcome": "no_change", "notify": false, "summary": "inbox empty"}),
        );
        assert_eq!(quiet.ends_turn.as_deref(), Some(HEARTBEAT_TOKEN));
        let alert = heartbeat_respond(
            &json!({"outcome": "needs_attention", "notify": true, "summary": "s", "notificationText": "Server down"}),
        );
        assert_eq!(alert.ends_turn.as_deref(), Some("Server down"));
        for bad in [
            json!({"outcome": "meh", "notify": false, "summary": "s"}),
            json!({"outcome": "done", "summary": "s"}),
            json!({"outcome": "done", "notify": true, "summary": "s"}),
            json!({"outcome": "done", "notify": false}),
        ] {
            let out = heartbeat_respond(&bad);
            assert!(out.is_error && out.ends_turn.is_none(), "{bad}");
        }
        let y = sessions_yield(&json!({"acknowledgment": "On it, back soon"}));
        assert_eq!(y.ends_turn.as_deref(), Some("On it, back soon"));
        assert!(sessions_yield(&json!({"waitFor": "later"})).is_error);
    }
}
