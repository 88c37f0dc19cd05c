//! A provider's inbox.

use actix::prelude::*;

use super::{CompletionRequest, CompletionStream};

/// Starts a streamed completion. Reply: the event stream (errors that happen
/// before the first event are `ProviderEvent::Error` on it too).
#[derive(Debug, Message)]
#[rtype(result = "CompletionStream")]
pub struct StreamCompletion {
    pub request: CompletionRequest,
}
