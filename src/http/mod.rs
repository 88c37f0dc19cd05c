//! HTTP routes on the gateway port. Admin endpoints live here; every path
//! that is not an HTTP route is a WebSocket upgrade (see `ws`).

pub mod admin;
pub mod openai;
