//! The presence table's inbox: upsert, remove, list.

use actix::prelude::*;

use super::*;

/// Adds or replaces a row. `pinned` rows (live sockets, self) skip the TTL.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct UpsertPresence {
    pub key: String,
    pub entry: PresenceEntry,
    pub pinned: bool,
}

/// Removes a row (socket closed).
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct RemovePresence {
    pub key: String,
}

/// What the presence actor emits when its table changes: every row and
/// the new state version (the edge sends it as the `presence` event).
#[derive(Debug, Clone, Message)]
#[rtype(result = "()")]
pub struct PresenceChanged {
    pub entries: Vec<PresenceEntry>,
    pub version: crate::bus::StateVersion,
}

/// Current rows, newest first.
#[derive(Debug, Message)]
#[rtype(result = "Vec<PresenceEntry>")]
pub struct ListPresence;
