//! The `BrowserActor`'s inbox and what it answers.

use actix::prelude::*;
use serde::Serialize;

/// Start the profile's browser (nothing changes when it runs already).
#[derive(Message)]
#[rtype(result = "Result<BrowserState, super::LaunchError>")]
pub struct StartBrowser;

/// Stop the profile's browser, and keep it stopped until the next start.
#[derive(Message)]
#[rtype(result = "BrowserState")]
pub struct StopBrowser;

/// What the profile's browser is doing now.
#[derive(Message)]
#[rtype(result = "BrowserState")]
pub struct GetBrowserState;

/// The browser's child ended (`status`: how).
#[derive(Message)]
#[rtype(result = "()")]
pub(super) struct BrowserExited {
    pub pid: u32,
    pub status: String,
}

/// One profile's browser, as `browser status` reports it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BrowserState {
    pub profile: String,
    pub running: bool,
    pub pid: Option<u32>,
    /// Its DevTools port on 127.0.0.1.
    pub cdp_port: Option<u16>,
    pub ws_url: Option<String>,
    /// Restarts tried after it died (a failed try counts too).
    pub restarts: u32,
    pub last_error: Option<String>,
}

/// What the profile's proxy did that the browser tool should know.
#[derive(Debug, Clone, Message)]
#[rtype(result = "()")]
pub enum ProxyReport {
    /// A request the SSRF policy refused (`why` names the rule).
    Refused { host: String, why: String },
    /// A response cut at `browser.maxResponseMb`.
    Cut { host: String, limit: u64 },
}
