//! The Telegram adapter: `api.rs` the Bot API (its wire format is private
//! there), `config.rs` the `channels.telegram` section per account,
//! `inbound.rs` an update as the pipeline's `Incoming`, `format.rs` the
//! model's markdown as Telegram HTML, `outlet.rs` sends and edits through
//! the account's limiter, `actor.rs` the account actor (poller, hand-over,
//! deliveries).

mod actor;
pub mod api;
pub mod config;
pub mod format;
pub mod inbound;
pub mod outlet;

pub use actor::TelegramActor;
