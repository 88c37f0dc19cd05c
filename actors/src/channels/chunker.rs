//! Block streaming for channels without message edits (seed 002's block
//! chunker): the reply goes out as complete blocks of `min..=max`
//! characters (800-1200 by default) while the model writes. A block ends at
//! the best break inside that window: a paragraph, then a line, then a
//! sentence, then a word; a word longer than the window is cut. A block
//! that ends inside a fenced code block closes the fence and the next block
//! reopens it with the same fence line, so every block renders on its own.

/// Seed 002's window.
pub const MIN_CHARS: usize = 800;
pub const MAX_CHARS: usize = 1200;

#[derive(Debug, Clone)]
pub struct BlockChunker {
    min: usize,
    max: usize,
    buf: String,
    /// The fence line a block left open (reopened at the next block).
    open_fence: Option<String>,
}

impl Default for BlockChunker {
    fn default() -> Self {
        BlockChunker::new(MIN_CHARS, MAX_CHARS)
    }
}

/// The char index where a block of at most `max` chars (and at least `min`
/// when the text allows) should end in `text`, and where the next begins.
fn cut(text: &str, min: usize, max: usize) -> (usize, usize) {
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let byte_at = |i: usize| chars.get(i).map_or(text.len(), |(b, _)| *b);
    let window = &chars[min.min(chars.len())..max.min(chars.len())];
    // Best break: paragraph, line, sentence end, space (last of its kind).
    let find =
        |pred: &dyn Fn(usize) -> bool| window.iter().rev().map(|(b, _)| *b).find(|b| pred(*b));
    let at = |b: usize, s: &str| text[b..].starts_with(s);
    let sentence = |b: usize| {
        b > 0 && matches!(&text[..b].chars().last(), Some('.' | '!' | '?')) && at(b, " ")
    };
    if let Some(b) = find(&|b| at(b, "\n\n")) {
        return (b, b + 2);
    }
    if let Some(b) = find(&|b| at(b, "\n")) {
        return (b, b + 1);
    }
    if let Some(b) = find(&sentence) {
        return (b, b + 1);
    }
    if let Some(b) = find(&|b| at(b, " ")) {
        return (b, b + 1);
    }
    let b = byte_at(max);
    (b, b)
}

/// The fence a text leaves open at its end (the opening line), if any.
fn open_fence_after(text: &str, already_open: Option<&str>) -> Option<String> {
    let mut open = already_open.map(str::to_string);
    for line in text.lines() {
        let t = line.trim_start();
        if t.starts_with("```") {
            open = match open {
                Some(_) => None,
                None => Some(t.to_string()),
            };
        }
    }
    open
}

impl BlockChunker {
    pub fn new(min: usize, max: usize) -> BlockChunker {
        let max = max.max(1);
        BlockChunker {
            min: min.min(max),
            max,
            buf: String::new(),
            open_fence: None,
        }
    }

    /// Adds streamed text; returns the blocks that are complete.
    pub fn push(&mut self, delta: &str) -> Vec<String> {
        self.buf.push_str(delta);
        let mut out = Vec::new();
        while self.buf.chars().count() > self.max {
            let (end, next) = cut(&self.buf, self.min, self.max);
            let block = self.buf[..end].trim_end().to_string();
            self.buf.drain(..next);
            out.extend(self.emit(block));
        }
        out
    }

    /// The rest of the reply (the message ended), if any.
    pub fn finish(&mut self) -> Option<String> {
        let rest = std::mem::take(&mut self.buf);
        let rest = rest.trim().to_string();
        if rest.is_empty() {
            self.open_fence = None;
            return None;
        }
        self.emit(rest)
    }

    fn emit(&mut self, block: String) -> Option<String> {
        if block.trim().is_empty() {
            return None;
        }
        let reopened = self.open_fence.take();
        let still_open = open_fence_after(&block, reopened.as_deref());
        let mut text = match &reopened {
            Some(fence) => format!("{fence}\n{block}"),
            None => block,
        };
        if still_open.is_some() {
            text.push_str("\n```");
        }
        self.open_fence = still_open;
        Some(text)
    }
}

/// Cuts a reply into messages of at most `max` characters, at a paragraph,
/// line or word break when there is one.
pub fn split(text: &str, max: usize) -> Vec<String> {
    let max = max.max(1);
    let mut parts = Vec::new();
    let mut rest = text.trim();
    while rest.chars().count() > max {
        let cut_byte = rest.char_indices().nth(max).map_or(rest.len(), |(i, _)| i);
        let head = &rest[..cut_byte];
        let at = ["\n\n", "\n", " "]
            .iter()
            .find_map(|sep| head.rfind(sep).filter(|&i| i > max / 3))
            .unwrap_or(cut_byte);
        parts.push(rest[..at].trim_end().to_string());
        rest = rest[at..].trim_start();
    }
    if !rest.is_empty() {
        parts.push(rest.to_string());
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_short_reply_is_one_block_at_the_end() {
        let mut c = BlockChunker::default();
        assert!(c.push("Hello ").is_empty());
        assert!(c.push("there.").is_empty());
        assert_eq!(c.finish().as_deref(), Some("Hello there."));
        assert_eq!(c.finish(), None);
    }

    #[test]
    fn blocks_end_at_the_best_break_in_the_window() {
        let mut c = BlockChunker::new(10, 20);
        let out = c.push("First para here.\n\nSecond para is longer than that.");
        assert_eq!(out, ["First para here.", "Second para is"]);
        assert_eq!(c.finish().as_deref(), Some("longer than that."));
        let mut c = BlockChunker::new(10, 20);
        let out = c.push("One sentence. Two sentences here ok");
        assert_eq!(
            out,
            ["One sentence.", "Two sentences here"],
            "a sentence end before a later plain space"
        );
        let mut c = BlockChunker::new(5, 10);
        let out = c.push("abcdefghijklmnopqrstuvwxyz");
        assert_eq!(out, ["abcdefghij", "klmnopqrst"], "a long word is cut");
        assert_eq!(c.finish().as_deref(), Some("uvwxyz"));
    }

    #[test]
    fn a_block_that_ends_inside_code_closes_the_fence_and_the_next_reopens_it() {
        let mut c = BlockChunker::new(10, 30);
        let mut out = c.push("```rust\nlet a = 1;\nlet b = 2;\nlet c = 3;\n```\ndone");
        out.extend(c.finish());
        assert_eq!(out[0], "```rust\nlet a = 1;\nlet b = 2;\n```");
        assert!(out[1].starts_with("```rust\nlet c = 3;\n```"), "{out:?}");
        for b in &out {
            assert_eq!(b.matches("```").count() % 2, 0, "balanced: {b}");
        }
    }

    proptest! {
        /// Every block but the last is within the window (plus a fence
        /// line), and no text is lost: the blocks hold every word in order.
        #[test]
        fn blocks_keep_every_word_and_stay_in_the_window(
            words in proptest::collection::vec("[a-z]{1,12}[.!?]?", 0..400),
            seps in proptest::collection::vec(prop_oneof![Just(" "), Just("\n"), Just("\n\n")], 400),
            split in 1usize..50,
        ) {
            let mut text = String::new();
            for (w, s) in words.iter().zip(seps.iter()) {
                text.push_str(w);
                text.push_str(s);
            }
            let mut c = BlockChunker::new(80, 120);
            let mut out = Vec::new();
            let chars: Vec<char> = text.chars().collect();
            for piece in chars.chunks(split) {
                out.extend(c.push(&piece.iter().collect::<String>()));
            }
            let last = c.finish();
            for b in &out {
                prop_assert!(b.chars().count() <= 120, "{}", b.len());
            }
            out.extend(last);
            let joined: Vec<&str> = out.iter().flat_map(|b| b.split_whitespace()).collect();
            let want: Vec<&str> = text.split_whitespace().collect();
            prop_assert_eq!(joined, want);
        }
    }
}
