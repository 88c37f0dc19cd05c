//! The web chat at `/chat`: a single-page app built from
//! `src/http/webchat/ui/` (plain JavaScript, bundled with its libraries by
//! esbuild) into `src/http/webchat/dist/`, which is committed and embedded
//! here, so building ferroclaw needs no npm and the page loads nothing from
//! any other host. The page is a gateway client like any other: it signs
//! in over the WebSocket with a device key and the gateway token.
//! Invariant: the page's CSP allows only its own origin (plus `data:` and
//! `blob:` images), so markdown from a model cannot load or run anything.

use std::sync::LazyLock;

use actix_web::http::header;
use actix_web::{web, HttpRequest, HttpResponse};

use super::admin::get_head;
use crate::state::SharedState;

const INDEX: &str = include_str!("webchat/dist/index.html");
const CHAT_JS: &[u8] = include_bytes!("webchat/dist/chat.js");
const CHAT_CSS: &[u8] = include_bytes!("webchat/dist/chat.css");

static INDEX_HTML: LazyLock<String> =
    LazyLock::new(|| INDEX.replace("__FERROCLAW_VERSION__", crate::VERSION));

/// The page's Content-Security-Policy.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     img-src 'self' data: blob:; connect-src 'self' ws: wss:; base-uri 'none'; \
     form-action 'none'; frame-ancestors 'none'";

pub fn routes(cfg: &mut web::ServiceConfig) {
    for path in ["/chat", "/chat/"] {
        cfg.service(get_head(path, index));
    }
    cfg.service(get_head("/chat/chat.js", js));
    cfg.service(get_head("/chat/chat.css", css));
}

fn common(res: &mut actix_web::HttpResponseBuilder) {
    res.insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .insert_header((header::REFERRER_POLICY, "no-referrer"));
}

async fn index(
    req: HttpRequest,
    payload: web::Payload,
    state: web::Data<SharedState>,
) -> HttpResponse {
    // WebSocket clients may connect on any path, this one included.
    if req.headers().contains_key(header::UPGRADE) {
        return crate::ws::upgrade(req, payload, state).await;
    }
    let mut res = HttpResponse::Ok();
    common(&mut res);
    res.content_type("text/html; charset=utf-8")
        .insert_header((header::CACHE_CONTROL, "no-cache"))
        .insert_header((header::CONTENT_SECURITY_POLICY, CSP))
        .insert_header((header::X_FRAME_OPTIONS, "DENY"))
        .body(INDEX_HTML.as_str())
}

/// Assets are linked with a content hash (`?v=`), so they never go stale.
fn asset(content_type: &str, body: &'static [u8]) -> HttpResponse {
    let mut res = HttpResponse::Ok();
    common(&mut res);
    res.content_type(content_type)
        .insert_header((header::CACHE_CONTROL, "public, max-age=31536000, immutable"))
        .body(body)
}

async fn js() -> HttpResponse {
    asset("text/javascript; charset=utf-8", CHAT_JS)
}

async fn css() -> HttpResponse {
    asset("text/css; charset=utf-8", CHAT_CSS)
}
