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
    match answer {
        Ok(v) => json(v),
        Err(e @ RequestError::Route(_)) => Err(ErrorShape::invalid(e.to_string())),
        Err(e) => {
            tracing::info!(error = %e, "browser.request failed");
            Err(ErrorShape::unavailable(e.to_string()))
        }
    }
}

/// Every profile's browser (`status`'s `browser`): None when the browser
/// is not available.
pub async fn states(state: &SharedState) -> Option<Value> {
    let browser = state.gateway.browser.clone()?;
    let list = browser.send(GetBrowserStates).await.ok()?;
    serde_json::to_value(list).ok()
}
