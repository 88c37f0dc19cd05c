//! `message.action` (`openclaw message send|react|edit|delete`): what an
//! operator does to a chat through a channel account. `send` and `reply`
//! go through the channel outbox like `send` (once per idempotency key,
//! across restarts); `react`, `edit` and `delete` go through the account's
//! limiter, and a repeated request is answered from the idempotency
//! record. Other actions OpenClaw's plugins offer (polls, pins, threads,
//! moderation) are refused in OpenClaw's words.

use ferroclaw_actors::channels::{ActOnMessage, MessageAct, SendText};
use serde::Deserialize;
use serde_json::{json, Value};

use super::{down, json, params, store_err, MethodResult};
use crate::protocol::errors::ErrorShape;
use crate::state::SharedState;

/// OpenClaw's `MessageActionParams` (the keys ferroclaw has no use for are
/// accepted as the schema allows them).
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[allow(dead_code)]
struct ActionParams {
    channel: String,
    action: String,
    params: serde_json::Map<String, Value>,
    #[serde(default)]
    reply: Option<Value>,
    #[serde(default)]
    account_id: Option<String>,
    #[serde(default)]
    requester_account_id: Option<String>,
    #[serde(default)]
    requester_sender_id: Option<String>,
    #[serde(default)]
    sender_is_owner: Option<bool>,
    #[serde(default)]
    session_key: Option<String>,
    #[serde(default)]
    session_id: Option<String>,
    #[serde(default)]
    inbound_turn_kind: Option<String>,
    #[serde(default)]
    agent_id: Option<String>,
    #[serde(default)]
    tool_context: Option<Value>,
    #[serde(default)]
    conversation_read_origin: Option<String>,
    idempotency_key: String,
}

/// A string param, trimmed; numbers are taken as their digits.
fn text(p: &serde_json::Map<String, Value>, key: &str) -> Option<String> {
    match p.get(key)? {
        Value::String(s) => Some(s.trim().to_string()).filter(|s| !s.is_empty()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

fn need(p: &serde_json::Map<String, Value>, key: &str, action: &str) -> Result<String, ErrorShape> {
    text(p, key).ok_or_else(|| ErrorShape::invalid(format!("{action} requires {key}")))
}

/// The chat a target names: `target`, else `to`, without the channel's
/// prefix (`telegram:123`) or a `channel:` kind (`channel:C123`).
fn chat_of(channel: &str, p: &serde_json::Map<String, Value>) -> Result<String, ErrorShape> {
    let raw = text(p, "target")
        .or_else(|| text(p, "to"))
        .ok_or_else(|| ErrorShape::invalid("message action requires a target"))?;
    let rest = raw
        .strip_prefix(&format!("{channel}:"))
        .unwrap_or(&raw)
        .to_string();
    if let Some(user) = rest.strip_prefix("user:") {
        return Err(ErrorShape::invalid(format!(
            "target user:{user}: ferroclaw sends to chats and channels it has, not to a user by id; use the chat's id"
        )));
    }
    Ok(rest.strip_prefix("channel:").unwrap_or(&rest).to_string())
}

pub async fn action(state: &SharedState, p: &Value) -> MethodResult {
    let a: ActionParams = params("message.action", p)?;
    if a.idempotency_key.trim().is_empty() {
        return Err(ErrorShape::invalid(
            "invalid message.action params: at /idempotencyKey: must NOT have fewer than 1 characters",
        ));
    }
    let channel = a.channel.trim().to_ascii_lowercase();
    let account = a
        .account_id
        .clone()
        .or_else(|| text(&a.params, "accountId"));
    let to = chat_of(&channel, &a.params)?;
    let thread_id = text(&a.params, "threadId");
    let act = match a.action.as_str() {
        "send" | "reply" => return send(state, &a, channel, account, to, thread_id).await,
        "react" => {
            let remove = a.params.get("remove").and_then(Value::as_bool) == Some(true);
            let emoji = need(&a.params, "emoji", "react")?;
            MessageAct::React { emoji, remove }
        }
        "edit" => MessageAct::Edit {
            text: need(&a.params, "message", "edit")?,
        },
        "delete" => MessageAct::Delete,
        other => {
            return Err(ErrorShape::invalid(format!(
                "Channel {channel} does not support action {other}."
            )))
        }
    };
    let message_id = need(&a.params, "messageId", &a.action)?;
    let answer = match &act {
        MessageAct::React {
            emoji,
            remove: false,
        } => json!({"ok": true, "added": emoji}),
        MessageAct::React {
            emoji,
            remove: true,
        } => json!({"ok": true, "removed": emoji}),
        MessageAct::Edit { .. } => json!({"ok": true, "edited": true, "messageId": message_id}),
        MessageAct::Delete => json!({"ok": true, "deleted": true, "messageId": message_id}),
    };
    state
        .gateway
        .channels
        .send(ActOnMessage {
            channel,
            account,
            to,
            thread_id,
            message_id,
            act,
        })
        .await
        .map_err(down)?
        .map_err(store_err)?;
    json(answer)
}

/// `send` / `reply`: a text (and media) through the outbox.
/// `media`, `mediaUrl` and `mediaUrls`: each an http(s) URL the platform
/// fetches itself.
fn media_urls(params: &serde_json::Map<String, Value>) -> Result<Vec<String>, ErrorShape> {
    let media: Vec<String> = ["media", "mediaUrl"]
        .iter()
        .filter_map(|k| text(params, k))
        .chain(
            params
                .get("mediaUrls")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|u| u.as_str().map(str::to_string)),
        )
        .collect();
    if let Some(bad) = media
        .iter()
        .find(|u| !(u.starts_with("https://") || u.starts_with("http://")))
    {
        return Err(ErrorShape::invalid(format!(
            "media must be an http(s) URL the platform can fetch: {bad}"
        )));
    }
    Ok(media)
}

async fn send(
    state: &SharedState,
    a: &ActionParams,
    channel: String,
    account: Option<String>,
    to: String,
    thread_id: Option<String>,
) -> MethodResult {
    let message = text(&a.params, "message").unwrap_or_default();
    let media = media_urls(&a.params)?;
    if message.is_empty() && media.is_empty() {
        return Err(ErrorShape::invalid("send requires message or media"));
    }
    let reply_to = text(&a.params, "replyTo").or_else(|| text(&a.params, "messageId"));
    if a.action == "reply" && reply_to.is_none() {
        return Err(ErrorShape::invalid("reply requires messageId"));
    }
    let ids = state
        .gateway
        .channels
        .send(SendText {
            channel: channel.clone(),
            account,
            to: to.clone(),
            thread_id,
            reply_to,
            text: message,
            media,
            key: a.idempotency_key.clone(),
            buttons: Vec::new(),
            voice: false,
        })
        .await
        .map_err(down)?
        .map_err(store_err)?;
    json(json!({
        "ok": true,
        "channel": channel,
        "to": to,
        "messageId": ids.last().cloned().unwrap_or_default(),
        "messageIds": ids,
    }))
}
