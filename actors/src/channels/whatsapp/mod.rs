//! The WhatsApp adapter, on Meta's WhatsApp Business Cloud API (OpenClaw
//! runs WhatsApp Web through Baileys; a linked device cannot be tested
//! honestly offline, so ferroclaw speaks the official API only):
//! `config.rs` the `channels.whatsapp` section per account, `api.rs` the
//! Graph API (no retries of its own; Meta's error codes mapped to the
//! limiter), `signature.rs` `X-Hub-Signature-256`, `envelope.rs` webhook
//! bodies as plain types, `inbound.rs` a message recorded in the ledger,
//! `webhook.rs` the receiver (the account's connection actor; the edge
//! answers Meta's `GET` verification), `outlet.rs` sends, reactions,
//! media and the typing indicator. `start` runs an account: its `Desk`
//! with its receiver.

pub mod api;
pub mod config;
pub mod envelope;
pub mod inbound;
pub mod outlet;
pub mod signature;
pub mod webhook;

use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;

use config::WhatsAppAccount;

use super::deliver::Typing;
use super::desk::{AccountHandle, ChannelDeps, Desk, DeskConfig};
use super::health::AccountHealth;
use super::limits::RetryPolicy;
use super::sender::Buckets;

/// As Telegram's: 3 attempts, doubling from 400 ms; a rate limit waits
/// for Meta's pause.
const RETRY: RetryPolicy = RetryPolicy::TELEGRAM;

pub fn desk_config(cfg: &WhatsAppAccount) -> DeskConfig {
    DeskConfig {
        channel: "whatsapp",
        platform: "WhatsApp",
        account_id: cfg.account_id.clone(),
        access: cfg.access.clone(),
        stream: cfg.stream_mode.into(),
        // The indicator lasts 25 s or until the reply.
        typing: Typing::Message,
        instant_typing: true,
        typing_every: Duration::from_secs(20),
        edit_interval_ms: 1000,
        debounce_ms: cfg.debounce_ms,
        model_override: cfg.model_override.clone(),
        catch_up: cfg.catch_up,
    }
}

/// Starts one account: the desk and its webhook receiver, sharing the
/// number's limiters.
pub fn start(
    cfg: Arc<WhatsAppAccount>,
    deps: ChannelDeps,
    health: Arc<AccountHealth>,
) -> AccountHandle {
    let api = api::GraphApi::new(
        &cfg.api_base,
        &cfg.phone_number_id,
        &cfg.access_token,
        Duration::from_secs(cfg.request_timeout_s),
    );
    let buckets = Buckets::new(cfg.send_interval_ms, RETRY, health.clone());
    let outlet = outlet::WhatsAppOutlet {
        api: api.clone(),
        buckets: buckets.clone(),
        chunk_limit: cfg.text_chunk_limit,
        media_max_bytes: cfg.media_max_bytes,
        read_receipts: cfg.read_receipts,
        template: cfg.window_template.clone(),
        templates_sent: Arc::default(),
    };
    let store = deps.dispatch.store.clone();
    let desk = Desk::new(Arc::new(desk_config(&cfg)), outlet, deps, health);
    let mut webhook = None;
    let addr = desk.start_with(|link| {
        let hook = webhook::WhatsAppHook::new(cfg, api, buckets, store, link).start();
        webhook = Some(hook.clone().recipient());
        hook.recipient()
    });
    let mut handle = AccountHandle::of(addr);
    handle.webhook = webhook;
    handle
}
