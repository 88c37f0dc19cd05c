//! Channels: the adapters that connect ferroclaw to chat platforms, under
//! one `ChannelSupervisor` (`supervisor.rs`: one actor per account,
//! restarts with backoff, the routing table, pairing). Shared by every
//! adapter:
//! - `dispatch.rs`: the inbound pipeline's hand-over (access, finalise,
//!   route, the session's ack, the delivery record);
//! - `deliver.rs`: the outbound contract (previews, blocks, the outbox,
//!   resume after a restart);
//! - `ledger.rs`: the delivery contract's records (inbound dedupe keys with
//!   the platform cursor, dispatch records, deliveries, the outbox);
//! - `access.rs`: `dmPolicy`, `groupPolicy`, mention gating, pairing codes;
//! - `health.rs`: measured health per account;
//! - `sender.rs`, `limits.rs`: the per-token limiter, `SendGate` and
//!   seed 002's `RetryPolicy`;
//! - `chunker.rs` block streaming, `debounce.rs` rapid texts as one turn.
//!
//! Adapters: `telegram/`. Rules that depend on time take it as an argument.

pub mod access;
pub mod chunker;
pub mod debounce;
pub mod deliver;
pub mod dispatch;
pub mod health;
pub mod ledger;
pub mod limits;
pub mod messages;
pub mod sender;
pub mod supervisor;
pub mod telegram;

pub use messages::*;
pub use supervisor::ChannelSupervisor;

use crate::settings::Settings;

/// The channel accounts a config asks for, checked.
#[derive(Debug, Clone, Default)]
pub struct ChannelPlan {
    pub telegram: Vec<telegram::config::TelegramAccount>,
    /// `TELEGRAM_BOT_TOKEN` (the default account's token when its section
    /// has none).
    pub env_token: Option<String>,
}

/// The channels a config starts; an error names the key. Channels
/// ferroclaw has no adapter for yet are left alone (with a log line at start).
pub fn plan(settings: &Settings, env_token: Option<String>) -> Result<ChannelPlan, String> {
    let mut out = ChannelPlan {
        env_token: env_token.clone(),
        ..ChannelPlan::default()
    };
    if let Some(section) = settings.channels.get("telegram") {
        let mut raw = section.other.clone();
        if let Some(f) = &section.skill_filter {
            raw.insert("skillFilter".into(), serde_json::json!(f));
        }
        out.telegram = telegram::config::accounts(&raw, env_token)?;
        let mut tokens: Vec<&str> = out.telegram.iter().map(|a| a.bot_token.as_str()).collect();
        tokens.sort_unstable();
        if tokens.windows(2).any(|w| w[0] == w[1]) {
            return Err(
                "channels.telegram.accounts: two accounts use one bot token (one poller per token)"
                    .into(),
            );
        }
    }
    Ok(out)
}

/// `gateway.channelStaleEventThresholdMinutes` in ms.
pub fn stale_ms(settings: &Settings) -> u64 {
    (settings
        .gateway
        .channel_stale_event_threshold_minutes
        .max(0.0)
        * 60_000.0) as u64
}
