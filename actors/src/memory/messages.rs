//! The memory actor's inbox: sweeps (from its watcher and timer), searches
//! and its status.

use actix::prelude::*;

use super::index::{Hit, IndexError};

/// Brings the index up to date with the files.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct Sweep;

/// A memory file changed (from the watcher; a sweep follows after the
/// debounce).
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct FilesChanged;

/// Searches the memory.
#[derive(Debug, Message)]
#[rtype(result = "Result<SearchResult, IndexError>")]
pub struct SearchMemory {
    pub query: String,
    /// None: `memorySearch.query.maxResults` (6).
    pub max: Option<usize>,
    /// None: `memorySearch.query.minScore` (0.35).
    pub min_score: Option<f64>,
    /// Asked from a private chat: `MEMORY.md` may be found.
    pub private: bool,
}

/// The hits, best first, and how they were found.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchResult {
    pub hits: Vec<Hit>,
    /// `hybrid` or `fts-only` (the provider failed).
    pub mode: &'static str,
    pub provider: String,
    pub model: String,
    /// Why the provider is not used right now.
    pub degraded: Option<String>,
}

/// What the index holds and how it searches.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MemoryStatus {
    pub workspace: String,
    pub provider: String,
    pub model: String,
    pub chunks: usize,
    pub files: usize,
    pub sweeps: u64,
    /// Files left out at the last sweep, with why.
    pub skipped: Vec<(String, &'static str)>,
    /// The embedding provider's last failure (None: it answers, or none
    /// is configured); searches are keyword-only while it is set.
    pub degraded: Option<String>,
}

#[derive(Debug, Message)]
#[rtype(result = "MemoryStatus")]
pub struct GetMemoryStatus;
