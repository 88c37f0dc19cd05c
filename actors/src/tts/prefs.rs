//! The host's speech preferences (OpenClaw's `settings/tts.json`: `auto`,
//! `provider`, `persona`, `maxLength`, `summarize`), written by `/tts` and
//! the `tts.*` methods, plus each chat's `/tts chat on|off` (by session
//! key). One writer: the `Speaker`; written whole, atomically.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::settings::TtsAuto;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TtsPrefs {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto: Option<TtsAuto>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub persona: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_length: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summarize: Option<bool>,
    /// Session key -> its `/tts chat` mode.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub chats: BTreeMap<String, TtsAuto>,
}

/// Where the preferences live: `tts.prefsPath` (`~/` under the home
/// directory, a relative path under the state dir), else
/// `<state>/settings/tts.json`.
pub fn path(state_dir: &Path, configured: Option<&str>) -> PathBuf {
    match configured.map(str::trim).filter(|p| !p.is_empty()) {
        Some(p) => crate::fsutil::expand_home(p).unwrap_or_else(|| state_dir.join(p)),
        None => state_dir.join("settings").join("tts.json"),
    }
}

/// The stored preferences (none yet, or unreadable: empty, logged).
pub fn load(path: &Path) -> TtsPrefs {
    match std::fs::read_to_string(path) {
        Ok(text) => serde_json::from_str(&text).unwrap_or_else(|e| {
            tracing::warn!(path = %path.display(), error = %e, "unreadable TTS preferences ignored");
            TtsPrefs::default()
        }),
        Err(_) => TtsPrefs::default(),
    }
}

pub fn save(path: &Path, prefs: &TtsPrefs) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        crate::fsutil::private_dir(dir)?;
    }
    let text = serde_json::to_string_pretty(prefs).map_err(std::io::Error::other)?;
    crate::fsutil::write_atomic(path, &text)
}
