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
