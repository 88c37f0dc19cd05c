//! The media folder's files: `<sha256>` and `<sha256>.json`, two levels
//! (`ab/abcdef...`) so no folder grows too large. Blocking: called on the
//! blocking pool by the actor.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::MediaError;

/// What kind of media a file is (from its bytes when they say).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MediaKind {
    Image,
    Audio,
    Video,
    Document,
    Other,
}

impl MediaKind {
    pub fn of(content_type: &str) -> MediaKind {
        let t = content_type.to_ascii_lowercase();
        match t.split('/').next().unwrap_or("") {
            // Markup, not pixels: text to read, never an image for a
            // vision model.
            _ if t == "image/svg+xml" => MediaKind::Document,
            "image" => MediaKind::Image,
            "audio" => MediaKind::Audio,
            "video" => MediaKind::Video,
            "text" => MediaKind::Document,
            _ if t == "application/pdf" || t == "application/json" || t.ends_with("+json") => {
                MediaKind::Document
            }
            _ => MediaKind::Other,
        }
    }

    /// The `tools.media` capability that understands this kind.
    pub fn capability(self) -> Option<&'static str> {
        match self {
            MediaKind::Image => Some("image"),
            MediaKind::Audio => Some("audio"),
            MediaKind::Video => Some("video"),
            _ => None,
        }
    }
}

/// One stored file, as the rest of the gateway refers to it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MediaRef {
    /// The SHA-256 of the bytes (hex): the same file is stored once.
    pub id: String,
    pub path: PathBuf,
    pub content_type: String,
    pub kind: MediaKind,
    pub size: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_name: Option<String>,
    /// What the sender said the type was, when the bytes say otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub declared_type: Option<String>,
}

/// The sidecar: the ref and when it was stored and last used.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Sidecar {
    #[serde(flatten)]
    pub media: MediaRef,
    pub created_at_ms: u64,
    pub used_at_ms: u64,
}

/// The type the bytes announce (magic numbers), if they announce one.
pub fn sniff(bytes: &[u8]) -> Option<&'static str> {
    let at = |i: usize, m: &[u8]| bytes.get(i..i + m.len()) == Some(m);
    Some(match () {
        _ if at(0, b"\x89PNG\r\n\x1a\n") => "image/png",
        _ if at(0, b"\xff\xd8\xff") => "image/jpeg",
        _ if at(0, b"GIF87a") || at(0, b"GIF89a") => "image/gif",
        _ if at(0, b"RIFF") && at(8, b"WEBP") => "image/webp",
        _ if at(0, b"RIFF") && at(8, b"WAVE") => "audio/wav",
        _ if at(0, b"%PDF-") => "application/pdf",
        _ if at(0, b"OggS") => "audio/ogg",
        _ if at(0, b"ID3") || at(0, b"\xff\xfb") || at(0, b"\xff\xf3") => "audio/mpeg",
        _ if at(0, b"fLaC") => "audio/flac",
        _ if at(4, b"ftypM4A") => "audio/mp4",
        _ if at(4, b"ftypheic") || at(4, b"ftypheix") || at(4, b"ftypmif1") => "image/heic",
        _ if at(4, b"ftyp") => "video/mp4",
        _ if at(0, b"\x1a\x45\xdf\xa3") => "video/webm",
        _ if at(0, b"PK\x03\x04") => "application/zip",
        _ => return None,
    })
}

/// SVG announces itself in text: markup whose first element (after an
/// optional XML declaration, doctype or comments) is `<svg`.
fn is_svg(bytes: &[u8]) -> bool {
    let head = String::from_utf8_lossy(&bytes[..bytes.len().min(4096)]);
    let head = head.trim_start_matches('\u{feff}').trim_start();
    head.starts_with('<') && head.contains("<svg")
}

pub(super) fn hash(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

pub(super) fn path_of(dir: &Path, id: &str) -> PathBuf {
    dir.join(id.get(..2).unwrap_or("00")).join(id)
}

fn sidecar_path(file: &Path) -> PathBuf {
    file.with_extension("json")
}

fn io(e: std::io::Error) -> MediaError {
    MediaError::Io(e.to_string())
}

/// The type to record: the sniffed one when the bytes say (the declared
/// one kept when it differs), else the declared one, else
/// `application/octet-stream`.
fn settle_type(bytes: &[u8], declared: Option<&str>) -> (String, Option<String>) {
    let declared = declared
        .map(|d| d.split(';').next().unwrap_or(d).trim().to_ascii_lowercase())
        .filter(|d| !d.is_empty());
    match (sniff(bytes), declared) {
        // An MP4 container holds audio as well as video: the sender knows.
        (Some("video/mp4"), Some(d)) if MediaKind::of(&d) == MediaKind::Audio => (d, None),
        (Some(s), Some(d)) if s != d => (s.to_string(), Some(d)),
        (Some(s), _) => (s.to_string(), None),
        (None, Some(d)) if d == "image/svg+xml" && is_svg(bytes) => (d, None),
        // Said to be an image or a PDF, and the bytes are not one (those
        // always announce themselves): not trusted as one.
        (None, Some(d))
            if MediaKind::of(&d) == MediaKind::Image
                || d == "application/pdf"
                || d == "image/svg+xml" =>
        {
            ("application/octet-stream".into(), Some(d))
        }
        (None, Some(d)) => (d, None),
        (None, None) => ("application/octet-stream".into(), None),
    }
}

/// Writes the bytes (once per content) and their sidecar; the ref.
pub(super) fn put(
    dir: &Path,
    bytes: &[u8],
    declared: Option<&str>,
    file_name: Option<String>,
    now: u64,
) -> Result<MediaRef, MediaError> {
    let id = hash(bytes);
    let path = path_of(dir, &id);
    let (content_type, declared_type) = settle_type(bytes, declared);
    let media = MediaRef {
        id,
        path: path.clone(),
        kind: MediaKind::of(&content_type),
        content_type,
        size: bytes.len() as u64,
        file_name,
        declared_type,
    };
    let parent = path.parent().unwrap_or(dir);
    std::fs::create_dir_all(parent).map_err(io)?;
    if !path.exists() {
        let tmp = parent.join(format!(".{}.{}.tmp", media.id, ulid::Ulid::generate()));
        let mut f = std::fs::File::create(&tmp).map_err(io)?;
        f.write_all(bytes).map_err(io)?;
        f.sync_all().map_err(io)?;
        drop(f);
        std::fs::rename(&tmp, &path).map_err(io)?;
    }
    let sidecar = Sidecar {
        media: media.clone(),
        created_at_ms: now,
        used_at_ms: now,
    };
    let text = serde_json::to_string(&sidecar).map_err(|e| MediaError::Io(e.to_string()))?;
    crate::fsutil::write_atomic(&sidecar_path(&path), &text).map_err(io)?;
    Ok(media)
}

/// The stored ref of `id` (its use time moved to `now`).
pub(super) fn get(dir: &Path, id: &str, now: u64) -> Result<MediaRef, MediaError> {
    let safe = id.len() == 64 && id.bytes().all(|b| b.is_ascii_hexdigit());
    if !safe {
        return Err(MediaError::Unknown(id.to_string()));
    }
    let path = path_of(dir, id);
    let text = std::fs::read_to_string(sidecar_path(&path))
        .map_err(|_| MediaError::Unknown(id.to_string()))?;
    let mut sidecar: Sidecar =
        serde_json::from_str(&text).map_err(|_| MediaError::Unknown(id.to_string()))?;
    if !path.exists() {
        return Err(MediaError::Unknown(id.to_string()));
    }
    sidecar.used_at_ms = now;
    if let Ok(text) = serde_json::to_string(&sidecar) {
        let _ = crate::fsutil::write_atomic(&sidecar_path(&path), &text);
    }
    Ok(sidecar.media)
}

/// How old a temp file is before it counts as a write that never finished.
const UNFINISHED_AFTER: std::time::Duration = std::time::Duration::from_secs(3600);

/// Every stored file: (path, size, used at).
pub(super) fn entries(dir: &Path) -> Vec<(PathBuf, u64, u64)> {
    let mut out = Vec::new();
    for e in walkdir::WalkDir::new(dir).min_depth(2).max_depth(2) {
        let Ok(e) = e else { continue };
        let p = e.path();
        let named = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if named.contains('.') && !named.starts_with('.') || !e.file_type().is_file() {
            continue;
        }
        if p.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with('.'))
        {
            // A write that never finished: only an old one. A sweep runs
            // beside the writes in flight, whose temp files are young.
            let age = e
                .metadata()
                .ok()
                .and_then(|m| m.modified().ok())
                .and_then(|m| m.elapsed().ok());
            if age.is_some_and(|a| a >= UNFINISHED_AFTER) {
                let _ = std::fs::remove_file(p);
            }
            continue;
        }
        let size = e.metadata().map(|m| m.len()).unwrap_or(0);
        let used = std::fs::read_to_string(sidecar_path(p))
            .ok()
            .and_then(|t| serde_json::from_str::<Sidecar>(&t).ok())
            .map(|s| s.used_at_ms)
            .unwrap_or(0);
        out.push((p.to_path_buf(), size, used));
    }
    out
}

pub(super) fn remove(path: &Path) {
    let _ = std::fs::remove_file(path);
    let _ = std::fs::remove_file(sidecar_path(path));
    for what in ["audio", "image", "video"] {
        let _ = std::fs::remove_file(path.with_extension(format!("{what}.json")));
    }
}

/// A transcript (or description) kept beside the file: the same voice
/// note is understood once, across restarts.
pub(super) fn understood(dir: &Path, id: &str, what: &str) -> Option<super::Understood> {
    let path = path_of(dir, id).with_extension(format!("{what}.json"));
    serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()
}

pub(super) fn remember(dir: &Path, id: &str, what: &str, u: &super::Understood) {
    let path = path_of(dir, id).with_extension(format!("{what}.json"));
    if let Ok(text) = serde_json::to_string(u) {
        let _ = crate::fsutil::write_atomic(&path, &text);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn svg_is_kept_as_svg_only_when_its_bytes_are_svg_and_is_never_a_vision_image() {
        let svg = br#"<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg"/>"#;
        let said = Some("image/svg+xml");
        assert_eq!(settle_type(svg, said), ("image/svg+xml".into(), None));
        let not = settle_type(b"\x00\x01binary", said);
        assert_eq!(
            not,
            (
                "application/octet-stream".into(),
                Some("image/svg+xml".into())
            )
        );
        assert_eq!(MediaKind::of("image/svg+xml"), MediaKind::Document);
        assert_eq!(MediaKind::of("image/png"), MediaKind::Image);
    }
}
