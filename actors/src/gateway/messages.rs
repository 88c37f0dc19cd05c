//! The gateway root's inbox.

use std::sync::Arc;

use actix::prelude::*;

use super::HealthSnapshot;
use crate::settings::Settings;

/// Current health (recomputed only when stale).
#[derive(Debug, Message)]
#[rtype(result = "HealthSnapshot")]
pub struct GetHealth;

/// Marks health stale and broadcasts a fresh summary soon (after connects).
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct HealthChanged;

/// New settings after a config change (hot apply).
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct SettingsChanged {
    pub settings: Arc<Settings>,
}

/// Sends `shutdown` to every client, closes them 1012, then stops the tree.
/// Reply: how many clients were told.
#[derive(Debug, Message)]
#[rtype(result = "usize")]
pub struct Shutdown {
    pub reason: String,
}
