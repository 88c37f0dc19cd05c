//! The channels' actor messages: the supervisor's inbox (from the edge and
//! its account actors) and an account actor's inbox.

use std::sync::Arc;

use actix::prelude::*;

use super::access::PairingRequest;
use super::dispatch::Incoming;
use super::health::AccountSnapshot;
use crate::settings::Settings;
use crate::store::StoreError;

/// An account actor stopped (to the supervisor): `error` when it failed
/// (it is restarted with backoff), None when it was asked to stop.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct AccountStopped {
    pub channel: String,
    pub account: String,
    pub error: Option<String>,
}

/// Every configured account's measured health, with its settings' view.
/// Reply: the accounts in (channel, account) order.
#[derive(Debug, Message)]
#[rtype(result = "Vec<AccountStatus>")]
pub struct ChannelsStatus;

/// Reply: each account (of `channel`, or all) probed on its platform now,
/// within `limit`, in (channel, account) order.
#[derive(Debug, Message)]
#[rtype(result = "Vec<((String, String), Probe)>")]
pub struct ProbeAccounts {
    pub channel: Option<String>,
    pub limit: std::time::Duration,
}

/// One account's probe (OpenClaw's `{ok, error, elapsedMs}`), with who
/// answered (`bot`) when the platform says.
#[derive(Debug, Clone, PartialEq)]
pub struct Probe {
    pub ok: bool,
    pub error: Option<String>,
    pub elapsed_ms: u64,
    pub bot: Option<serde_json::Value>,
    pub at_ms: u64,
}

/// What the channels still owe, gateway-wide (`/metrics`): read from the
/// ledger in the store.
#[derive(Debug, Message)]
#[rtype(result = "Result<crate::channels::ledger::Backlog, StoreError>")]
pub struct ChannelsBacklog;

/// The records `durable.*` answers from, read once on the blocking pool.
/// `started_ms`: when this process started (an open reply older than that
/// was cut off by a stop).
#[derive(Debug, Message)]
#[rtype(result = "Result<crate::channels::inspect::Records, StoreError>")]
pub struct InspectDurable {
    pub started_ms: u64,
}

/// One account as `channels.status` shows it.
#[derive(Debug, Clone)]
pub struct AccountStatus {
    pub health: AccountSnapshot,
    pub configured: bool,
    /// Stopped by `channels.logout` (until the next start or config apply).
    pub logged_out: bool,
    pub dm_policy: String,
    pub allow_from: Vec<String>,
    pub stream_mode: String,
    pub api_base: String,
    pub bot_username: Option<String>,
    /// `AccountCfg::mode`.
    pub mode: &'static str,
    /// `AccountCfg::token_source`.
    pub token_source: &'static str,
}

/// Where an allowed channel message goes (to the supervisor, which owns
/// the bindings and the policies a config change replaces): its agent and
/// session, and the policies its hand-over reads.
#[derive(Debug, Message)]
#[rtype(result = "Result<super::dispatch::Routed, super::dispatch::DispatchError>")]
pub struct RouteIncoming {
    pub query: super::dispatch::RouteQuery,
}

/// The config changed: routes are rebuilt, changed accounts restarted.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct ChannelsReconfigure {
    pub settings: Arc<Settings>,
}

/// `channels.logout`: stops an account (all of a channel's when None).
/// Reply: the accounts stopped.
#[derive(Debug, Message)]
#[rtype(result = "Vec<String>")]
pub struct Logout {
    pub channel: String,
    pub account: Option<String>,
}

/// `channels.start`: starts accounts stopped by `Logout`. Reply: the
/// accounts started.
#[derive(Debug, Message)]
#[rtype(result = "Vec<String>")]
pub struct StartAccount {
    pub channel: String,
    pub account: Option<String>,
}

/// Pairing requests: list, approve or dismiss (the operator's side).
#[derive(Debug, Clone, Message)]
#[rtype(result = "Result<PairingAnswer, StoreError>")]
pub enum Pairing {
    List {
        channel: Option<String>,
    },
    /// `notify`: tell the sender they were admitted.
    Approve {
        channel: String,
        code: String,
        notify: bool,
    },
    Dismiss {
        channel: String,
        code: String,
    },
}

#[derive(Debug, Clone)]
pub enum PairingAnswer {
    List(Vec<PairingRequest>),
    /// The request acted on; None when no such code waits.
    Done(Option<PairingRequest>),
}

/// To an account actor: send `text` to a chat (a system notice such as a
/// pairing approval), once: `key` is its outbox key.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct Notify {
    pub to: String,
    pub key: String,
    pub text: String,
}

/// To an account actor: stop (logout, reconfigure, shutdown).
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct StopAccount;

/// Why a `SendText` did not land.
#[derive(Debug, thiserror::Error)]
pub enum ChannelSendError {
    #[error("no running {0} account")]
    NoAccount(String),
    #[error("refused: {0}")]
    Refused(String),
    /// The request left without an answer: it may have landed; it is not
    /// sent again (at most once).
    #[error("no answer from the platform (it may have been delivered; not sent again)")]
    Unknown,
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("the channel is stopping")]
    Down,
}

/// `send`: a text to a chat, once per `key` (the caller's idempotency key,
/// kept in the outbox: a repeat answers with the first send's message ids,
/// across restarts). Reply: the platform's message ids.
#[derive(Debug, Clone, Message)]
#[rtype(result = "Result<Vec<String>, ChannelSendError>")]
pub struct SendText {
    pub channel: String,
    pub account: Option<String>,
    pub to: String,
    pub thread_id: Option<String>,
    pub reply_to: Option<String>,
    pub text: String,
    /// Photos or documents (http(s) URLs, `media:<id>`) sent after the text.
    pub media: Vec<String>,
    /// The media is audio sent as the channel's voice note (the `tts` tool).
    pub voice: bool,
    pub key: String,
    /// Buttons under the text's last message (a question's options).
    pub buttons: Vec<Vec<crate::questions::Button>>,
}

/// What `message.action` does to a message in a chat.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MessageAct {
    /// The bot's reaction, added or taken away.
    React {
        emoji: String,
        remove: bool,
    },
    /// New text for a message the bot sent.
    Edit {
        text: String,
    },
    Delete,
}

/// `message.action` react, edit or delete on message `message_id` in chat
/// `to`, through the account's limiter (a retry after a lost answer is
/// safe: each act leaves the same state when repeated; the edge's
/// idempotency record answers a repeated request). Reply: done, or why not.
#[derive(Debug, Clone, Message)]
#[rtype(result = "Result<(), ChannelSendError>")]
pub struct ActOnMessage {
    pub channel: String,
    pub account: Option<String>,
    pub to: String,
    pub thread_id: Option<String>,
    pub message_id: String,
    pub act: MessageAct,
}

/// `chat.send` with `deliver`: a run's reply also goes to a chat. Reply:
/// whether an account took it.
#[derive(Debug, Clone, Message)]
#[rtype(result = "Result<(), ChannelSendError>")]
pub struct FollowRun {
    pub channel: String,
    pub account: Option<String>,
    pub delivery: super::ledger::Delivery,
}

/// An HTTP request to a channel's webhook path (Slack's Events API,
/// WhatsApp's Cloud API), for the account that answers on it. Reply: None
/// when no running account does.
#[derive(Debug, Message)]
#[rtype(result = "Option<WebhookReply>")]
pub struct RouteWebhook {
    pub webhook: Webhook,
}

/// One webhook request, as it came (the raw body: signatures are over
/// the bytes received).
#[derive(Debug, Clone, Message)]
#[rtype(result = "WebhookReply")]
pub struct Webhook {
    pub path: String,
    /// Slack's `X-Slack-Request-Timestamp`.
    pub timestamp: Option<String>,
    /// Slack's `X-Slack-Signature`, WhatsApp's `X-Hub-Signature-256`.
    pub signature: Option<String>,
    /// Slack's `X-Slack-Retry-Num`.
    pub retry_num: Option<String>,
    pub body: bytes::Bytes,
}

/// The answer for the platform.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookReply {
    pub status: u16,
    pub body: String,
}

/// From the connection: messages recorded in the ledger (flushed), to hand
/// over in order.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct Accepted {
    pub messages: Vec<Incoming>,
}

/// From the connection: it cannot go on (a refused token). The account
/// stops and the supervisor restarts it with backoff.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct ConnectionFailed {
    pub error: String,
}

#[derive(Message)]
#[rtype(result = "()")]
pub(super) struct DispatchNext {
    pub(super) chat: String,
}

/// Restart an account after a failure.
#[derive(Message)]
#[rtype(result = "()")]
pub(super) struct Restart {
    pub key: (String, String),
}

/// One step of the socket numbered `generation`.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct Tagged {
    pub generation: u64,
    pub event: SocketEvent,
}

/// What happens on a socket.
#[derive(Debug)]
pub enum SocketEvent {
    /// Connected: write through this.
    Opened(tokio::sync::mpsc::UnboundedSender<tokio_tungstenite::tungstenite::Message>),
    /// A text frame, or None for any other frame (pings, pongs): the
    /// socket is alive.
    Frame(Option<String>),
    /// The socket ended (or never opened): the close code the platform
    /// sent, if any, and why.
    Closed { code: Option<u16>, error: String },
}
