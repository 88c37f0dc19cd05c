//! The Control UI's two image routes, served the way OpenClaw serves them
//! (behind the gateway secret or a paired device's operator token):
//! - `__openclaw__/workspace-icon/<session key>`: the first of a fixed list
//!   of conventional icon files in the session agent's workspace;
//! - `avatar/<agent id>`: the agent's avatar when its identity names an
//!   image file inside its workspace (`?meta=1`: what the avatar is, as JSON).
//!
//! Files are read on the blocking pool, capped (SVG tighter), and must stay
//! inside the workspace after symlinks; anything else is 404.

use std::path::{Component, Path, PathBuf};

use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse};
use serde_json::json;

use super::ui_root::{not_found, secured};
use crate::protocol::session_rows::agent_of;
use crate::state::SharedState;

/// OpenClaw's icon locations, in its order (the common ones).
const ICON_PATHS: &[&str] = &[
    "favicon.svg",
    "favicon.ico",
    "favicon.png",
    "public/favicon.svg",
    "public/favicon.ico",
    "public/favicon.png",
    "static/favicon.svg",
    "static/favicon.ico",
    "static/favicon.png",
    "app/favicon.ico",
    "app/icon.svg",
    "app/icon.png",
    "src/favicon.ico",
    "src/favicon.svg",
    "assets/icon.svg",
    "assets/icon.png",
    "assets/logo.svg",
    "assets/logo.png",
];

const IMAGE_MAX_BYTES: u64 = 512 * 1024;
const SVG_MAX_BYTES: u64 = 64 * 1024;

fn mime_of(path: &Path) -> Option<&'static str> {
    let ext = path.extension()?.to_str()?.to_ascii_lowercase();
    Some(match ext.as_str() {
        "svg" => "image/svg+xml",
        "ico" => "image/x-icon",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "webp" => "image/webp",
        "gif" => "image/gif",
        _ => return None,
    })
}

/// `rel` inside `root` (no `..`, not absolute, symlinks staying inside),
/// read when it is an image under its cap.
fn read_image(root: &Path, rel: &str) -> Option<(&'static str, Vec<u8>)> {
    let rel = Path::new(rel);
    if rel
        .components()
        .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir))
    {
        return None;
    }
    let mime = mime_of(rel)?;
    let root = root.canonicalize().ok()?;
    let path = root.join(rel).canonicalize().ok()?;
    if !path.starts_with(&root) {
        return None;
    }
    let meta = std::fs::metadata(&path).ok()?;
    let cap = if mime == "image/svg+xml" {
        SVG_MAX_BYTES
    } else {
        IMAGE_MAX_BYTES
    };
    if !meta.is_file() || meta.len() > cap {
        return None;
    }
    Some((mime, std::fs::read(&path).ok()?))
}

fn image(mime: &str, body: Vec<u8>) -> HttpResponse {
    let mut res = HttpResponse::Ok();
    res.content_type(mime)
        .insert_header((header::CACHE_CONTROL, "private, no-cache"))
        .insert_header((header::VARY, "Authorization"));
    // For HEAD the server sends the headers (with the length), no body.
    secured(res.body(body))
}

fn no_store_404() -> HttpResponse {
    let mut res = not_found();
    res.headers_mut().insert(
        header::CACHE_CONTROL,
        header::HeaderValue::from_static("no-store"),
    );
    res
}

async fn authorized(req: &HttpRequest, state: &SharedState, path: &str) -> Option<HttpResponse> {
    crate::http::auth::check_bearer_or_device(req, state, path)
        .await
        .err()
        .map(|refusal| secured(refusal.response()))
}

pub async fn workspace_icon(req: &HttpRequest, state: &SharedState, key: &str) -> HttpResponse {
    if let Some(refused) = authorized(req, state, "workspace-icon").await {
        return refused;
    }
    if key.is_empty() {
        return no_store_404();
    }
    let workspace: PathBuf = crate::ws::methods::agents::workspace_of(state, agent_of(key));
    let found = actix_web::rt::task::spawn_blocking(move || {
        ICON_PATHS.iter().find_map(|p| read_image(&workspace, p))
    })
    .await
    .ok()
    .flatten();
    match found {
        Some((mime, body)) => image(mime, body),
        None => no_store_404(),
    }
}

pub async fn avatar(req: &HttpRequest, state: &SharedState, agent: &str) -> HttpResponse {
    if !crate::ws::methods::agents::valid_agent_id(agent) {
        return not_found();
    }
    if let Some(refused) = authorized(req, state, "avatar").await {
        return refused;
    }
    let Some((workspace, avatar)) = crate::ws::methods::agents::avatar_of(state, agent).await
    else {
        return not_found();
    };
    let remote = avatar.starts_with("http://") || avatar.starts_with("https://");
    let data = avatar.starts_with("data:");
    let rel = avatar.clone();
    let local = if remote || data || mime_of(Path::new(&avatar)).is_none() {
        None
    } else {
        actix_web::rt::task::spawn_blocking(move || read_image(&workspace, &rel))
            .await
            .ok()
            .flatten()
    };
    if req.query_string().split('&').any(|kv| kv == "meta=1") {
        let (url, source, status) = match (&local, remote, data) {
            (Some(_), _, _) => (Some(format!("avatar/{agent}")), "local", "ok"),
            (None, true, _) => (Some(avatar.clone()), "remote", "ok"),
            (None, _, true) => (None, "data", "ok"),
            (None, false, false) => (None, "text", "none"),
        };
        return secured(
            HttpResponse::Ok()
                .insert_header((header::CACHE_CONTROL, "no-cache"))
                .json(json!({
                    "avatarUrl": url, "avatarSource": source, "avatarStatus": status,
                    "avatarReason": null,
                })),
        );
    }
    match local {
        Some((mime, body)) => image(mime, body),
        None => not_found(),
    }
}
