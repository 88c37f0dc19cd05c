//! Automation (issue 17, in progress): cron jobs and heartbeats. The parts
//! so far: `schedule.rs` (OpenClaw's schedule kinds `at`, `every` and
//! `cron`, parsed from its job shape, with the next run computed as
//! OpenClaw computes it: croner's cron semantics in the job's timezone and
//! the same stable stagger offset per job id) and `clock.rs` (time passed
//! in, so tests move time instead of sleeping). Not yet started by the tree.

pub mod clock;
pub mod schedule;
