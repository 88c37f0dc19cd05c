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

use sha2::{Digest, Sha256};

/// Vector size.
pub const DIMS: usize = 512;

/// A feature of a text (before hashing).
fn features(text: &str) -> Vec<String> {
    let words = super::rank::tokens(text);
    let mut out = Vec::with_capacity(words.len() * 6);
    for (i, w) in words.iter().enumerate() {
        out.push(format!("w:{w}"));
        if let Some(next) = words.get(i + 1) {
            out.push(format!("b:{w} {next}"));
        }
        let chars: Vec<char> = format!("<{w}>").chars().collect();
        for tri in chars.windows(3) {
            out.push(format!("c:{}", tri.iter().collect::<String>()));
        }
    }
    out
}

/// A feature's slot and sign (the sign halves collisions' bias).
fn slot(feature: &str) -> (usize, f32) {
    let d = Sha256::digest(feature.as_bytes());
    let n = u32::from_le_bytes([d[0], d[1], d[2], d[3]]);
    ((n as usize) % DIMS, if d[4] & 1 == 0 { 1.0 } else { -1.0 })
}

/// Document frequencies of features over the indexed chunks.
#[derive(Debug, Clone, Default)]
pub struct Idf {
    docs: u64,
    df: HashMap<String, u64>,
}

impl Idf {
    /// A chunk joins the index.
    pub fn add(&mut self, text: &str) {
        self.docs += 1;
        let mut seen: Vec<String> = features(text);
        seen.sort_unstable();
        seen.dedup();
        for f in seen {
            *self.df.entry(f).or_default() += 1;
        }
    }

    /// A chunk leaves the index.
    pub fn remove(&mut self, text: &str) {
        self.docs = self.docs.saturating_sub(1);
        let mut seen: Vec<String> = features(text);
        seen.sort_unstable();
        seen.dedup();
        for f in seen {
            if let Some(n) = self.df.get_mut(&f) {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    self.df.remove(&f);
                }
            }
        }
    }

    fn weight(&self, feature: &str) -> f32 {
        let df = self.df.get(feature).copied().unwrap_or(0) as f32;
        ((1.0 + self.docs as f32) / (1.0 + df)).ln() + 1.0
    }

    /// The embedding of `text` under these frequencies.
    pub fn embed(&self, text: &str) -> Vec<f32> {
        let mut v = vec![0f32; DIMS];
        let mut counts: HashMap<String, f32> = HashMap::new();
        for f in features(text) {
            *counts.entry(f).or_default() += 1.0;
        }
        for (f, tf) in counts {
            let (i, sign) = slot(&f);
            v[i] += sign * (1.0 + tf.ln()) * self.weight(&f);
        }
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        if norm > 0.0 {
            for x in &mut v {
                *x /= norm;
            }
        }
        v
    }
}

/// Cosine similarity of two normalised vectors (0 for mismatched sizes).
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    if a.len() != b.len() {
        return 0.0;
    }
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let before = idf.weight("w:meeting");
        idf.remove("The meeting notes are in the shared folder.");
        assert!(idf.weight("w:meeting") > before, "rarer after a removal");
        assert_eq!(cosine(&[1.0, 0.0], &[1.0]), 0.0);
    }
}
