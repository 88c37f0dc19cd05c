//! `GET /media/<id>`: a stored attachment, the original a transcript
//! entry's `media[]` (and an image block's `mediaId`) names, for the
//! Control UI and the web chat to show or download. Behind the gateway
//! token or a paired device's operator token, or a signed link
//! (`chat.history` gives one per stored file: `media_links.rs`); the
//! id is the file's SHA-256, checked before anything is read. Images,
//! audio and video are served inline, anything else as a download; never
//! sniffed, never run (`nosniff`, a sandboxing CSP).

use std::collections::HashMap;

use actix_web::http::header;
use actix_web::{web, HttpRequest, HttpResponse};
use ferroclaw_actors::media::{GetMedia, MediaRef};
use serde_json::json;

use crate::state::SharedState;

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/media/{id}", web::get().to(get))
        .route("/media/{id}", web::head().to(get));
}

/// Whether the request is a signed link to this id (`chat.history`'s).
fn signed(req: &HttpRequest, id: &str, state: &SharedState) -> bool {
    let Ok(q) = web::Query::<HashMap<String, String>>::from_query(req.query_string()) else {
        return false;
    };
    match (q.get("exp"), q.get("sig")) {
        (Some(exp), Some(sig)) => state.media_links.check(id, exp, sig),
        _ => false,
    }
}

fn not_found() -> HttpResponse {
    HttpResponse::NotFound()
        .content_type("text/plain")
        .body("Not Found")
}

async fn get(
    req: HttpRequest,
    id: web::Path<String>,
    state: web::Data<SharedState>,
) -> HttpResponse {
    if !signed(&req, &id, &state) {
        if let Err(refusal) = crate::http::auth::check_bearer_or_device(&req, &state, "media").await
        {
            return refusal.response();
        }
    }
    match stored(&state, id.into_inner()).await {
        Some(m) => serve(m).await,
        None => not_found(),
    }
}

async fn stored(state: &SharedState, id: String) -> Option<MediaRef> {
    state.gateway.media.send(GetMedia { id }).await.ok()?.ok()
}

/// A stored file's bytes with its type; images, audio and video inline.
async fn serve(m: MediaRef) -> HttpResponse {
    let path = m.path.clone();
    let Ok(Ok(body)) = web::block(move || std::fs::read(path)).await else {
        return not_found();
    };
    let shown = ["image/", "audio/", "video/"]
        .iter()
        .any(|p| m.content_type.starts_with(p));
    let name: String = m
        .file_name
        .as_deref()
        .unwrap_or(&m.id)
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | ' '))
        .take(128)
        .collect();
    let disposition = match shown {
        true => format!("inline; filename=\"{name}\""),
        false => format!("attachment; filename=\"{name}\""),
    };
    HttpResponse::Ok()
        .content_type(m.content_type.as_str())
        .insert_header((header::CONTENT_DISPOSITION, disposition))
        .insert_header((header::CACHE_CONTROL, "private, max-age=86400, immutable"))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .insert_header((
            header::CONTENT_SECURITY_POLICY,
            "sandbox; default-src 'none'",
        ))
        .body(body)
}

/// The stored file a path names: its name is its id, and the store must
/// hold it at exactly that path (nothing else on disk is reachable).
async fn by_path(state: &SharedState, source: &str) -> Option<MediaRef> {
    let id = std::path::Path::new(source)
        .file_name()?
        .to_str()?
        .to_string();
    let m = stored(state, id).await?;
    (m.path == std::path::Path::new(source)).then_some(m)
}

/// OpenClaw's `__openclaw__/assistant-media?source=<path>` under the
/// Control UI (its Browser panel reads a screenshot this way, by the path
/// `browser.request` answered), behind the gateway token or a paired
/// device's operator token. Only files of the media store are served,
/// named by the path the store gave; `meta=1` says whether one is there.
/// OpenClaw's signed tickets for `<img>` are not given: chat.history's
/// `/media/<id>` links do that job here.
pub async fn assistant_media(req: &HttpRequest, state: &SharedState) -> HttpResponse {
    if let Err(refusal) =
        crate::http::auth::check_bearer_or_device(req, state, "assistant-media").await
    {
        return refusal.response();
    }
    let Ok(q) = web::Query::<HashMap<String, String>>::from_query(req.query_string()) else {
        return not_found();
    };
    let source = q.get("source").map(|s| s.trim()).unwrap_or_default();
    let found = match source.is_empty() {
        true => None,
        false => by_path(state, source).await,
    };
    if q.get("meta").map(String::as_str) == Some("1") {
        let meta = match &found {
            Some(m) => {
                json!({ "available": true, "mimeType": m.content_type, "sizeBytes": m.size })
            }
            None => json!({ "available": false, "code": "not-found", "retryable": false }),
        };
        return HttpResponse::Ok()
            .insert_header((header::CACHE_CONTROL, "no-store"))
            .json(meta);
    }
    match found {
        Some(m) => serve(m).await,
        None => not_found(),
    }
}
