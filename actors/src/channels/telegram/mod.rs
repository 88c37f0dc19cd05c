//! The Telegram adapter: `api.rs` the Bot API (its wire format is private
//! there), `config.rs` the `channels.telegram` section per account,
//! `inbound.rs` an update as the pipeline's `Incoming`, `format.rs` the
//! model's markdown as Telegram HTML, `outlet.rs` sends and edits through
//! the account's limiter, `actor.rs` the poller (the account's
//! connection). `start` runs an account: its `Desk` with the poller.

mod actor;
pub mod api;
pub mod config;
pub mod format;
pub mod inbound;
mod messages;
pub mod outlet;

use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;

pub use actor::TelegramPoller;
use config::{TelegramAccount, TypingMode};

use super::deliver::Typing;
use super::desk::AccountHandle;
use super::desk::ChannelDeps;
use super::desk::{Desk, DeskConfig};
use super::health::AccountHealth;
use super::limits::RetryPolicy;
use super::sender::Limiter;

/// The desk's view of an account.
pub fn desk_config(cfg: &TelegramAccount) -> DeskConfig {
    DeskConfig {
        channel: "telegram",
        platform: "Telegram",
        account_id: cfg.account_id.clone(),
        access: cfg.access.clone(),
        stream: cfg.stream_mode.into(),
        typing: match cfg.typing_mode {
            TypingMode::Never => Typing::Never,
            TypingMode::Message => Typing::Message,
            TypingMode::Thinking | TypingMode::Instant => Typing::Start,
        },
        instant_typing: cfg.typing_mode == TypingMode::Instant,
        typing_every: Duration::from_secs(cfg.typing_interval_s),
        edit_interval_ms: cfg.edit_interval_ms,
        debounce_ms: cfg.debounce_ms,
        model_override: cfg.model_override.clone(),
        catch_up: cfg.catch_up,
    }
}

/// Starts one account: the desk, and the poller as its connection. One
/// limiter serves both (one gate per token).
pub fn start(
    cfg: Arc<TelegramAccount>,
    deps: ChannelDeps,
    health: Arc<AccountHealth>,
) -> AccountHandle {
    let api = api::BotApi::new(
        &cfg.api_base,
        &cfg.bot_token,
        Duration::from_secs(cfg.request_timeout_s),
    );
    let limiter = Limiter::new(cfg.send_interval_ms, RetryPolicy::TELEGRAM, health.clone());
    let outlet = outlet::TgOutlet {
        api: api.clone(),
        limiter: limiter.clone(),
        chunk_limit: cfg.text_chunk_limit,
        media_max_bytes: cfg.media_max_bytes,
    };
    let store = deps.dispatch.store.clone();
    let desk = Desk::new(Arc::new(desk_config(&cfg)), outlet, deps, health);
    let addr = desk.start_with(|link| {
        TelegramPoller::new(cfg, api, limiter, store, link)
            .start()
            .recipient()
    });
    AccountHandle::of(addr)
}
