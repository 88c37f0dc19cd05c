//! Runs: the `RunRegistry` actor owns what is known about every run a
//! client was given an id for: which runs are queued or running (and in
//! which session), which message each run answers, the results of recent
//! runs (their typed `Outcome`), and everyone waiting for or watching a run
//! (`agent.wait`, the OpenAI-compatible API, `sessions_send`, cron, the
//! heartbeat, channel deliverers). Sessions send it their run events and
//! news (one mailbox, so in order); it passes both on to the edge, which
//! turns them into wire frames. For runs this process did not see end it
//! reads the `runs` tree (`session::run_record`), which the sessions write.
//!
//! Files: `messages.rs` (its inbox), `actor.rs` (the handlers),
//! `state.rs` (bounded maps and the waiter book).

mod actor;
mod messages;
mod state;
#[cfg(test)]
mod tests;

pub use crate::session::run_record::{
    self as record, load, prune, resolve, save, write, RunRecord, KEEP_MS, PENDING,
};
pub use crate::session::{SessionEvent, SessionNews};
pub use actor::{RunRegistry, MAX_WAITERS, MAX_WAITERS_PER_CONN};
pub use messages::*;
