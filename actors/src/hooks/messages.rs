//! The hook hub's inbox.

use std::sync::Arc;

use actix::prelude::*;

use super::event::{HookCtx, HookEvent};
use super::points::HookPoint;
use super::reply::HookReply;
use super::table::HookTable;

/// Runs the hooks of `point` on `event`; their merged answer. Sent with
/// `do_send` for points nobody waits on.
#[derive(Message)]
#[rtype(result = "HookReply")]
pub struct RunHooks {
    pub point: HookPoint,
    pub event: HookEvent,
    pub ctx: HookCtx,
}

/// A new table (config or plugins changed).
#[derive(Message)]
#[rtype(result = "()")]
pub struct SetHookTable {
    pub table: Arc<HookTable>,
}

/// Every hook with its runs, failures, last error and latency.
#[derive(Message)]
#[rtype(result = "Vec<super::HookStatus>")]
pub struct HooksStatus;

/// One hook's run, for its counters.
#[derive(Message)]
#[rtype(result = "()")]
pub(super) struct Ran {
    pub id: String,
    pub took_ms: u64,
    pub error: Option<String>,
}
