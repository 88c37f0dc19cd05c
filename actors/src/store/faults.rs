//! Faults a test injects into one store, as a full or failing disk would
//! cause them: its next writes or flushes fail with an I/O error. Per
//! store, not process-wide (tests run many gateways in one process, so a
//! global fail-point registry would hit its neighbours). Off unless asked:
//! one relaxed atomic load per write or flush.

use std::sync::atomic::{AtomicU32, Ordering};

#[derive(Debug, Default)]
pub struct Faults {
    writes: AtomicU32,
    flushes: AtomicU32,
    failed_writes: AtomicU32,
    failed_flushes: AtomicU32,
}

/// What a failing store reports.
pub(super) fn injected(what: &str) -> std::io::Error {
    std::io::Error::other(format!("injected fault: the {what} failed"))
}

impl Faults {
    /// The next `n` writes fail (`u32::MAX`: every write until [`Faults::clear`]).
    pub fn fail_writes(&self, n: u32) {
        self.writes.store(n, Ordering::SeqCst);
    }

    /// The next `n` flushes fail (`u32::MAX`: every flush until cleared).
    pub fn fail_flushes(&self, n: u32) {
        self.flushes.store(n, Ordering::SeqCst);
    }

    /// Writes and flushes work again.
    pub fn clear(&self) {
        self.writes.store(0, Ordering::SeqCst);
        self.flushes.store(0, Ordering::SeqCst);
    }

    /// How many writes and flushes failed so far (by injection).
    pub fn failed(&self) -> (u32, u32) {
        (
            self.failed_writes.load(Ordering::SeqCst),
            self.failed_flushes.load(Ordering::SeqCst),
        )
    }

    pub(super) fn write_fails(&self) -> bool {
        Self::take(&self.writes, &self.failed_writes)
    }

    pub(super) fn flush_fails(&self) -> bool {
        Self::take(&self.flushes, &self.failed_flushes)
    }

    fn take(left: &AtomicU32, failed: &AtomicU32) -> bool {
        if left.load(Ordering::Relaxed) == 0 {
            return false;
        }
        let took = left
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| match n {
                0 => None,
                u32::MAX => Some(u32::MAX),
                n => Some(n - 1),
            })
            .is_ok();
        if took {
            failed.fetch_add(1, Ordering::SeqCst);
        }
        took
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counted_faults_run_out_and_lasting_ones_wait_for_clear() {
        let f = Faults::default();
        assert!(!f.write_fails());
        f.fail_writes(2);
        assert!(f.write_fails() && f.write_fails() && !f.write_fails());
        f.fail_flushes(u32::MAX);
        assert!((0..100).all(|_| f.flush_fails()));
        f.clear();
        assert!(!f.flush_fails());
        assert_eq!(f.failed(), (2, 100));
    }
}
