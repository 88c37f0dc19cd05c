//! HTTP routes on the gateway port: admin endpoints, the OpenAI-compatible
//! API, webhooks (`hooks.rs`, when `hooks.enabled`), Slack's Events API
//! (`slack.rs`, for HTTP-mode Slack accounts), WhatsApp's Cloud API webhooks
//! (`whatsapp.rs`), the web chat and (when
//! configured) OpenClaw's Control UI; every other path is a WebSocket
//! upgrade (see `ws`). `same_origin.rs` stands in front of them all: with
//! auth "none" it refuses what a web page could forge.

pub mod admin;
pub(crate) mod auth;
pub mod backup;
pub mod control_ui;
pub mod hooks;
pub mod media;
pub mod openai;
pub mod same_origin;
pub mod slack;
mod ui_images;
pub mod ui_root;
pub mod webchat;
pub mod whatsapp;
