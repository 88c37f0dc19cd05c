//! One integration-test binary: real gateways on 127.0.0.1:0 with real sled
//! stores in temp dirs, driven over real WebSocket and HTTP.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod actors;
mod gateway;
mod support;
