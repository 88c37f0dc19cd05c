//! What a message's attachments become for the model, the same for every
//! surface (a channel's downloads, `chat.send`'s base64, a webhook's
//! URLs): each is kept in the media store, then
//! - an image goes to a reply model that sees images as an image block;
//!   for one that does not, the first is described by `tools.media.image`
//!   and becomes an `[Image]` block;
//! - the first audio is transcribed (`[Audio]`, and command parsing sees
//!   the transcript), the first video described (`[Video]`);
//! - a document (text, markdown, CSV, JSON, PDF) is read into a
//!   `[Document]` block;
//! - anything else, or what could not be taken, is named in a note;
//! - the links of its text are fetched and excerpted (`links.rs`).
//!
//! Understanding runs here, before the session's lane (a slow transcriber
//! holds this message only), and once per content (the store keeps it).
//! Trust: what a file says is the sender's words; it follows the sender's
//! trust (a stranger's transcript is wrapped like a stranger's text).

use std::collections::BTreeMap;
use std::sync::Arc;

use actix::Addr;
use base64::Engine;
use bytes::Bytes;

use super::config::MediaConfig;
use super::document::{self, DocError};
use super::store::{MediaKind, MediaRef};
use super::understand::block;
use super::{MediaStore, PutMedia, Understand};
use crate::provider::Image;

/// One attachment's bytes, as they came.
#[derive(Debug, Clone)]
pub struct Loaded {
    pub bytes: Bytes,
    /// What the sender said it is.
    pub content_type: Option<String>,
    pub name: Option<String>,
    /// Where it came from (a platform URL), for `MediaUrls`.
    pub url: Option<String>,
}

pub use crate::inbound::msg_context::Attached;

fn attached(m: &MediaRef, url: Option<String>) -> Attached {
    Attached {
        id: m.id.clone(),
        path: m.path.display().to_string(),
        content_type: m.content_type.clone(),
        name: m.file_name.clone(),
        size: m.size,
        url,
    }
}

/// Understood attachments: the body the agent gets, and the text command
/// parsing sees (the transcript of a voice note, else the caption).
#[derive(Debug, Clone, PartialEq)]
pub struct Heard {
    pub body: String,
    pub commands: String,
}

/// What a message's attachments became.
#[derive(Debug, Default)]
pub struct Taken {
    pub images: Vec<Image>,
    /// Documents' blocks and notes on what was not taken, after the body.
    pub note: Option<String>,
    pub heard: Option<Heard>,
    pub media: Vec<Attached>,
}

/// Where and how a message's attachments are taken in.
pub struct Intake {
    pub store: Option<Addr<MediaStore>>,
    pub config: Arc<MediaConfig>,
    /// The message's own text (`User text:` in a block).
    pub caption: String,
    /// The reply model sees images.
    pub vision: bool,
    /// The sender is an operator (a stranger's links are not fetched
    /// unless `tools.links.allowUntrusted`).
    pub trusted: bool,
}

/// `name (type, size)` for notes.
pub fn label(name: Option<&str>, content_type: Option<&str>, size: Option<u64>) -> String {
    format!(
        "{} ({}{})",
        name.unwrap_or("file"),
        content_type.unwrap_or(crate::inbound::finalize::UNKNOWN_MEDIA),
        size.map(|s| format!(", {s} bytes")).unwrap_or_default()
    )
}

/// An attachment that could not be loaded (its label) and why: the note
/// the model reads in its place.
#[derive(Debug, thiserror::Error)]
pub enum NotLoaded {
    #[error("[attachment not loaded: {name} is larger than {max} bytes]")]
    TooLarge { name: String, max: u64 },
    #[error("[attachment not loaded: {name}: {why}]")]
    Failed { name: String, why: String },
}

/// Takes in `items` (an `Err` is a note on one that could not be loaded).
pub async fn take(i: &Intake, items: Vec<Result<Loaded, NotLoaded>>) -> Taken {
    let mut w = Work::default();
    for item in items {
        match item {
            Ok(l) => one(i, l, &mut w).await,
            Err(note) => w.notes.push(note.to_string()),
        }
    }
    let links = super::links::understand_links(i.config.links.as_ref(), &i.caption, i.trusted);
    w.docs.extend(links.await);
    w.finish(&i.caption)
}

#[derive(Default)]
struct Work {
    taken: Taken,
    blocks: Vec<(MediaKind, String)>,
    /// How many of each kind were given to their models.
    tried: BTreeMap<&'static str, usize>,
    docs: Vec<String>,
    notes: Vec<String>,
}

impl Work {
    fn finish(mut self, caption: &str) -> Taken {
        if !self.blocks.is_empty() {
            let blocks = &self.blocks;
            let of_kind =
                |k: MediaKind, upto: usize| blocks[..upto].iter().filter(|(b, _)| *b == k).count();
            let body: Vec<String> = blocks
                .iter()
                .enumerate()
                .map(|(n, (k, t))| {
                    let caption = if n == 0 { caption } else { "" };
                    // `mode: "all"`: `[Image 1/2]`, `[Image 2/2]`.
                    let all = of_kind(*k, blocks.len());
                    let label = (all > 1).then(|| (of_kind(*k, n) + 1, all));
                    numbered(block(*k, caption, t), label)
                })
                .collect();
            let transcript = self.blocks.iter().find(|(k, _)| *k == MediaKind::Audio);
            self.taken.heard = Some(Heard {
                body: body.join("\n\n"),
                commands: transcript.map_or_else(|| caption.to_string(), |(_, t)| t.clone()),
            });
        }
        let rest: Vec<String> = self.docs.into_iter().chain(self.notes).collect();
        self.taken.note = (!rest.is_empty()).then(|| rest.join("\n"));
        self.taken
    }
}

/// A block's label numbered (`[Image]` to `[Image 1/2]`).
fn numbered(block: String, nth: Option<(usize, usize)>) -> String {
    match (nth, block.find(']')) {
        (Some((n, of)), Some(end)) => format!("{} {n}/{of}{}", &block[..end], &block[end..]),
        _ => block,
    }
}

async fn one(i: &Intake, l: Loaded, w: &mut Work) {
    let stored = match &i.store {
        Some(store) => match store
            .send(PutMedia {
                bytes: l.bytes.clone(),
                content_type: l.content_type.clone(),
                file_name: l.name.clone(),
            })
            .await
        {
            Ok(Ok(m)) => Some(m),
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "attachment not stored");
                None
            }
            Err(_) => None,
        },
        None => None,
    };
    let size = Some(l.bytes.len() as u64);
    let Some(m) = stored else {
        // No store: an image still reaches a model that sees images.
        let ct = l.content_type.as_deref();
        match ct.map(MediaKind::of) {
            Some(MediaKind::Image) if i.vision => w.taken.images.push(image(&l.bytes, ct)),
            _ => w.notes.push(format!(
                "[attachment: {}]",
                label(l.name.as_deref(), ct, size)
            )),
        }
        return;
    };
    w.taken.media.push(attached(&m, l.url.clone()));
    let name = label(m.file_name.as_deref(), Some(&m.content_type), size);
    if let Some(said) = &m.declared_type {
        let claimed = MediaKind::of(said);
        if claimed != MediaKind::Other && claimed != m.kind {
            w.notes.push(format!(
                "[attachment {name}: said to be {said}; its bytes are not]"
            ));
            return;
        }
    }
    match m.kind {
        // By reference: the run that sends it loads it from the store.
        MediaKind::Image if i.vision => w.taken.images.push(Image {
            mime_type: m.content_type.clone(),
            data: String::new(),
            media_id: Some(m.id.clone()),
        }),
        MediaKind::Image | MediaKind::Audio | MediaKind::Video => understood(i, m, &name, w).await,
        MediaKind::Document => read(i, &m, &name, w).await,
        MediaKind::Other => w.notes.push(format!("[attachment: {name}]")),
    }
}

/// An image carried inline (no media store).
fn image(bytes: &[u8], content_type: Option<&str>) -> Image {
    let data = base64::engine::general_purpose::STANDARD.encode(bytes);
    Image::inline(content_type.unwrap_or("image/jpeg"), data)
}

/// The first of each kind is understood (OpenClaw's `attachments.mode:
/// "first"`; `"all"`: up to `maxAttachments`); later ones are named.
async fn understood(i: &Intake, m: MediaRef, name: &str, w: &mut Work) {
    let kind = m.kind;
    let what = kind.capability().unwrap_or("attachment");
    let cap = i.config.attachment_cap(kind);
    let tried = w.tried.get(what).copied().unwrap_or(0);
    let (Some(store), true) = (&i.store, tried < cap) else {
        let first = match cap {
            1 => format!("only the first {what} attachment is"),
            n => format!("only the first {n} {what} attachments are"),
        };
        w.notes
            .push(format!("[{what}: {name} (not understood: {first})]"));
        return;
    };
    if i.config.entries(kind).is_empty() {
        let why = match kind {
            MediaKind::Image => {
                "the reply model does not see images and no tools.media.image model is configured"
                    .to_string()
            }
            _ => format!("no tools.media.{what} models are configured"),
        };
        w.notes.push(format!("[{what}: {name} ({why})]"));
        return;
    }
    *w.tried.entry(what).or_default() += 1;
    let config = Arc::clone(&i.config);
    let u = store
        .send(Understand { media: m, config })
        .await
        .unwrap_or_default();
    match u.text {
        Some(t) => w.blocks.push((kind, t)),
        None => w.notes.push(format!(
            "[{what}: {name} (not understood: {})]",
            u.attempts.join("; ")
        )),
    }
}

async fn read(i: &Intake, m: &MediaRef, name: &str, w: &mut Work) {
    let Some(max) = i.config.document_chars() else {
        w.notes.push(format!("[attachment: {name}]"));
        return;
    };
    let media = m.clone();
    let got = tokio::task::spawn_blocking(move || document::extract(&media, max))
        .await
        .unwrap_or_else(|e| Err(DocError::Reader(e.to_string())));
    match got {
        Ok(d) => {
            let shown = m.file_name.as_deref().unwrap_or("file");
            w.docs.push(document::block(shown, &m.content_type, &d));
        }
        Err(e) => {
            tracing::info!(media = %m.id, error = %e, "document not read");
            w.notes.push(format!("[document: {name} (not read: {e})]"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::media::document::tests::make_pdf;
    use actix::Actor;
    use std::time::Duration;

    fn png() -> Vec<u8> {
        let mut v = b"\x89PNG\r\n\x1a\n".to_vec();
        v.extend_from_slice(&[1u8; 64]);
        v
    }

    fn loaded(bytes: &[u8], ct: &str, name: &str) -> Result<Loaded, NotLoaded> {
        Ok(Loaded {
            bytes: Bytes::copy_from_slice(bytes),
            content_type: Some(ct.into()),
            name: Some(name.into()),
            url: Some(format!("https://files.example/{name}")),
        })
    }

    /// `tools.media.image` with a CLI "describer" that prints a fixed
    /// description of whatever it is given, naming the file's type.
    fn config(describer: bool) -> Arc<MediaConfig> {
        let media = match describer {
            true => serde_json::json!({"image": {"models": [
                {"type": "cli", "command": "sh", "args": ["-c", "echo \"a picture ($1) for: $2\"", "sh", "{{MediaType}}", "{{Prompt}}"]},
            ]}}),
            false => serde_json::json!({}),
        };
        Arc::new(MediaConfig::shipped_with(media))
    }

    fn intake(dir: &std::path::Path, vision: bool, describer: bool) -> Intake {
        let store = MediaStore::new(dir.into(), Duration::from_secs(3600), u64::MAX).start();
        Intake {
            store: Some(store),
            config: config(describer),
            caption: "look at these".into(),
            vision,
            trusted: true,
        }
    }

    #[actix::test]
    async fn a_model_that_sees_images_gets_them_and_documents_become_blocks() {
        let dir = tempfile::tempdir().unwrap();
        let i = intake(dir.path(), true, true);
        let t = take(
            &i,
            vec![
                loaded(&png(), "image/png", "a.png"),
                loaded(
                    &make_pdf(&["Invoice 42", "Total 99 EUR"]),
                    "application/pdf",
                    "inv.pdf",
                ),
                loaded(b"zip zip", "application/zip", "x.zip"),
                Err(NotLoaded::Failed {
                    name: "big.bin".into(),
                    why: "too big".into(),
                }),
            ],
        )
        .await;
        assert_eq!(t.images.len(), 1);
        assert_eq!(t.images[0].mime_type, "image/png");
        // By reference: the stored original, loaded by the run that sends it.
        assert_eq!(t.images[0].media_id.as_ref(), Some(&t.media[0].id));
        assert!(t.images[0].data.is_empty());
        assert!(t.heard.is_none(), "nothing described: the model sees it");
        let note = t.note.unwrap();
        assert!(
            note.starts_with("[Document]\nName: inv.pdf (application/pdf)\nContent:\n"),
            "{note}"
        );
        assert!(
            note.contains("Invoice 42") && note.contains("Total 99 EUR"),
            "{note}"
        );
        assert!(
            note.contains("[attachment: x.zip (application/zip, 7 bytes)]"),
            "{note}"
        );
        assert!(
            note.contains("[attachment not loaded: big.bin: too big]"),
            "{note}"
        );
        // Kept, with the platform's URL, for the context and the transcript.
        assert_eq!(t.media.len(), 3);
        assert_eq!(t.media[0].content_type, "image/png");
        assert_eq!(
            t.media[0].url.as_deref(),
            Some("https://files.example/a.png")
        );
        assert!(std::path::Path::new(&t.media[1].path).exists());
    }

    #[actix::test]
    async fn a_model_without_vision_gets_the_first_image_described() {
        let dir = tempfile::tempdir().unwrap();
        let i = intake(dir.path(), false, true);
        let mut other = png();
        other.push(9);
        let t = take(
            &i,
            vec![
                loaded(&png(), "image/png", "a.png"),
                loaded(&other, "image/png", "b.png"),
            ],
        )
        .await;
        assert!(t.images.is_empty(), "the model cannot take them");
        let heard = t.heard.unwrap();
        assert_eq!(
            heard.body,
            "[Image]\nUser text:\nlook at these\nDescription:\na picture (image/png) for: Describe the image in <= 500 characters."
        );
        assert_eq!(heard.commands, "look at these", "commands see the caption");
        assert!(
            t.note.unwrap().contains("[image: b.png (image/png, 73 bytes) (not understood: only the first image attachment is)]")
        );
        // Without a describer: said plainly, the turn still runs.
        let plain = take(
            &intake(dir.path(), false, false),
            vec![loaded(&png(), "image/png", "a.png")],
        )
        .await;
        assert!(plain.note.unwrap().contains("does not see images"));
    }

    #[actix::test]
    async fn with_mode_all_each_image_is_described_up_to_the_cap_and_numbered() {
        let dir = tempfile::tempdir().unwrap();
        let mut i = intake(dir.path(), false, true);
        let mut cfg = MediaConfig::clone(&i.config);
        cfg.image.attachments.mode = crate::settings::AttachmentMode::All;
        cfg.image.attachments.max_attachments = 2;
        i.config = Arc::new(cfg);
        let pictures: Vec<Vec<u8>> = (0..3u8)
            .map(|k| {
                let mut p = png();
                p.push(k);
                p
            })
            .collect();
        let t = take(
            &i,
            pictures
                .iter()
                .enumerate()
                .map(|(k, p)| loaded(p, "image/png", &format!("{k}.png")))
                .collect(),
        )
        .await;
        let body = t.heard.unwrap().body;
        let described =
            "Description:\na picture (image/png) for: Describe the image in <= 500 characters.";
        assert_eq!(
            body,
            format!(
                "[Image 1/2]\nUser text:\nlook at these\n{described}\n\n[Image 2/2]\n{described}"
            )
        );
        assert!(t.note.unwrap().contains(
            "[image: 2.png (image/png, 73 bytes) (not understood: only the first 2 image attachments are)]"
        ));
    }

    #[actix::test]
    async fn bytes_that_are_not_what_they_claim_are_named_not_used() {
        let dir = tempfile::tempdir().unwrap();
        let i = intake(dir.path(), true, true);
        let t = take(
            &i,
            vec![
                loaded(b"this is not a picture", "image/png", "fake.png"),
                loaded(&png(), "audio/ogg", "voice.ogg"),
            ],
        )
        .await;
        assert!(t.images.is_empty() && t.heard.is_none());
        let note = t.note.unwrap();
        assert!(
            note.contains("fake.png (application/octet-stream, 21 bytes): said to be image/png; its bytes are not"),
            "{note}"
        );
        assert!(
            note.contains("voice.ogg (image/png, 72 bytes): said to be audio/ogg"),
            "{note}"
        );
    }

    #[test]
    fn the_reply_model_decides_whether_images_are_seen() {
        let mut s = crate::settings::shipped();
        s.agents.defaults.model = crate::settings::ModelChoice::Ref("local/text-only".into());
        let mut eyes =
            s.agents.list.first().cloned().unwrap_or_else(|| {
                serde_json::from_value(serde_json::json!({"id": "eyes"})).unwrap()
            });
        eyes.id = "eyes".into();
        eyes.model = Some(crate::settings::ModelChoice::Ref("openai/gpt-5".into()));
        s.agents.list = vec![eyes];
        s.models.providers.insert(
            "local".into(),
            serde_json::from_value(
                serde_json::json!({"baseUrl": "http://127.0.0.1:1", "models": [
                    {"id": "text-only", "input": ["text"]},
                    {"id": "vl", "input": ["text", "image"]},
                ]}),
            )
            .unwrap(),
        );
        let no_env: crate::provider::hub::EnvReader = std::sync::Arc::new(|_: &str| None);
        let r = MediaConfig::from_settings(&s, &no_env).reply;
        assert!(
            !r.vision(None, "main"),
            "the default model lists no image input"
        );
        assert!(r.vision(None, "eyes"), "not in the catalog: taken to see");
        assert!(r.vision(Some("local/vl"), "main"));
        assert!(!r.vision(Some("local/text-only"), "eyes"));
    }
}
