//! The `BrowserActor`'s inbox and what it answers.

use actix::prelude::*;
use serde::Serialize;

/// Start the profile's browser (nothing changes when it runs already).
#[derive(Message)]
#[rtype(result = "Result<BrowserState, super::BrowserError>")]
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
    /// Tabs the tool knows.
    pub tabs: usize,
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

/// The DevTools connection of the browser `pid` ended.
#[derive(Message)]
#[rtype(result = "()")]
pub(super) struct CdpClosed {
    pub pid: u32,
}

/// What a tab's page did (from its event listeners).
#[derive(Message)]
#[rtype(result = "()")]
pub(super) enum TabEvent {
    /// A JavaScript dialog opened and waits.
    Dialog {
        tab: u32,
        dialog: super::tabs::Dialog,
    },
    /// A console line or a page error.
    Log { tab: u32, error: bool, line: String },
    /// The main frame went to the document `loader` (the refs of another
    /// start again).
    Navigated { tab: u32, loader: String },
}

/// One `browser` tool action on this profile (`action`: OpenClaw's name,
/// `args`: the tool's arguments as the model gave them).
#[derive(Message)]
#[rtype(result = "Result<Done, super::BrowserError>")]
pub struct BrowserCall {
    pub action: String,
    pub args: serde_json::Value,
    /// Where `upload` reads files from and `pdf` writes (the turn's
    /// workspace, confined as the file tools confine it).
    pub workspace: crate::tool::Workspace,
}

/// What a call gives back: the text for the model (page content already
/// wrapped as outside data) and a screenshot for the media store.
#[derive(Debug, Default)]
pub struct Done {
    pub text: String,
    pub image: Option<Shot>,
}

/// A screenshot's bytes.
#[derive(Debug)]
pub struct Shot {
    pub bytes: Vec<u8>,
    pub mime: String,
}
