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

/// The profile's settings changed (hot apply), applied after any call in
/// flight. `relaunch`: its Chromium is closed (its tabs with it) and the
/// next call starts one under the new settings; else only the bounds of
/// the next calls change.
#[derive(Message)]
#[rtype(result = "()")]
pub struct ReconfigureBrowser {
    pub launch: super::Launch,
    pub limits: super::Limits,
    pub policy: std::sync::Arc<super::policy::Policy>,
    pub relaunch: bool,
}

/// The profile is no longer configured (or the browser is disabled): its
/// Chromium closed and the actor stopped.
#[derive(Message)]
#[rtype(result = "()")]
pub struct RetireBrowser;

/// `browser.*` changed (hot apply): `BrowserTools` takes the new settings
/// and tells each started profile what changed for it.
#[derive(Message)]
#[rtype(result = "()")]
pub struct BrowserReconfigure {
    pub settings: std::sync::Arc<crate::settings::BrowserSettings>,
}

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

impl BrowserState {
    /// A profile whose browser was never started.
    pub fn idle(profile: &str) -> BrowserState {
        BrowserState {
            profile: profile.to_string(),
            running: false,
            pid: None,
            cdp_port: None,
            ws_url: None,
            tabs: 0,
            restarts: 0,
            last_error: None,
        }
    }
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
    /// A console line, a page error or a request.
    Log {
        tab: u32,
        log: super::tabs::Log,
        line: String,
    },
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

/// One of OpenClaw's browser control routes (`browser.request`), for
/// `BrowserTools`: `method`/`path` as its routes name them, `query` and
/// `body` as JSON objects (the profile in either, else the default).
#[derive(Message)]
#[rtype(result = "Result<serde_json::Value, super::RequestError>")]
pub struct BrowserRequest {
    pub method: String,
    pub path: String,
    pub query: serde_json::Value,
    pub body: serde_json::Value,
}

/// One profile's status as `browser.request`'s `GET /` answers it (what
/// `BrowserTools` tells itself after a start or a stop).
#[derive(Message)]
#[rtype(result = "Result<serde_json::Value, super::RequestError>")]
pub(super) struct GetStatus {
    pub profile: String,
}

/// Every profile's browser state (the declared ones and those started),
/// for `status`, `health` and `/metrics`.
#[derive(Message)]
#[rtype(result = "Vec<BrowserState>")]
pub struct GetBrowserStates;

/// What a call gives back: what it did (`head`, no page text in it), the
/// page's text it read (outside data, as it came), the text for the model
/// (the head, then the page's text wrapped) and a screenshot for the
/// media store.
#[derive(Debug, Default)]
pub struct Done {
    pub text: String,
    pub head: serde_json::Value,
    pub page: Option<String>,
    pub image: Option<Shot>,
}

impl Done {
    /// `head`, and the page's text from `source` when there is one.
    pub fn new(head: serde_json::Value, page: Option<(&str, String)>) -> Done {
        let text = match &page {
            Some((source, body)) => format!("{head}\n{}", crate::trust::wrap(source, body)),
            None => head.to_string(),
        };
        Done {
            text,
            head,
            page: page.map(|(_, body)| body),
            image: None,
        }
    }
}

/// A screenshot's bytes.
#[derive(Debug)]
pub struct Shot {
    pub bytes: Vec<u8>,
    pub mime: String,
}
