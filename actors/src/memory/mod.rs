//! Memory: an agent's markdown memory files (`MEMORY.md`, `USER.md`,
//! `memory/**/*.md`, `extraPaths`) as a searchable index, one
//! `MemoryActor` per agent (`agents.rs`). `chunk.rs` (line-based chunks
//! with overlap, line ranges and content hashes), `embed.rs` (the built-in
//! local embedder: hashed word and character n-grams with IDF, no model,
//! no network), `provider.rs` (settings and the OpenAI-compatible
//! embeddings client), `vectors.rs` (int8 vectors in memory), `rank.rs`
//! (normalised 0.7/0.3 fusion, temporal decay of dated notes, MMR,
//! snippets), `index.rs` (one agent's persistent index: SQLite with FTS5
//! for BM25, chunks, vectors; files re-chunked only when their hash
//! changed; the hybrid search), `files.rs` (which files are memory, read
//! safely), `actor.rs` (`MemoryActor`: watcher and sweeps, provider
//! embeddings, searches; `messages.rs` its inbox).

mod actor;
mod agents;
pub mod chunk;
pub mod embed;
pub mod files;
pub mod index;
mod messages;
pub mod provider;
pub mod rank;
pub mod vectors;
#[cfg(test)]
mod wal_tests;

pub use actor::MemoryActor;
pub use agents::{results_json, AgentMemory, Memories};
pub use index::IndexError;
pub use messages::*;
