//! RouterActor: canonical session key -> the one `SessionActor` for it,
//! created on first use. The key's session entry (its `sessionId`,
//! overrides, counters) is kept in the `sessions` tree, so a restarted
//! gateway finds the same transcript. Idle sessions are stopped (the
//! session reports idleness; the router stops it only if it is still idle,
//! inside one handler, so two actors never exist for one key) and
//! re-created from the store on the next message. At start it wakes every
//! session whose inbox holds messages (acknowledged before a stop and not
//! finished), so they run, or are marked interrupted, without waiting for
//! someone to come back to that session.
//!
//! Files: `messages.rs` (its inbox), `actor.rs` (the actor and its
//! handlers); this file holds its pure state, with unit tests.

mod actor;
pub mod fork;
pub mod maintenance;
mod messages;

use crate::session::SessionEntry;

pub use actor::*;
pub use messages::*;

/// One row of `ListSessions`.
#[derive(Debug, Clone)]
pub struct SessionRow {
    pub key: String,
    pub entry: SessionEntry,
    /// A live actor exists for it (it may be running).
    pub live: bool,
}

/// The one road into a session for every surface: `message` to the
/// session of `key` (created when new) through the router, one hop.
pub async fn deliver(
    router: &actix::Addr<RouterActor>,
    key: crate::inbound::SessionKey,
    message: crate::session::SendChat,
) -> Result<crate::session::SendAck, DeliverError> {
    match router.send(SendToSession { key, message }).await {
        Ok(answer) => answer,
        Err(_) => Err(DeliverError::Down),
    }
}

/// Queues a system event for the session `key` (its owner stores it and
/// drains it into its next trusted turn; `untrusted`: a stranger's text).
/// Answered once durable.
pub async fn queue_system_event(
    router: &actix::Addr<RouterActor>,
    key: crate::inbound::SessionKey,
    text: String,
    untrusted: bool,
) -> Result<(), DeliverError> {
    let event = crate::session::system_events::QueueSystemEvent { text, untrusted };
    match router.send(EventToSession { key, event }).await {
        Ok(answer) => answer,
        Err(_) => Err(DeliverError::Down),
    }
}
