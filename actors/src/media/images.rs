//! Images by reference: a stored image is named by its media id in the
//! transcript, the inbox and a session's history, and its bytes are read
//! from the store only by the run (or side question) that sends it to a
//! model. A session with many pictures keeps ids in memory, not megabytes
//! of base64; a reference whose file is gone (swept by the TTL or the cap)
//! becomes a note in its message's text.

use std::sync::Arc;

use actix::prelude::*;
use base64::Engine;

use super::messages::LoadImage;
use super::{MediaError, MediaStore};
use crate::provider::{ChatMessage, MessageRole, Messages};

impl Handler<LoadImage> for MediaStore {
    type Result = ResponseFuture<Result<String, MediaError>>;
    fn handle(&mut self, msg: LoadImage, _: &mut Context<Self>) -> Self::Result {
        let dir = self.dir.clone();
        Box::pin(super::actor::blocking(move || {
            let m = super::store::get(&dir, &msg.id, crate::now_ms())?;
            let bytes = std::fs::read(&m.path).map_err(|e| MediaError::Io(e.to_string()))?;
            Ok(base64::engine::general_purpose::STANDARD.encode(bytes))
        }))
    }
}

/// Completed turns whose images are sent again: older ones are replaced
/// by a marker (OpenClaw's replay view keeps the three most recent turns
/// byte for byte, so a prompt cache's prefix stays stable).
pub const KEPT_TURNS: usize = 3;

/// What an older turn's image becomes (OpenClaw's words).
pub const REMOVED: &str = "[image data removed - already processed by model]";

/// Whether a message holds an image still to be loaded.
fn unloaded(m: &ChatMessage) -> bool {
    m.images
        .iter()
        .any(|i| i.data.is_empty() && i.media_id.is_some())
}

/// Where the turns whose images are sent begin: the user message that
/// starts the oldest of the current turn and the `KEPT_TURNS` before it.
fn window_start(messages: &Messages) -> usize {
    let users: Vec<usize> = messages
        .iter()
        .enumerate()
        .filter(|(_, m)| m.role == MessageRole::User)
        .map(|(i, _)| i)
        .collect();
    users
        .len()
        .checked_sub(KEPT_TURNS + 1)
        .map_or(0, |k| users[k])
}

/// Readies `messages` for a model call: the images of the current turn
/// and the `KEPT_TURNS` before it are loaded where they are references
/// (a fresh copy of each message that changes; the others stay shared),
/// older turns' images become `REMOVED`. Without a store, or when a file
/// is gone, the image is dropped and its message says so.
pub async fn load_images(store: Option<&Addr<MediaStore>>, messages: &mut Messages) {
    let from = window_start(messages);
    for (i, slot) in messages.iter_mut().enumerate() {
        if slot.images.is_empty() {
            continue;
        }
        if i < from {
            let mut m = ChatMessage::clone(slot);
            m.images.clear();
            m.text.push_str(&format!("\n{REMOVED}"));
            *slot = Arc::new(m);
        } else if unloaded(slot) {
            *slot = Arc::new(loaded(store, slot).await);
        }
    }
}

async fn loaded(store: Option<&Addr<MediaStore>>, m: &ChatMessage) -> ChatMessage {
    let mut m = m.clone();
    let mut gone = Vec::new();
    for image in std::mem::take(&mut m.images) {
        let Some(id) = image.media_id.clone().filter(|_| image.data.is_empty()) else {
            m.images.push(image);
            continue;
        };
        let read = match store {
            Some(s) => s.send(LoadImage { id: id.clone() }).await.ok(),
            None => None,
        };
        match read {
            Some(Ok(data)) => m.images.push(crate::provider::Image { data, ..image }),
            Some(Err(e)) => {
                tracing::info!(media_id = %id, error = %e, "image not loaded");
                gone.push(id);
            }
            None => gone.push(id),
        }
    }
    for id in gone {
        let short: String = id.chars().take(12).collect();
        m.text
            .push_str(&format!("\n[image {short} is no longer stored]"));
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::media::PutMedia;
    use crate::provider::Image;

    fn by_ref(id: &str) -> Image {
        Image {
            mime_type: "image/png".into(),
            data: String::new(),
            media_id: Some(id.into()),
        }
    }

    #[actix::test]
    async fn a_stored_image_is_loaded_and_a_missing_one_becomes_a_note() {
        let dir = tempfile::tempdir().unwrap();
        let store = MediaStore::new(
            dir.path().to_path_buf(),
            std::time::Duration::from_secs(3600),
            u64::MAX,
        )
        .start();
        let bytes = b"\x89PNG\r\n\x1a\n0000".to_vec();
        let put = PutMedia {
            bytes: bytes.clone().into(),
            content_type: Some("image/png".into()),
            file_name: None,
        };
        let stored = store.send(put).await.unwrap().unwrap();
        let missing = "ab".repeat(32);
        let mut with = ChatMessage::user("look");
        with.images = vec![by_ref(&stored.id), by_ref(&missing)];
        let plain = Arc::new(ChatMessage::user("plain"));
        let mut messages: Messages = vec![plain.clone(), Arc::new(with)];
        load_images(Some(&store), &mut messages).await;
        assert!(Arc::ptr_eq(&messages[0], &plain), "untouched stays shared");
        let m = &messages[1];
        assert_eq!(m.images.len(), 1);
        let expected = base64::engine::general_purpose::STANDARD.encode(&bytes);
        assert_eq!(m.images[0].data, expected);
        assert_eq!(m.images[0].media_id.as_deref(), Some(stored.id.as_str()));
        assert_eq!(
            m.text,
            format!("look\n[image {} is no longer stored]", &missing[..12])
        );
        // Without a store nothing can be loaded: the model is told.
        let mut alone: Messages = vec![Arc::new({
            let mut m = ChatMessage::user("x");
            m.images = vec![by_ref(&stored.id)];
            m
        })];
        load_images(None, &mut alone).await;
        assert!(alone[0].images.is_empty() && alone[0].text.contains("no longer stored"));
    }

    #[actix::test]
    async fn only_the_current_turn_and_the_three_before_it_send_their_images() {
        let inline = |text: &str| {
            let mut m = ChatMessage::user(text);
            m.images = vec![Image::inline("image/png", "AAAA".into())];
            Arc::new(m)
        };
        // Six user turns, each with an image and an answer; then a tool
        // loop's messages (they do not start a turn).
        let mut messages: Messages = Vec::new();
        for t in 0..6 {
            messages.push(inline(&format!("u{t}")));
            messages.push(Arc::new(ChatMessage::assistant("a")));
        }
        messages.push(Arc::new(ChatMessage::tool_result("c1", "r", false)));
        load_images(None, &mut messages).await;
        let users: Vec<&ChatMessage> = messages
            .iter()
            .filter(|m| m.role == MessageRole::User)
            .map(|m| m.as_ref())
            .collect();
        for (t, m) in users.iter().enumerate() {
            if t < 2 {
                assert!(m.images.is_empty(), "u{t}");
                assert_eq!(m.text, format!("u{t}\n{REMOVED}"));
            } else {
                assert_eq!(
                    (m.images.len(), m.text.as_str()),
                    (1, format!("u{t}").as_str())
                );
            }
        }
    }
}
