//! The WebSocket edge's actor messages: the event bridge's (tool events,
//! send timing, chat events outside a run) and a connection's early frame.

use actix::prelude::*;
use ferroclaw_actors::ids::{ConnId, RunId};
use serde_json::Value;

/// Registers a connection that asked for tool events (caps
/// `["tool-events"]`) and started this run: `agent` tool events go to it.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct AddToolRecipient {
    pub run_id: RunId,
    pub conn_id: ConnId,
}

/// A Control UI sent message `run_id` (its idempotency key) on `conn_id`:
/// its run's steps go back to it as `chat.send_timing`.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct TimeChatSend {
    pub run_id: RunId,
    pub conn_id: ConnId,
    pub session_key: String,
}

/// The message `run_id` was acknowledged (`chat.send_timing` `dispatch-started`).
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct ChatSendAcked {
    pub run_id: RunId,
}

/// Publishes a `chat` event outside any run (`chat.inject`).
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct PublishChat {
    pub payload: Value,
}

/// A frame sent ahead of a method's final answer (`agent`'s accepted ack)
/// to request `req_id`.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct EarlyFrame {
    pub req_id: String,
    pub text: String,
}
