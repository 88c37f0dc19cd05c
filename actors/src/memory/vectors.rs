//! Vectors in memory for the vector leg: each stored once on disk as
//! binary f32 and held here quantised to int8 with one scale per vector
//! (a quarter of the memory; cosine ranks are unchanged to about 1%).
//! The search is a scan: the query is quantised too and each candidate's
//! score is the integer dot product times both scales. The local
//! embedder's vectors are stored in this form; a provider's as f32.

/// One vector, quantised.
#[derive(Debug, Clone)]
pub struct QVec {
    scale: f32,
    q: Box<[i8]>,
}

impl QVec {
    pub fn from_f32(v: &[f32]) -> QVec {
        let max = v.iter().fold(0f32, |m, x| m.max(x.abs()));
        let scale = if max > 0.0 { max / 127.0 } else { 1.0 };
        let q = v
            .iter()
            .map(|x| (x / scale).round().clamp(-127.0, 127.0) as i8)
            .collect();
        QVec { scale, q }
    }

    pub fn dims(&self) -> usize {
        self.q.len()
    }

    /// The dot product with `query` (0 when the sizes differ): integer
    /// multiply-adds, which the compiler vectorises.
    pub fn dot(&self, query: &QVec) -> f32 {
        if query.q.len() != self.q.len() {
            return 0.0;
        }
        let sum: i32 = self
            .q
            .iter()
            .zip(query.q.iter())
            .map(|(a, b)| i32::from(*a) * i32::from(*b))
            .sum();
        sum as f32 * self.scale * query.scale
    }

    /// The stored form: the scale (f32, little-endian) then the bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = self.scale.to_le_bytes().to_vec();
        out.extend(self.q.iter().map(|x| *x as u8));
        out
    }

    pub fn from_bytes(b: &[u8]) -> Option<QVec> {
        let (s, q) = (b.get(..4)?, b.get(4..)?);
        Some(QVec {
            scale: f32::from_le_bytes([s[0], s[1], s[2], s[3]]),
            q: q.iter().map(|x| *x as i8).collect(),
        })
    }
}

/// Where the vector leg searches: the `n` vectors with the best positive
/// dot product with a query. Chunks come and go by id.
pub trait VectorIndex: Send {
    /// Adds (or replaces) `id`'s vector; false when its size does not
    /// match the vectors held.
    fn insert(&mut self, id: i64, v: QVec) -> bool;
    fn remove(&mut self, id: i64);
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Best first; ties by id.
    fn top(&self, query: &QVec, n: usize) -> Vec<(i64, f32)>;
}

/// Exact search by a scan over every vector, kept contiguously (one int8
/// row and one scale per vector; a removal moves the last row into the
/// gap), so the scan reads memory in order.
#[derive(Debug, Default)]
pub struct FlatIndex {
    dims: usize,
    ids: Vec<i64>,
    rows: Vec<i8>,
    scales: Vec<f32>,
    slot_of: std::collections::HashMap<i64, usize>,
}

impl VectorIndex for FlatIndex {
    fn insert(&mut self, id: i64, v: QVec) -> bool {
        if self.ids.is_empty() {
            self.dims = v.dims();
        }
        if v.dims() != self.dims || self.dims == 0 {
            return false;
        }
        self.remove(id);
        self.slot_of.insert(id, self.ids.len());
        self.ids.push(id);
        self.rows.extend_from_slice(&v.q);
        self.scales.push(v.scale);
        true
    }

    fn remove(&mut self, id: i64) {
        let Some(slot) = self.slot_of.remove(&id) else {
            return;
        };
        let last = self.ids.len() - 1;
        if slot != last {
            let moved = self.ids[last];
            self.ids[slot] = moved;
            self.scales[slot] = self.scales[last];
            let (d, from) = (self.dims, last * self.dims);
            self.rows.copy_within(from..from + d, slot * d);
            self.slot_of.insert(moved, slot);
        }
        self.ids.pop();
        self.scales.pop();
        self.rows.truncate(last * self.dims);
    }

    fn len(&self) -> usize {
        self.ids.len()
    }

    fn top(&self, query: &QVec, n: usize) -> Vec<(i64, f32)> {
        if query.dims() != self.dims || self.dims == 0 || n == 0 {
            return Vec::new();
        }
        let scored: Vec<(i64, f32)> = self
            .rows
            .chunks_exact(self.dims)
            .zip(self.ids.iter().zip(&self.scales))
            .filter_map(|(row, (id, scale))| {
                let dot: i32 = row
                    .iter()
                    .zip(query.q.iter())
                    .map(|(a, b)| i32::from(*a) * i32::from(*b))
                    .sum();
                let score = dot as f32 * scale * query.scale;
                (score > 0.0).then_some((*id, score))
            })
            .collect();
        best(scored, n)
    }
}

/// The `n` best of `scored` (id, score), best first; ties by id.
pub fn best(mut scored: Vec<(i64, f32)>, n: usize) -> Vec<(i64, f32)> {
    let take = n.min(scored.len());
    if take == 0 {
        return Vec::new();
    }
    let cmp = |a: &(i64, f32), b: &(i64, f32)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
    scored.select_nth_unstable_by(take - 1, cmp);
    scored.truncate(take);
    scored.sort_by(cmp);
    scored
}

/// Little-endian f32s, the on-disk form.
pub fn to_blob(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

pub fn from_blob(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// `v` scaled to length 1 (unchanged when it is all zeros).
pub fn normalised(mut v: Vec<f32>) -> Vec<f32> {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        for x in &mut v {
            *x /= norm;
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flat_index_finds_the_nearest_and_survives_removals() {
        let unit = |i: usize| {
            let mut v = vec![0.05f32; 8];
            v[i] = 1.0;
            QVec::from_f32(&normalised(v))
        };
        let mut idx = FlatIndex::default();
        for i in 0..8 {
            assert!(idx.insert(i as i64, unit(i)));
        }
        assert!(
            !idx.insert(99, QVec::from_f32(&[1.0; 3])),
            "other dimensions"
        );
        assert_eq!(idx.top(&unit(3), 1)[0].0, 3);
        idx.remove(0);
        idx.remove(3);
        idx.remove(42);
        assert_eq!(idx.len(), 6);
        assert_ne!(idx.top(&unit(3), 1)[0].0, 3, "gone");
        // The row moved into a gap still answers for its own id.
        assert_eq!(idx.top(&unit(7), 1)[0].0, 7);
        assert!(idx.insert(7, unit(1)), "replaced");
        assert_eq!(idx.len(), 6);
        let top = idx.top(&unit(1), 2);
        assert_eq!(top.iter().map(|t| t.0).collect::<Vec<_>>(), [1, 7]);
    }

    #[test]
    fn quantised_dot_products_stay_close_and_blobs_round_trip() {
        let a = normalised((0..512).map(|i| ((i * 37 % 101) as f32) - 50.0).collect());
        let b = normalised((0..512).map(|i| ((i * 53 % 89) as f32) - 44.0).collect());
        let exact: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
        let (q, qb) = (QVec::from_f32(&a), QVec::from_f32(&b));
        assert!(
            (q.dot(&qb) - exact).abs() < 0.01,
            "{} vs {exact}",
            q.dot(&qb)
        );
        assert!((q.dot(&q) - 1.0).abs() < 0.02);
        assert_eq!(q.dot(&QVec::from_f32(&b[..10])), 0.0, "sizes differ");
        assert_eq!(from_blob(&to_blob(&a)), a);
        let back = QVec::from_bytes(&q.to_bytes()).unwrap();
        assert_eq!(back.dot(&qb), q.dot(&qb));
        assert!(QVec::from_bytes(&[1, 2]).is_none());
        assert_eq!(
            QVec::from_f32(&[0.0; 4]).dot(&QVec::from_f32(&[1.0; 4])),
            0.0
        );
    }
}
