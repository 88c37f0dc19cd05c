//! `browser.request` (OpenClaw's browser control routes through the
//! gateway: its `openclaw browser ...` CLI, ferroclaw's `browser`
//! subcommand and the Control UI's Browser panel), for `operator.admin`
//! only: the browser holds the operator's logins. `{method, path, query,
//! body, timeoutMs}` in, the route's answer out (`BrowserTools` maps it
//! onto the tool's calls). Also the browser's part of `status`.

use ferroclaw_actors::browser::RequestError;
use ferroclaw_actors::browser::{BrowserRequest, GetBrowserStates};
use serde::Deserialize;
use serde_json::{Map, Value};

use super::{json, MethodResult};
use crate::protocol::errors::ErrorShape;
use crate::state::SharedState;

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Params {
    method: String,
    path: String,
    #[serde(default)]
    query: Option<Map<String, Value>>,
    #[serde(default)]
    body: Option<Value>,
    /// The caller's budget; every browser action has its own deadline
    /// (`browser.actionTimeoutMs`), so this only bounds the wait here.
    #[serde(default)]
    timeout_ms: Option<u64>,
    /// `host` (the gateway's own browser) or `node` (a browser on a
    /// paired node, which ferroclaw does not proxy).
    #[serde(default)]
    target: Option<String>,
    #[serde(default)]
    node: Option<String>,
    /// A Browser dashboard the call belongs to (not supported).
    #[serde(default)]
    dashboard: Option<Value>,
}

/// What the call asks that ferroclaw's browser does not do.
fn unsupported_target(p: &Params) -> Option<String> {
    match p.target.as_deref() {
        None | Some("host") => {}
        Some("node") => {
            let node = p.node.as_deref().unwrap_or("?");
            return Some(format!(
                "target=node ({node}): ferroclaw's browser runs on the gateway host only"
            ));
        }
        Some(other) => return Some(format!("unknown target {other:?} (host or node)")),
    }
    p.dashboard
        .is_some()
        .then(|| "Browser dashboards are not supported by ferroclaw's browser".to_string())
}

/// The error frame for a failed call, with OpenClaw's `code` or `reason`
/// in `details` where its Control UI acts on them.
fn failure(e: RequestError) -> ErrorShape {
    let shape = match e {
        RequestError::Route(_) => ErrorShape::invalid(e.to_string()),
        _ => {
            tracing::info!(error = %e, "browser.request failed");
            ErrorShape::unavailable(e.to_string())
        }
    };
    match (e.code(), e.navigation_blocked()) {
        (Some(code), _) => shape.with_details(serde_json::json!({ "code": code })),
        (None, true) => shape.with_details(serde_json::json!({ "reason": "navigation_blocked" })),
        (None, false) => shape,
    }
}

/// Why the browser cannot answer at all.
fn unavailable(state: &SharedState) -> ErrorShape {
    let why = ferroclaw_actors::browser::tools::unavailable(&state.live.settings().browser)
        .unwrap_or_else(|| "the browser was not started with the gateway".into());
    ErrorShape::unavailable(format!("browser unavailable: {why}"))
}

pub async fn request(state: &SharedState, p: &Value) -> MethodResult {
    let p: Params = serde_json::from_value(p.clone())
        .map_err(|e| ErrorShape::invalid(format!("invalid browser.request params: {e}")))?;
    if let Some(why) = unsupported_target(&p) {
        return Err(ErrorShape::invalid(why));
    }
    let Some(browser) = state.gateway.browser.clone() else {
        return Err(unavailable(state));
    };
    let ask = BrowserRequest {
        method: p.method,
        path: p.path,
        query: p.query.map(Value::Object).unwrap_or(Value::Null),
        body: p.body.unwrap_or(Value::Null),
    };
    let wait = std::time::Duration::from_millis(p.timeout_ms.unwrap_or(120_000).clamp(1, 300_000));
    let answer = tokio::time::timeout(wait, browser.send(ask))
        .await
        .map_err(|_| ErrorShape::unavailable("browser.request timed out"))?
        .map_err(|_| ErrorShape::unavailable("the browser stopped"))?;
    answer.map_err(failure).and_then(json)
}

/// Every profile's browser (`status`'s `browser`): None when the browser
/// is not available.
pub async fn states(state: &SharedState) -> Option<Value> {
    let browser = state.gateway.browser.clone()?;
    let list = browser.send(GetBrowserStates).await.ok()?;
    serde_json::to_value(list).ok()
}
