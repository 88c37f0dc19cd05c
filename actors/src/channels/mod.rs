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
//! - `hooks.rs`: the `message_received` hook point (code hooks, and
//!   `hooks.messageReceived` posting each message to a URL);
//! - `sender.rs`, `limits.rs`: the per-token limiter, `SendGate` and
//!   seed 002's `RetryPolicy`;
//! - `receiver.rs`: what webhook receivers share (flushed before the 200);
//! - `queues.rs` per-chat hand-over queues with the debounce in front;
//!   `chunker.rs` block streaming, `debounce.rs` rapid texts as one turn.
//!
//! - `desk.rs`: the account actor (hand-overs and deliveries) every adapter
//!   shares; `account.rs` what the supervisor holds of an account; `keys.rs`
//!   a section as accounts; `ws.rs` one platform WebSocket as a task.
//!
//! Adapters: `telegram/`, `slack/`, `discord/`, `whatsapp/`, `signal/`, `matrix/`. Rules that depend on time take it as an argument.
//!
//! The delivery contract every adapter keeps:
//! 1. **Inbound.** An update is accepted only once its dedupe key
//!    (`<channel>/<account>/<chat>/<message id>`) and dispatch record are
//!    durable, written with the account's cursor; the cursor the platform
//!    sees moves only after that flush (Telegram's next `getUpdates`
//!    offset, Slack's envelope ack or the Events API's 200, Discord's stored
//!    sequence, signal-cli's `Last-Event-ID`, Matrix's `since` token). A
//!    replayed update finds its key. A record that cannot be stored stops
//!    the batch and is not confirmed (`flushes.rs` retries a failed flush
//!    in order).
//! 2. **Hand-over.** Per chat, in order: access, finalise, route, then
//!    `SendChat` with a message id made from the dedupe key; the dispatch
//!    record goes and the delivery record comes in one transaction after the
//!    session's ack. A stop in between hands the message over again and the
//!    session names the same run. A stranger's message is `untrusted`.
//! 3. **Outbound.** Every message sent is an outbox chunk first: `pending`,
//!    `sending` flushed before the request leaves, then `sent`, `failed` or
//!    `unknown`; after a restart `pending` chunks are sent and a `sending`
//!    one is resolved `not_resent` (an edit is done again, and so is a send
//!    the platform dedupes by the chunk's key: Matrix's txnId). A run that
//!    ended meanwhile is answered from its outcome, or its stored reply
//!    asked of its session.
//! 4. **Limits.** One `Limiter` per token; a 429 closes the gate for the
//!    token; transient failures are retried; a new message never after an
//!    unknown outcome. One connection per account.
//! 5. **Health is measured** from round trips (`health.rs`).

pub mod access;
pub mod account;
pub mod catch_up;
pub mod chunker;
pub mod debounce;
pub mod deliver;
pub mod desk;
pub mod discord;
pub mod dispatch;
pub mod error;
pub mod flushes;
pub mod health;
pub mod hooks;
pub mod inspect;
pub mod keys;
pub mod late;
pub mod ledger;
#[cfg(test)]
mod ledger_tests;
pub mod limits;
pub mod matrix;
pub mod media_in;
pub mod media_out;
pub mod messages;
pub mod probe;
pub mod queues;
pub mod receiver;
pub mod reply_order;
pub mod sender;
pub mod signal;
pub mod slack;
pub mod supervisor;
pub mod telegram;
pub mod voice_out;
pub mod whatsapp;
pub mod ws;

pub use messages::*;
pub use supervisor::ChannelSupervisor;

use crate::channels::error::ConfigError;
use crate::settings::Settings;
use serde_json::{Map, Value};

/// The channel accounts a config asks for, checked.
#[derive(Debug, Clone, Default)]
pub struct ChannelPlan {
    pub accounts: Vec<account::AccountCfg>,
    /// The tokens the environment gives the default accounts.
    pub env: ChannelEnv,
}

/// Tokens from the environment (read by `main.rs`), each used by its
/// channel's default account when its section has none.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChannelEnv {
    /// `TELEGRAM_BOT_TOKEN`.
    pub telegram: Option<String>,
    /// `SLACK_BOT_TOKEN`, `SLACK_APP_TOKEN`.
    pub slack_bot: Option<String>,
    pub slack_app: Option<String>,
    /// `DISCORD_BOT_TOKEN`.
    pub discord: Option<String>,
    /// `WHATSAPP_ACCESS_TOKEN`.
    pub whatsapp: Option<String>,
}

impl ChannelEnv {
    /// The token the environment gives `channel`'s default account.
    pub fn token_for(&self, channel: &str) -> Option<&str> {
        match channel {
            "telegram" => self.telegram.as_deref(),
            "slack" => self.slack_bot.as_deref(),
            "discord" => self.discord.as_deref(),
            "whatsapp" => self.whatsapp.as_deref(),
            _ => None,
        }
    }
}

/// The channels a config starts; an error names the key. Channels
/// ferroclaw has no adapter for yet are left alone (with a log line at start).
pub fn plan(settings: &Settings, env: ChannelEnv) -> Result<ChannelPlan, ConfigError> {
    hooks::InboundHooks::from_settings(&settings.hooks)?;
    let mut accounts = Vec::new();
    for channel in [
        "telegram", "slack", "discord", "whatsapp", "signal", "matrix",
    ] {
        let Some(section) = settings.channels.get(channel) else {
            continue;
        };
        let defaults = settings.channels.defaults.layer(channel);
        let debounce = settings.messages.inbound.debounce_ms(channel);
        accounts.extend(accounts_of(
            channel,
            &section.other,
            &defaults,
            &env,
            debounce,
        )?);
    }
    Ok(ChannelPlan { accounts, env })
}

/// One adapter's accounts, checked: no credential serves two of them.
fn accounts_of(
    channel: &str,
    section: &Map<String, Value>,
    defaults: &Map<String, Value>,
    env: &ChannelEnv,
    debounce_ms: u64,
) -> Result<Vec<account::AccountCfg>, ConfigError> {
    use account::AccountCfg;
    use std::sync::Arc;
    let out = match channel {
        "telegram" => telegram_accounts(section, defaults, env, debounce_ms)?,
        "slack" => slack_accounts(section, defaults, env, debounce_ms)?,
        "discord" => discord_accounts(section, defaults, env, debounce_ms)?,
        "whatsapp" => {
            let accounts = whatsapp::config::accounts(section, defaults, env.whatsapp.clone())?;
            let each = |mut a: whatsapp::config::WhatsAppAccount| {
                a.debounce_ms = debounce_ms;
                AccountCfg::WhatsApp(Arc::new(a))
            };
            accounts.into_iter().map(each).collect()
        }
        "signal" => {
            let each = |mut a: signal::config::SignalAccount| {
                a.debounce_ms = debounce_ms;
                AccountCfg::Signal(Arc::new(a))
            };
            signal::config::accounts(section, defaults)?
                .into_iter()
                .map(each)
                .collect()
        }
        "matrix" => {
            let each = |mut a: matrix::config::MatrixAccount| {
                a.debounce_ms = debounce_ms;
                AccountCfg::Matrix(Arc::new(a))
            };
            matrix::config::accounts(section, defaults)?
                .into_iter()
                .map(each)
                .collect()
        }
        _ => Vec::new(),
    };
    Ok(out)
}

/// Telegram's accounts: one poller per bot token.
fn telegram_accounts(
    section: &Map<String, Value>,
    defaults: &Map<String, Value>,
    env: &ChannelEnv,
    debounce_ms: u64,
) -> Result<Vec<account::AccountCfg>, ConfigError> {
    let accounts = telegram::config::accounts(section, defaults, env.telegram.clone())?;
    let tokens: Vec<&str> = accounts.iter().map(|a| a.bot_token.as_str()).collect();
    one_each(
        &tokens,
        "channels.telegram.accounts: two accounts use one bot token (one poller per token)",
    )?;
    let each = |mut a: telegram::config::TelegramAccount| {
        a.debounce_ms = debounce_ms;
        account::AccountCfg::Telegram(std::sync::Arc::new(a))
    };
    Ok(accounts.into_iter().map(each).collect())
}

/// Slack's accounts: one Socket Mode connection per app token.
fn slack_accounts(
    section: &Map<String, Value>,
    defaults: &Map<String, Value>,
    env: &ChannelEnv,
    debounce_ms: u64,
) -> Result<Vec<account::AccountCfg>, ConfigError> {
    let tokens = (env.slack_bot.clone(), env.slack_app.clone());
    let accounts = slack::config::accounts(section, defaults, tokens)?;
    let apps: Vec<&str> = accounts
        .iter()
        .filter_map(|a| a.app_token.as_deref())
        .collect();
    one_each(
        &apps,
        "channels.slack.accounts: two accounts use one app token (one Socket Mode connection per app)",
    )?;
    let each = |mut a: slack::config::SlackAccount| {
        a.debounce_ms = debounce_ms;
        account::AccountCfg::Slack(std::sync::Arc::new(a))
    };
    Ok(accounts.into_iter().map(each).collect())
}

/// Discord's accounts: one gateway session per bot.
fn discord_accounts(
    section: &Map<String, Value>,
    defaults: &Map<String, Value>,
    env: &ChannelEnv,
    debounce_ms: u64,
) -> Result<Vec<account::AccountCfg>, ConfigError> {
    let accounts = discord::config::accounts(section, defaults, env.discord.clone())?;
    let tokens: Vec<&str> = accounts.iter().map(|a| a.token.as_str()).collect();
    one_each(
        &tokens,
        "channels.discord.accounts: two accounts use one bot token (one gateway session per bot)",
    )?;
    let each = |mut a: discord::config::DiscordAccount| {
        a.debounce_ms = debounce_ms;
        account::AccountCfg::Discord(std::sync::Arc::new(a))
    };
    Ok(accounts.into_iter().map(each).collect())
}

/// Reads every account's keys of the channels ferroclaw has adapters for
/// (what `config validate`, `config.set` and a start check): a key of the
/// wrong type or an unknown value is an error naming its path. Missing
/// credentials are the start's to report (the environment may give them).
pub fn check_keys(settings: &Settings) -> Result<(), ConfigError> {
    use crate::settings::{
        DiscordKeys, MatrixKeys, SignalKeys, SlackKeys, TelegramKeys, WhatsAppKeys,
    };
    for (id, section) in &settings.channels {
        let defaults = settings.channels.defaults.layer(id);
        for a in keys::accounts(id, &section.other, &defaults, true)? {
            match id.as_str() {
                "telegram" => keys::parse::<TelegramKeys>(&a.path, &a.keys).map(drop),
                "slack" => keys::parse::<SlackKeys>(&a.path, &a.keys).map(drop),
                "discord" => keys::parse::<DiscordKeys>(&a.path, &a.keys).map(drop),
                "whatsapp" => keys::parse::<WhatsAppKeys>(&a.path, &a.keys).map(drop),
                "signal" => keys::parse::<SignalKeys>(&a.path, &a.keys).map(drop),
                "matrix" => keys::parse::<MatrixKeys>(&a.path, &a.keys).map(drop),
                _ => Ok(()),
            }?;
        }
    }
    Ok(())
}

/// Whether an account's keys let strangers reach the agent: `dmPolicy` or
/// `groupPolicy` "open", or `"*"` in `allowFrom` (the channel's defaults
/// count: Slack's channels are open unless the section says otherwise).
/// A channel without an adapter is read from its keys as written.
pub fn open_to_strangers(channel: &str, a: &keys::AccountKeys) -> bool {
    use crate::settings::{
        AccountKeys, DiscordKeys, DmPolicy, GroupPolicy, MatrixKeys, SignalKeys, SlackKeys,
        TelegramKeys, WhatsAppKeys,
    };
    fn open(k: &dyn AccountKeys) -> bool {
        k.dm_policy() == DmPolicy::Open
            || k.group_policy() == GroupPolicy::Open
            || k.allow_from().iter().any(|i| i.text(&[]) == "*")
    }
    let typed = match channel {
        "telegram" => keys::parse::<TelegramKeys>(&a.path, &a.keys).map(|k| open(&k)),
        "slack" => keys::parse::<SlackKeys>(&a.path, &a.keys).map(|k| open(&k)),
        "discord" => keys::parse::<DiscordKeys>(&a.path, &a.keys).map(|k| open(&k)),
        "whatsapp" => keys::parse::<WhatsAppKeys>(&a.path, &a.keys).map(|k| open(&k)),
        "signal" => keys::parse::<SignalKeys>(&a.path, &a.keys).map(|k| open(&k)),
        "matrix" => keys::parse::<MatrixKeys>(&a.path, &a.keys).map(|k| open(&k)),
        _ => {
            let is = |k: &str| a.keys.get(k).and_then(serde_json::Value::as_str) == Some("open");
            let star = a.keys["allowFrom"]
                .as_array()
                .is_some_and(|l| l.iter().any(|v| v == "*"));
            Ok(is("dmPolicy") || is("groupPolicy") || star)
        }
    };
    typed.unwrap_or(false)
}

/// Refuses a credential two accounts share.
fn one_each(values: &[&str], error: &str) -> Result<(), ConfigError> {
    let mut v = values.to_vec();
    v.sort_unstable();
    if v.windows(2).any(|w| w[0] == w[1]) {
        return Err(error.into());
    }
    Ok(())
}

/// `gateway.channelStaleEventThresholdMinutes` in ms.
pub fn stale_ms(settings: &Settings) -> u64 {
    (settings
        .gateway
        .channel_stale_event_threshold_minutes
        .max(0.0)
        * 60_000.0) as u64
}
