//! Replies spoken (issue 54's voice out), with OpenClaw's `tts` keys,
//! directives, `/tts` commands and methods. The `Speaker` actor owns
//! the speech providers (OpenAI-compatible `/audio/speech`, ElevenLabs,
//! a local command with `{{Text}}`/`{{OutputPath}}`), the per-host
//! preferences (`<state>/settings/tts.json`) and the cache of what it
//! synthesised (the media store holds the audio; `Tree::Speech` maps a
//! request's key to it). A synthesis tries the providers in order (the
//! chosen one, then the other configured ones) and converts to what the
//! target takes: a voice note is Ogg/Opus (`transcode.rs`: ffmpeg or
//! opusenc found on PATH), an audio file is sent as made.
//!
//! Where speech goes out: a channel reply's voice is one more outbox item
//! after its text (`channels/deliver.rs`), synthesised when it is sent
//! (the cache makes a synthesis after a restart the same file: a voice
//! note is sent once), through the outlet's `send_voice`.
//!
//! Trust: the spoken text is the reply's (the agent's words); a
//! stranger's turn gets Auto-TTS like any other, but never the `tts`
//! tool, and `provider=` in a directive needs `allowProvider`. A local
//! command gets the text as one argument, never through a shell.

mod actor;
mod commands;
pub mod directives;
mod messages;
pub mod plan;
mod prefs;
mod providers;
mod report;
mod resolve;
mod synth;
pub mod transcode;

pub use actor::Speaker;
pub use directives::VoiceOverrides;
pub use messages::*;
pub use prefs::TtsPrefs;
pub use resolve::{Attempt, ProviderKind, PROVIDERS};

/// What a synthesis is for: a channel's native voice note (Ogg/Opus) or
/// an audio file (as the provider made it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SpeechTarget {
    VoiceNote,
    AudioFile,
}

/// An audio container, from its bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AudioFormat {
    Ogg,
    Wav,
    Mp3,
    Other,
}

impl AudioFormat {
    pub fn of(bytes: &[u8]) -> AudioFormat {
        if bytes.starts_with(b"OggS") {
            AudioFormat::Ogg
        } else if bytes.starts_with(b"RIFF") && bytes.get(8..12) == Some(b"WAVE") {
            AudioFormat::Wav
        } else if bytes.starts_with(b"ID3")
            || (bytes.len() > 1 && bytes[0] == 0xFF && bytes[1] & 0xE0 == 0xE0)
        {
            AudioFormat::Mp3
        } else {
            AudioFormat::Other
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            AudioFormat::Ogg => "opus",
            AudioFormat::Wav => "wav",
            AudioFormat::Mp3 => "mp3",
            AudioFormat::Other => "bin",
        }
    }

    pub fn content_type(self) -> &'static str {
        match self {
            AudioFormat::Ogg => "audio/ogg",
            AudioFormat::Wav => "audio/wav",
            AudioFormat::Mp3 => "audio/mpeg",
            AudioFormat::Other => "application/octet-stream",
        }
    }

    pub fn extension(self) -> &'static str {
        match self {
            AudioFormat::Ogg => "ogg",
            AudioFormat::Wav => "wav",
            AudioFormat::Mp3 => "mp3",
            AudioFormat::Other => "bin",
        }
    }
}

/// Why speech could not be had.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TtsError {
    #[error("the text is empty")]
    Empty,
    #[error("the text is too long ({len} chars, max {max})")]
    TooLong { len: usize, max: usize },
    #[error("no speech provider is configured")]
    NoProvider,
    #[error("unknown speech provider {0:?}")]
    UnknownProvider(String),
    #[error("unknown persona {0:?}")]
    UnknownPersona(String),
    #[error("every speech provider failed: {0}")]
    AllFailed(String),
    #[error("the speech preferences: {0}")]
    Prefs(String),
    #[error("the media store: {0}")]
    Media(String),
    #[error("the speaker stopped")]
    Stopped,
}

/// Why one provider gave no audio.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ProviderError {
    #[error("not configured: {0}")]
    NotConfigured(String),
    #[error("HTTP {status}: {body}")]
    Status { status: u16, body: String },
    #[error("no answer: {0}")]
    Transport(String),
    #[error("timed out after {0} ms")]
    Timeout(u64),
    #[error("empty audio")]
    Empty,
    #[error("the command: {0}")]
    Command(String),
    #[error("conversion to Ogg/Opus: {0}")]
    Transcode(String),
    #[error("over the size limit")]
    TooLarge,
}

impl ProviderError {
    /// OpenClaw's `reasonCode` for `/tts status`.
    pub fn reason(&self) -> &'static str {
        match self {
            ProviderError::NotConfigured(_) => "not_configured",
            ProviderError::Status { status: 429, .. } => "rate_limited",
            ProviderError::Status {
                status: 401 | 403, ..
            } => "auth",
            ProviderError::Status { .. } => "http_error",
            ProviderError::Transport(_) => "network",
            ProviderError::Timeout(_) => "timeout",
            ProviderError::Empty => "empty_audio",
            ProviderError::Command(_) => "command_failed",
            ProviderError::Transcode(_) => "transcode_failed",
            ProviderError::TooLarge => "too_large",
        }
    }
}

#[cfg(test)]
mod tests;

impl ConfigureSpeech {
    /// `tts`, each agent's `tts` layer and the models a summary may use.
    pub fn from_settings(s: &crate::settings::Settings) -> ConfigureSpeech {
        let agents = s
            .agents
            .list
            .iter()
            .filter_map(|a| Some((a.id.clone(), a.tts.clone()?)))
            .collect();
        let models = SpeechModels {
            default: s.agents.defaults.model.primary().to_string(),
            agents: s
                .agents
                .list
                .iter()
                .filter_map(|a| Some((a.id.clone(), a.model.as_ref()?.primary().to_string())))
                .collect(),
        };
        ConfigureSpeech {
            tts: s.tts.clone(),
            agents,
            models,
        }
    }
}
