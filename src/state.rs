//! State shared by every HTTP handler and WebSocket connection: the live
//! config, the actor tree's addresses and the per-IP auth limiter.

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ferroclaw_actors::tree::Gateway;

use crate::config::LiveConfig;

pub struct AppState {
    pub live: Arc<LiveConfig>,
    pub gateway: Gateway,
    pub auth_limiter: SlidingLimiter<IpAddr>,
    pub control_plane_limiter: SlidingLimiter<String>,
    /// Sockets upgraded but not yet past `connect`.
    pub preauth_sockets: AtomicUsize,
    pub ready: AtomicBool,
    pub log_file: PathBuf,
    pub state_dir: PathBuf,
    /// Serialises config writes so two `config.set` calls cannot both pass the hash check.
    pub config_write: tokio::sync::Mutex<()>,
    /// One memory import at a time (`migrations.memory.apply`).
    pub memory_import: tokio::sync::Mutex<()>,
    /// This state dir was restored from a backup and has not cleanly
    /// stopped since (`gateway.restore.status`).
    pub restored: Option<ferroclaw_actors::backup::receipt::Restored>,
    pub server_version: &'static str,
    /// OpenClaw's Control UI folder, when one is served.
    pub control_ui: Option<crate::http::ui_root::ControlUiRoot>,
    /// Run events to wire frames (tool-event recipients, `chat.inject`).
    pub event_bridge: actix::Addr<crate::ws::event_bridge::EventBridge>,
    /// Signs the `/media/<id>` links `chat.history` shows.
    pub media_links: Arc<crate::media_links::MediaLinks>,
    /// A restart the `gateway` tool asked for (the binary restarts in place).
    pub restart: Arc<RestartRequest>,
}

/// How the `gateway` tool asks the process to restart: `main.rs` listens
/// (and says so with `supported`); an embedding program may not.
#[derive(Debug, Default)]
pub struct RestartRequest {
    pub notify: tokio::sync::Notify,
    pub supported: AtomicBool,
    /// The tool call whose restart this process came back from: the same
    /// call repeated (its run restarted from the step before) restarts
    /// nothing again.
    pub done_by: Mutex<Option<String>>,
}

pub type SharedState = Arc<AppState>;

impl AppState {
    /// Publishes a gateway event to every subscriber allowed to see it.
    pub(crate) fn publish(&self, event: &str, payload: serde_json::Value) {
        let gw = &self.gateway;
        ferroclaw_actors::bus::send_to_bus(
            &gw.bus,
            &gw.metrics,
            ferroclaw_actors::bus::Publish {
                event: crate::protocol::events::bus_event(event, &payload, true),
            },
        );
    }

    /// Err(retry_after_ms) while `ip` is locked out after failed
    /// authentication (WebSocket handshakes and HTTP bearers alike).
    pub fn auth_locked(&self, ip: Option<IpAddr>) -> Result<(), u64> {
        match ip {
            Some(ip) => self.auth_limiter.check(&ip),
            None => Ok(()),
        }
    }

    /// Counts a failed authentication toward `ip`'s lockout
    /// (`gateway.auth.rateLimit`).
    pub fn auth_failed(&self, ip: Option<IpAddr>) {
        ferroclaw_actors::metrics::Metrics::inc(&self.gateway.metrics.auth_failures);
        if let Some(ip) = ip {
            let settings = self.live.settings();
            let rl = &settings.gateway.auth.rate_limit;
            self.auth_limiter.hit(
                &ip,
                rl.max_attempts,
                Duration::from_millis(rl.window_ms),
                Duration::from_millis(rl.lockout_ms),
            );
        }
    }

    /// A successful authentication clears `ip`'s failures.
    pub fn auth_succeeded(&self, ip: Option<IpAddr>) {
        if let Some(ip) = ip {
            self.auth_limiter.clear(&ip);
        }
    }
}

/// Counts events per key in a sliding window, with an optional lockout.
#[derive(Debug, Default)]
pub struct SlidingLimiter<K> {
    inner: Mutex<HashMap<K, Window>>,
}

#[derive(Debug, Default)]
struct Window {
    hits: VecDeque<Instant>,
    locked_until: Option<Instant>,
}

impl<K: std::hash::Hash + Eq + Clone> SlidingLimiter<K> {
    pub fn new() -> Self {
        SlidingLimiter {
            inner: Mutex::new(HashMap::new()),
        }
    }

    fn with<R>(&self, f: impl FnOnce(&mut HashMap<K, Window>) -> R) -> R {
        match self.inner.lock() {
            Ok(mut g) => f(&mut g),
            Err(p) => f(&mut p.into_inner()),
        }
    }

    /// Err(retry_after_ms) while `key` is locked out.
    pub fn check(&self, key: &K) -> Result<(), u64> {
        let now = Instant::now();
        self.with(|m| match m.get(key).and_then(|w| w.locked_until) {
            Some(until) if until > now => Err((until - now).as_millis() as u64 + 1),
            _ => Ok(()),
        })
    }

    /// Records a hit; once `max` hits fall inside `window`, locks the key for `lockout`.
    pub fn hit(&self, key: &K, max: u32, window: Duration, lockout: Duration) {
        let now = Instant::now();
        self.with(|m| {
            if m.len() > 10_000 {
                m.retain(|_, w| w.locked_until.is_some_and(|u| u > now) || !w.hits.is_empty());
            }
            let w = m.entry(key.clone()).or_default();
            while w
                .hits
                .front()
                .is_some_and(|t| now.duration_since(*t) > window)
            {
                w.hits.pop_front();
            }
            w.hits.push_back(now);
            if w.hits.len() >= max as usize {
                w.locked_until = Some(now + lockout);
                w.hits.clear();
            }
        })
    }

    /// Hits within the window so far, then records one more: Err(retry_ms) when over `max`.
    pub fn take(&self, key: &K, max: u32, window: Duration) -> Result<(), u64> {
        let now = Instant::now();
        self.with(|m| {
            let w = m.entry(key.clone()).or_default();
            while w
                .hits
                .front()
                .is_some_and(|t| now.duration_since(*t) > window)
            {
                w.hits.pop_front();
            }
            if w.hits.len() >= max as usize {
                let oldest = w.hits.front().copied().unwrap_or(now);
                return Err(
                    (window.saturating_sub(now.duration_since(oldest))).as_millis() as u64 + 1,
                );
            }
            w.hits.push_back(now);
            Ok(())
        })
    }

    pub fn clear(&self, key: &K) {
        self.with(|m| {
            m.remove(key);
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limiter_locks_after_max_hits_and_clears_on_success() {
        let l = SlidingLimiter::new();
        let (w, lock) = (Duration::from_secs(60), Duration::from_secs(60));
        for _ in 0..2 {
            l.hit(&1, 3, w, lock);
        }
        assert!(l.check(&1).is_ok());
        l.hit(&1, 3, w, lock);
        assert!(l.check(&1).is_err());
        assert!(l.check(&2).is_ok());
        l.clear(&1);
        assert!(l.check(&1).is_ok());
    }

    #[test]
    fn take_allows_max_per_window() {
        let l = SlidingLimiter::new();
        let w = Duration::from_secs(60);
        for _ in 0..3 {
            assert!(l.take(&"a".to_string(), 3, w).is_ok());
        }
        assert!(l.take(&"a".to_string(), 3, w).is_err());
    }
}
