//! The gateway root's inbox.

use std::sync::Arc;

use actix::prelude::*;

use super::HealthSnapshot;
use crate::settings::Settings;

/// Current health (recomputed only when stale).
#[derive(Debug, Message)]
#[rtype(result = "HealthSnapshot")]
pub struct GetHealth;

/// `secrets.reload`: the provider credentials (auth profiles, credential
/// files, `${VAR}` keys) are read again and the hub takes them for the next
/// model call. (Channel tokens live in the config, which applies live when
/// it changes.) Reply: the warnings (what could not be read or resolved).
#[derive(Debug, Message)]
#[rtype(result = "Result<Vec<String>, SecretsError>")]
pub struct ReloadSecrets;

/// Why the credentials could not be read again.
#[derive(Debug, thiserror::Error)]
pub enum SecretsError {
    #[error("cannot read the credentials: {0}")]
    Read(String),
}

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

/// The gateway is stopping (the edge has told the clients): the store's
/// last flush. Reply when it is done.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct Shutdown;

/// What the root emits when the health summary is refreshed (every
/// `healthRefreshIntervalMs`, and when something it reports changed): the
/// edge sends it as the `health` event.
#[derive(Debug, Clone, Message)]
#[rtype(result = "()")]
pub struct HealthUpdated {
    pub snapshot: HealthSnapshot,
    pub version: crate::bus::StateVersion,
}

/// The per-run usage rows of days `from..=to` (`YYYY-MM-DD`), read on the
/// blocking pool (`usage.cost`, `sessions.usage`).
#[derive(Debug, Message)]
#[rtype(result = "Result<Vec<crate::usage::RunUsage>, crate::store::StoreError>")]
pub struct UsageRows {
    pub from: String,
    pub to: String,
}

/// A consistent snapshot of the whole store written to `out`, on the
/// blocking pool (`GET /backup/store`; `store/snapshot.rs`).
#[derive(Message)]
#[rtype(result = "Result<crate::store::snapshot::LogSummary, crate::store::StoreError>")]
pub struct SnapshotStore {
    pub out: Box<dyn std::io::Write + Send>,
}
