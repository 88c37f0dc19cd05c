//! `artifacts.list`: the files a session's agent wrote into the workspace
//! (`write`, `edit`, `apply_patch` calls that succeeded, read back from the
//! transcript: `transcript::written`), newest first, with their size and
//! type as the workspace holds them now; a file since removed, or one
//! outside the workspace, is not listed. An image of the page is copied
//! into the media store (content-addressed: once per content) and carries
//! its signed `/media/<id>` link, as `chat.history`'s media do; an image
//! over 10 MB is left out (`omittedOversized`). Other files are not served
//! over HTTP: their download is `unsupported`.

use std::path::{Path, PathBuf};

use ferroclaw_actors::transcript::written::{written, Written};
use serde::Deserialize;
use serde_json::{json, Value};

use super::{agent_session_key, json, params, stored_transcript, MethodResult};
use crate::protocol::errors::ErrorShape;
use crate::state::SharedState;

/// A page when the caller names no `limit` (OpenClaw's most is 4 when named).
const DEFAULT_LIMIT: usize = 50;

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ListParams {
    #[serde(default)]
    session_key: Option<String>,
    #[serde(default)]
    run_id: Option<String>,
    #[serde(default)]
    task_id: Option<String>,
    #[serde(default)]
    agent_id: Option<String>,
    #[serde(default)]
    message_role: Option<String>,
    #[serde(default, rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    limit: Option<usize>,
    #[serde(default)]
    cursor: Option<String>,
}

/// The MIME type a file's extension names, and whether it is an image.
fn mime_of(path: &Path) -> (&'static str, bool) {
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    match ext.to_ascii_lowercase().as_str() {
        "png" => ("image/png", true),
        "jpg" | "jpeg" => ("image/jpeg", true),
        "gif" => ("image/gif", true),
        "webp" => ("image/webp", true),
        "svg" => ("image/svg+xml", true),
        "md" => ("text/markdown", false),
        "json" => ("application/json", false),
        "html" | "htm" => ("text/html", false),
        "pdf" => ("application/pdf", false),
        "csv" => ("text/csv", false),
        _ => ("text/plain", false),
    }
}

/// The largest image an artifact's link is made for.
const IMAGE_MAX_BYTES: u64 = 10 * 1024 * 1024;

/// A written file as OpenClaw's artifact summary, if it still exists: with
/// where it is when it is an image.
fn summary(workspace: &Path, key: &str, w: &Written) -> Option<(Option<PathBuf>, Value)> {
    let path = PathBuf::from(&w.path);
    let full = if path.is_absolute() {
        path.clone()
    } else {
        workspace.join(&path)
    };
    // Only what is in the workspace now (a path that leads out of it, or a
    // stranger's sandboxed write, is not the workspace's artifact).
    let real = std::fs::canonicalize(&full).ok()?;
    let root = std::fs::canonicalize(workspace).ok()?;
    if !real.starts_with(&root) {
        return None;
    }
    let meta = std::fs::metadata(&real).ok().filter(|m| m.is_file())?;
    let (mime, image) = mime_of(&path);
    let image = image.then_some(real);
    let v = json!({
        "id": format!("{}:{}", w.call_id, w.path),
        "type": if image.is_some() { "image" } else { "file" },
        "title": w.path,
        "mimeType": mime,
        "sizeBytes": meta.len(),
        "sessionKey": key,
        "messageSeq": w.seq,
        "source": w.tool,
        "download": { "mode": "unsupported" },
    });
    Some((image, v))
}

/// The page asked for: (limit, offset).
fn page_of(p: &ListParams) -> Result<(usize, usize), ErrorShape> {
    let limit = match p.limit {
        None => DEFAULT_LIMIT,
        Some(n @ 1..=4) => n,
        Some(_) => {
            return Err(ErrorShape::invalid(
                "invalid artifacts.list params: limit must be 1 to 4",
            ))
        }
    };
    let offset = match &p.cursor {
        None => 0,
        Some(c) => c
            .parse::<usize>()
            .map_err(|_| ErrorShape::invalid("invalid artifacts.list cursor"))?,
    };
    Ok((limit, offset))
}

/// `artifacts.list`: `{artifacts, nextCursor?}` for a session (the default
/// agent's main session when none is named).
pub async fn list(state: &SharedState, p: &Value) -> MethodResult {
    let p: ListParams = if p.is_null() {
        ListParams::default()
    } else {
        params("artifacts.list", p)?
    };
    let _ = (&p.run_id, &p.task_id, &p.message_role);
    let (limit, offset) = page_of(&p)?;
    let raw = p.session_key.as_deref().unwrap_or("main");
    let key = agent_session_key(state, raw, p.agent_id.as_deref())?;
    let Some(entries) = stored_transcript(state, &key).await? else {
        return json(json!({ "artifacts": [] }));
    };
    let workspace = state.gateway.context.workspace.clone();
    let images_only = p.kind.as_deref() == Some("image");
    // The files are looked at on the blocking pool, not this worker.
    let look = move || -> Vec<(Option<PathBuf>, Value)> {
        written(&entries)
            .iter()
            .filter_map(|w| summary(&workspace, key.as_str(), w))
            .filter(|(image, _)| !images_only || image.is_some())
            .collect()
    };
    let files = actix_web::rt::task::spawn_blocking(look)
        .await
        .map_err(|_| ErrorShape::unavailable("cannot read the workspace"))?;
    let more = offset + limit < files.len();
    let mut page = Vec::new();
    let mut oversized = false;
    for (image, mut v) in files.into_iter().skip(offset).take(limit) {
        if let Some(path) = image {
            match linked(state, &path).await? {
                Some(url) => v["image"] = json!({ "url": url }),
                None if images_only => {
                    oversized = true;
                    continue;
                }
                None => {}
            }
        }
        page.push(v);
    }
    let mut out = json!({ "artifacts": page });
    if more {
        out["nextCursor"] = json!((offset + limit).to_string());
    }
    if oversized {
        out["omittedOversized"] = json!(true);
    }
    json(out)
}

/// An image's signed link, once it is in the media store (None: over the
/// size a link is made for, or gone).
async fn linked(state: &SharedState, path: &Path) -> Result<Option<String>, ErrorShape> {
    let p = path.to_path_buf();
    let read = move || -> Option<Vec<u8>> {
        let meta = std::fs::metadata(&p).ok()?;
        (meta.len() <= IMAGE_MAX_BYTES)
            .then(|| std::fs::read(&p).ok())
            .flatten()
    };
    let Some(bytes) = actix_web::rt::task::spawn_blocking(read)
        .await
        .map_err(|_| ErrorShape::unavailable("cannot read the workspace"))?
    else {
        return Ok(None);
    };
    let put = ferroclaw_actors::media::PutMedia {
        bytes: bytes.into(),
        content_type: Some(mime_of(path).0.to_string()),
        file_name: path.file_name().map(|n| n.to_string_lossy().into_owned()),
    };
    let m = state
        .gateway
        .media
        .send(put)
        .await
        .map_err(super::down)?
        .map_err(|e| ErrorShape::unavailable(format!("the image was not stored: {e}")))?;
    Ok(Some(state.media_links.url(&m.id)))
}
