//! The Slack adapter: `config.rs` the `channels.slack` section per
//! account, `api.rs` the Web API (no retries of its own; per-method
//! limiters), `outlet.rs` sends and edits (`chat.postMessage`, then
//! `chat.update`), `envelope.rs` Socket Mode envelopes and Events API
//! bodies as plain types (mention markup as plain text), `inbound.rs` a
//! message event recorded in the ledger, `dedupe.rs` recently seen
//! envelope ids (TTL, bound), `signature.rs` Events API request signatures
//! (HMAC-SHA256 with the `hmac` crate, constant-time, 5-minute window),
//! and the two connections: `socket.rs` (Socket Mode) and `events.rs` (the
//! Events API over HTTP). `start` runs an account: its `Desk` with one of
//! them.

pub mod api;
pub mod catch_up;
pub mod config;
pub mod dedupe;
pub mod envelope;
pub mod events;
pub mod inbound;
pub mod outlet;
pub mod signature;
pub mod socket;
mod upload;

use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;

use config::{Mode, SlackAccount};

use super::deliver::Typing;
use super::desk::AccountHandle;
use super::desk::ChannelDeps;
use super::desk::{Desk, DeskConfig};
use super::health::AccountHealth;
use super::limits::RetryPolicy;
use super::sender::Buckets;

/// Slack's retry policy: as Telegram's (3 attempts, doubling from 400 ms,
/// capped at 30 s); a 429 waits for its `Retry-After`.
const RETRY: RetryPolicy = RetryPolicy::TELEGRAM;

pub fn desk_config(cfg: &SlackAccount) -> DeskConfig {
    DeskConfig {
        channel: "slack",
        platform: "Slack",
        account_id: cfg.account_id.clone(),
        access: cfg.access.clone(),
        stream: cfg.stream_mode.into(),
        typing: Typing::Never,
        instant_typing: false,
        typing_every: Duration::from_secs(6),
        edit_interval_ms: cfg.edit_interval_ms,
        debounce_ms: cfg.debounce_ms,
        model_override: cfg.model_override.clone(),
        catch_up: cfg.catch_up,
    }
}

/// Slack refused the bot token at start: retrying cannot help.
#[derive(Debug, thiserror::Error)]
#[error("the bot token was refused: {0}")]
struct TokenRefused(api::SlackError);

/// Who the bot is (`auth.test`), retried until Slack answers; the error
/// when the token is refused.
async fn who_am_i(api: api::WebApi, buckets: Buckets) -> Result<api::BotIdentity, TokenRefused> {
    let limiter = buckets.get("auth.test");
    let refused = |e: &api::SlackError| matches!(e, api::SlackError::Auth(_));
    super::sender::until_ready(
        buckets.health().clone(),
        move || {
            let (api, limiter) = (api.clone(), limiter.clone());
            async move { limiter.call(true, || api.auth_test()).await }
        },
        refused,
    )
    .await
    .map_err(TokenRefused)
}

/// Starts one account: the desk, and its Socket Mode or Events API
/// connection. The connection and the outlet share the per-method limiters.
pub fn start(
    cfg: Arc<SlackAccount>,
    deps: ChannelDeps,
    health: Arc<AccountHealth>,
) -> AccountHandle {
    let api = api::WebApi::new(
        &cfg.api_base,
        &cfg.bot_token,
        cfg.app_token.as_deref(),
        Duration::from_secs(cfg.request_timeout_s),
    );
    let buckets = Buckets::new(cfg.send_interval_ms, RETRY, health.clone());
    let outlet = outlet::SlackOutlet {
        api: api.clone(),
        buckets: buckets.clone(),
        chunk_limit: cfg.text_chunk_limit,
        reply_to_mode: cfg.reply_to_mode,
        media_max_bytes: cfg.media_max_bytes,
    };
    let store = deps.dispatch.store.clone();
    let desk = Desk::new(Arc::new(desk_config(&cfg)), outlet, deps, health);
    let mut webhook = None;
    let addr = desk.start_with(|link| match cfg.mode {
        Mode::Socket => socket::SlackSocket::new(cfg, api, buckets, store, link)
            .start()
            .recipient(),
        Mode::Http => {
            let events = events::SlackEvents::new(cfg, api, buckets, store, link).start();
            webhook = Some(events.clone().recipient());
            events.recipient()
        }
    });
    let mut handle = AccountHandle::of(addr);
    handle.webhook = webhook;
    handle
}
