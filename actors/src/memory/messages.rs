//! The memory actor's inbox: sweeps (from its watcher and timer), searches
//! and its status.

use actix::prelude::*;

use super::index::{Hit, IndexError};

/// Brings the index up to date with the files.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct Sweep;

/// Searches the memory. Reply: the hits, best first.
#[derive(Debug, Message)]
#[rtype(result = "Result<Vec<Hit>, IndexError>")]
pub struct SearchMemory {
    pub query: String,
    pub max: usize,
}

/// What the index holds.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MemoryStatus {
    pub chunks: usize,
    pub files: usize,
    pub sweeps: u64,
    /// Files left out at the last sweep, with why.
    pub skipped: Vec<(String, &'static str)>,
}

#[derive(Debug, Message)]
#[rtype(result = "MemoryStatus")]
pub struct GetMemoryStatus;
