//! `IdempotencyActor`: the `<method>:<key>` cache over its store tree.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix::prelude::*;

use super::*;
use crate::metrics::Metrics;
use crate::store::{Store, StoreError, Tree};

pub struct IdempotencyActor {
    /// The actor's span, entered by its handlers.
    span: tracing::Span,
    /// Shared with `IdempotentReader`s (the edge's lookups read it in
    /// place); only this actor writes it.
    pub(super) cache: Arc<Mutex<DedupeCache>>,
    store: Store,
    metrics: Arc<Metrics>,
}

impl IdempotencyActor {
    /// Loads the still-fresh entries from the store.
    pub fn load(store: Store, metrics: Arc<Metrics>) -> Result<IdempotencyActor, StoreError> {
        let now = crate::now_ms();
        let mut entries: Vec<(String, CachedResponse)> = store.scan(Tree::Idempotency, "")?;
        entries.sort_by_key(|(_, e)| e.ts);
        let mut cache = DedupeCache::default();
        for (k, e) in entries {
            if now.saturating_sub(e.ts) < DEDUPE_TTL_MS {
                cache.insert(k, e);
            } else {
                store.remove(Tree::Idempotency, &k)?;
            }
        }
        Ok(IdempotencyActor {
            span: tracing::info_span!("idempotency"),
            cache: Arc::new(Mutex::new(cache)),
            store,
            metrics,
        })
    }

    /// A reader of the cache for another thread: a lookup without a
    /// mailbox round trip.
    pub fn reader(&self) -> IdempotentReader {
        IdempotentReader {
            cache: self.cache.clone(),
        }
    }

    fn locked(&self) -> std::sync::MutexGuard<'_, DedupeCache> {
        // A lookup that panicked holding the lock left the cache whole.
        self.cache.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn received(&self) {
        self.metrics
            .idempotency_mailbox
            .fetch_sub(1, Ordering::Relaxed);
    }

    fn forget(&self, keys: &[String]) {
        for k in keys {
            if let Err(error) = self.store.remove(Tree::Idempotency, k) {
                tracing::warn!(%error, "idempotency entry removal failed");
            }
        }
    }
}

impl Actor for IdempotencyActor {
    type Context = Context<Self>;
    fn started(&mut self, ctx: &mut Context<Self>) {
        ctx.run_interval(Duration::from_secs(60), |this, _| {
            let expired = this.locked().sweep(crate::now_ms());
            this.forget(&expired);
        });
    }
}

/// Reads the idempotency cache in place (`IdempotencyActor::reader`).
#[derive(Clone)]
pub struct IdempotentReader {
    cache: Arc<Mutex<DedupeCache>>,
}

impl IdempotentReader {
    /// What `LookupIdempotent` answers, without a message: the cached
    /// response while it is fresh.
    pub fn get(&self, key: &str) -> Option<CachedResponse> {
        let cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        cache.get(key, crate::now_ms()).cloned()
    }
}

impl Handler<LookupIdempotent> for IdempotencyActor {
    type Result = Option<CachedResponse>;
    fn handle(&mut self, msg: LookupIdempotent, _: &mut Context<Self>) -> Self::Result {
        let _span = self.span.clone().entered();
        self.received();
        self.locked().get(&msg.key, crate::now_ms()).cloned()
    }
}

impl Handler<RecordIdempotent> for IdempotencyActor {
    type Result = ResponseFuture<Result<(), StoreError>>;
    fn handle(&mut self, msg: RecordIdempotent, _: &mut Context<Self>) -> Self::Result {
        let _span = self.span.clone().entered();
        self.received();
        let put = self.store.put(Tree::Idempotency, &msg.key, &msg.response);
        let evicted = self.locked().insert(msg.key, msg.response);
        self.forget(&evicted);
        let store = self.store.clone();
        if !msg.durable {
            // Sent without waiting for the answer: the error is logged here.
            if let Err(e) = &put {
                tracing::error!(error = %e, "idempotency record not stored");
            }
            return Box::pin(async move { put });
        }
        Box::pin(async move {
            put?;
            store.flush().await
        })
    }
}
