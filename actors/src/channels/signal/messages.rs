//! The Signal actors' inboxes: the daemon's exit, an event of the stream.

use actix::prelude::*;

use super::stream::StreamEvent;

#[derive(Message)]
#[rtype(result = "()")]
/// The daemon's process ended.
pub(super) struct Exited {
    pub status: String,
}

/// One event of the stream numbered `generation`.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct Streamed {
    pub generation: u64,
    pub event: StreamEvent,
}
