//! Files the gateway sends (issue 32's media out): a `send` call's
//! `buffer` or a reply's `MEDIA:` line become outbox items like any chunk
//! (the same exactly-once contract: `sending` flushed before the call, an
//! unknown outcome never sent again). An item's media is an http(s) URL
//! the platform fetches, or `media:<id>`: a file in the media store,
//! uploaded by the outlet (`Outlet::send_file`).
//!
//! Trust: a `MEDIA:` line may name only a URL or a file the media store
//! holds (an attachment the gateway received, or one a client sent): a
//! reply cannot make the gateway upload an arbitrary file of the host. A
//! reply to a stranger or a webhook (`Delivery::untrusted`) sends URLs
//! only: no stored file goes out on a stranger's turn.

use actix::Addr;

use crate::media::{GetMedia, MediaRef, MediaStore};

/// The prefix of an item's media that names a stored file.
pub const STORED: &str = "media:";

fn is_id(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// What a `MEDIA:` value names: a URL, a stored file (`media:<id>`, or the
/// file's path in the media store), or nothing that may be sent.
fn media_ref(value: &str) -> Option<String> {
    let v = value.trim().trim_matches(['`', '"', '\'', '<', '>']);
    if v.starts_with("https://") || v.starts_with("http://") {
        return Some(v.to_string());
    }
    if let Some(id) = v.strip_prefix(STORED).filter(|id| is_id(id)) {
        return Some(format!("{STORED}{id}"));
    }
    // `<state>/media/ab/<id>`: the path `MediaPaths` gave the model.
    let p = std::path::Path::new(v);
    let name = p.file_name()?.to_str()?;
    let shard = p.parent()?.file_name()?.to_str()?;
    let media = p.parent()?.parent()?.file_name()?.to_str()?;
    (is_id(name) && shard == &name[..2] && media == "media").then(|| format!("{STORED}{name}"))
}

/// A reply's `MEDIA:` lines taken out (OpenClaw's convention: a line
/// `MEDIA: <url or path>`): the text left and the media, in order. A line
/// naming something that may not be sent stays in the text, marked.
pub fn media_lines(text: &str) -> (String, Vec<String>) {
    if !text.contains("MEDIA:") {
        return (text.to_string(), Vec::new());
    }
    let mut kept = Vec::new();
    let mut media = Vec::new();
    for line in text.lines() {
        match line.trim().strip_prefix("MEDIA:") {
            Some(v) => match media_ref(v) {
                Some(m) => media.push(m),
                None => kept.push(format!(
                    "(not sent: {} is not a URL or a stored attachment)",
                    v.trim()
                )),
            },
            None => kept.push(line.to_string()),
        }
    }
    (kept.join("\n").trim().to_string(), media)
}

/// Whether a line of a reply is a `MEDIA:` line.
pub fn is_media_line(line: &str) -> bool {
    line.trim_start().starts_with("MEDIA:")
}

/// A reply's text while it streams (a preview, a block): its `MEDIA:`
/// lines left out (the final sends the media they name, once).
pub fn without_media_lines(text: &str) -> String {
    // `[[tts:...]]` directives are never shown either.
    let text = &crate::tts::directives::visible(text);
    if !text.contains("MEDIA:") {
        return text.to_string();
    }
    let kept: Vec<&str> = text.lines().filter(|l| !is_media_line(l)).collect();
    kept.join("\n")
}

/// The stored file an item names, or why it cannot be sent (for good:
/// the outbox does not try again).
pub async fn stored(store: Option<&Addr<MediaStore>>, id: &str) -> Result<MediaRef, NotStored> {
    let store = store.ok_or(NotStored::NoStore)?;
    match store.send(GetMedia { id: id.to_string() }).await {
        Ok(Ok(m)) => Ok(m),
        Ok(Err(e)) => Err(NotStored::Gone(e)),
        Err(_) => Err(NotStored::Stopped),
    }
}

/// Why a stored file cannot be sent.
#[derive(Debug, thiserror::Error)]
pub enum NotStored {
    #[error("no media store")]
    NoStore,
    #[error("the file to send is gone: {0}")]
    Gone(crate::media::MediaError),
    #[error("the media store stopped")]
    Stopped,
}

/// A stored file's bytes for an upload, refused for good when it is over
/// the account's `mediaMaxMb` (`max`) or cannot be read.
pub async fn upload_bytes(
    file: &crate::media::MediaRef,
    max: u64,
) -> Result<Vec<u8>, super::sender::SendFailure> {
    let refuse = |error: String| super::sender::SendFailure {
        unknown: false,
        error,
        retry_after_ms: None,
    };
    if file.size > max {
        return Err(refuse(format!("the file is over mediaMaxMb ({max} bytes)")));
    }
    tokio::fs::read(&file.path)
        .await
        .map_err(|e| refuse(format!("the file to send: {e}")))
}

/// A media URL sent as a link (the platform shows its preview), under its
/// caption.
pub fn link_text(url: &str, caption: &str) -> String {
    if caption.trim().is_empty() {
        url.to_string()
    } else {
        format!("{caption}\n{url}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn media_lines_name_urls_and_stored_files_only() {
        let id = "ab".repeat(32);
        let text = format!(
            "Here it is.\nMEDIA: https://x.example/a.png\n  MEDIA:`/home/u/.ferroclaw/media/ab/{id}`\nMEDIA: /etc/passwd\nMEDIA: media:{id}\nbye"
        );
        let (kept, media) = media_lines(&text);
        assert_eq!(
            media,
            [
                "https://x.example/a.png".to_string(),
                format!("media:{id}"),
                format!("media:{id}")
            ]
        );
        assert_eq!(
            kept,
            "Here it is.\n(not sent: /etc/passwd is not a URL or a stored attachment)\nbye"
        );
        // A hex name outside the media folder is not a stored file.
        assert!(media_ref(&format!("/tmp/ab/{id}")).is_none());
        assert_eq!(media_lines("no media"), ("no media".into(), vec![]));
    }
}
