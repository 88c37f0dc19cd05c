//! A reply chunk the platform refused for its rate (a 429 with its wait:
//! the request was not taken) is held in the outbox, never dropped: it goes
//! back to `pending` (a restart sends it too) and is sent again after the
//! platform's wait (at least 1 s, at most 5 min a time), until it is sent
//! or its delivery is older than `HOLD_FOR_MS` (24 h). Then it fails with
//! why, logged at `error` and kept in the ledger (the audit's delivery
//! record names how each chunk ended). The limiter's own retries (three tries a request) come
//! first; this is the outbox's rule after them, the same for every outlet.
//! A child of `deliver.rs`: it extends the `Deliverer`.

use std::time::Duration;

use super::ledger::{self, Delivery, OutState, OutboxItem};
use super::{Deliverer, Outlet, SendFailure};
use crate::store::StoreError;

/// How long a rate-limited reply is held before it is given up.
pub const HOLD_FOR_MS: u64 = 24 * 60 * 60 * 1000;
const MIN_WAIT_MS: u64 = 1000;
const MAX_WAIT_MS: u64 = 5 * 60 * 1000;

/// The wait before sending a rate-limited chunk again, or None when its
/// delivery (created at `created_ms`) has been held long enough.
pub fn hold(retry_after_ms: u64, created_ms: u64, now_ms: u64) -> Option<u64> {
    let wait = retry_after_ms.clamp(MIN_WAIT_MS, MAX_WAIT_MS);
    (now_ms + wait <= created_ms.saturating_add(HOLD_FOR_MS)).then_some(wait)
}

impl<O: Outlet> Deliverer<O> {
    /// `call`, with a rate-limited refusal held and sent again by the rule
    /// above; the chunk is `sending` again before each new attempt.
    pub(super) async fn call_held(
        &self,
        d: &Delivery,
        item: &OutboxItem,
    ) -> Result<Result<String, SendFailure>, StoreError> {
        loop {
            let outcome = self.call(d, item).await;
            let Err(f) = &outcome else {
                return Ok(outcome);
            };
            let Some(after) = f.retry_after_ms else {
                return Ok(outcome);
            };
            let Some(wait) = hold(after, d.created_ms, crate::now_ms()) else {
                tracing::error!(account = %d.account, key = %item.key, error = %f.error,
                    "reply chunk given up: rate limited for 24 h");
                let error = format!("given up after 24 h of rate limits (last: {})", f.error);
                return Ok(Err(SendFailure { error, ..f.clone() }));
            };
            tracing::warn!(account = %d.account, key = %item.key, wait_ms = wait, error = %f.error,
                "reply chunk rate limited: held in the outbox");
            ledger::settle(&self.store, &d.account, &item.key, OutState::Pending)?;
            self.store.flush().await?;
            actix::clock::sleep(Duration::from_millis(wait)).await;
            let at_ms = crate::now_ms();
            ledger::settle(
                &self.store,
                &d.account,
                &item.key,
                OutState::Sending { at_ms },
            )?;
            self.store.flush().await?;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rate_limited_chunk_waits_the_platforms_time_within_bounds_until_a_day_has_passed() {
        let created = 1_000_000;
        assert_eq!(hold(30_000, created, created + 5), Some(30_000));
        assert_eq!(hold(0, created, created), Some(MIN_WAIT_MS));
        assert_eq!(hold(3_600_000, created, created), Some(MAX_WAIT_MS));
        assert_eq!(
            hold(30_000, created, created + HOLD_FOR_MS - 30_000),
            Some(30_000)
        );
        assert_eq!(hold(30_000, created, created + HOLD_FOR_MS), None);
    }
}
