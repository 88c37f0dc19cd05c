//! The agent's own tools end to end (issue 50): `automations` (alias
//! `cron`) on the real scheduler, `message` through the channels' outbox,
//! `web_search` against wire fakes of its providers, the session and agent
//! readers, and each schema against OpenClaw's.

mod ask_user;
mod automations;
mod gateway;
mod media;
mod message;
mod schemas;
mod sessions;
mod turn_end;
mod web_search;

use crate::support::fake_telegram::FakeTelegram;
use crate::support::{admin, TestGateway};

pub(crate) use super::trust::{ask, tool, OWNER, STRANGER};

pub const LONG: std::time::Duration = std::time::Duration::from_secs(20);

/// A fake Telegram (the owner allowlisted, a stranger let in) and a gateway
/// polling it; `extra` merged over the config.
pub fn start(extra: serde_json::Value) -> (FakeTelegram, TestGateway) {
    super::trust::start(extra, &[])
}
