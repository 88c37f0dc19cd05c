//! The bus's inbox: subscriptions, publishing, the shutdown broadcast.

use std::sync::atomic::AtomicUsize;
use std::sync::Arc;

use actix::prelude::*;

use super::*;
use crate::ids::ConnId;
use crate::scopes::Role;

/// What the bus asks of a subscribed connection.
#[derive(Debug, Message, Clone)]
#[rtype(result = "()")]
pub enum Outbound {
    /// Send this event with this seq (None for targeted events). `reserved`
    /// bytes were added to the connection's backlog counter for it.
    Event {
        event: Arc<BusEvent>,
        seq: Option<u64>,
        reserved: usize,
    },
    /// Close the socket (slow consumer, shutdown).
    Close(CloseReason),
}

/// Adds a connection after its handshake. Replaces any earlier entry of the id.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct Subscribe {
    pub conn_id: ConnId,
    pub recipient: Recipient<Outbound>,
    pub role: Role,
    pub scopes: Vec<String>,
    /// Bytes written for this connection and not yet taken by its socket.
    pub buffered: Arc<AtomicUsize>,
    /// Above this backlog the connection is a slow consumer.
    pub max_buffered: usize,
}

/// Removes a connection (socket closed).
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct Unsubscribe {
    pub conn_id: ConnId,
}

/// Broadcasts to every connection allowed to see the event.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct Publish {
    pub event: BusEvent,
}

/// Sends to the listed connections only, without seq (targeted events).
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct PublishTo {
    pub event: BusEvent,
    pub targets: Vec<ConnId>,
}

/// Sends the edge's `shutdown` event to everyone, then asks every socket
/// to close (`CloseReason::ServiceRestart`). Reply: how many were told.
#[derive(Debug, Message)]
#[rtype(result = "usize")]
pub struct BroadcastShutdown {
    pub event: BusEvent,
}

/// Number of subscribed connections.
#[derive(Debug, Message)]
#[rtype(result = "usize")]
pub struct CountSubscribers;

/// What a connection starts or stops watching.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WatchChange {
    /// Every session's changes (`sessions.subscribe` / `unsubscribe`).
    AllSessions(bool),
    /// One session's messages (`sessions.messages.subscribe` / `unsubscribe`).
    Session { key: String, on: bool },
}

/// Changes what a subscribed connection watches. Reply: false when the
/// connection is unknown or would watch more than [`MAX_WATCHED_KEYS`] keys.
#[derive(Debug, Message)]
#[rtype(result = "bool")]
pub struct Watch {
    pub conn_id: ConnId,
    pub change: WatchChange,
}
