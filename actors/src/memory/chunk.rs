//! Memory files cut into chunks the index keeps (seed 004, OpenClaw's
//! numbers): line-based, at most 1,600 characters (400 tokens at 4
//! characters a token), each next chunk starting about 320 characters (80
//! tokens) before the previous one ended, so a fact on a boundary is whole
//! in one of them. Each chunk knows its first and last line (1-based) and
//! a content hash (what the embedding cache and the incremental index key
//! on). A line longer than a chunk is cut into pieces of its own.

use sha2::{Digest, Sha256};

/// Characters per chunk at most.
pub const CHUNK_CHARS: usize = 1_600;
/// Characters the next chunk repeats from the end of the previous one.
pub const OVERLAP_CHARS: usize = 320;

/// One chunk of a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    pub start_line: usize,
    pub end_line: usize,
    pub text: String,
    /// Hex SHA-256 of the text, first 16 bytes.
    pub hash: String,
}

/// The hash a chunk's text is known by.
pub fn content_hash(text: &str) -> String {
    Sha256::digest(text.as_bytes())
        .iter()
        .take(16)
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A line as (line number, text), long lines cut into pieces that fit.
fn pieces(text: &str, max: usize) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let chars: Vec<char> = line.chars().collect();
        if chars.len() <= max {
            out.push((i + 1, line.to_string()));
        } else {
            for part in chars.chunks(max) {
                out.push((i + 1, part.iter().collect()));
            }
        }
    }
    out
}

fn make(lines: &[(usize, String)]) -> Option<Chunk> {
    let first = lines.first()?;
    let last = lines.last()?;
    let text = lines
        .iter()
        .map(|(_, l)| l.as_str())
        .collect::<Vec<_>>()
        .join("\n");
    if text.trim().is_empty() {
        return None;
    }
    Some(Chunk {
        start_line: first.0,
        end_line: last.0,
        hash: content_hash(&text),
        text,
    })
}

/// Cuts a file's text into chunks of at most `max` characters with
/// `overlap` characters repeated (`CHUNK_CHARS`, `OVERLAP_CHARS` in use).
/// Blank-only chunks are left out.
pub fn chunk_with(text: &str, max: usize, overlap: usize) -> Vec<Chunk> {
    let max = max.max(16);
    let overlap = overlap.min(max / 2);
    let lines = pieces(text, max);
    let mut out = Vec::new();
    let mut current: Vec<(usize, String)> = Vec::new();
    let mut size = 0usize;
    for piece in lines {
        let len = piece.1.chars().count() + 1;
        if size + len > max + 1 && !current.is_empty() {
            out.extend(make(&current));
            // Keep the tail of this chunk (whole lines) as the next one's start.
            let mut kept: Vec<(usize, String)> = Vec::new();
            let mut kept_size = 0usize;
            for l in current.iter().rev() {
                let n = l.1.chars().count() + 1;
                if kept_size + n > overlap || kept_size + n + len > max + 1 {
                    break;
                }
                kept_size += n;
                kept.push(l.clone());
            }
            kept.reverse();
            current = kept;
            size = kept_size;
        }
        size += len;
        current.push(piece);
    }
    out.extend(make(&current));
    out
}

/// `chunk_with` OpenClaw's sizes.
pub fn chunk(text: &str) -> Vec<Chunk> {
    chunk_with(text, CHUNK_CHARS, OVERLAP_CHARS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn small_files_are_one_chunk_with_their_lines() {
        let c = chunk("# Memory\n\nAnn likes tea.\n");
        assert_eq!(c.len(), 1);
        assert_eq!((c[0].start_line, c[0].end_line), (1, 3));
        assert_eq!(c[0].text, "# Memory\n\nAnn likes tea.");
        assert_eq!(c[0].hash, content_hash("# Memory\n\nAnn likes tea."));
        assert!(chunk("\n\n   \n").is_empty());
    }

    #[test]
    fn long_files_overlap_and_long_lines_are_cut() {
        let text: String = (1..=200)
            .map(|i| format!("line {i:03} with some words in it\n"))
            .collect();
        let c = chunk(&text);
        assert!(c.len() > 3);
        for w in c.windows(2) {
            assert!(
                w[1].start_line <= w[0].end_line,
                "chunks overlap: {:?} {:?}",
                (w[0].start_line, w[0].end_line),
                (w[1].start_line, w[1].end_line)
            );
            assert!(w[1].start_line > w[0].start_line, "and move forward");
        }
        assert_eq!(c.last().unwrap().end_line, 200);
        let long = "x".repeat(4_000);
        let c = chunk(&long);
        assert_eq!(c.len(), 3);
        assert!(c
            .iter()
            .all(|c| c.start_line == 1 && c.text.chars().count() <= CHUNK_CHARS));
    }

    proptest! {
        #[test]
        fn every_line_is_in_a_chunk_and_no_chunk_is_too_big(
            lines in prop::collection::vec("[a-zé ]{0,120}", 0..200),
            max in 40usize..400,
        ) {
            let text = lines.join("\n");
            let chunks = chunk_with(&text, max, max / 5);
            for c in &chunks {
                prop_assert!(c.text.chars().count() <= max, "{} > {max}", c.text.chars().count());
                prop_assert!(c.start_line <= c.end_line);
            }
            for (i, l) in lines.iter().enumerate() {
                if l.trim().is_empty() { continue; }
                let n = i + 1;
                prop_assert!(chunks.iter().any(|c| c.start_line <= n && n <= c.end_line), "line {n} in no chunk");
            }
        }
    }
}
