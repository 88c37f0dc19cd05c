//! `read`: a workspace file by lines (`offset` 1-based, `limit`), capped;
//! binary files are described, not dumped. A file under the browser's
//! downloads directory is outside data (wrapped).

use std::path::Path;

use serde_json::Value;

use super::confine::{confined, kind_of};
use super::{error, ok, str_arg, uint_arg, ToolLimits};
use crate::tool::ToolOutcome;

/// An image's type, size and dimensions (None: not an image).
fn image(raw: &str, bytes: &[u8]) -> Option<String> {
    let kind = imagesize::image_type(bytes).ok()?;
    let mime = match kind {
        imagesize::ImageType::Png => "image/png",
        imagesize::ImageType::Jpeg => "image/jpeg",
        imagesize::ImageType::Gif => "image/gif",
        imagesize::ImageType::Webp => "image/webp",
        imagesize::ImageType::Bmp => "image/bmp",
        imagesize::ImageType::Tiff => "image/tiff",
        imagesize::ImageType::Ico => "image/x-icon",
        _ => "image",
    };
    let dims = imagesize::blob_size(bytes)
        .map(|d| format!(", {}x{} px", d.width, d.height))
        .unwrap_or_default();
    Some(format!(
        "[image {raw}: {mime}{dims}, {} bytes]",
        bytes.len()
    ))
}

pub async fn run(workspace: &super::Workspace, limits: &ToolLimits, args: &Value) -> ToolOutcome {
    let raw = match str_arg("read", args, "path") {
        Ok(p) => p,
        Err(e) => return e,
    };
    let (offset, limit) = match (
        uint_arg("read", args, "offset"),
        uint_arg("read", args, "limit"),
    ) {
        (Ok(o), Ok(l)) => (
            usize::try_from(o.unwrap_or(1).max(1)).unwrap_or(usize::MAX),
            l.map(|l| usize::try_from(l).unwrap_or(usize::MAX)),
        ),
        (Err(e), _) | (_, Err(e)) => return e,
    };
    let path = match confined(workspace, raw).await {
        Ok(p) => p,
        Err(e) => return error(format!("read: {e}")),
    };
    if kind_of(&path).await.is_some_and(|k| k.is_dir()) {
        return error(format!("read: {raw} is a directory"));
    }
    let bytes = match tokio::fs::read(&path).await {
        Ok(b) => b,
        Err(e) => return error(format!("read: {raw}: {e}")),
    };
    // Images are described (type and size), not dumped.
    if let Some(described) = image(raw, &bytes) {
        return ok(described);
    }
    if bytes.iter().take(8192).any(|b| *b == 0) {
        return ok(format!("[binary file {raw}: {} bytes]", bytes.len()));
    }
    let text = String::from_utf8_lossy(&bytes);
    let lines: Vec<&str> = text.lines().collect();
    let start = (offset - 1).min(lines.len());
    let end = limit
        .map(|l| start.saturating_add(l).min(lines.len()))
        .unwrap_or(lines.len());
    let mut out = lines[start..end].join("\n");
    if out.len() > limits.read_cap {
        let mut cut = limits.read_cap;
        while !out.is_char_boundary(cut) {
            cut -= 1;
        }
        let more = out.len() - cut;
        out.truncate(cut);
        out.push_str(&format!(
            "\n[truncated: {more} more bytes; use offset/limit]"
        ));
    } else if end < lines.len() {
        out.push_str(&format!(
            "\n[{} more lines; continue with offset {}]",
            lines.len() - end,
            end + 1
        ));
    }
    ok(outside_if_downloaded(&workspace.root, &path, raw, out).await)
}

/// The browser's downloads directory in a workspace.
pub const DOWNLOADS: &str = "downloads";

/// `text` read from `path`, wrapped as outside data when `path` (resolved)
/// is under the workspace's downloads directory: a stranger's bytes.
async fn outside_if_downloaded(root: &Path, path: &Path, raw: &str, text: String) -> String {
    match tokio::fs::canonicalize(root.join(DOWNLOADS)).await {
        Ok(dir) if path.starts_with(&dir) => {
            crate::trust::wrap(&format!("a file the browser downloaded ({raw})"), &text)
        }
        _ => text,
    }
}
