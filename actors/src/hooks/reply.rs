//! What a hook's output means, per dialect, and how the answers of a
//! point's hooks merge (OpenClaw's contracts: a block or a cancel is
//! terminal, the first claim wins, context concatenates in priority
//! order, the last rewrite of params or content wins, the first model
//! override wins).
//!
//! Claude Code's protocol: exit 0 with JSON on stdout (`decision`,
//! `reason`, `continue`, `stopReason`, `hookSpecificOutput` with
//! `permissionDecision`, `permissionDecisionReason`, `updatedInput`,
//! `additionalContext`), or plain stdout (context, for `UserPromptSubmit`
//! and `SessionStart`); exit 2 blocks with stderr as the reason (fed to
//! the model after a tool ran); any other code is a non-blocking error.
//! The OpenClaw dialect: exit 0 with OpenClaw's result object (or
//! nothing), exit 2 blocks, any other code or anything on stdout that is
//! not a JSON object is the hook's failure.

use serde_json::Value;

use super::command::Ran;
use super::points::HookPoint;
use super::table::Dialect;
use super::HookError;

/// One hook's answer, or the merged answer of a point.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HookReply {
    /// Refused, with the reason.
    pub block: Option<String>,
    /// The tool call's params rewritten.
    pub params: Option<Value>,
    /// Text for the model (wrapped as outside data where it is added).
    pub context: Vec<String>,
    /// The outgoing text rewritten.
    pub content: Option<String>,
    pub cancel: bool,
    /// Answered without a model call (`before_agent_reply`; `Some("")`:
    /// silence).
    pub reply: Option<String>,
    pub model: Option<String>,
    pub provider: Option<String>,
}

impl HookReply {
    /// Whether later hooks of the point still run.
    fn terminal(&self) -> bool {
        self.block.is_some() || self.cancel || self.reply.is_some()
    }

    /// Whether it changes anything (audited).
    pub fn changes(&self) -> bool {
        self.params.is_some() || self.content.is_some() || !self.context.is_empty()
    }

    /// Folds `next` (a lower-priority hook's answer) in; false once
    /// nothing after it runs.
    pub fn merge(&mut self, next: HookReply) -> bool {
        if next.params.is_some() {
            self.params = next.params;
        }
        if next.content.is_some() {
            self.content = next.content;
        }
        self.context.extend(next.context);
        self.model = self.model.take().or(next.model);
        self.provider = self.provider.take().or(next.provider);
        self.block = next.block;
        self.cancel = next.cancel;
        self.reply = next.reply;
        !self.terminal()
    }
}

fn text(v: &Value, key: &str) -> Option<String> {
    v.get(key)
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

fn reason(stderr: &str, fallback: &str) -> String {
    let s = stderr.trim();
    if s.is_empty() {
        fallback.to_string()
    } else {
        s.chars().take(2000).collect()
    }
}

/// `ran`'s meaning at `point` in `dialect`.
pub fn interpret(point: HookPoint, dialect: Dialect, ran: &Ran) -> Result<HookReply, HookError> {
    match dialect {
        Dialect::OpenClaw => openclaw(point, ran),
        Dialect::Claude(_) => claude(point, ran),
    }
}

fn object(stdout: &str) -> Result<Option<Value>, HookError> {
    let out = stdout.trim();
    if out.is_empty() {
        return Ok(None);
    }
    match serde_json::from_str::<Value>(out) {
        Ok(v @ Value::Object(_)) => Ok(Some(v)),
        _ => Err(HookError::Garbage(out.chars().take(200).collect())),
    }
}

fn openclaw(point: HookPoint, ran: &Ran) -> Result<HookReply, HookError> {
    match ran.code {
        Some(0) => {}
        Some(2) => return Ok(blocked(point, reason(&ran.stderr, "blocked by a hook"))),
        code => return Err(HookError::Exit(code, reason(&ran.stderr, ""))),
    }
    let Some(v) = object(&ran.stdout)? else {
        return Ok(HookReply::default());
    };
    let mut r = HookReply::default();
    if v.get("block").and_then(Value::as_bool) == Some(true) {
        r.block = Some(text(&v, "blockReason").unwrap_or_else(|| "blocked by a hook".into()));
    }
    if let Some(p @ Value::Object(_)) = v.get("params") {
        r.params = Some(p.clone());
    }
    for key in [
        "prependContext",
        "appendContext",
        "prependSystemContext",
        "appendSystemContext",
    ] {
        r.context.extend(text(&v, key));
    }
    r.content = v.get("content").and_then(Value::as_str).map(str::to_string);
    r.cancel = v.get("cancel").and_then(Value::as_bool) == Some(true);
    if v.get("handled").and_then(Value::as_bool) == Some(true) {
        r.reply = Some(
            v.get("reply")
                .and_then(|r| text(r, "text"))
                .unwrap_or_default(),
        );
    }
    r.model = text(&v, "modelOverride");
    r.provider = text(&v, "providerOverride");
    Ok(r)
}

/// A block where the point can block; elsewhere what Claude does with it.
pub(super) fn blocked(point: HookPoint, why: String) -> HookReply {
    match point {
        HookPoint::BeforeToolCall => HookReply {
            block: Some(why),
            ..Default::default()
        },
        // Claude erases the prompt and shows the reason to the user.
        HookPoint::BeforePromptBuild | HookPoint::BeforeAgentReply => HookReply {
            reply: Some(format!("Blocked by a hook: {why}")),
            ..Default::default()
        },
        HookPoint::MessageSending => HookReply {
            cancel: true,
            ..Default::default()
        },
        // After a tool ran: the reason goes to the model.
        HookPoint::AfterToolCall => HookReply {
            context: vec![why],
            ..Default::default()
        },
        _ => HookReply::default(),
    }
}

fn claude(point: HookPoint, ran: &Ran) -> Result<HookReply, HookError> {
    match ran.code {
        Some(0) => {}
        Some(2) => return Ok(blocked(point, reason(&ran.stderr, "blocked by a hook"))),
        code => return Err(HookError::Exit(code, reason(&ran.stderr, ""))),
    }
    let out = ran.stdout.trim();
    if !out.starts_with('{') {
        let plain_context = matches!(
            point,
            HookPoint::BeforePromptBuild | HookPoint::SessionStart
        );
        return Ok(HookReply {
            context: (plain_context && !out.is_empty())
                .then(|| out.to_string())
                .into_iter()
                .collect(),
            ..Default::default()
        });
    }
    let v = object(out)?.unwrap_or_default();
    let specific = v.get("hookSpecificOutput").cloned().unwrap_or_default();
    if v.get("continue").and_then(Value::as_bool) == Some(false) {
        let why = text(&v, "stopReason").unwrap_or_else(|| "stopped by a hook".into());
        return Ok(blocked(point, why));
    }
    let denied = specific.get("permissionDecision").and_then(Value::as_str) == Some("deny")
        || v.get("decision").and_then(Value::as_str) == Some("block");
    if denied {
        let why = text(&specific, "permissionDecisionReason")
            .or_else(|| text(&v, "reason"))
            .unwrap_or_else(|| "blocked by a hook".into());
        return Ok(blocked(point, why));
    }
    let mut r = HookReply::default();
    if let Some(p @ Value::Object(_)) = specific.get("updatedInput") {
        r.params = Some(p.clone());
    }
    r.context.extend(text(&specific, "additionalContext"));
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn ran(code: i32, stdout: &str, stderr: &str) -> Ran {
        Ran {
            code: Some(code),
            stdout: stdout.into(),
            stderr: stderr.into(),
            took: Duration::ZERO,
        }
    }

    #[test]
    fn claude_exit_codes_and_json_decide_as_claude_code_defines() {
        let pre = Dialect::Claude("PreToolUse");
        let r = interpret(HookPoint::BeforeToolCall, pre, &ran(2, "", "no rm\n")).unwrap();
        assert_eq!(r.block.as_deref(), Some("no rm"));
        let deny = r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"nope"}}"#;
        let r = interpret(HookPoint::BeforeToolCall, pre, &ran(0, deny, "")).unwrap();
        assert_eq!(r.block.as_deref(), Some("nope"));
        let rewrite = r#"{"hookSpecificOutput":{"permissionDecision":"allow","updatedInput":{"command":"ls"}}}"#;
        let r = interpret(HookPoint::BeforeToolCall, pre, &ran(0, rewrite, "")).unwrap();
        assert_eq!(r.params, Some(serde_json::json!({"command": "ls"})));
        let prompt = Dialect::Claude("UserPromptSubmit");
        let r = interpret(
            HookPoint::BeforePromptBuild,
            prompt,
            &ran(0, "today is Tuesday\n", ""),
        )
        .unwrap();
        assert_eq!(r.context, ["today is Tuesday"]);
        assert!(matches!(
            interpret(HookPoint::BeforeToolCall, pre, &ran(1, "", "oops")),
            Err(HookError::Exit(Some(1), _))
        ));
        assert!(matches!(
            interpret(HookPoint::BeforeToolCall, pre, &ran(0, "{not json", "")),
            Err(HookError::Garbage(_))
        ));
    }

    #[test]
    fn openclaw_results_merge_in_priority_order() {
        let oc = Dialect::OpenClaw;
        assert!(matches!(
            interpret(HookPoint::MessageSending, oc, &ran(0, "hello", "")),
            Err(HookError::Garbage(_))
        ));
        let mut merged = HookReply::default();
        let a = interpret(
            HookPoint::BeforePromptBuild,
            oc,
            &ran(0, r#"{"prependContext":"a","modelOverride":"m1"}"#, ""),
        )
        .unwrap();
        let b = interpret(
            HookPoint::BeforePromptBuild,
            oc,
            &ran(0, r#"{"appendContext":"b","modelOverride":"m2"}"#, ""),
        )
        .unwrap();
        assert!(merged.merge(a) && merged.merge(b));
        assert_eq!(
            (merged.context.clone(), merged.model.as_deref()),
            (vec!["a".to_string(), "b".to_string()], Some("m1"))
        );
        let cancel = interpret(
            HookPoint::MessageSending,
            oc,
            &ran(0, r#"{"cancel":true}"#, ""),
        )
        .unwrap();
        assert!(!merged.merge(cancel), "a cancel is terminal");
    }
}
