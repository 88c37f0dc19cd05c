//! The managed browser (issue 52, in progress): an agent-only Chromium per
//! profile that the `browser` tool drives over the Chrome DevTools
//! Protocol. So far: `launch.rs`, which starts Chromium as an owned child
//! (its own process group, gone with the gateway) on a loopback DevTools
//! port with a private profile directory, and says where it listens.

pub mod launch;

pub use launch::{launch, Launch, LaunchError, Launched};
