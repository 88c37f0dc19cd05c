//! The Signal adapter, through signal-cli's HTTP daemon (as OpenClaw's
//! native transports): `config.rs` the `channels.signal` section per
//! account, `api.rs` JSON-RPC on `/api/v1/rpc` and the check, `stream.rs`
//! the `/api/v1/events` SSE reader, `envelope.rs` a `receive` event as
//! plain types, `inbound.rs` a message recorded in the ledger, `events.rs`
//! the account's connection (the stream from the stored mark),
//! `daemon.rs` the signal-cli process ferroclaw owns for a managed-native
//! account, `outlet.rs` sends, edits, reactions, typing, files. `start`
//! runs an account: its `Desk` with its event reader.

pub mod api;
pub mod config;
pub mod daemon;
pub mod envelope;
pub mod events;
pub mod inbound;
mod messages;
pub mod outlet;
pub mod stream;

use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;

use config::SignalAccount;

use super::deliver::Typing;
use super::desk::{AccountHandle, ChannelDeps, Desk, DeskConfig};
use super::health::AccountHealth;
use super::limits::RetryPolicy;
use super::sender::Limiter;

pub fn desk_config(cfg: &SignalAccount) -> DeskConfig {
    DeskConfig {
        channel: "signal",
        platform: "Signal",
        account_id: cfg.account_id.clone(),
        access: cfg.access.clone(),
        stream: cfg.stream_mode.into(),
        typing: Typing::Start,
        instant_typing: true,
        typing_every: Duration::from_secs(cfg.typing_interval_s),
        edit_interval_ms: cfg.edit_interval_ms,
        debounce_ms: cfg.debounce_ms,
        model_override: cfg.model_override.clone(),
        catch_up: cfg.catch_up,
    }
}

/// Starts one account: the desk and its event reader (which runs the
/// daemon when ferroclaw owns it), sharing the account's limiter.
pub fn start(
    cfg: Arc<SignalAccount>,
    deps: ChannelDeps,
    health: Arc<AccountHealth>,
) -> AccountHandle {
    let rpc = api::SignalRpc::new(&cfg.url, Duration::from_secs(cfg.request_timeout_s));
    let limiter = Limiter::new(cfg.send_interval_ms, RetryPolicy::TELEGRAM, health.clone());
    let outlet = outlet::SignalOutlet {
        rpc: rpc.clone(),
        limiter,
        number: cfg.number.clone(),
        chunk_limit: cfg.text_chunk_limit,
        media_max_bytes: cfg.media_max_bytes,
        read_receipts: cfg.read_receipts,
        attachments_dir: cfg.attachments_dir.clone(),
    };
    let store = deps.dispatch.store.clone();
    let desk = Desk::new(Arc::new(desk_config(&cfg)), outlet, deps, health.clone());
    let addr = desk.start_with(|link| {
        events::SignalEvents::new(cfg, rpc, store, link, health)
            .start()
            .recipient()
    });
    AccountHandle::of(addr)
}
