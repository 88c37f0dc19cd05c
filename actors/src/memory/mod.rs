//! Memory (issue 16, in progress): the agent's markdown memory files
//! (`MEMORY.md`, `USER.md`, `memory/*.md`) as a searchable index. Pure
//! parts so far: `chunk.rs` (line-based chunks with overlap, line ranges
//! and content hashes), `embed.rs` (the built-in local embedder: hashed
//! word and character n-grams with IDF, no model, no network), `rank.rs`
//! (the query path after retrieval: normalised 0.7/0.3 fusion, temporal
//! decay of dated notes, MMR, snippets), `index.rs` (one agent's persistent
//! index: SQLite with FTS5 for BM25, chunks and binary f32 vectors, files
//! re-chunked only when their hash changed, the hybrid search), `files.rs`
//! (which files are memory, read safely: symlinks out of the workspace,
//! oversized and binary files skipped; what a sweep must re-read). The memory
//! actor (watcher, sweep), the tools and `memory.search` come next.

pub mod chunk;
pub mod embed;
pub mod files;
pub mod index;
pub mod rank;
