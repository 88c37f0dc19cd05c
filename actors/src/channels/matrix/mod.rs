//! The Matrix adapter, on the Client-Server API of any homeserver
//! (unencrypted rooms; end-to-end encryption would need the `matrix-sdk`
//! crate and its crypto store, and is not in ferroclaw yet): `config.rs`
//! the `channels.matrix` section per account, `api.rs` the API (its wire
//! format private there), `sync.rs` a `/sync` answer as plain types,
//! `inbound.rs` a timeline event recorded in the ledger, `syncer.rs` the
//! account's connection (the `/sync` long poll from the stored token),
//! `backfill.rs` a timeline gap read back, `outlet.rs` sends (the outbox key as txnId), edits, reactions, typing,
//! read markers, files. `start` runs an account: its `Desk` with its
//! syncer.

pub mod api;
pub mod backfill;
pub mod config;
pub mod inbound;
mod messages;
pub mod outlet;
pub mod sync;
pub mod syncer;

use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;

use config::MatrixAccount;

use super::deliver::Typing;
use super::desk::{AccountHandle, ChannelDeps, Desk, DeskConfig};
use super::health::AccountHealth;
use super::limits::RetryPolicy;
use super::sender::Limiter;

pub fn desk_config(cfg: &MatrixAccount) -> DeskConfig {
    DeskConfig {
        channel: "matrix",
        platform: "Matrix",
        account_id: cfg.account_id.clone(),
        access: cfg.access.clone(),
        stream: cfg.stream_mode.into(),
        typing: Typing::Start,
        instant_typing: true,
        // Typing is asked for 30 s at a time.
        typing_every: Duration::from_secs(20),
        edit_interval_ms: cfg.edit_interval_ms,
        debounce_ms: cfg.debounce_ms,
        model_override: cfg.model_override.clone(),
        catch_up: cfg.catch_up,
    }
}

/// Starts one account: the desk and its syncer, sharing the account's
/// limiter.
pub fn start(
    cfg: Arc<MatrixAccount>,
    deps: ChannelDeps,
    health: Arc<AccountHealth>,
) -> AccountHandle {
    let api = api::MatrixApi::new(
        &cfg.homeserver,
        cfg.access_token.as_deref(),
        Duration::from_secs(cfg.request_timeout_s),
    );
    let limiter = Limiter::new(cfg.send_interval_ms, RetryPolicy::TELEGRAM, health.clone());
    let outlet = outlet::MatrixOutlet {
        api: api.clone(),
        limiter: limiter.clone(),
        user_id: cfg.user_id.clone(),
        chunk_limit: cfg.text_chunk_limit,
        media_max_bytes: cfg.media_max_bytes,
        read_markers: cfg.read_markers,
        thread_always: cfg.thread_replies == crate::settings::MatrixThreadReplies::Always,
    };
    let store = deps.dispatch.store.clone();
    let desk = Desk::new(Arc::new(desk_config(&cfg)), outlet, deps, health);
    let addr = desk.start_with(|link| {
        syncer::MatrixSync::new(cfg, api, limiter, store, link)
            .start()
            .recipient()
    });
    AccountHandle::of(addr)
}
