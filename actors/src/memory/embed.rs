//! The built-in local embedder: no model, no download, no network. A text
//! becomes a fixed-size vector of hashed features (word unigrams, word
//! bigrams, and character trigrams of each word, so "meeting" and
//! "meetings" share most of their weight), each weighted by its inverse
//! document frequency over the indexed chunks, then L2-normalised; cosine
//! similarity is the dot product. It finds paraphrases that share words or
//! word stems and ranks rare words above common ones; it knows no synonyms
//! ("car" and "vehicle" are unrelated to it), which a real embedding
//! provider adds.

use std::collections::HashMap;
use std::hash::Hasher;

use fnv::FnvHasher;

/// Vector size.
pub const DIMS: usize = 512;
/// The embedder's version: stored vectors of another version are rebuilt.
pub const VERSION: &str = "hashed-ngrams-v2";

const WORD: u8 = 1;
const BIGRAM: u8 = 2;
const TRIGRAM: u8 = 3;

/// A feature's stable 64-bit hash (FNV-1a: the same in every build).
fn hash(kind: u8, parts: &[&[u8]]) -> u64 {
    let mut h = FnvHasher::default();
    h.write_u8(kind);
    for (i, p) in parts.iter().enumerate() {
        if i > 0 {
            h.write_u8(b' ');
        }
        h.write(p);
    }
    h.finish()
}

/// One text's features: each word's hash, the bigrams' (with the index of
/// their first word) and each word's character trigrams ("<word>" framed).
struct Features {
    words: Vec<u64>,
    bigrams: Vec<(u64, usize)>,
    trigrams: Vec<u64>,
}

fn features(text: &str) -> Features {
    let words = super::rank::tokens(text);
    let mut f = Features {
        words: Vec::with_capacity(words.len()),
        bigrams: Vec::with_capacity(words.len()),
        trigrams: Vec::with_capacity(words.len() * 4),
    };
    let mut buf = String::new();
    for (i, w) in words.iter().enumerate() {
        f.words.push(hash(WORD, &[w.as_bytes()]));
        if let Some(next) = words.get(i + 1) {
            f.bigrams
                .push((hash(BIGRAM, &[w.as_bytes(), next.as_bytes()]), i));
        }
        buf.clear();
        buf.push('<');
        buf.push_str(w);
        buf.push('>');
        let bounds: Vec<usize> = buf
            .char_indices()
            .map(|(i, _)| i)
            .chain([buf.len()])
            .collect();
        for k in 0..bounds.len().saturating_sub(3) {
            f.trigrams
                .push(hash(TRIGRAM, &[&buf.as_bytes()[bounds[k]..bounds[k + 3]]]));
        }
    }
    f
}

/// A feature's slot and sign (the sign halves collisions' bias).
fn slot(h: u64) -> (usize, f32) {
    (
        (h % DIMS as u64) as usize,
        if (h >> 40) & 1 == 0 { 1.0 } else { -1.0 },
    )
}

/// Document frequencies over the indexed chunks, of words and character
/// trigrams (bounded vocabularies; a bigram weighs what its words do).
#[derive(Debug, Clone, Default)]
pub struct Idf {
    docs: u64,
    df: HashMap<u64, u32>,
}

fn distinct(f: &Features) -> Vec<u64> {
    let mut seen: Vec<u64> = f.words.iter().chain(&f.trigrams).copied().collect();
    seen.sort_unstable();
    seen.dedup();
    seen
}

impl Idf {
    /// A chunk joins the index.
    pub fn add(&mut self, text: &str) {
        self.docs += 1;
        for h in distinct(&features(text)) {
            *self.df.entry(h).or_default() += 1;
        }
    }

    /// A chunk leaves the index.
    pub fn remove(&mut self, text: &str) {
        self.docs = self.docs.saturating_sub(1);
        for h in distinct(&features(text)) {
            if let Some(n) = self.df.get_mut(&h) {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    self.df.remove(&h);
                }
            }
        }
    }

    fn weight(&self, h: u64) -> f32 {
        let df = self.df.get(&h).copied().unwrap_or(0) as f32;
        ((1.0 + self.docs as f32) / (1.0 + df)).ln() + 1.0
    }

    /// The embedding of `text` under these frequencies.
    pub fn embed(&self, text: &str) -> Vec<f32> {
        let f = features(text);
        let mut v = vec![0f32; DIMS];
        let mut counts: HashMap<u64, (f32, f32)> = HashMap::new();
        for h in f.words.iter().chain(&f.trigrams) {
            counts.entry(*h).or_insert((0.0, self.weight(*h))).0 += 1.0;
        }
        for (h, at) in &f.bigrams {
            let w = (self.weight(f.words[*at]) + self.weight(f.words[at + 1])) / 2.0;
            counts.entry(*h).or_insert((0.0, w)).0 += 1.0;
        }
        for (h, (tf, w)) in counts {
            let (i, sign) = slot(h);
            v[i] += sign * (1.0 + tf.ln()) * w;
        }
        super::vectors::normalised(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Cosine similarity of two normalised vectors (0 for mismatched sizes).
    pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
        if a.len() != b.len() {
            return 0.0;
        }
        a.iter().zip(b).map(|(x, y)| x * y).sum()
    }

    fn corpus() -> Idf {
        let mut idf = Idf::default();
        for t in [
            "Ann prefers green tea in the morning.",
            "The car needs new tyres before the winter trip.",
            "Weekly meeting with the design team on Tuesdays.",
            "The meeting notes are in the shared folder.",
            "Dentist appointment on March 3rd at 9am.",
        ] {
            idf.add(t);
        }
        idf
    }

    #[test]
    fn related_texts_score_higher_than_unrelated_ones() {
        let idf = corpus();
        let q = idf.embed("what tea does Ann like in the mornings?");
        let tea = idf.embed("Ann prefers green tea in the morning.");
        let car = idf.embed("The car needs new tyres before the winter trip.");
        assert!(cosine(&q, &tea) > 0.3, "{}", cosine(&q, &tea));
        assert!(cosine(&q, &tea) > 2.0 * cosine(&q, &car).max(0.01));
        // Word stems: "meetings" finds "meeting".
        let m = idf.embed("when are the team meetings");
        let weekly = idf.embed("Weekly meeting with the design team on Tuesdays.");
        assert!(cosine(&m, &weekly) > cosine(&m, &tea));
        let v = idf.embed("anything");
        assert!((cosine(&v, &v) - 1.0).abs() < 1e-4, "normalised");
        assert_eq!(idf.embed("").iter().filter(|x| **x != 0.0).count(), 0);
    }

    #[test]
    fn frequencies_follow_adds_and_removes() {
        let mut idf = corpus();
        let meeting = hash(WORD, &[b"meeting"]);
        let before = idf.weight(meeting);
        idf.remove("The meeting notes are in the shared folder.");
        assert!(idf.weight(meeting) > before, "rarer after a removal");
        assert_eq!(cosine(&[1.0, 0.0], &[1.0]), 0.0);
    }
}
