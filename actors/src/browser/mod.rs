//! The managed browser (issue 52, in progress): an agent-only Chromium per
//! profile that the `browser` tool drives over the Chrome DevTools
//! Protocol. So far: `launch.rs`, which starts Chromium as an owned child
//! (its own process group, gone with the gateway) on a loopback DevTools
//! port with a private profile directory, and says where it listens; and
//! `BrowserActor` (`actor.rs`), which owns one profile's browser: start,
//! stop, restart with backoff when it dies, its state.

pub mod actor;
pub mod cdp;
pub mod launch;
pub mod messages;
pub mod policy;
pub mod proxy;
pub mod snapshot;

pub use actor::BrowserActor;
pub use launch::{launch, Launch, LaunchError, Launched};
pub use messages::{BrowserState, GetBrowserState, StartBrowser, StopBrowser};
