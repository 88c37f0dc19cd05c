//! Memory (issue 16, in progress): the agent's markdown memory files
//! (`MEMORY.md`, `USER.md`, `memory/*.md`) as a searchable index. The
//! parts so far: `chunk.rs` (line-based chunks with overlap, line ranges
//! and content hashes), `embed.rs` (the built-in local embedder: hashed
//! word and character n-grams with IDF, no model, no network), `rank.rs`
//! (the query path after retrieval: normalised 0.7/0.3 fusion, temporal
//! decay of dated notes, MMR, snippets), `index.rs` (one agent's persistent
//! index: SQLite with FTS5 for BM25, chunks and binary f32 vectors, files
//! re-chunked only when their hash changed, the hybrid search),
//! `actor.rs` (`MemoryActor`: the index kept in step with the files by a
//! debounced watcher and a 5-minute sweep, searches on the blocking pool;
//! `messages.rs` its inbox), `files.rs`
//! (which files are memory, read safely: symlinks out of the workspace,
//! oversized and binary files skipped; what a sweep must re-read). Not yet
//! started by the tree: the tools and `memory.search` come next.

mod actor;
pub mod chunk;
pub mod embed;
pub mod files;
pub mod index;
mod messages;
pub mod rank;
pub mod vectors;

pub use actor::MemoryActor;
pub use messages::*;
