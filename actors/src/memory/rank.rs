//! The memory query path after the two legs have their candidates, as
//! OpenClaw's docs describe it: each leg's scores normalised to 0..1, fused
//! 0.7 vector + 0.3 keyword; dated notes (`memory/YYYY-MM-DD.md`) decay
//! with a 30-day half-life (other files do not); results under `minScore`
//! (0.35) dropped; MMR (lambda 0.7, Jaccard similarity over tokens)
//! picks the top 6 so near-duplicates do not crowd the list; snippets are
//! capped at 700 characters. The keyword leg's query quotes each token and
//! joins them with AND. Time is passed in.

use std::collections::{HashMap, HashSet};

pub const VECTOR_WEIGHT: f64 = 0.7;
pub const KEYWORD_WEIGHT: f64 = 0.3;
pub const HALF_LIFE_DAYS: f64 = 30.0;
pub const MIN_SCORE: f64 = 0.35;
pub const MAX_RESULTS: usize = 6;
pub const MMR_LAMBDA: f64 = 0.7;
pub const SNIPPET_CHARS: usize = 700;
/// Candidates per leg: this times the results asked for.
pub const CANDIDATE_FACTOR: usize = 4;

/// Lowercase word tokens (letters and digits).
pub fn tokens(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|t| !t.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// The keyword leg's query: each token quoted, joined with AND (a token's
/// own quotes doubled). None for a query without words.
pub fn keyword_query(query: &str) -> Option<String> {
    let toks = tokens(query);
    if toks.is_empty() {
        return None;
    }
    Some(
        toks.iter()
            .map(|t| format!("\"{}\"", t.replace('"', "\"\"")))
            .collect::<Vec<_>>()
            .join(" AND "),
    )
}

/// Scores mapped to 0..1 by the leg's best (min-max; one candidate: 1).
pub fn normalise(scores: &HashMap<String, f64>) -> HashMap<String, f64> {
    let (lo, hi) = scores
        .values()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), s| {
            (lo.min(*s), hi.max(*s))
        });
    scores
        .iter()
        .map(|(k, s)| {
            let n = if hi > lo { (s - lo) / (hi - lo) } else { 1.0 };
            (k.clone(), n.clamp(0.0, 1.0))
        })
        .collect()
}

/// Scores relative to the best (keyword search alone: the best is 1).
pub fn relative(scores: &HashMap<String, f64>) -> HashMap<String, f64> {
    let best = scores.values().fold(0f64, |m, s| m.max(*s));
    scores
        .iter()
        .map(|(k, s)| {
            (
                k.clone(),
                if best > 0.0 {
                    (s / best).clamp(0.0, 1.0)
                } else {
                    0.0
                },
            )
        })
        .collect()
}

/// The fused score of every candidate of either leg.
pub fn fuse(vector: &HashMap<String, f64>, keyword: &HashMap<String, f64>) -> HashMap<String, f64> {
    let (v, k) = (normalise(vector), normalise(keyword));
    let ids: HashSet<&String> = v.keys().chain(k.keys()).collect();
    ids.into_iter()
        .map(|id| {
            let s = VECTOR_WEIGHT * v.get(id).copied().unwrap_or(0.0)
                + KEYWORD_WEIGHT * k.get(id).copied().unwrap_or(0.0);
            (id.clone(), s)
        })
        .collect()
}

/// The day a dated note is about (`memory/YYYY-MM-DD.md`), as ms since
/// the epoch at 00:00 UTC; None for any other path.
pub fn dated(path: &str) -> Option<u64> {
    let name = path.rsplit('/').next()?.strip_suffix(".md")?;
    let in_memory = path.split('/').rev().nth(1) == Some("memory");
    let date = chrono::NaiveDate::parse_from_str(name, "%Y-%m-%d").ok()?;
    let ms = date.and_hms_opt(0, 0, 0)?.and_utc().timestamp_millis();
    (in_memory && ms >= 0).then_some(ms as u64)
}

/// The decay factor of a result from `path` at `now`: 1 for undated files,
/// halving every 30 days for dated notes (a future date counts as today).
pub fn decay(path: &str, now_ms: u64) -> f64 {
    match dated(path) {
        Some(day) => {
            let age_days = now_ms.saturating_sub(day) as f64 / 86_400_000.0;
            0.5f64.powf(age_days / HALF_LIFE_DAYS)
        }
        None => 1.0,
    }
}

/// Jaccard similarity of two token sets.
pub fn jaccard(a: &HashSet<String>, b: &HashSet<String>) -> f64 {
    if a.is_empty() && b.is_empty() {
        return 1.0;
    }
    let inter = a.intersection(b).count() as f64;
    let union = a.union(b).count() as f64;
    inter / union
}

/// A scored candidate for the final pick.
#[derive(Debug, Clone, PartialEq)]
pub struct Scored {
    pub id: String,
    pub score: f64,
    pub text: String,
}

/// Maximal marginal relevance: repeatedly takes the candidate with the best
/// `lambda * score - (1 - lambda) * max similarity to those taken`.
pub fn mmr(mut candidates: Vec<Scored>, k: usize, lambda: f64) -> Vec<Scored> {
    let sets: HashMap<String, HashSet<String>> = candidates
        .iter()
        .map(|c| (c.id.clone(), tokens(&c.text).into_iter().collect()))
        .collect();
    let mut picked: Vec<Scored> = Vec::new();
    while picked.len() < k && !candidates.is_empty() {
        let value = |c: &Scored| {
            let sim = picked
                .iter()
                .map(|p| jaccard(&sets[&c.id], &sets[&p.id]))
                .fold(0.0, f64::max);
            lambda * c.score - (1.0 - lambda) * sim
        };
        let best = candidates
            .iter()
            .enumerate()
            .max_by(|(_, a), (_, b)| value(a).total_cmp(&value(b)).then(b.id.cmp(&a.id)))
            .map(|(i, _)| i);
        let Some(i) = best else { break };
        picked.push(candidates.swap_remove(i));
    }
    picked
}

/// A snippet of at most `SNIPPET_CHARS` characters (cut at a word).
pub fn snippet(text: &str) -> String {
    if text.chars().count() <= SNIPPET_CHARS {
        return text.to_string();
    }
    let cut: String = text.chars().take(SNIPPET_CHARS - 1).collect();
    let at = cut
        .rfind(char::is_whitespace)
        .filter(|i| *i > SNIPPET_CHARS / 2)
        .unwrap_or(cut.len());
    format!("{}…", cut[..at].trim_end())
}

#[cfg(test)]
mod tests {
    use super::*;

    const DAY: u64 = 86_400_000;
    /// 2026-11-24 00:00 UTC.
    const NOW: u64 = 1_795_478_400_000;

    #[test]
    fn the_keyword_query_quotes_and_ands_every_token() {
        assert_eq!(
            keyword_query("Ann's tea, 2026?").as_deref(),
            Some("\"ann\" AND \"s\" AND \"tea\" AND \"2026\"")
        );
        assert_eq!(keyword_query(" ?! "), None);
    }

    #[test]
    fn fusion_weighs_vector_0_7_and_keyword_0_3_after_normalising() {
        let v: HashMap<String, f64> = [("a".into(), 0.9), ("b".into(), 0.5)].into();
        let k: HashMap<String, f64> = [("b".into(), 12.0), ("c".into(), 3.0)].into();
        let f = fuse(&v, &k);
        assert!((f["a"] - 0.7).abs() < 1e-9);
        assert!(
            (f["b"] - 0.3).abs() < 1e-9,
            "b: vector 0 after min-max, keyword 1"
        );
        assert!((f["c"] - 0.0).abs() < 1e-9);
    }

    #[test]
    fn only_dated_notes_decay_with_a_30_day_half_life() {
        assert_eq!(dated("memory/2026-11-24.md"), Some(NOW));
        assert_eq!(dated("notes/2026-11-24.md"), None);
        assert_eq!(dated("memory/ideas.md"), None);
        assert!((decay("memory/2026-10-25.md", NOW) - 0.5).abs() < 1e-9);
        assert!((decay("memory/2026-09-25.md", NOW) - 0.25).abs() < 1e-9);
        assert_eq!(decay("MEMORY.md", NOW), 1.0);
        assert_eq!(
            decay("memory/2027-01-01.md", NOW),
            1.0,
            "a future date is today"
        );
        assert!(decay("memory/2026-11-23.md", NOW + DAY) < 1.0);
    }

    #[test]
    fn mmr_keeps_the_best_and_skips_near_duplicates() {
        let c = |id: &str, score: f64, text: &str| Scored {
            id: id.into(),
            score,
            text: text.into(),
        };
        let picked = mmr(
            vec![
                c("a", 0.95, "ann likes green tea in the morning"),
                c("b", 0.94, "ann likes green tea in the morning too"),
                c("c", 0.70, "the car is due for service in march"),
            ],
            2,
            MMR_LAMBDA,
        );
        let ids: Vec<&str> = picked.iter().map(|p| p.id.as_str()).collect();
        assert_eq!(ids, vec!["a", "c"]);
        assert!(mmr(Vec::new(), 6, MMR_LAMBDA).is_empty());
    }

    #[test]
    fn snippets_are_capped_at_a_word() {
        let long = "word ".repeat(300);
        let s = snippet(&long);
        assert!(s.chars().count() <= SNIPPET_CHARS);
        assert!(s.ends_with("word…"), "{s}");
        assert_eq!(snippet("short"), "short");
    }
}
