//! A Control UI folder, checked and prepared when the gateway starts: its
//! `index.html` with the base path stamped on `<html>` and its `./` links
//! anchored at the base path (served by `control_ui`).

use std::path::PathBuf;

use actix_web::http::header;
use actix_web::HttpResponse;

/// The attribute on `<html>` the UI reads its base path from.
const BASE_PATH_ATTRIBUTE: &str = "data-openclaw-control-ui-base-path";
/// The attribute that says whether the UI may open a terminal (never here).
const TERMINAL_ATTRIBUTE: &str = "data-openclaw-terminal-enabled";

/// A Control UI folder, checked and prepared at start.
#[derive(Debug)]
pub struct ControlUiRoot {
    /// The folder, canonical (every served file must be inside it).
    pub(crate) dir: PathBuf,
    /// `""` or `/<path>` without a trailing slash.
    pub(crate) base: String,
    /// `index.html` with the base path stamped in.
    pub(crate) index: String,
    /// `sha256-...` of each inline script of the index (its CSP allows them).
    pub(crate) script_hashes: Vec<String>,
}

/// Why a configured Control UI folder cannot be served.
#[derive(Debug, thiserror::Error)]
#[error("gateway.controlUi.root: {path}: {why} (point it at a built OpenClaw Control UI, for example node_modules/openclaw/dist/control-ui of an installed openclaw package)")]
pub struct ControlUiError {
    path: String,
    why: String,
}

impl ControlUiRoot {
    /// Checks `dir` (it must hold an `index.html`) and prepares the index for
    /// `base_path`.
    pub fn load(dir: &str, base_path: Option<&str>) -> Result<ControlUiRoot, ControlUiError> {
        let fail = |why: String| ControlUiError {
            path: dir.to_string(),
            why,
        };
        let expanded = ferroclaw_actors::fsutil::expand_home(dir).unwrap_or_else(|| dir.into());
        let canonical = expanded
            .canonicalize()
            .map_err(|e| fail(format!("cannot open it: {e}")))?;
        if !canonical.is_dir() {
            return Err(fail("not a folder".into()));
        }
        let index = std::fs::read_to_string(canonical.join("index.html"))
            .map_err(|e| fail(format!("no readable index.html: {e}")))?;
        let base = normalize_base(base_path);
        let index = stamp_index(&index, &base);
        Ok(ControlUiRoot {
            script_hashes: inline_script_hashes(&index),
            index,
            dir: canonical,
            base,
        })
    }
}

pub(crate) fn normalize_base(raw: Option<&str>) -> String {
    let trimmed = raw.unwrap_or("").trim().trim_matches('/');
    if trimmed.is_empty() {
        String::new()
    } else {
        format!("/{trimmed}")
    }
}

/// `sha256-<base64>` of every inline `<script>` (one without `src`) with
/// content, as a Content-Security-Policy `script-src` source allows it.
pub(crate) fn inline_script_hashes(html: &str) -> Vec<String> {
    use base64::Engine;
    use sha2::Digest;
    let lower = html.to_ascii_lowercase();
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(i) = lower[at..].find("<script") {
        let open = at + i;
        let Some(gt) = lower[open..].find('>').map(|g| open + g) else {
            break;
        };
        let Some(close) = lower[gt..].find("</script").map(|c| gt + c) else {
            break;
        };
        let tag = &lower[open + "<script".len()..gt];
        let has_src = tag
            .split(|c: char| c.is_whitespace())
            .any(|attr| attr == "src" || attr.starts_with("src="));
        let content = &html[gt + 1..close];
        if !has_src && !content.is_empty() {
            let digest = sha2::Sha256::digest(content.as_bytes());
            let b64 = base64::engine::general_purpose::STANDARD.encode(digest);
            out.push(format!("sha256-{b64}"));
        }
        at = close + "</script".len();
    }
    out
}

/// OpenClaw's Control UI policy: scripts from the gateway and the index's
/// own inline scripts only; sockets to the gateway's host.
pub(crate) fn content_security_policy(script_hashes: &[String], host: Option<&str>) -> String {
    let mut scripts = vec!["'self'".to_string()];
    scripts.extend(script_hashes.iter().map(|h| format!("'{h}'")));
    let mut connect = vec![
        "'self'".to_string(),
        "ws:".into(),
        "wss:".into(),
        "data:".into(),
        "https://api.openai.com".into(),
        "https://tweakcn.com".into(),
    ];
    let hostname = host
        .map(|h| h.rsplit_once(':').map_or(h, |(name, _)| name))
        .filter(|h| {
            !h.is_empty()
                && h.chars()
                    .all(|c| c.is_ascii_alphanumeric() || ".-[]:".contains(c))
        });
    if let Some(name) = hostname {
        connect.push(format!("http://{name}:*"));
        connect.push(format!("https://{name}:*"));
    }
    [
        "default-src 'self'".to_string(),
        "base-uri 'none'".into(),
        "object-src 'none'".into(),
        "frame-ancestors 'none'".into(),
        "frame-src 'self' http: https:".into(),
        format!("script-src {}", scripts.join(" ")),
        "style-src 'self' 'unsafe-inline' https://fonts.googleapis.com".into(),
        "img-src 'self' data: blob: https:".into(),
        "media-src 'self' data: blob:".into(),
        "font-src 'self' https://fonts.gstatic.com".into(),
        "worker-src 'self'".into(),
        format!("connect-src {}", connect.join(" ")),
    ]
    .join("; ")
}

/// The base path on `<html>`, and `./` links anchored at it.
fn stamp_index(html: &str, base: &str) -> String {
    let escaped = base.replace('&', "&amp;").replace('"', "&quot;");
    let anchored = html
        .replace("src=\"./", &format!("src=\"{base}/"))
        .replace("href=\"./", &format!("href=\"{base}/"));
    match anchored.find("<html") {
        Some(i) => {
            let at = i + "<html".len();
            format!(
                "{} {BASE_PATH_ATTRIBUTE}=\"{escaped}\" {TERMINAL_ATTRIBUTE}=\"false\"{}",
                &anchored[..at],
                &anchored[at..]
            )
        }
        None => anchored,
    }
}

/// Every Control UI response carries OpenClaw's security headers.
pub(super) fn secured(res: HttpResponse) -> HttpResponse {
    with_csp(res, &content_security_policy(&[], None))
}

pub(super) fn with_csp(mut res: HttpResponse, csp: &str) -> HttpResponse {
    let h = res.headers_mut();
    if let Ok(v) = header::HeaderValue::from_str(csp) {
        h.insert(header::CONTENT_SECURITY_POLICY, v);
    }
    h.insert(
        header::X_FRAME_OPTIONS,
        header::HeaderValue::from_static("DENY"),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        header::HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        header::HeaderValue::from_static("no-referrer"),
    );
    res
}

pub(super) fn not_found() -> HttpResponse {
    secured(
        HttpResponse::NotFound()
            .content_type("text/plain")
            .body("Not Found"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inline_scripts_are_hashed_and_linked_ones_are_not() {
        let html = "<html><script data-cfasync=\"false\">var a = 1;</script><script type=\"module\" src=\"/assets/a.js\"></script><SCRIPT></SCRIPT></html>";
        let hashes = inline_script_hashes(html);
        // sha256("var a = 1;"), as `openssl dgst -sha256 -binary | base64` gives.
        assert_eq!(
            hashes,
            ["sha256-+dZ6udsWxNVoGfScAq7t5IIF5UJb4F6RhjbN6oe1p4w="]
        );
        let csp = content_security_policy(&hashes, Some("127.0.0.1:18789"));
        assert!(
            csp.contains("script-src 'self' 'sha256-+dZ6udsWxNVoGfScAq7t5IIF5UJb4F6RhjbN6oe1p4w='"),
            "{csp}"
        );
        assert!(csp.contains("http://127.0.0.1:*") && csp.contains("frame-ancestors 'none'"));
        assert!(!content_security_policy(&[], Some("evil\"; x")).contains("evil"));
    }

    #[test]
    fn the_index_gets_the_base_path_and_anchored_links() {
        let html = r#"<!doctype html><html lang="en"><head><script src="./assets/a.js"></script><link href="./favicon.svg"></head></html>"#;
        let out = stamp_index(html, "/ui");
        assert!(out.contains(r#"<html data-openclaw-control-ui-base-path="/ui" data-openclaw-terminal-enabled="false" lang="en">"#), "{out}");
        assert!(
            out.contains(r#"src="/ui/assets/a.js""#) && out.contains(r#"href="/ui/favicon.svg""#)
        );
        assert!(stamp_index(html, "").contains(r#"src="/assets/a.js""#));
        assert_eq!(normalize_base(Some("/ui/")), "/ui");
        assert_eq!(normalize_base(Some("")), "");
        assert_eq!(normalize_base(None), "");
    }
}
