//! The Discord adapter: `config.rs` the `channels.discord` section per
//! account, `api.rs` REST (no retries of its own), `outlet.rs` creates and
//! edits messages through per-route limiters and the global gate,
//! `gateway.rs` the gateway protocol as a state machine without I/O
//! (heartbeats and acks, identify and its spacing, resume, invalid
//! sessions, close codes), `shard.rs` the socket actor that performs it,
//! `inbound.rs` a `MESSAGE_CREATE` recorded in the ledger.
//!
//! The gateway runs on tokio-tungstenite with ferroclaw's own state
//! machine rather than twilight-gateway: the WebSocket crate is already in
//! the tree (Slack's Socket Mode, the CLI), the protocol ferroclaw needs is
//! a dozen opcodes that `gateway.rs` tests with time passed in, and
//! twilight brings its own HTTP and model crates (a second HTTP stack
//! beside reqwest) and a larger binary.

pub mod api;
pub mod catch_up;
pub mod config;
pub mod gateway;
pub mod inbound;
pub mod outlet;
pub mod shard;

use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;

use config::DiscordAccount;

use super::deliver::Typing;
use super::desk::AccountHandle;
use super::desk::ChannelDeps;
use super::desk::{Desk, DeskConfig};
use super::health::AccountHealth;
use super::limits::RetryPolicy;
use super::sender::{Buckets, Limiter};

pub fn desk_config(cfg: &DiscordAccount) -> DeskConfig {
    DeskConfig {
        channel: "discord",
        platform: "Discord",
        account_id: cfg.account_id.clone(),
        access: cfg.access.clone(),
        stream: cfg.stream_mode.into(),
        typing: Typing::Message,
        instant_typing: false,
        typing_every: Duration::from_secs(cfg.typing_interval_s),
        edit_interval_ms: cfg.edit_interval_ms,
        debounce_ms: cfg.debounce_ms,
        model_override: cfg.model_override.clone(),
        catch_up: cfg.catch_up,
    }
}

/// Starts one account: the desk and its shard, sharing the REST limiters.
pub fn start(
    cfg: Arc<DiscordAccount>,
    deps: ChannelDeps,
    health: Arc<AccountHealth>,
) -> AccountHandle {
    let api = api::RestApi::new(
        &cfg.api_base,
        &cfg.token,
        Duration::from_secs(cfg.request_timeout_s),
    );
    let outlet = outlet::DiscordOutlet {
        api,
        buckets: Buckets::new(cfg.send_interval_ms, RetryPolicy::TELEGRAM, health.clone()),
        global: Limiter::new(0, RetryPolicy::TELEGRAM, health.clone()),
        chunk_limit: cfg.text_chunk_limit,
        reply_to_mode: cfg.reply_to_mode,
        media_max_bytes: cfg.media_max_bytes,
    };
    let store = deps.dispatch.store.clone();
    let desk = Desk::new(Arc::new(desk_config(&cfg)), outlet.clone(), deps, health);
    let addr = desk.start_with(|link| {
        shard::DiscordShard::new(cfg, outlet, store, link)
            .start()
            .recipient()
    });
    AccountHandle::of(addr)
}
