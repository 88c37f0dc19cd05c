//! `browser` (OpenClaw's keys, ferroclaw's marked): the managed Chromium
//! the `browser` tool drives (the `browser/` folder). Read: `enabled`,
//! `evaluateEnabled`, `executablePath`, `headless`, `noSandbox`,
//! `defaultProfile`, `snapshotDefaults`, `ssrfPolicy`, `profiles`
//! (`cdpPort`, `headless`, `executablePath`), `extraArgs`, and ferroclaw's
//! limits. Kept for OpenClaw's clients, not read: `cdpUrl`, `attachOnly`
//! and the `existing-session`/`extension` drivers (ferroclaw launches its
//! own browser and attaches to no other), `allowSystemProfileImport`,
//! `tabCleanup`, `extensionRelay`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// `browser`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BrowserSettings {
    /// False: no `browser` tool, no browser started.
    pub enabled: bool,
    /// `act` kind `evaluate` (page JavaScript the model writes).
    pub evaluate_enabled: bool,
    /// The Chromium binary (unset: `chromium`, `chromium-browser`,
    /// `google-chrome` ... on PATH).
    pub executable_path: Option<String>,
    /// Unset: headless when there is no `DISPLAY`/`WAYLAND_DISPLAY`.
    pub headless: Option<bool>,
    /// `--no-sandbox` (Chromium refuses to run as root without it).
    pub no_sandbox: bool,
    /// The profile a call without `profile` uses.
    pub default_profile: String,
    pub snapshot_defaults: SnapshotDefaults,
    pub ssrf_policy: BrowserSsrfPolicy,
    pub profiles: BTreeMap<String, BrowserProfile>,
    /// After ferroclaw's own flags (a `--proxy-server` here is refused: the
    /// SSRF proxy is the browser's only way out).
    pub extra_args: Vec<String>,
    /// ferroclaw's: how long one action (a navigation, a click and what it
    /// causes, a snapshot) may take.
    pub action_timeout_ms: u64,
    /// ferroclaw's: how long Chromium has to start listening.
    pub start_timeout_ms: u64,
    /// ferroclaw's: bytes one response may bring through the browser's
    /// proxy before the connection is cut (a huge page is cut, not read).
    pub max_response_mb: u64,
    /// ferroclaw's: a screenshot larger than this is taken again smaller
    /// (JPEG, then scaled down), else refused (OpenClaw's 5 MB).
    pub screenshot_max_bytes: u64,
    /// ferroclaw's: the tabs one profile keeps open at most (OpenClaw's
    /// managed cap is eight); `open` past it closes the oldest it opened.
    pub max_tabs: usize,
    pub cdp_url: Option<String>,
    pub attach_only: Option<bool>,
    pub allow_system_profile_import: Option<bool>,
    pub tab_cleanup: Option<super::Toggle>,
    #[schemars(schema_with = "super::shapes::object")]
    pub extension_relay: Option<Value>,
}

/// `browser.snapshotDefaults`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SnapshotDefaults {
    /// `efficient`: the compact interactive snapshot when a call names no
    /// mode or format (unset: the full one).
    pub mode: Option<String>,
}

/// `browser.ssrfPolicy`: where the browser may go. Loopback, private,
/// link-local, metadata and other internal addresses are refused unless a
/// key here opens them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BrowserSsrfPolicy {
    /// Every internal address allowed (trusted private networks only).
    pub dangerously_allow_private_network: bool,
    /// OpenClaw's legacy alias of the key above.
    pub allow_private_network: Option<bool>,
    /// 198.18.0.0/15 (fake-IP proxies).
    pub allow_rfc2544_benchmark_range: bool,
    /// fc00::/7.
    pub allow_ipv6_unique_local_range: bool,
    /// Hosts reached whatever they resolve to (`localhost`, `*.corp.example`).
    pub allowed_hostnames: Vec<String>,
    /// Hosts never reached (exact, or `*.` for a domain and its subdomains).
    pub blocked_hostnames: Vec<String>,
}

/// `browser.profiles.<name>`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BrowserProfile {
    /// The DevTools port (on 127.0.0.1; unset: one the browser picks).
    pub cdp_port: Option<u16>,
    pub headless: Option<bool>,
    pub executable_path: Option<String>,
    /// `openclaw` (or `clawd`): a browser ferroclaw launches. Others are
    /// OpenClaw's attach drivers, refused at use.
    pub driver: Option<String>,
    #[serde(flatten)]
    pub other: Map<String, Value>,
}
