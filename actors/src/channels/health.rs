//! Measured channel health: every account's adapter records what actually
//! happened (the last update in, the last send accepted by the platform,
//! the last successful round trip of any call, errors, restarts) in its
//! `AccountHealth`; nobody sets "healthy". `state` derives the verdict:
//! an account that runs but has had no successful round trip for the stale
//! threshold is `degraded`, however busy its poller looks; so is one whose
//! connection went silent past its heartbeat window (`zombie`), until the
//! platform answers again.
//!
//! The `HealthBoard` holds every account's record; the supervisor adds and
//! removes them, the adapters write them (atomics), and readers (health,
//! `channels.status`, `/metrics`) take snapshots.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

/// One account's measurements (0 = never).
#[derive(Debug, Default)]
pub struct AccountHealth {
    pub running: AtomicBool,
    pub last_start_ms: AtomicU64,
    pub last_stop_ms: AtomicU64,
    pub last_inbound_ms: AtomicU64,
    pub last_outbound_ms: AtomicU64,
    /// The last call of any method that the platform answered.
    pub last_round_trip_ms: AtomicU64,
    pub restarts: AtomicU64,
    pub inbound: AtomicU64,
    pub outbound: AtomicU64,
    pub replays: AtomicU64,
    pub rate_limits: AtomicU64,
    pub conflicts: AtomicU64,
    pub errors: AtomicU64,
    /// Connections replaced (dropped, closed by the platform, zombies).
    pub reconnects: AtomicU64,
    /// Connections found open but silent past their heartbeat window.
    pub zombies: AtomicU64,
    /// The connection went silent past its heartbeat window; cleared by
    /// the next round trip.
    silent: AtomicBool,
    last_error: Mutex<Option<String>>,
}

/// The verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HealthState {
    Healthy,
    /// Running, no successful round trip within the threshold.
    Degraded,
    /// Running, started less than the threshold ago, no round trip yet.
    Starting,
    Stopped,
}

impl HealthState {
    pub fn as_str(self) -> &'static str {
        match self {
            HealthState::Healthy => "healthy",
            HealthState::Degraded => "degraded",
            HealthState::Starting => "starting",
            HealthState::Stopped => "stopped",
        }
    }
}

fn set(a: &AtomicU64, v: u64) {
    a.store(v, Ordering::Relaxed);
}

fn get(a: &AtomicU64) -> u64 {
    a.load(Ordering::Relaxed)
}

impl AccountHealth {
    pub fn started(&self, now_ms: u64) {
        self.running.store(true, Ordering::Relaxed);
        set(&self.last_start_ms, now_ms);
    }

    pub fn stopped(&self, now_ms: u64, error: Option<String>) {
        self.running.store(false, Ordering::Relaxed);
        set(&self.last_stop_ms, now_ms);
        if error.is_some() {
            self.error(error);
        }
    }

    /// The platform answered a call (any method, any answer but a
    /// transport failure).
    pub fn round_trip(&self, now_ms: u64) {
        set(&self.last_round_trip_ms, now_ms);
    }

    /// The connection proved alive (a frame on Slack's socket, a heartbeat
    /// ack on Discord's gateway): a round trip, and no longer silent.
    pub fn alive(&self, now_ms: u64) {
        self.round_trip(now_ms);
        self.silent.store(false, Ordering::Relaxed);
    }

    /// The connection is open but silent past its heartbeat window: the
    /// account is `degraded` until the connection proves `alive` again
    /// (other calls answering do not count: they say nothing of the
    /// connection).
    pub fn zombie(&self) {
        self.zombies.fetch_add(1, Ordering::Relaxed);
        self.silent.store(true, Ordering::Relaxed);
    }

    /// A connection was replaced.
    pub fn reconnected(&self) {
        self.reconnects.fetch_add(1, Ordering::Relaxed);
    }

    pub fn inbound(&self, now_ms: u64) {
        set(&self.last_inbound_ms, now_ms);
        self.inbound.fetch_add(1, Ordering::Relaxed);
    }

    pub fn outbound(&self, now_ms: u64) {
        set(&self.last_outbound_ms, now_ms);
        self.outbound.fetch_add(1, Ordering::Relaxed);
    }

    pub fn error(&self, e: Option<String>) {
        if e.is_some() {
            self.errors.fetch_add(1, Ordering::Relaxed);
        }
        if let Ok(mut g) = self.last_error.lock() {
            *g = e;
        }
    }

    pub fn last_error(&self) -> Option<String> {
        self.last_error.lock().ok().and_then(|g| g.clone())
    }

    /// The verdict at `now` with a stale threshold of `stale_ms`.
    pub fn state(&self, now_ms: u64, stale_ms: u64) -> HealthState {
        if !self.running.load(Ordering::Relaxed) {
            return HealthState::Stopped;
        }
        let since = get(&self.last_round_trip_ms).max(get(&self.last_start_ms));
        let fresh =
            now_ms.saturating_sub(since) <= stale_ms && !self.silent.load(Ordering::Relaxed);
        match (get(&self.last_round_trip_ms), fresh) {
            (_, false) => HealthState::Degraded,
            (0, true) => HealthState::Starting,
            (_, true) => HealthState::Healthy,
        }
    }

    /// A point-in-time copy for readers.
    pub fn snapshot(
        &self,
        channel: &str,
        account: &str,
        now_ms: u64,
        stale_ms: u64,
    ) -> AccountSnapshot {
        let opt = |a: &AtomicU64| Some(get(a)).filter(|v| *v > 0);
        AccountSnapshot {
            channel: channel.to_string(),
            account_id: account.to_string(),
            running: self.running.load(Ordering::Relaxed),
            state: self.state(now_ms, stale_ms),
            last_start_ms: opt(&self.last_start_ms),
            last_stop_ms: opt(&self.last_stop_ms),
            last_inbound_ms: opt(&self.last_inbound_ms),
            last_outbound_ms: opt(&self.last_outbound_ms),
            last_round_trip_ms: opt(&self.last_round_trip_ms),
            last_error: self.last_error(),
            restarts: get(&self.restarts),
            inbound: get(&self.inbound),
            outbound: get(&self.outbound),
            replays: get(&self.replays),
            rate_limits: get(&self.rate_limits),
            conflicts: get(&self.conflicts),
            errors: get(&self.errors),
            reconnects: get(&self.reconnects),
            zombies: get(&self.zombies),
        }
    }
}

/// What readers see of one account.
#[derive(Debug, Clone, PartialEq)]
pub struct AccountSnapshot {
    pub channel: String,
    pub account_id: String,
    pub running: bool,
    pub state: HealthState,
    pub last_start_ms: Option<u64>,
    pub last_stop_ms: Option<u64>,
    pub last_inbound_ms: Option<u64>,
    pub last_outbound_ms: Option<u64>,
    pub last_round_trip_ms: Option<u64>,
    pub last_error: Option<String>,
    pub restarts: u64,
    pub inbound: u64,
    pub outbound: u64,
    pub replays: u64,
    pub rate_limits: u64,
    pub conflicts: u64,
    pub errors: u64,
    pub reconnects: u64,
    pub zombies: u64,
}

/// Every configured account's health, by (channel, account).
#[derive(Debug, Default)]
pub struct HealthBoard {
    accounts: RwLock<BTreeMap<(String, String), Arc<AccountHealth>>>,
    /// The stale threshold (ms), from `gateway.channelStaleEventThresholdMinutes`.
    stale_ms: AtomicU64,
}

impl HealthBoard {
    pub fn new(stale_ms: u64) -> HealthBoard {
        HealthBoard {
            accounts: RwLock::default(),
            stale_ms: AtomicU64::new(stale_ms),
        }
    }

    pub fn set_stale_ms(&self, ms: u64) {
        set(&self.stale_ms, ms);
    }

    pub fn stale_ms(&self) -> u64 {
        get(&self.stale_ms)
    }

    /// The record of an account (kept across restarts of its adapter).
    pub fn account(&self, channel: &str, account: &str) -> Arc<AccountHealth> {
        let key = (channel.to_string(), account.to_string());
        if let Some(h) = self.accounts.read().ok().and_then(|m| m.get(&key).cloned()) {
            return h;
        }
        match self.accounts.write() {
            Ok(mut m) => m.entry(key).or_default().clone(),
            Err(_) => Arc::default(),
        }
    }

    /// Forgets accounts no longer configured.
    pub fn retain(&self, keep: &[(String, String)]) {
        if let Ok(mut m) = self.accounts.write() {
            m.retain(|k, _| keep.contains(k));
        }
    }

    pub fn snapshot(&self, now_ms: u64) -> Vec<AccountSnapshot> {
        let stale = self.stale_ms();
        self.accounts
            .read()
            .map(|m| {
                m.iter()
                    .map(|((c, a), h)| h.snapshot(c, a, now_ms, stale))
                    .collect()
            })
            .unwrap_or_default()
    }
}

impl AccountSnapshot {
    /// The account in OpenClaw's channel account snapshot shape.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "accountId": self.account_id,
            "configured": true,
            "running": self.running,
            "connected": self.running && self.state == HealthState::Healthy,
            "healthState": self.state.as_str(),
            "lastStartAt": self.last_start_ms,
            "lastStopAt": self.last_stop_ms,
            "lastInboundAt": self.last_inbound_ms,
            "lastOutboundAt": self.last_outbound_ms,
            "lastTransportActivityAt": self.last_round_trip_ms,
            "lastError": self.last_error,
            "reconnectAttempts": self.restarts + self.reconnects,
            "zombieConnections": self.zombies,
        })
    }
}

/// A channel's label as dashboards show it.
pub fn label(channel: &str) -> String {
    match channel {
        "telegram" => "Telegram".into(),
        "slack" => "Slack".into(),
        "discord" => "Discord".into(),
        "whatsapp" => "WhatsApp".into(),
        "signal" => "Signal".into(),
        "matrix" => "Matrix".into(),
        other => other.to_string(),
    }
}

type Summary = (
    serde_json::Map<String, serde_json::Value>,
    Vec<String>,
    serde_json::Map<String, serde_json::Value>,
);

/// The health summary's `channels`, `channelOrder` and `channelLabels`:
/// per channel its accounts, and the default (or first) account's fields
/// at the top.
pub fn summary(accounts: &[AccountSnapshot]) -> Summary {
    let mut channels = serde_json::Map::new();
    let mut order: Vec<String> = Vec::new();
    let mut labels = serde_json::Map::new();
    for a in accounts {
        if !order.contains(&a.channel) {
            order.push(a.channel.clone());
            labels.insert(a.channel.clone(), label(&a.channel).into());
        }
        let entry = channels
            .entry(a.channel.clone())
            .or_insert_with(|| serde_json::json!({ "accounts": {} }));
        if a.account_id == "default" || entry.get("accountId").is_none() {
            if let (Some(obj), serde_json::Value::Object(fields)) =
                (entry.as_object_mut(), a.to_json())
            {
                obj.extend(fields);
            }
        }
        entry["accounts"][a.account_id.as_str()] = a.to_json();
    }
    (channels, order, labels)
}

/// `status`'s `channelSummary`, as OpenClaw writes it: one line per
/// channel (`Telegram: configured`), then one per account
/// (`  - default (running, healthy)`).
pub fn summary_lines(accounts: &[AccountSnapshot]) -> Vec<String> {
    let mut lines = Vec::new();
    let mut channels: Vec<&str> = Vec::new();
    for a in accounts {
        if !channels.contains(&a.channel.as_str()) {
            channels.push(&a.channel);
        }
    }
    for c in channels {
        lines.push(format!("{}: configured", label(c)));
        for a in accounts.iter().filter(|a| a.channel == c) {
            let run = if a.running { "running" } else { "stopped" };
            lines.push(format!(
                "  - {} ({run}, {})",
                a.account_id,
                a.state.as_str()
            ));
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn health_is_measured_from_round_trips() {
        let h = AccountHealth::default();
        let stale = 60_000;
        assert_eq!(h.state(0, stale), HealthState::Stopped);
        h.started(1_000);
        assert_eq!(h.state(2_000, stale), HealthState::Starting);
        // Started, and never a successful call within the threshold.
        assert_eq!(h.state(70_000, stale), HealthState::Degraded);
        h.round_trip(70_000);
        assert_eq!(h.state(80_000, stale), HealthState::Healthy);
        // Polling that keeps failing does not count: only answers do.
        assert_eq!(h.state(130_001, stale), HealthState::Degraded);
        h.round_trip(130_002);
        assert_eq!(h.state(130_003, stale), HealthState::Healthy);
        h.stopped(140_000, Some("refused (401): Unauthorized".into()));
        assert_eq!(h.state(140_001, stale), HealthState::Stopped);
        assert_eq!(
            h.last_error().as_deref(),
            Some("refused (401): Unauthorized")
        );
    }

    #[test]
    fn a_zombie_is_degraded_until_its_connection_proves_alive() {
        let h = AccountHealth::default();
        h.started(0);
        h.alive(10);
        assert_eq!(h.state(20, 60_000), HealthState::Healthy);
        h.zombie();
        assert_eq!(h.state(30, 60_000), HealthState::Degraded);
        h.round_trip(40); // a REST call answered: says nothing of the socket
        assert_eq!(h.state(50, 60_000), HealthState::Degraded);
        h.alive(60);
        assert_eq!(h.state(70, 60_000), HealthState::Healthy);
        assert_eq!(h.snapshot("discord", "a", 70, 60_000).zombies, 1);
    }

    #[test]
    fn the_board_keeps_one_record_per_account() {
        let board = HealthBoard::new(1000);
        let a = board.account("telegram", "default");
        a.inbound(5);
        assert_eq!(
            board
                .account("telegram", "default")
                .snapshot("t", "d", 6, 1000)
                .inbound,
            1
        );
        board.account("telegram", "work");
        assert_eq!(board.snapshot(10).len(), 2);
        board.retain(&[("telegram".into(), "work".into())]);
        let snap = board.snapshot(10);
        assert_eq!(snap.len(), 1);
        assert_eq!(snap[0].account_id, "work");
    }
}
