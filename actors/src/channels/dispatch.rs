//! The inbound pipeline's second half, shared by every adapter: an
//! accepted message (`Incoming`, stored as the ledger's dispatch record)
//! goes through the channel's access rules, is finalised (`inbound::finalize`),
//! routed (`routing::Router`: agent and session key), and handed to its
//! session with a message id made from its dedupe key, so a message handed
//! over twice (a restart between the hand-over and its record) is a
//! duplicate the session recognises. The session's ack names the run that
//! answers it; that run becomes the account's `Delivery`, recorded in the
//! transaction that removes the dispatch record.

use std::sync::{Arc, Mutex};

use actix::prelude::*;
use serde::{Deserialize, Serialize};

use super::ledger::{self, Delivery};
use crate::inbound::finalize::{finalize, RawInbound};
use crate::inbound::SessionKey;
use crate::provider::Image;
use crate::router::{GetSession, RouterActor};
use crate::routing::{Peer, PeerKind, RouteInput, Router};
use crate::session::{Origin, SendChat, SendStatus};
use crate::store::{Store, StoreError};

/// One accepted platform message, in neutral terms.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Incoming {
    pub channel: String,
    pub account: String,
    /// The ledger's dedupe key.
    pub dedupe_key: String,
    /// Where the answer goes (the chat).
    pub chat_id: String,
    /// The platform's chat type word (`private`, `group`, `supergroup`...).
    pub chat_type: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_id: Option<String>,
    pub sender: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender_name: Option<String>,
    pub message_id: String,
    pub text: String,
    /// The bot was mentioned or replied to (groups).
    #[serde(default)]
    pub mentioned: bool,
    /// Attachments, as the adapter names them (file ids, with a type).
    #[serde(default)]
    pub media: Vec<MediaRef>,
    pub ts_ms: u64,
}

/// An attachment not yet fetched.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MediaRef {
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
}

impl Incoming {
    pub fn is_group(&self) -> bool {
        !matches!(
            crate::inbound::finalize::chat_type(&self.chat_type, false),
            crate::inbound::msg_context::ChatType::Direct
        )
    }

    /// The id the session knows the message by.
    pub fn session_message_id(&self) -> String {
        format!("{}:{}", self.channel, self.dedupe_key)
    }
}

/// What dispatching needs; cloned into each hand-over.
#[derive(Clone)]
pub struct DispatchDeps {
    pub store: Store,
    pub sessions: Addr<RouterActor>,
    pub routes: Arc<Mutex<Router>>,
    pub default_agent: String,
    pub main_key: String,
}

#[derive(Debug, thiserror::Error)]
pub enum DispatchError {
    #[error("no session: {0}")]
    Session(String),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("the gateway is stopping")]
    Down,
}

/// Hands an allowed message to its session. `commands`: the sender may
/// use directives; `images`, `note`: fetched attachments and what could not
/// be fetched. Reply: the delivery to run (None when the session dropped
/// the message).
pub async fn hand_over(
    deps: &DispatchDeps,
    msg: &Incoming,
    commands: bool,
    images: Vec<Image>,
    note: Option<String>,
) -> Result<Option<Delivery>, DispatchError> {
    let group = msg.is_group();
    let raw = RawInbound {
        channel: msg.channel.clone(),
        account_id: Some(msg.account.clone()),
        chat_type: msg.chat_type.clone(),
        from: msg.sender.clone(),
        sender_name: msg.sender_name.clone(),
        group_id: group.then(|| msg.chat_id.clone()),
        thread_id: msg.thread_id.clone(),
        message_id: msg.message_id.clone(),
        body: Some(msg.text.clone()),
        timestamp_ms: msg.ts_ms,
        ..RawInbound::default()
    };
    let allow: Vec<String> = if commands {
        vec![msg.sender.clone()]
    } else {
        Vec::new()
    };
    let inbound = finalize(&raw, &allow);
    let peer = Peer {
        kind: if group {
            PeerKind::Group
        } else {
            PeerKind::Direct
        },
        id: if group {
            msg.chat_id.clone()
        } else {
            msg.sender.clone()
        },
    };
    let route = match deps.routes.lock() {
        Ok(mut r) => r.resolve(&RouteInput {
            channel: &msg.channel,
            account_id: Some(&msg.account),
            peer: Some(peer),
            thread_id: msg.thread_id.as_deref(),
            ..RouteInput::default()
        }),
        Err(_) => return Err(DispatchError::Session("routing table poisoned".into())),
    };
    let key = SessionKey::canonical(&route.session_key, &deps.default_agent, &deps.main_key)
        .map_err(|e| DispatchError::Session(e.to_string()))?;
    let mut text = inbound.ctx.body_for_agent.clone();
    if group {
        // In a group the agent needs to know who speaks.
        let who = inbound
            .sender_name
            .clone()
            .unwrap_or_else(|| msg.sender.clone());
        text = format!("{who}: {text}");
    }
    if let Some(n) = note {
        text = if text.trim().is_empty() {
            n
        } else {
            format!("{text}\n{n}")
        };
    }
    let (session, _) = deps
        .sessions
        .send(GetSession { key: key.clone() })
        .await
        .map_err(|_| DispatchError::Down)??;
    let mut send = SendChat::text(&text, &msg.session_message_id());
    send.images = images;
    send.command_authorized = inbound.ctx.command_authorized;
    // A sender the channel's allowlist does not name is not an operator.
    send.untrusted = !inbound.ctx.command_authorized;
    send.origin = Some(Origin {
        channel: msg.channel.clone(),
        account_id: msg.account.clone(),
        to: msg.chat_id.clone(),
        thread_id: msg.thread_id.clone(),
        chat_type: inbound.ctx.chat_type.as_str().to_string(),
        matched_by: route.matched_by.as_str().to_string(),
    });
    let ack = session
        .send(send)
        .await
        .map_err(|_| DispatchError::Down)?
        .map_err(|e| DispatchError::Session(e.to_string()))?;
    tracing::info!(
        channel = %msg.channel,
        account = %msg.account,
        session_key = %key.as_str(),
        run_id = %ack.run_id,
        matched_by = route.matched_by.as_str(),
        status = ?ack.status,
        "channel message handed to its session"
    );
    if ack.status == SendStatus::Dropped {
        return Ok(None);
    }
    Ok(Some(Delivery {
        account: msg.account.clone(),
        session_key: key.as_str().to_string(),
        run_id: ack.run_id,
        target: msg.chat_id.clone(),
        thread_id: msg.thread_id.clone(),
        reply_to: group.then(|| msg.message_id.clone()),
        created_ms: crate::now_ms(),
        finalized: false,
    }))
}

/// Records the hand-over (dispatch record out, delivery in, one
/// transaction). Not flushed here: until the next flush (at the latest
/// before the reply's first send) a crash leaves the dispatch record, and
/// the message is handed over again: the session knows its id and names
/// the same run.
pub fn record(
    store: &Store,
    msg: &Incoming,
    delivery: Option<&Delivery>,
) -> Result<(), StoreError> {
    ledger::dispatched(store, &msg.account, &msg.dedupe_key, delivery)
}
