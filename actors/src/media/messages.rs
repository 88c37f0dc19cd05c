//! What the `MediaStore` is asked: store bytes, download and store, look
//! up, understand, sweep, and load an image for the run that sends it.

use actix::prelude::*;
use bytes::Bytes;

use super::*;

/// Stores bytes the gateway already holds (a `chat.send` attachment).
#[derive(Debug, Message)]
#[rtype(result = "Result<MediaRef, MediaError>")]
pub struct PutMedia {
    pub bytes: Bytes,
    pub content_type: Option<String>,
    pub file_name: Option<String>,
}

/// Downloads and stores (a channel's file): refused before the download
/// when its declared size is over `max_bytes` (a channel's `mediaMaxMb`).
#[derive(Debug, Message)]
#[rtype(result = "Result<MediaRef, MediaError>")]
pub struct FetchMedia {
    pub url: String,
    pub headers: Vec<(String, String)>,
    pub max_bytes: u64,
    pub content_type: Option<String>,
    pub file_name: Option<String>,
}

/// A stored file by id (its last use moves to now).
#[derive(Debug, Message)]
#[rtype(result = "Result<MediaRef, MediaError>")]
pub struct GetMedia {
    pub id: String,
}

/// Understands a stored file with its kind's `tools.media` entries (an
/// audio file transcribed, an image or a video described), or answers
/// from what an earlier call found (successes are kept beside the file).
#[derive(Debug, Message)]
#[rtype(result = "super::Understood")]
pub struct Understand {
    pub media: MediaRef,
    pub config: std::sync::Arc<super::MediaConfig>,
}

/// Drops what is past its TTL, then the least recently used over the cap.
#[derive(Debug, Message)]
#[rtype(result = "Result<SweepReport, MediaError>")]
pub struct SweepMedia;

/// What a sweep did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SweepReport {
    pub removed: usize,
    pub kept: usize,
    pub total_bytes: u64,
}

/// A stored image's bytes, base64 (its last use moves to now).
#[derive(Debug, Message)]
#[rtype(result = "Result<String, MediaError>")]
pub struct LoadImage {
    pub id: String,
}
