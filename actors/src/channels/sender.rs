//! The per-token limiter (and `Buckets`, limiters per method or route)
//! every call of one account goes through: it waits
//! while the token's `SendGate` is closed (a 429 closes it for every
//! method) or the spacing since the last call is short, records the
//! outcome in the account's health, and retries by the `RetryPolicy`.
//! A call that is not idempotent (a new message) is never retried after
//! a failure whose outcome is unknown: that is the outbox's decision.

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::health::AccountHealth;
use super::limits::{Failure, RetryPolicy, SendGate};

/// What the limiter needs to know of a platform's error.
pub trait CallError {
    fn failure(&self) -> Failure;
    /// The platform answered (any status): a round trip happened.
    fn answered(&self) -> bool;
    /// The request left and no answer came: it may have landed.
    fn unknown_outcome(&self) -> bool;
}

/// One token's limiter (clone it: clones share the gate).
#[derive(Clone)]
pub struct Limiter {
    gate: Arc<Mutex<SendGate>>,
    policy: RetryPolicy,
    health: Arc<AccountHealth>,
}

/// A draw in [0, 1) (0.5 when the OS has no randomness to give).
pub fn random_unit() -> f64 {
    let mut b = [0u8; 4];
    if getrandom::fill(&mut b).is_err() {
        return 0.5;
    }
    u32::from_le_bytes(b) as f64 / u32::MAX as f64
}

impl Limiter {
    pub fn new(min_interval_ms: u64, policy: RetryPolicy, health: Arc<AccountHealth>) -> Limiter {
        Limiter {
            gate: Arc::new(Mutex::new(SendGate::new(min_interval_ms))),
            policy,
            health,
        }
    }

    pub fn health(&self) -> &Arc<AccountHealth> {
        &self.health
    }

    /// Waits until the gate lets one call through, and takes its turn.
    pub async fn turn(&self) {
        loop {
            let now = crate::now_ms();
            let wait = match self.gate.lock() {
                Ok(mut g) => {
                    let w = g.wait_ms(now);
                    if w == 0 {
                        g.sent(now);
                    }
                    w
                }
                Err(_) => 0,
            };
            if wait == 0 {
                return;
            }
            actix::clock::sleep(Duration::from_millis(wait)).await;
        }
    }

    /// Waits while a rate limit holds the token, without taking a turn (a
    /// long poll is not a send and does not delay the next one).
    pub async fn open(&self) {
        loop {
            let now = crate::now_ms();
            let closed_for = match self.gate.lock() {
                Ok(g) if g.closed(now) => g.wait_ms(now),
                _ => 0,
            };
            if closed_for == 0 {
                return;
            }
            actix::clock::sleep(Duration::from_millis(closed_for)).await;
        }
    }

    /// Records an outcome: round trips, and a rate limit closing the gate.
    pub fn record<E: CallError>(&self, outcome: Result<(), &E>) {
        let now = crate::now_ms();
        match outcome {
            Ok(()) => self.health.round_trip(now),
            Err(e) => {
                if e.answered() {
                    self.health.round_trip(now);
                }
                if let Failure::RateLimited { retry_after_ms } = e.failure() {
                    self.health
                        .rate_limits
                        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    if let Ok(mut g) = self.gate.lock() {
                        g.rate_limited(now, retry_after_ms.unwrap_or(1000));
                    }
                }
            }
        }
    }

    /// Runs `op` through the gate with retries. `idempotent`: repeating it
    /// after an unknown outcome cannot duplicate anything (an edit, a
    /// typing action, a read).
    pub async fn call<T, E, F, Fut>(&self, idempotent: bool, mut op: F) -> Result<T, E>
    where
        E: CallError + std::fmt::Display,
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        let mut attempt = 1;
        loop {
            self.turn().await;
            let result = op().await;
            match result {
                Ok(v) => {
                    self.record::<E>(Ok(()));
                    return Ok(v);
                }
                Err(e) => {
                    self.record(Err(&e));
                    if e.unknown_outcome() && !idempotent {
                        return Err(e);
                    }
                    let Some(delay) = self.policy.delay_ms(attempt, e.failure(), random_unit())
                    else {
                        return Err(e);
                    };
                    tracing::debug!(attempt, delay_ms = delay, error = %e, "channel call retried");
                    actix::clock::sleep(Duration::from_millis(delay)).await;
                    attempt += 1;
                }
            }
        }
    }
}

/// Limiters by bucket (a Slack method, a Discord route), each with its own
/// gate: a 429 closes only its bucket. They share the account's health.
/// At most `MAX_BUCKETS` are kept; open ones go first when more come.
#[derive(Clone)]
pub struct Buckets {
    limiters: Arc<Mutex<std::collections::HashMap<String, Limiter>>>,
    min_interval_ms: u64,
    policy: RetryPolicy,
    health: Arc<AccountHealth>,
}

const MAX_BUCKETS: usize = 1024;

impl Buckets {
    pub fn new(min_interval_ms: u64, policy: RetryPolicy, health: Arc<AccountHealth>) -> Buckets {
        Buckets {
            limiters: Arc::default(),
            min_interval_ms,
            policy,
            health,
        }
    }

    /// The limiter of `bucket` (made on first use).
    pub fn get(&self, bucket: &str) -> Limiter {
        let Ok(mut map) = self.limiters.lock() else {
            return Limiter::new(self.min_interval_ms, self.policy, self.health.clone());
        };
        if let Some(l) = map.get(bucket) {
            return l.clone();
        }
        if map.len() >= MAX_BUCKETS {
            let now = crate::now_ms();
            map.retain(|_, l| l.gate.lock().is_ok_and(|g| g.closed(now)));
        }
        let l = Limiter::new(self.min_interval_ms, self.policy, self.health.clone());
        map.insert(bucket.to_string(), l.clone());
        l
    }

    pub fn health(&self) -> &Arc<AccountHealth> {
        &self.health
    }
}

/// A reqwest error without the URL (it may hold a token): its kind and
/// its innermost cause.
pub fn transport_error(e: &reqwest::Error) -> String {
    let kind = if e.is_timeout() {
        "timeout"
    } else if e.is_connect() {
        "connect"
    } else if e.is_body() || e.is_decode() {
        "body"
    } else {
        "request"
    };
    let mut source = std::error::Error::source(e);
    let mut detail = String::new();
    while let Some(s) = source {
        detail = s.to_string();
        source = s.source();
    }
    if detail.is_empty() {
        kind.to_string()
    } else {
        format!("{kind}: {detail}")
    }
}

/// Calls `op` until it succeeds or fails for good (`fatal`), waiting 1 s
/// doubling to 60 s between tries; each other failure is recorded in
/// `health`. For an adapter's start (who the bot is, where to connect).
pub async fn until_ready<T, E, F, Fut>(
    health: Arc<AccountHealth>,
    mut op: F,
    fatal: impl Fn(&E) -> bool,
) -> Result<T, E>
where
    E: std::fmt::Display,
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
{
    let mut backoff_ms = 0u64;
    loop {
        match op().await {
            Ok(v) => return Ok(v),
            Err(e) if fatal(&e) => return Err(e),
            Err(e) => {
                health.error(Some(e.to_string()));
                backoff_ms = (backoff_ms * 2).clamp(1000, 60_000);
                actix::clock::sleep(Duration::from_millis(backoff_ms)).await;
            }
        }
    }
}

/// How a send failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SendFailure {
    /// The request left and no answer came: it may have landed.
    pub unknown: bool,
    pub error: String,
    /// The platform refused it for its rate (it was not taken), with the
    /// wait it asked for (0: none given): the outbox holds it and sends
    /// it again (`held.rs`).
    pub retry_after_ms: Option<u64>,
}

impl SendFailure {
    /// A platform call's error as the outbox sees it.
    pub fn of<E: CallError + std::fmt::Display>(e: E) -> SendFailure {
        let rate = match e.failure() {
            Failure::RateLimited { retry_after_ms } => Some(retry_after_ms.unwrap_or(0)),
            _ => None,
        };
        SendFailure {
            unknown: e.unknown_outcome(),
            error: e.to_string(),
            retry_after_ms: rate.filter(|_| !e.unknown_outcome()),
        }
    }
}
