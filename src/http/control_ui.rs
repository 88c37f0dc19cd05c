//! OpenClaw's Control UI, served from a built folder the user already has
//! (`gateway.controlUi.root`, or `--control-ui DIR`: for example the
//! `dist/control-ui` folder of an installed `openclaw` npm package), the way
//! OpenClaw serves it:
//! - under `gateway.controlUi.basePath` (default: the root); the bare base
//!   path redirects to itself with a slash;
//! - `index.html` for every page the single-page app routes itself (a
//!   browser asking for HTML), with the base path stamped on `<html>` and
//!   its `./` asset links anchored at the base path;
//! - the folder's files as they are: `assets/*` cached for a year (their
//!   names carry a content hash), everything else `no-cache`;
//! - `__openclaw__/assistant-media?source=`: a media store file by the
//!   path the gateway gave (`http/media.rs`; the Browser panel's screenshots);
//! - `control-ui-config.json` (and OpenClaw's two older paths for it)
//!   behind the gateway secret, with the assistant's name and avatar and the
//!   server version; it never carries a secret.
//!
//! Every response carries OpenClaw's Content-Security-Policy; the index's
//! allows its own inline scripts by hash and sockets to the gateway's host.
//! Paths that climb out of the folder (`..`, encoded or not, NUL, `\`) are
//! 404. WebSocket upgrades and every other HTTP route are not touched: the
//! UI is what the default route serves to a browser when it is configured.

use std::path::{Path, PathBuf};

use super::ui_root::{not_found, secured, with_csp, ControlUiRoot};

use actix_web::http::header;
use actix_web::{web, HttpRequest, HttpResponse};
use percent_encoding::percent_decode_str;
use serde_json::json;

use crate::state::SharedState;

/// Hashed asset names never change content.
const IMMUTABLE: &str = "public, max-age=31536000, immutable";

/// The file a request path names inside the UI (relative, decoded), or
/// None when it climbs out or is not a plain path.
fn safe_relative(rel: &str) -> Option<PathBuf> {
    let decoded = percent_decode_str(rel).decode_utf8().ok()?;
    if decoded.contains('\0') || decoded.contains('\\') {
        return None;
    }
    let mut out = PathBuf::new();
    for part in decoded.split('/') {
        match part {
            "" | "." => {}
            ".." => return None,
            p => out.push(p),
        }
    }
    Some(out)
}

/// What a request under the UI is.
#[derive(Debug, PartialEq)]
enum Route {
    /// The bare base path: redirect to it with a slash.
    Redirect(String),
    Config,
    /// `__openclaw__/workspace-icon/<session key>` (decoded).
    WorkspaceIcon(String),
    /// `avatar/<agent id>`.
    Avatar(String),
    /// `__openclaw__/assistant-media?source=<path>`: a stored file by path.
    AssistantMedia,
    /// A path inside the UI folder (relative; empty for the index).
    File(PathBuf),
    NotFound,
    /// Outside the base path: not the UI's.
    Outside,
}

fn route(base: &str, path: &str) -> Route {
    if !base.is_empty() && path == base {
        return Route::Redirect(format!("{base}/"));
    }
    let Some(rel) = path.strip_prefix(base).and_then(|r| r.strip_prefix('/')) else {
        return Route::Outside;
    };
    let config = rel == "control-ui-config.json"
        || rel == "__openclaw/control-ui-config.json"
        || (base.is_empty() && rel == "__openclaw__/control-ui-config.json");
    if config {
        return Route::Config;
    }
    if let Some(key) = rel.strip_prefix("__openclaw__/workspace-icon/") {
        let key = percent_decode_str(key).decode_utf8_lossy().to_string();
        return Route::WorkspaceIcon(key);
    }
    if rel == "__openclaw__/assistant-media" {
        return Route::AssistantMedia;
    }
    if let Some(agent) = rel.strip_prefix("avatar/") {
        return Route::Avatar(agent.to_string());
    }
    match safe_relative(rel) {
        Some(p) => Route::File(p),
        None => Route::NotFound,
    }
}

fn wants_html(req: &HttpRequest) -> bool {
    req.headers()
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|a| a.contains("text/html"))
}

/// Serves a request to the UI, or None when it is not the UI's (the caller
/// goes on to the WebSocket upgrade).
pub async fn serve(req: &HttpRequest, state: &SharedState) -> Option<HttpResponse> {
    let ui = state.control_ui.as_ref()?;
    if req.headers().contains_key(header::UPGRADE) {
        return None;
    }
    if req.method() != actix_web::http::Method::GET && req.method() != actix_web::http::Method::HEAD
    {
        return None;
    }
    let res = match route(&ui.base, req.path()) {
        Route::Outside => return None,
        Route::Redirect(to) => {
            let to = match req.query_string() {
                "" => to,
                q => format!("{to}?{q}"),
            };
            secured(
                HttpResponse::Found()
                    .insert_header((header::LOCATION, to))
                    .finish(),
            )
        }
        Route::NotFound => not_found(),
        Route::Config => config(req, state, &ui.base).await,
        Route::WorkspaceIcon(key) => super::ui_images::workspace_icon(req, state, &key).await,
        Route::Avatar(agent) => super::ui_images::avatar(req, state, &agent).await,
        Route::AssistantMedia => super::media::assistant_media(req, state).await,
        Route::File(rel) => file(req, ui, rel).await,
    };
    Some(res)
}

/// The app's page, with the policy that allows its own inline scripts.
fn index(req: &HttpRequest, ui: &ControlUiRoot) -> HttpResponse {
    let host = req
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok());
    let csp = super::ui_root::content_security_policy(&ui.script_hashes, host);
    with_csp(
        HttpResponse::Ok()
            .content_type("text/html; charset=utf-8")
            .insert_header((header::CACHE_CONTROL, "no-cache"))
            .body(ui.index.clone()),
        &csp,
    )
}

async fn file(req: &HttpRequest, ui: &ControlUiRoot, rel: PathBuf) -> HttpResponse {
    let is_index = rel.as_os_str().is_empty() || rel == Path::new("index.html");
    if is_index {
        return index(req, ui);
    }
    let (dir, wanted) = (ui.dir.clone(), ui.dir.join(&rel));
    // Resolved off the worker: a link may not lead out of the folder.
    let found = web::block(move || {
        let real = wanted.canonicalize().ok()?;
        (real.starts_with(&dir) && real.is_file()).then_some(real)
    })
    .await
    .ok()
    .flatten();
    let Some(path) = found else {
        // A page the app routes itself: the browser asks for HTML.
        return if wants_html(req) {
            index(req, ui)
        } else {
            not_found()
        };
    };
    let named = match actix_files::NamedFile::open_async(&path).await {
        Ok(f) => f,
        Err(_) => return not_found(),
    };
    let cache = if rel.starts_with("assets") {
        IMMUTABLE
    } else {
        "no-cache"
    };
    let mut res = named
        .use_etag(true)
        .use_last_modified(true)
        .disable_content_disposition()
        .into_response(req);
    res.headers_mut().insert(
        header::CACHE_CONTROL,
        header::HeaderValue::from_static(cache),
    );
    secured(res)
}

/// `control-ui-config.json`: what the UI needs before it connects. Behind
/// the gateway secret or a paired device's operator token; never carries one.
async fn config(req: &HttpRequest, state: &SharedState, base: &str) -> HttpResponse {
    let checked =
        crate::http::auth::check_bearer_or_device(req, state, "control-ui-config.json").await;
    if let Err(refusal) = checked {
        return secured(refusal.response());
    }
    let settings = state.live.settings();
    let agent_id = settings.default_agent_id().to_ascii_lowercase();
    let (name, avatar) = match crate::ws::methods::agents::default_identity(state).await {
        Some(id) => (id.name, id.avatar),
        None => ("Assistant".to_string(), "A".to_string()),
    };
    let auth_on = settings.gateway.auth.mode != ferroclaw_actors::settings::AuthMode::None;
    secured(
        HttpResponse::Ok()
            .insert_header((header::CACHE_CONTROL, "no-cache"))
            .json(json!({
                "basePath": base,
                "assistantName": name,
                "assistantAvatar": avatar,
                "assistantAvatarSource": null,
                "assistantAvatarStatus": null,
                "assistantAvatarReason": null,
                "assistantAgentId": agent_id,
                "serverVersion": state.server_version,
                "embedSandbox": "scripts",
                "allowExternalEmbedUrls": false,
                // ferroclaw does not fetch link favicons for the UI (no
                // `link-favicon` route): the UI is told not to ask.
                "automaticallyFetchFavicons": false,
                "communityInvite": true,
                "terminalEnabled": false,
                "cliAgentsEnabled": false,
                "pluginAssetsRequireAuth": auth_on,
                "pluginFrameGrants": [],
            })),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_route_to_the_config_the_files_or_nowhere() {
        assert_eq!(route("", "/"), Route::File(PathBuf::new()));
        assert_eq!(
            route("", "/assets/app.js"),
            Route::File("assets/app.js".into())
        );
        assert_eq!(route("", "/control-ui-config.json"), Route::Config);
        assert_eq!(
            route("", "/__openclaw__/control-ui-config.json"),
            Route::Config
        );
        assert_eq!(
            route("/ui", "/ui/__openclaw/control-ui-config.json"),
            Route::Config
        );
        assert_eq!(route("/ui", "/ui"), Route::Redirect("/ui/".into()));
        assert_eq!(route("/ui", "/other"), Route::Outside);
        for bad in [
            "/assets/../../etc/passwd",
            "/assets/%2e%2e/%2e%2e/etc/passwd",
            "/%2E%2E/secret",
            "/assets/..%2f..%2fx",
            "/a%00b",
            "/a%5c..%5cb",
        ] {
            assert_eq!(route("", bad), Route::NotFound, "{bad}");
        }
    }
}
