//! `view_image` and `pdf`: files the agent looks at itself. Each names a
//! workspace file (kept inside the workspace, and away from the protected
//! files for a stranger's turn) or a stored media id (`media:<id>`, as
//! `chat.history` and the channels' attachments name them).
//!
//! `view_image` stores the image in the media store and hands the model
//! the image by reference when its model sees images (the run loads it
//! like a message's: an image block in the provider request); for a model
//! that does not, `tools.media.image` describes it (the description is
//! outside data, wrapped). `pdf` reads the text of chosen pages through
//! the document reader, wrapped as outside data.
//!
//! `MediaTools` answers the executor's `ExecuteTool` for both (the tool
//! executor forwards them here: the media module uses the tools', never the
//! other way round).

use std::sync::Arc;

use actix::prelude::*;
use serde_json::Value;

use super::{GetMedia, MediaConfig, MediaKind, MediaRef, MediaStore, PutMedia, Understand};
use crate::provider::Image;
use crate::tool::{confined, error, ok, ExecuteTool, ToolOutcome, Workspace};

/// `view_image` and `pdf`: the media store, its settings, the workspace.
pub struct MediaTools {
    pub store: Addr<MediaStore>,
    pub config: Arc<MediaConfig>,
    pub workspace: Workspace,
}

impl Actor for MediaTools {
    type Context = Context<Self>;
}

impl Handler<ExecuteTool> for MediaTools {
    type Result = ResponseFuture<ToolOutcome>;
    fn handle(&mut self, msg: ExecuteTool, _: &mut Context<Self>) -> Self::Result {
        let m = Handles {
            store: self.store.clone(),
            config: self.config.clone(),
        };
        let workspace = self.workspace.for_turn(&msg.trust);
        let span = tracing::info_span!("media_tools", tool = %msg.call.name, session_key = %msg.session_key);
        Box::pin(tracing::Instrument::instrument(
            async move {
                let args = &msg.call.arguments;
                match msg.call.name.as_str() {
                    "view_image" => {
                        view_image(
                            Some(&m),
                            &workspace,
                            msg.model.as_deref(),
                            &msg.agent_id,
                            args,
                        )
                        .await
                    }
                    "pdf" => pdf(Some(&m), &workspace, args).await,
                    other => error(format!("unknown tool: {other}")),
                }
            },
            span,
        ))
    }
}

/// What one call works with.
struct Handles {
    store: Addr<MediaStore>,
    config: Arc<MediaConfig>,
}

fn list<'a>(args: &'a Value, one: &str, many: &str) -> Vec<&'a str> {
    args.get(one)
        .and_then(Value::as_str)
        .into_iter()
        .chain(
            args.get(many)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str),
        )
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect()
}

fn max_bytes(args: &Value, default_mb: f64) -> u64 {
    let mb = args
        .get("maxBytesMb")
        .and_then(Value::as_f64)
        .filter(|m| *m > 0.0)
        .unwrap_or(default_mb)
        .min(50.0);
    (mb * 1024.0 * 1024.0) as u64
}

/// A stored media id (`media:<id>`, or the bare SHA-256).
fn media_id(raw: &str) -> Option<&str> {
    let id = raw.strip_prefix("media:").unwrap_or(raw);
    (id.len() == 64 && id.chars().all(|c| c.is_ascii_hexdigit())).then_some(id)
}

/// Why a named file could not be had.
#[derive(Debug, thiserror::Error)]
enum ResolveError {
    #[error("{0}: a URL; fetch it with web_fetch or save it to the workspace first")]
    Url(String),
    #[error("{0}")]
    Outside(crate::tool::confine::Confined),
    #[error("{raw}: {why}")]
    Unreadable { raw: String, why: String },
    #[error("{raw} is {size} bytes, over the {max} byte limit (maxBytesMb)")]
    TooLarge { raw: String, size: u64, max: u64 },
    #[error("the media store stopped")]
    Stopped,
}

/// The stored file `raw` names: a media id, or a workspace file put in the
/// store (at most `max` bytes).
async fn resolve(
    m: &Handles,
    workspace: &Workspace,
    raw: &str,
    max: u64,
) -> Result<MediaRef, ResolveError> {
    let unreadable = |why: String| ResolveError::Unreadable {
        raw: raw.to_string(),
        why,
    };
    if raw.starts_with("http://") || raw.starts_with("https://") {
        return Err(ResolveError::Url(raw.to_string()));
    }
    if let Some(id) = media_id(raw) {
        return match m.store.send(GetMedia { id: id.to_string() }).await {
            Ok(Ok(r)) => Ok(r),
            Ok(Err(e)) => Err(unreadable(e.to_string())),
            Err(_) => Err(ResolveError::Stopped),
        };
    }
    let path = confined(workspace, raw)
        .await
        .map_err(ResolveError::Outside)?;
    let size = tokio::fs::metadata(&path)
        .await
        .map_err(|e| unreadable(e.to_string()))?
        .len();
    if size > max {
        return Err(ResolveError::TooLarge {
            raw: raw.to_string(),
            size,
            max,
        });
    }
    let bytes = tokio::fs::read(&path)
        .await
        .map_err(|e| unreadable(e.to_string()))?;
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
    let put = PutMedia {
        bytes: bytes.into(),
        content_type: None,
        file_name: name,
    };
    match m.store.send(put).await {
        Ok(Ok(r)) => Ok(r),
        Ok(Err(e)) => Err(unreadable(e.to_string())),
        Err(_) => Err(ResolveError::Stopped),
    }
}

/// `view_image`: `path` / `paths` (up to `maxImages`, default 20).
async fn view_image(
    m: Option<&Handles>,
    workspace: &Workspace,
    model: Option<&str>,
    agent: &str,
    args: &Value,
) -> ToolOutcome {
    let Some(m) = m else {
        return error("view_image: the media store is unavailable");
    };
    let refs = match images(m, workspace, args).await {
        Ok(refs) => refs,
        Err(refused) => return refused,
    };
    if !m.config.reply.vision(model, agent) {
        return described(m, refs).await;
    }
    let names: Vec<String> = refs
        .iter()
        .map(|(raw, r)| {
            format!(
                "{raw} ({}, {} bytes, media:{})",
                r.content_type, r.size, r.id
            )
        })
        .collect();
    ToolOutcome {
        text: format!(
            "Attached for you to look at (the user does not see them): {}",
            names.join("; ")
        ),
        is_error: false,
        blocked: false,
        images: refs
            .iter()
            .map(|(_, r)| Image {
                mime_type: r.content_type.clone(),
                data: String::new(),
                media_id: Some(r.id.clone()),
            })
            .collect(),
        ends_turn: None,
    }
}

/// The images asked for, each resolved (a workspace file or `media:<id>`)
/// and an image.
async fn images(
    m: &Handles,
    workspace: &Workspace,
    args: &Value,
) -> Result<Vec<(String, MediaRef)>, ToolOutcome> {
    let wanted = list(args, "path", "paths");
    if wanted.is_empty() {
        return Err(error(
            "view_image: give path (a workspace image or media:<id>) or paths",
        ));
    }
    let cap = args
        .get("maxImages")
        .and_then(Value::as_u64)
        .unwrap_or(20)
        .clamp(1, 20) as usize;
    if wanted.len() > cap {
        return Err(error(format!(
            "view_image: {} images asked, at most {cap}",
            wanted.len()
        )));
    }
    let max = max_bytes(args, 10.0);
    let mut refs = Vec::new();
    for raw in &wanted {
        match resolve(m, workspace, raw, max).await {
            Ok(r) if r.kind == MediaKind::Image => refs.push((raw.to_string(), r)),
            Ok(r) => {
                return Err(error(format!(
                    "view_image: {raw} is {}, not an image",
                    r.content_type
                )))
            }
            Err(e) => return Err(error(format!("view_image: {e}"))),
        }
    }
    Ok(refs)
}

/// For a model without vision: each image described by
/// `tools.media.image`, as a stranger's text (the image may be anyone's).
async fn described(m: &Handles, refs: Vec<(String, MediaRef)>) -> ToolOutcome {
    if m.config.entries(MediaKind::Image).is_empty() {
        return error(
            "view_image: this model does not see images and no tools.media.image model is configured to describe them",
        );
    }
    let mut out = Vec::new();
    for (raw, r) in refs {
        let u = m
            .store
            .send(Understand {
                media: r,
                config: m.config.clone(),
            })
            .await
            .unwrap_or_default();
        match u.text {
            Some(t) => out.push(crate::trust::wrap(
                &format!("a description of the image {raw}"),
                &t,
            )),
            None => {
                return error(format!(
                    "view_image: {raw} could not be described: {}",
                    u.attempts.join("; ")
                ))
            }
        }
    }
    ok(out.join("\n"))
}

/// `pdf`: `pdf` / `pdfs` (up to 10), `pages`, `maxBytesMb`.
async fn pdf(m: Option<&Handles>, workspace: &Workspace, args: &Value) -> ToolOutcome {
    let Some(m) = m else {
        return error("pdf: the media store is unavailable");
    };
    let wanted = list(args, "pdf", "pdfs");
    if wanted.is_empty() || wanted.len() > 10 {
        return error("pdf: give pdf (a workspace PDF or media:<id>) or pdfs (at most 10)");
    }
    if args.get("password").is_some_and(|p| !p.is_null()) {
        return error("pdf: encrypted PDFs are not supported (password)");
    }
    let pages = match args.get("pages").and_then(Value::as_str) {
        Some(spec) => match super::document::page_list(spec) {
            Ok(p) => Some(p),
            Err(e) => return error(format!("pdf: {e}")),
        },
        None => None,
    };
    let max_chars = m.config.document_chars().unwrap_or(200_000);
    let max = max_bytes(args, 20.0);
    let mut out = Vec::new();
    for raw in wanted {
        let r = match resolve(m, workspace, raw, max).await {
            Ok(r) if r.content_type == "application/pdf" => r,
            Ok(r) => return error(format!("pdf: {raw} is {}, not a PDF", r.content_type)),
            Err(e) => return error(format!("pdf: {e}")),
        };
        let (path, wanted) = (r.path.clone(), pages.clone());
        let read = tokio::task::spawn_blocking(move || {
            super::document::pdf_pages(&path, wanted.as_deref(), max_chars)
        })
        .await
        .unwrap_or_else(|e| {
            Err(super::document::PagesError::Unreadable(format!(
                "the reader failed: {e}"
            )))
        });
        match read {
            Ok(p) => {
                let cut = if p.truncated { " (truncated)" } else { "" };
                out.push(format!(
                    "{raw}: {} page(s), read {:?}{cut}\n{}",
                    p.total,
                    p.read,
                    crate::trust::wrap(&format!("the PDF {raw}"), &p.text)
                ));
            }
            Err(e) => return error(format!("pdf: {raw}: {e}")),
        }
    }
    ok(out.join("\n\n"))
}
