//! `sessions.fork`: a new session whose transcript is a copy of another's
//! up to (not including) one of its user messages, stored with its row in
//! one commit. The parent is not changed. Not an actor: the router runs it
//! off its thread (`ForkSession`).

use serde_json::Value;

use crate::inbound::SessionKey;
use crate::session::SessionEntry;
use crate::store::{Store, StoreError, Tree};
use crate::transcript::{self, TranscriptError};

/// Why a session could not be forked.
#[derive(Debug, thiserror::Error)]
pub enum ForkError {
    #[error("session not found: {0}")]
    NoSession(String),
    #[error("entry {0} is not in the session's transcript")]
    NoEntry(String),
    #[error("entry {0} is not a user message: a fork starts before one")]
    NotUserMessage(String),
    #[error("session store: {0}")]
    Store(#[from] StoreError),
    #[error("transcript: {0}")]
    Transcript(#[from] TranscriptError),
}

/// A fork made: its key and the message it was made before (what the
/// user typed, for the composer).
#[derive(Debug, Clone, PartialEq)]
pub struct Forked {
    pub key: SessionKey,
    pub text: String,
}

/// Copies `from`'s transcript before entry `entry_id` into a new session
/// `key` (its row names `from` as `forked_from`), durable when it returns.
pub fn fork(
    store: &Store,
    from: &SessionKey,
    entry_id: &str,
    key: SessionKey,
    now: u64,
) -> Result<Forked, ForkError> {
    let parent: SessionEntry = store
        .get(Tree::Sessions, from.as_str())?
        .ok_or_else(|| ForkError::NoSession(from.as_str().to_string()))?;
    let entries = transcript::entries(store, &parent.session_id)?;
    let at = entries
        .iter()
        .position(|e| transcript::id_of(e) == Some(entry_id))
        .ok_or_else(|| ForkError::NoEntry(entry_id.to_string()))?;
    let target = &entries[at];
    if target["message"]["role"] != "user" {
        return Err(ForkError::NotUserMessage(entry_id.to_string()));
    }
    let text = transcript::message_text(target).unwrap_or_default();
    let text = crate::inbound::msg_context::strip_envelope(&text).to_string();
    let mut entry = SessionEntry::new(now);
    entry.forked_from = Some(from.as_str().to_string());
    entry.label = parent.label.as_ref().map(|l| format!("{l} (fork)"));
    entry.model_override = parent.model_override.clone();
    entry.thinking_level = parent.thinking_level.clone();
    let cwd = entries
        .iter()
        .find(|e| e["type"] == "session")
        .and_then(|h| h["cwd"].as_str())
        .unwrap_or_default();
    let mut copied: Vec<Value> = vec![transcript::session_header(&entry.session_id, cwd)];
    copied.extend(
        entries[..at]
            .iter()
            .filter(|e| e["type"] != "session")
            .cloned(),
    );
    let mut writes = transcript::entry_writes(&entry.session_id, &copied)?;
    let row = serde_json::to_value(&entry).ok();
    writes.push((Tree::Sessions, key.as_str().to_string(), row));
    store.commit(&writes)?;
    Ok(Forked { key, text })
}
