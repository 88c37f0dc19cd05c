//! `message`: the agent sends, replies, reacts, edits and deletes through
//! the channels, with `message.action` (the method `openclaw message`
//! uses). Without `channel`/`target` it acts on the conversation the turn
//! came from. A send goes through the channel outbox under a key made of
//! the run and the tool call (`ledger::tool_send_key`): a run restarted
//! from its last step repeats the call and the outbox answers it with the
//! first send, so nothing is sent twice; and when the send went to the
//! turn's own chat the run's final text is not sent again
//! (`ledger::answered_by_tool`). Polls, pins, threads and the rest of
//! OpenClaw's actions are refused naming the platform.

use ferroclaw_actors::channels::ledger::tool_send_key;
use ferroclaw_actors::tool::{ExecuteTool, ToolOutcome};
use serde_json::{json, Map, Value};

use super::{answer, fail, refused, text, ToolError};
use crate::state::SharedState;
use crate::ws::methods::message_action;

const TOOL: &str = "message";

/// Where an action goes.
#[derive(Debug, Clone, PartialEq)]
struct Route {
    channel: String,
    to: String,
    account: Option<String>,
    thread: Option<String>,
    /// The turn's own conversation.
    own: bool,
}

/// The route of `target` (None: the turn's conversation).
fn route(
    msg: &ExecuteTool,
    channel: Option<&str>,
    target: Option<&str>,
) -> Result<Route, ToolError> {
    let origin = msg.origin.as_ref();
    let channel = channel.map(str::to_ascii_lowercase);
    let own = |o: &ferroclaw_actors::tool::Route| Route {
        channel: o.channel.clone(),
        to: o.to.clone(),
        account: Some(o.account_id.clone()),
        thread: o.thread_id.clone(),
        own: true,
    };
    match (channel, target, origin) {
        (None, None, Some(o)) => Ok(own(o)),
        (Some(c), None, Some(o)) if c == o.channel => Ok(own(o)),
        (_, None, _) => Err(ToolError::Invalid(
            "no target: this turn did not come from a channel conversation; give channel and target".into(),
        )),
        (c, Some(t), o) => {
            let channel = c
                .or_else(|| o.map(|o| o.channel.clone()))
                .ok_or_else(|| ToolError::Invalid("give channel with target (telegram, slack, discord, whatsapp, signal, matrix)".into()))?;
            let t1 = t.strip_prefix(&format!("{channel}:")).unwrap_or(t);
            let bare = t1.strip_prefix("channel:").unwrap_or(t1);
            match o {
                Some(o) if o.channel == channel && o.to == bare => Ok(own(o)),
                _ => Ok(Route {
                    channel,
                    to: t.to_string(),
                    account: None,
                    thread: None,
                    own: false,
                }),
            }
        }
    }
}

pub(super) async fn run(state: &SharedState, msg: &ExecuteTool) -> ToolOutcome {
    let args = &msg.call.arguments;
    let Some(action) = text(args, "action") else {
        return fail("message: `action` is required (send, reply, thread-reply, react, edit, delete, broadcast)");
    };
    let targets: Vec<&str> = match action {
        "broadcast" => args
            .get("targets")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .chain(text(args, "target"))
            .collect(),
        _ => text(args, "target").into_iter().collect(),
    };
    if action == "broadcast" && targets.is_empty() {
        return fail("message: broadcast needs targets");
    }
    let routes: Result<Vec<Route>, ToolError> = match targets.is_empty() {
        true => route(msg, text(args, "channel"), None).map(|r| vec![r]),
        false => targets
            .iter()
            .map(|t| route(msg, text(args, "channel"), Some(t)))
            .collect(),
    };
    let routes = match routes {
        Ok(r) => r,
        Err(e) => return fail(format!("message: {e}")),
    };
    if msg.trust.untrusted && routes.iter().any(|r| !r.own) {
        return refused(
            "message: this turn holds a message from outside; it may answer only the conversation it came from",
        );
    }
    let mut answers = Vec::new();
    for (i, r) in routes.iter().enumerate() {
        let out = one(state, msg, action, r, i).await;
        if out.is_error || routes.len() == 1 {
            return out;
        }
        answers.push(out.text);
    }
    ToolOutcome::ok(format!("[{}]", answers.join(",")))
}

/// Where the action goes: the route's target, account and thread (a
/// Discord thread is a channel of its own: it is the target).
fn target(args: &Value, r: &Route) -> (Map<String, Value>, Option<String>) {
    let mut params = Map::new();
    params.insert("target".into(), json!(r.to));
    if let Some(a) = text(args, "accountId")
        .map(str::to_string)
        .or(r.account.clone())
    {
        params.insert("accountId".into(), json!(a));
    }
    let thread = text(args, "threadId")
        .map(str::to_string)
        .or(r.thread.clone());
    match &thread {
        Some(t) if r.channel == "discord" => {
            params.insert("target".into(), json!(t));
        }
        Some(t) => {
            params.insert("threadId".into(), json!(t));
        }
        None => {}
    }
    (params, thread)
}

/// The action's own parameters into `params`; the `message.action`
/// action it becomes.
fn action_params<'a>(
    action: &'a str,
    args: &Value,
    r: &Route,
    thread: Option<&str>,
    params: &mut Map<String, Value>,
) -> Result<&'a str, ToolError> {
    let invalid = |m: &str| ToolError::Invalid(m.to_string());
    let message_id = text(args, "messageId").or_else(|| text(args, "message_id"));
    let body = text(args, "message").or_else(|| text(args, "caption"));
    match action {
        "send" | "broadcast" | "thread-reply" | "reply" => {
            if action == "thread-reply" && thread.is_none() {
                return Err(invalid("thread-reply needs threadId"));
            }
            let reply_to = text(args, "replyTo").or(message_id);
            if action == "reply" && reply_to.is_none() {
                return Err(invalid("reply needs replyTo (the message id)"));
            }
            for (k, v) in [
                ("message", body),
                ("media", text(args, "media")),
                ("replyTo", reply_to),
            ] {
                if let Some(v) = v {
                    params.insert(k.into(), json!(v));
                }
            }
            Ok("send")
        }
        "react" | "edit" | "delete" => {
            let Some(id) = message_id else {
                return Err(invalid(&format!("{action} needs messageId")));
            };
            params.insert("messageId".into(), json!(id));
            if action == "react" {
                let e = text(args, "emoji").ok_or_else(|| invalid("react needs emoji"))?;
                params.insert("emoji".into(), json!(e));
                if args.get("remove").and_then(Value::as_bool) == Some(true) {
                    params.insert("remove".into(), json!(true));
                }
            }
            if action == "edit" {
                let b = body.ok_or_else(|| invalid("edit needs message (the new text)"))?;
                params.insert("message".into(), json!(b));
            }
            Ok(action)
        }
        other => Err(ToolError::Unsupported(format!(
            "Channel {} does not support action {other}.",
            r.channel
        ))),
    }
}

/// One action on one route.
async fn one(
    state: &SharedState,
    msg: &ExecuteTool,
    action: &str,
    r: &Route,
    i: usize,
) -> ToolOutcome {
    let args = &msg.call.arguments;
    let (mut params, thread) = target(args, r);
    let method_action = match action_params(action, args, r, thread.as_deref(), &mut params) {
        Ok(a) => a,
        Err(e) => return fail(format!("message: {e}")),
    };
    if args.get("dryRun").and_then(Value::as_bool) == Some(true) {
        return ToolOutcome::ok(json!({ "ok": true, "dryRun": true, "channel": r.channel, "action": method_action, "params": params }).to_string());
    }
    let key = match &msg.run_id {
        Some(run) => tool_send_key(run.as_str(), &format!("{}.{i}", msg.call.id)),
        None => format!("tool:{}", ulid::Ulid::generate()),
    };
    let p = json!({
        "channel": r.channel,
        "action": method_action,
        "params": params,
        "idempotencyKey": key,
    });
    answer(TOOL, message_action::action(state, &p).await)
}
