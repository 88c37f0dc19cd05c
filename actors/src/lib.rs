//! ferroclaw-actors: the gateway's actor tree (sessions, runs, lanes,
//! providers, tools, approvals, channels, cron and the heartbeat, memory,
//! devices, presence, the event bus, the audit ledger, the root) and its
//! store. It knows
//! nothing of HTTP or wire frames: `src/` turns its typed values into
//! OpenClaw protocol frames. `tree/` starts it; see ARCHITECTURE.md.

/// An error type whose whole content is the reason, said as it is (a
/// refused job, a bad config key, a path outside the workspace): `?` takes
/// a `&str` or `String` into it.
#[macro_export]
macro_rules! reason_error {
    ($(#[$doc:meta])* $vis:vis struct $name:ident;) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
        #[error("{0}")]
        $vis struct $name(String);

        impl From<&str> for $name {
            fn from(why: &str) -> Self {
                $name(why.to_string())
            }
        }

        impl From<String> for $name {
            fn from(why: String) -> Self {
                $name(why)
            }
        }
    };
}

pub mod approvals;
pub mod audit;
pub mod backup;
pub mod browser;
pub mod bus;
pub mod channels;
pub mod child;
pub mod compaction;
pub mod context;
pub mod cron;
pub mod devices;
pub mod fsutil;
pub mod gateway;
pub mod hooks;
pub mod host;
pub mod idempotency;
pub mod ids;
pub mod inbound;
pub mod lane;
pub mod lsp;
pub mod mcp;
pub mod media;
pub mod memory;
pub mod metrics;
pub mod nodes;
pub mod openclaw;
pub mod plan;
pub mod plugins;
pub mod presence;
pub mod provider;
pub mod questions;
pub mod router;
pub mod routing;
pub mod run;
pub mod runs;
pub mod scopes;
pub mod secrets;
pub mod session;
pub mod settings;
pub mod stability;
pub mod store;
pub mod subagents;
pub mod tool;
pub mod transcript;
pub mod tree;
pub mod trust;
pub mod tts;
pub mod usage;

/// Milliseconds since the Unix epoch (wall clock, as OpenClaw uses on the wire).
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}
