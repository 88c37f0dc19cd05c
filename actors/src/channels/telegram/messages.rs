//! The Telegram poller's inbox: its own timer's nudge.

use actix::prelude::*;

#[derive(Message)]
#[rtype(result = "()")]
pub(super) struct Poll;
