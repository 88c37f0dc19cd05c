//! HTTP routes on the gateway port: admin endpoints, the OpenAI-compatible
//! API and the web chat; every path that is not an HTTP route is a
//! WebSocket upgrade (see `ws`).

pub mod admin;
pub(crate) mod auth;
pub mod openai;
pub mod webchat;
