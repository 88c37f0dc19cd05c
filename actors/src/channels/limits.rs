//! Sending limits shared by every call a channel account makes with one
//! bot token.
//!
//! `SendGate`: one per token. A platform's "429, retry after N s" closes the
//! gate for every method of that token until then (OpenClaw #50866: a burst
//! that ignored it turned one 429 into a crash spiral), and consecutive
//! sends keep a minimum spacing. `RetryPolicy`: seed 002's per-request
//! retry: 3 attempts, delays doubling from the minimum (Telegram's is
//! 400 ms), capped at 30 s, 10% jitter (a platform's retry-after is never
//! shortened by it); only transient failures are retried.

/// Why a send failed, as far as retrying cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// Rate limited, with the platform's wait when it gave one (ms).
    RateLimited { retry_after_ms: Option<u64> },
    /// Timeout, connection error, 5xx: may work next time.
    Transient,
    /// The request was refused as it is (4xx, a markdown parse error):
    /// retrying the same request cannot help.
    Permanent,
}

/// Seed 002's retry policy for one request.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryPolicy {
    pub attempts: u32,
    pub min_delay_ms: u64,
    pub max_delay_ms: u64,
    /// 0.1: delays vary by up to 10%.
    pub jitter: f64,
}

impl RetryPolicy {
    /// Telegram's: 3 attempts, 400 ms minimum, 30 s cap, 10% jitter.
    pub const TELEGRAM: RetryPolicy = RetryPolicy {
        attempts: 3,
        min_delay_ms: 400,
        max_delay_ms: 30_000,
        jitter: 0.1,
    };

    /// The wait before attempt `attempt + 1` after attempt `attempt`
    /// (1-based) failed, or None when it is not retried. `random` is a
    /// draw in [0, 1).
    pub fn delay_ms(&self, attempt: u32, failure: Failure, random: f64) -> Option<u64> {
        if attempt >= self.attempts || failure == Failure::Permanent {
            return None;
        }
        let cap = self.max_delay_ms.max(self.min_delay_ms);
        let random = random.clamp(0.0, 1.0);
        let delay = match failure {
            Failure::RateLimited {
                retry_after_ms: Some(after),
            } => {
                // Never sooner than the platform asked: jitter only adds.
                let base = after.max(self.min_delay_ms) as f64;
                base + base * self.jitter * random
            }
            _ => {
                let exp = attempt.saturating_sub(1).min(30);
                let base = self.min_delay_ms.saturating_mul(1u64 << exp).min(cap) as f64;
                base + base * self.jitter * (2.0 * random - 1.0)
            }
        };
        Some((delay.round() as u64).clamp(self.min_delay_ms, cap.max(self.min_delay_ms)))
    }
}

/// One bot token's gate: closed after a rate limit until the platform's
/// time, and spacing consecutive sends by at least `min_interval_ms`.
#[derive(Debug, Clone, Default)]
pub struct SendGate {
    min_interval_ms: u64,
    closed_until_ms: u64,
    last_send_ms: Option<u64>,
    /// Rate limits seen (for health and metrics).
    pub rate_limits: u64,
}

impl SendGate {
    pub fn new(min_interval_ms: u64) -> SendGate {
        SendGate {
            min_interval_ms,
            ..SendGate::default()
        }
    }

    /// How long a send at `now` must wait (0: go now).
    pub fn wait_ms(&self, now_ms: u64) -> u64 {
        let spaced = self
            .last_send_ms
            .map_or(0, |last| last.saturating_add(self.min_interval_ms));
        self.closed_until_ms.max(spaced).saturating_sub(now_ms)
    }

    /// A send starts at `now` (call when `wait_ms` is 0).
    pub fn sent(&mut self, now_ms: u64) {
        self.last_send_ms = Some(now_ms);
    }

    /// The platform said 429: every method of the token waits until then
    /// (a gate already closed for longer stays closed longer).
    pub fn rate_limited(&mut self, now_ms: u64, retry_after_ms: u64) {
        self.rate_limits += 1;
        self.closed_until_ms = self
            .closed_until_ms
            .max(now_ms.saturating_add(retry_after_ms));
    }

    /// Closed by a rate limit at `now`.
    pub fn closed(&self, now_ms: u64) -> bool {
        self.closed_until_ms > now_ms
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const P: RetryPolicy = RetryPolicy::TELEGRAM;

    #[test]
    fn transient_failures_back_off_from_the_minimum_and_stop_after_three_attempts() {
        let mid = 0.5; // no jitter
        assert_eq!(P.delay_ms(1, Failure::Transient, mid), Some(400));
        assert_eq!(P.delay_ms(2, Failure::Transient, mid), Some(800));
        assert_eq!(
            P.delay_ms(3, Failure::Transient, mid),
            None,
            "three attempts"
        );
        assert_eq!(
            P.delay_ms(1, Failure::Permanent, mid),
            None,
            "never retried"
        );
        let long = RetryPolicy { attempts: 20, ..P };
        assert_eq!(
            long.delay_ms(15, Failure::Transient, mid),
            Some(30_000),
            "capped"
        );
        // 10% either way, never under the minimum.
        assert_eq!(P.delay_ms(2, Failure::Transient, 0.0), Some(720));
        assert_eq!(P.delay_ms(2, Failure::Transient, 0.999_999), Some(880));
        assert_eq!(P.delay_ms(1, Failure::Transient, 0.0), Some(400));
    }

    #[test]
    fn a_retry_after_is_honoured_never_shortened_and_capped() {
        let rl = |ms| Failure::RateLimited {
            retry_after_ms: Some(ms),
        };
        assert_eq!(P.delay_ms(1, rl(3_000), 0.0), Some(3_000));
        assert_eq!(P.delay_ms(1, rl(3_000), 0.999_999), Some(3_300));
        assert_eq!(
            P.delay_ms(1, rl(10), 0.0),
            Some(400),
            "at least the minimum"
        );
        assert_eq!(P.delay_ms(1, rl(120_000), 0.5), Some(30_000), "capped");
        let unknown = Failure::RateLimited {
            retry_after_ms: None,
        };
        assert_eq!(P.delay_ms(1, unknown, 0.5), Some(400));
    }

    #[test]
    fn a_rate_limit_closes_the_gate_for_every_method_until_the_platform_says() {
        let mut g = SendGate::new(0);
        assert_eq!(g.wait_ms(1_000), 0);
        g.sent(1_000);
        g.rate_limited(1_000, 5_000);
        assert!(g.closed(3_000));
        assert_eq!(g.wait_ms(3_000), 3_000);
        // A shorter one does not reopen it early.
        g.rate_limited(4_000, 1_000);
        assert_eq!(g.wait_ms(4_000), 2_000);
        assert_eq!(g.wait_ms(6_000), 0);
        assert!(!g.closed(6_000));
        assert_eq!(g.rate_limits, 2);
    }

    #[test]
    fn consecutive_sends_keep_their_spacing() {
        let mut g = SendGate::new(400);
        g.sent(10_000);
        assert_eq!(g.wait_ms(10_100), 300);
        assert_eq!(g.wait_ms(10_400), 0);
        g.sent(10_400);
        g.rate_limited(10_400, 100);
        assert_eq!(g.wait_ms(10_450), 350, "the longer of the two waits");
    }

    proptest! {
        /// Delays are always within [minimum, cap] and a retry-after below
        /// the cap is never shortened.
        #[test]
        fn delays_stay_in_bounds(attempt in 1u32..3, after in proptest::option::of(0u64..200_000), random in 0.0f64..1.0, transient in any::<bool>()) {
            let failure = if transient { Failure::Transient } else { Failure::RateLimited { retry_after_ms: after } };
            let d = P.delay_ms(attempt, failure, random).unwrap();
            prop_assert!((400..=30_000).contains(&d));
            if let (false, Some(a)) = (transient, after) {
                prop_assert!(d >= a.min(30_000));
            }
        }

        /// Whatever happens, a gate never lets a send through before the
        /// latest retry-after it was given.
        #[test]
        fn the_gate_never_opens_early(events in proptest::collection::vec((0u64..10_000, 0u64..10_000), 1..20)) {
            let mut g = SendGate::new(0);
            let mut now = 0;
            let mut until = 0;
            for (step, after) in events {
                now += step;
                g.rate_limited(now, after);
                until = until.max(now + after);
                prop_assert_eq!(now + g.wait_ms(now), until.max(now));
            }
        }
    }
}
