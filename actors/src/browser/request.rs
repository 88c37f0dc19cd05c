//! `browser.request`: OpenClaw's browser control routes (its CLI's
//! `openclaw browser ...` and the Control UI call them through the
//! gateway as `{method, path, query, body}`) mapped onto the same
//! `BrowserCall`s the tool makes, and the answers shaped as OpenClaw's
//! routes answer (`snapshot`, `nodes`, `path`, `messages`, `tabs`...).
//! The caller is the operator (`operator.admin`), so page text comes back
//! as it is, unwrapped. Routes ferroclaw's browser does not have (cookies,
//! storage, traces, offline/headers/credentials/geolocation emulation,
//! profile creation, Browser dashboards) are
//! refused by name; the Control UI's live screencast is refused with
//! OpenClaw's `SCREENCAST_UNSUPPORTED`, on which the panel falls back to
//! screenshots, and its "download the displayed asset" is refused before
//! any traffic, as OpenClaw refuses it under a restricting network policy
//! (Chromium does not show a download's redirects for the policy to check).

use serde_json::{json, Map, Value};

use super::messages::{BrowserState, Done};

/// What a route asks for.
#[derive(Debug, Clone, PartialEq)]
pub enum Route {
    Status,
    Start,
    Stop,
    Profiles,
    /// A tool action with its arguments.
    Call {
        action: &'static str,
        args: Value,
    },
}

/// Why a route is refused before it reaches a browser.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RouteError {
    #[error("{method} {path} is not supported by ferroclaw's browser")]
    Unsupported { method: String, path: String },
    #[error("the live screencast is not supported by ferroclaw's browser: use screenshots")]
    ScreencastUnsupported,
    #[error("downloading the displayed page is refused: the download's redirects cannot be checked against browser.ssrfPolicy (open it in your own browser)")]
    CurrentDocument,
}

impl RouteError {
    /// OpenClaw's code for the refusal, which its Control UI acts on.
    pub fn code(&self) -> Option<&'static str> {
        match self {
            RouteError::ScreencastUnsupported => Some("SCREENCAST_UNSUPPORTED"),
            _ => None,
        }
    }
}

/// A query string's values as the tool takes them: `true`/`false` and
/// numbers typed, the rest strings.
fn typed(query: &Value) -> Map<String, Value> {
    let mut out = Map::new();
    for (k, v) in query.as_object().into_iter().flatten() {
        let v = match v.as_str() {
            Some("true") => Value::Bool(true),
            Some("false") => Value::Bool(false),
            Some(s) => s
                .parse::<i64>()
                .map(Value::from)
                .unwrap_or_else(|_| Value::String(s.to_string())),
            None => v.clone(),
        };
        out.insert(k.clone(), v);
    }
    out
}

/// The route's arguments: the query, then the body's fields over it;
/// `url` given as the tool's `targetUrl`.
fn args(query: &Value, body: &Value) -> Value {
    let mut a = typed(query);
    for (k, v) in body.as_object().into_iter().flatten() {
        a.insert(k.clone(), v.clone());
    }
    if let Some(u) = a.get("url").cloned() {
        a.entry("targetUrl").or_insert(u);
    }
    if let Some(f) = a.get("format").cloned() {
        a.entry("snapshotFormat").or_insert(f);
    }
    Value::Object(a)
}

/// `method path` as a route.
pub fn route(method: &str, path: &str, query: &Value, body: &Value) -> Result<Route, RouteError> {
    let method = method.to_ascii_uppercase();
    let path = path
        .split('?')
        .next()
        .unwrap_or_default()
        .trim_end_matches('/');
    let call = |action: &'static str| {
        Ok(Route::Call {
            action,
            args: args(query, body),
        })
    };
    match (method.as_str(), path) {
        ("GET", "") => Ok(Route::Status),
        ("POST", "/start") => Ok(Route::Start),
        ("POST", "/stop") => Ok(Route::Stop),
        ("GET", "/profiles") => Ok(Route::Profiles),
        ("GET", "/tabs") => call("tabs"),
        ("POST", "/tabs/open") => call("open"),
        ("POST", "/tabs/focus") => call("focus"),
        ("GET", "/snapshot") => call("snapshot"),
        ("POST", "/screenshot") => call("screenshot"),
        ("POST", "/navigate") => call("navigate"),
        ("POST", "/act") => call("act"),
        ("POST", "/pdf") => call("pdf"),
        ("GET", "/console") => call("console"),
        ("GET", "/errors") => call("errors"),
        ("GET", "/requests") => call("requests"),
        ("GET", "/text") => call("text"),
        ("POST", "/download") if body["currentDocument"] == true => {
            Err(RouteError::CurrentDocument)
        }
        ("POST", "/download") => call("download"),
        ("POST", "/screencast") => Err(RouteError::ScreencastUnsupported),
        ("POST", "/wait/download") => call("waitfordownload"),
        ("POST", "/hooks/dialog") => call("dialog"),
        ("POST", "/set/media" | "/set/timezone" | "/set/locale" | "/set/device") => call("emulate"),
        ("POST", "/tabs/action") if body["action"] == "list" => call("tabs"),
        ("DELETE", p) if p.starts_with("/tabs/") => {
            let mut a = args(query, body);
            a["targetId"] = Value::String(p["/tabs/".len()..].to_string());
            Ok(Route::Call {
                action: "close",
                args: a,
            })
        }
        _ => Err(RouteError::Unsupported {
            method,
            path: if path.is_empty() { "/" } else { path }.to_string(),
        }),
    }
}

/// What the route answers for a call: the call's head, with what it read
/// under OpenClaw's names (`stored`: where a screenshot was saved).
pub fn shape(action: &str, done: Done, stored: Option<String>) -> Value {
    let mut out = match done.head {
        Value::Object(o) => o,
        other => Map::from_iter([("result".to_string(), other)]),
    };
    let page = done.page.unwrap_or_default();
    match action {
        "snapshot" if out.get("format") == Some(&json!("aria")) => {
            let nodes: Vec<Value> = page
                .lines()
                .filter_map(|l| serde_json::from_str(l).ok())
                .collect();
            out.insert("nodes".into(), Value::Array(nodes));
        }
        "snapshot" | "open" | "navigate" => {
            out.insert("snapshot".into(), Value::String(page));
        }
        "console" | "errors" => {
            let lines: Vec<Value> = page.lines().map(|l| json!(l)).collect();
            out.insert("messages".into(), Value::Array(lines));
        }
        "requests" => {
            let lines: Vec<Value> = page.lines().map(|l| json!(l)).collect();
            out.insert("requests".into(), Value::Array(lines));
        }
        "text" => {
            out.insert("text".into(), Value::String(page));
        }
        "dialog" => {
            out.insert("message".into(), Value::String(page));
        }
        "download" | "waitfordownload" => {
            let meta: Map<String, Value> = serde_json::from_str(&page).unwrap_or_default();
            out.extend(meta);
        }
        "pdf" => {
            out.insert("title".into(), Value::String(page));
        }
        _ => {}
    }
    if let Some(id) = out.get("targetId").cloned() {
        out.entry("tabId").or_insert(id);
    }
    if let Some(path) = stored {
        out.insert("path".into(), Value::String(path));
    }
    Value::Object(out)
}

/// `GET /`'s answer: the profile's state with OpenClaw's status fields.
pub fn status(
    state: &BrowserState,
    enabled: bool,
    headless: bool,
    executable: Option<&std::path::Path>,
) -> Value {
    let mut out = serde_json::to_value(state).unwrap_or_default();
    let exe = executable.map(|p| p.display().to_string());
    let name = executable
        .and_then(|p| p.file_name())
        .map(|n| n.to_string_lossy().into_owned());
    let extra = json!({
        "enabled": enabled,
        "transport": "cdp",
        "driver": "openclaw",
        "headless": headless,
        "cdpUrl": state.cdp_port.map(|p| format!("http://127.0.0.1:{p}")),
        "chosenBrowser": name,
        "detectedBrowser": name,
        "executablePath": exe,
        "detectedExecutablePath": exe,
    });
    for (k, v) in extra.as_object().into_iter().flatten() {
        out[k] = v.clone();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openclaws_routes_map_onto_the_tools_actions() {
        let q = json!({ "format": "ai", "limit": "40", "interactive": "true" });
        assert_eq!(
            route("GET", "/snapshot", &q, &Value::Null),
            Ok(Route::Call {
                action: "snapshot",
                args: json!({ "format": "ai", "snapshotFormat": "ai", "limit": 40, "interactive": true })
            })
        );
        let open = route(
            "POST",
            "/tabs/open",
            &json!({}),
            &json!({ "url": "https://x.test" }),
        );
        assert_eq!(
            open,
            Ok(Route::Call {
                action: "open",
                args: json!({ "url": "https://x.test", "targetUrl": "https://x.test" })
            })
        );
        assert_eq!(
            route("DELETE", "/tabs/t3", &Value::Null, &Value::Null),
            Ok(Route::Call {
                action: "close",
                args: json!({ "targetId": "t3" })
            })
        );
        assert_eq!(
            route("get", "/", &Value::Null, &Value::Null),
            Ok(Route::Status)
        );
        assert_eq!(
            route("POST", "/cookies/set", &Value::Null, &Value::Null)
                .unwrap_err()
                .to_string(),
            "POST /cookies/set is not supported by ferroclaw's browser"
        );
        let device = json!({ "name": "Pixel 7" });
        assert_eq!(
            route("POST", "/set/device", &Value::Null, &device),
            Ok(Route::Call {
                action: "emulate",
                args: device
            })
        );
        let cast = route(
            "POST",
            "/screencast",
            &Value::Null,
            &json!({ "targetId": "t1" }),
        );
        assert_eq!(cast.unwrap_err().code(), Some("SCREENCAST_UNSUPPORTED"));
        let shown = json!({ "targetId": "t1", "currentDocument": true });
        assert_eq!(
            route("POST", "/download", &Value::Null, &shown),
            Err(RouteError::CurrentDocument)
        );
    }

    #[test]
    fn an_answer_carries_what_the_call_read_under_openclaws_names() {
        let d = Done::new(
            json!({ "ok": true, "format": "ai", "targetId": "t1" }),
            Some(("snapshot", "- button \"Go\" [ref=e1]".into())),
        );
        let v = shape("snapshot", d, None);
        assert_eq!(v["snapshot"], "- button \"Go\" [ref=e1]");
        assert_eq!(v["tabId"], "t1");
        let aria = Done::new(
            json!({ "format": "aria" }),
            Some(("s", "{\"ref\":\"ax1\",\"role\":\"button\"}\n".into())),
        );
        assert_eq!(shape("snapshot", aria, None)["nodes"][0]["role"], "button");
        let shot = shape(
            "screenshot",
            Done::new(json!({ "ok": true }), None),
            Some("/m/x.png".into()),
        );
        assert_eq!(shot["path"], "/m/x.png");
    }
}
