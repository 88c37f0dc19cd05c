//! Automation (issue 17, in progress): cron jobs and heartbeats. The parts
//! so far: `schedule.rs` (OpenClaw's schedule kinds `at`, `every` and
//! `cron`, parsed from its job shape, with the next run computed as
//! OpenClaw computes it: croner's cron semantics in the job's timezone and
//! the same stable stagger offset per job id; the latest slot at or before
//! a time and the one catch-up run after a stop) and `clock.rs` (time passed
//! in, so tests move time instead of sleeping), `heartbeat.rs` (whether
//! a heartbeat runs at all, and whether its reply is only `HEARTBEAT_OK`).
//! Not yet started by the tree.

pub mod clock;
pub mod heartbeat;
pub mod schedule;
