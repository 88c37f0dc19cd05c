//! The media store: every attachment that reaches the gateway (chat.send,
//! channels, webhooks) is fetched once, size-capped before and during the
//! download, and kept content-addressed under `<state>/media/` (the file
//! named by its SHA-256, a JSON sidecar with its type, size and name). A
//! sweep drops files unused for `attachments.ttlHours` and, over
//! `attachments.maxTotalMb`, the least recently used. `MediaStore` is the
//! only writer of that folder; channels, the edge and the understanding
//! step send it `PutMedia`/`FetchMedia` and get a `MediaRef` back.
//! `Understand` transcribes or describes a stored file with the
//! configured `tools.media` entries (`understand.rs`, `vision.rs`), once
//! per content: the result is kept beside the file. `intake.rs` is what
//! every surface calls: a message's attachments in, what the model gets
//! out (image blocks, `[Audio]`/`[Image]`/`[Video]`/`[Document]` blocks).
//! A stored image reaches the model by reference: the transcript, the
//! inbox and the session keep its id; `load_images` reads it for the run
//! that sends it (`images.rs`).
//!
//! Trust: the bytes are outside data whoever sent them; the store only
//! keeps them. The type is told from the bytes (`sniff`), not from what
//! the sender declared, and a mismatch is recorded.

mod actor;
pub mod cli;
mod config;
mod detect;
pub mod document;
mod fetch;
mod images;
mod intake;
pub mod links;
mod messages;
mod provider;
mod store;
pub mod tools;
mod understand;
mod vision;

pub use actor::MediaStore;
pub use config::{AttachmentPolicy, Capability, Limits, MediaConfig, ModelEntry, ReplyModels};
pub use fetch::fetch_capped;
pub use images::load_images;
pub use intake::{label, take, Attached, Heard, Intake, Loaded, NotLoaded, Taken};
pub use messages::{
    FetchMedia, GetMedia, LoadImage, PutMedia, SweepMedia, SweepReport, Understand,
};
pub use store::{sniff, MediaKind, MediaRef};
pub use understand::{audio_body, block, transcribe, understand, Understood};

/// Why one `tools.media` entry did not understand a file (the text is
/// the attempt's note).
#[derive(Debug, thiserror::Error)]
pub enum AttemptError {
    #[error(transparent)]
    Endpoint(#[from] provider::EndpointError),
    #[error(transparent)]
    Cli(#[from] cli::CliError),
    #[error("a provider entry needs `model`{0}")]
    NoModel(&'static str),
    #[error("cannot read the file: {0}")]
    Read(std::io::Error),
    #[error("timed out after {0} s")]
    Timeout(f64),
    #[error("request failed: {0}")]
    Request(reqwest::Error),
    #[error("HTTP {0}")]
    Http(u16),
    #[error("not JSON: {0}")]
    NotJson(reqwest::Error),
    #[error("the answer has no {0}")]
    Empty(&'static str),
    #[error("Anthropic models do not take video")]
    NoVideo,
}

/// Why media could not be taken in.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MediaError {
    #[error("the file is {size} bytes, over the {max} byte limit")]
    TooLarge { size: u64, max: u64 },
    #[error("the download failed: HTTP {0}")]
    Http(u16),
    #[error("the download failed: {0}")]
    Fetch(String),
    #[error("the media store failed: {0}")]
    Io(String),
    #[error("no such media {0}")]
    Unknown(String),
    #[error("the media store stopped")]
    Stopped,
}
