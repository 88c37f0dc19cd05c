//! The idempotency cache's inbox: look up, record.

use actix::prelude::*;

use super::*;
use crate::store::StoreError;

/// The cached response for `key`, if fresh.
#[derive(Debug, Message)]
#[rtype(result = "Option<CachedResponse>")]
pub struct LookupIdempotent {
    pub key: String,
}

/// Records a response; resolves once it is durable, or at once when
/// `durable` is false: the record then rides the next flush (for a call
/// whose effect is deduplicated durably by itself, as `chat.send` is by the
/// session keeping its message id: a retry after a crash that lost the
/// record is still answered with the same run). A record that is not
/// durable may be sent without waiting for the answer: it is queued before
/// the response goes out, so it is in the cache before any request the
/// client makes after it.
#[derive(Debug, Message)]
#[rtype(result = "Result<(), StoreError>")]
pub struct RecordIdempotent {
    pub key: String,
    pub response: CachedResponse,
    pub durable: bool,
}
