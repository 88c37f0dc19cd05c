//! A Control UI folder, checked and prepared when the gateway starts: its
//! `index.html` with the base path stamped on `<html>` and its `./` links
//! anchored at the base path (served by `control_ui`).

use std::path::PathBuf;

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
        Ok(ControlUiRoot {
            index: stamp_index(&index, &base),
            dir: canonical,
            base,
        })
    }
}

fn normalize_base(raw: Option<&str>) -> String {
    let trimmed = raw.unwrap_or("").trim().trim_matches('/');
    if trimmed.is_empty() {
        String::new()
    } else {
        format!("/{trimmed}")
    }
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

#[cfg(test)]
mod tests {
    use super::*;

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
