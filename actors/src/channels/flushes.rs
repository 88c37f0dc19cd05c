//! What a connection recorded in the ledger and waits to confirm: each
//! item is handed over (acknowledged, passed to the desk) only once a
//! flush made it durable. One flush at a time; a failed flush keeps its
//! batch first in line and is tried again after a backoff (0.5 s doubling
//! to 60 s), and what was recorded meanwhile waits behind it, so items go
//! in the order they were recorded, and never before they are stored.
//! Pure: the connection actor runs the flush and the timer.

use std::time::Duration;

const FIRST_RETRY_MS: u64 = 500;
const MAX_RETRY_MS: u64 = 60_000;

#[derive(Debug)]
pub struct Flushes<T> {
    waiting: Vec<T>,
    flushing: bool,
    retry_ms: u64,
}

impl<T> Default for Flushes<T> {
    fn default() -> Self {
        Flushes {
            waiting: Vec::new(),
            flushing: false,
            retry_ms: 0,
        }
    }
}

impl<T> Flushes<T> {
    /// An item recorded (not yet flushed).
    pub fn push(&mut self, item: T) {
        self.waiting.push(item);
    }

    /// The batch to flush now: everything waiting, unless a flush is
    /// already under way (or nothing waits).
    pub fn start(&mut self) -> Option<Vec<T>> {
        if self.flushing || self.waiting.is_empty() {
            return None;
        }
        self.flushing = true;
        Some(std::mem::take(&mut self.waiting))
    }

    /// The flush of `batch` ended. Stored: the batch, to hand over (then
    /// [`Flushes::start`] again for what came meanwhile). Not stored: the
    /// wait before trying again; the batch is first in line again.
    pub fn finished(&mut self, batch: Vec<T>, stored: bool) -> Result<Vec<T>, Duration> {
        self.flushing = false;
        if stored {
            self.retry_ms = 0;
            return Ok(batch);
        }
        let later = std::mem::replace(&mut self.waiting, batch);
        self.waiting.extend(later);
        self.retry_ms = (self.retry_ms * 2).clamp(FIRST_RETRY_MS, MAX_RETRY_MS);
        Err(Duration::from_millis(self.retry_ms))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_go_once_stored_in_the_order_they_were_recorded() {
        let mut f = Flushes::default();
        assert_eq!(f.start(), None);
        f.push(1);
        let batch = f.start().unwrap();
        assert_eq!(f.start(), None, "one flush at a time");
        f.push(2);
        assert_eq!(f.finished(batch, false), Err(Duration::from_millis(500)));
        f.push(3);
        let batch = f.start().unwrap();
        assert_eq!(batch, [1, 2, 3], "the failed batch first");
        assert_eq!(f.finished(batch, false), Err(Duration::from_millis(1000)));
        let batch = f.start().unwrap();
        assert_eq!(f.finished(batch, true), Ok(vec![1, 2, 3]));
        f.push(4);
        let batch = f.start().unwrap();
        assert_eq!(
            f.finished(batch, false),
            Err(Duration::from_millis(500)),
            "the backoff starts over"
        );
    }
}
