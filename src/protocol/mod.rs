//! OpenClaw gateway wire protocol v4 (and the v3 hello shape): frame types,
//! error codes, connect params, the method -> scope table, device-auth
//! payloads and hello-ok. The only place that knows wire shapes; it mirrors
//! `../shared/protocol.md`. Frames never carry `null` optionals or extra keys.

pub mod audit;
pub mod connect;
pub mod cron;
pub mod device_auth;
pub mod errors;
pub mod events;
pub mod frames;
pub mod hello;
pub mod messages;
pub mod methods;
pub mod nodes;
pub mod plugins;
pub mod session_rows;

/// The protocol this gateway speaks.
pub const PROTOCOL_VERSION: u32 = 4;
/// The older protocol still served (v3 hello shape) for nodes, probes and old clients.
pub const LEGACY_PROTOCOL_VERSION: u32 = 3;
