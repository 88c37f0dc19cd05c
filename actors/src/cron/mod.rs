//! Automation: cron jobs and heartbeats.
//!
//! - `schedule.rs`: OpenClaw's schedule kinds `at`, `every` and `cron`,
//!   parsed from its job shape; next runs as OpenClaw computes them
//!   (croner in the job's timezone, the same stable stagger per job id);
//!   the latest slot at or before a time, and the one catch-up after a stop.
//! - `clock.rs`: time passed in, so tests move time instead of sleeping.
//! - `job.rs`: a job, checked at `cron.add`/`update` (`NewJob`, `JobPatch`;
//!   the edge reads them from OpenClaw's params and renders `JobView`s).
//! - `record.rs`: jobs and runs in the store; a slot is claimed durably
//!   before its run starts.
//! - `actor.rs`, `api.rs`, `messages.rs`: the scheduler actor; its replies
//!   are typed (`JobPage`, `RunPage`, `RunStart`, `SchedulerStatus`).
//! - `exec.rs`: the gateway's runner (a turn or a system event, then the
//!   announce through the channel outbox).
//! - `heartbeat.rs`: whether a heartbeat runs at all, and whether its reply
//!   is only `HEARTBEAT_OK`; `beat.rs`: the heartbeat actor.

pub mod actor;
mod api;
pub mod beat;
pub mod clock;
pub mod exec;
pub mod heartbeat;
pub mod job;
pub mod messages;
pub mod record;
pub mod schedule;

pub use actor::{CronActor, CronConfig};
pub use messages::*;
