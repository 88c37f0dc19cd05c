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

/// Records a response; resolves once it is durable.
#[derive(Debug, Message)]
#[rtype(result = "Result<(), StoreError>")]
pub struct RecordIdempotent {
    pub key: String,
    pub response: CachedResponse,
}
