//! The managed browser (issue 52, in progress): an agent-only Chromium per
//! profile that the `browser` tool drives over the Chrome DevTools
//! Protocol. `launch.rs` starts Chromium as an owned child (its own
//! process group, gone with the gateway) on a loopback DevTools port with
//! a private profile directory, behind the profile's SSRF proxy
//! (`proxy.rs`, `policy.rs`); `BrowserActor` (`actor.rs`) owns one
//! profile's browser (start, stop, restart with backoff, its tabs) and
//! answers `BrowserCall`s (`calls.rs`, `act.rs`) over chromiumoxide
//! (`cdp.rs`), reading pages as snapshots with refs (`snapshot.rs`).
//! `BrowserTools` (`tools.rs`) is the `browser` tool's executor: one
//! `BrowserActor` per profile, started on first use (`reply.rs`: its
//! profiles list; the schema is `tool::browser_spec`).

mod act;
pub mod actor;
mod calls;
pub mod cdp;
pub mod downloads;
mod emulate;
mod files;
pub mod launch;
pub mod messages;
mod network;
pub mod policy;
pub mod proxy;
mod reply;
pub mod request;
mod scope;
mod settle;
pub mod snapshot;
pub mod tabs;
#[cfg(test)]
mod test_kit;
pub mod tools;

pub use actor::BrowserActor;
pub use actor::Limits;
pub use launch::{launch, Launch, LaunchError, Launched};
pub use messages::{
    BrowserCall, BrowserReconfigure, BrowserRequest, BrowserState, Done, GetBrowserState,
    GetBrowserStates, ReconfigureBrowser, RetireBrowser, Shot, StartBrowser, StopBrowser,
};
pub use tools::BrowserTools;

/// Why a browser call failed (what the model reads).
#[derive(Debug, thiserror::Error)]
pub enum BrowserError {
    #[error(transparent)]
    Launch(#[from] LaunchError),
    #[error("cannot connect to the browser's DevTools socket: {0}")]
    Connect(String),
    #[error("the browser's proxy is not listening, so the browser is not started")]
    NoProxy,
    #[error("the browser is stopping")]
    Stopping,
    #[error("the browser went away during the call (it is started again: call again)")]
    Gone,
    #[error("the browser did not answer: {0}")]
    Cdp(String),
    #[error(transparent)]
    Page(#[from] cdp::CdpError),
    #[error("refused by browser.ssrfPolicy: {0}")]
    Refused(String),
    #[error("{action} did not finish within {ms} ms")]
    Timeout { action: &'static str, ms: u64 },
    #[error("{action} did not finish within {ms} ms: {proxy}")]
    Stalled {
        action: &'static str,
        ms: u64,
        proxy: String,
    },
    #[error("no such tab: {0} (action=tabs lists them)")]
    NoTab(String),
    #[error("unknown or stale ref {0}: take a new snapshot of this tab")]
    StaleRef(String),
    #[error("a dialog opened: {message:?}. Answer it with action=dialog (accept true or false, promptText)")]
    DialogOpen { message: String },
    #[error("no dialog is open on this tab")]
    NoDialog,
    #[error("act:evaluate is off (browser.evaluateEnabled=false)")]
    EvaluateOff,
    #[error("the screenshot is {bytes} bytes, over browser.screenshotMaxBytes ({cap}) even as a small JPEG")]
    TooLarge { bytes: u64, cap: u64 },
    #[error("{0}")]
    Args(String),
    #[error("the download of {url} failed: {why}")]
    Download { url: String, why: String },
    #[error("the downloads directory: {0}")]
    Downloads(String),
    #[error("{0} is not supported by ferroclaw's browser")]
    Unsupported(String),
}

/// Why a `browser.request` failed.
#[derive(Debug, thiserror::Error)]
pub enum RequestError {
    #[error(transparent)]
    Route(#[from] request::RouteError),
    #[error(transparent)]
    Profile(#[from] tools::ProfileError),
    #[error(transparent)]
    Browser(#[from] BrowserError),
    #[error("the profile's browser stopped")]
    Stopped,
    #[error("cannot store the screenshot: {0}")]
    Media(String),
}

impl RequestError {
    /// OpenClaw's code for the failure, which its Control UI acts on
    /// (falls back to screenshots, says evaluate is off).
    pub fn code(&self) -> Option<&'static str> {
        match self {
            RequestError::Route(r) => r.code(),
            RequestError::Browser(BrowserError::EvaluateOff) => Some("ACT_EVALUATE_DISABLED"),
            _ => None,
        }
    }

    /// Whether the network policy refused the page (OpenClaw's
    /// `navigation_blocked`).
    pub fn navigation_blocked(&self) -> bool {
        matches!(self, RequestError::Browser(BrowserError::Refused(_)))
    }
}

impl From<policy::Refused> for BrowserError {
    fn from(e: policy::Refused) -> BrowserError {
        BrowserError::Refused(e.to_string())
    }
}

impl From<chromiumoxide::error::CdpError> for BrowserError {
    fn from(e: chromiumoxide::error::CdpError) -> BrowserError {
        BrowserError::Cdp(e.to_string())
    }
}
