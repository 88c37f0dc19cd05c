//! The built-in `offline` provider: no network, no API key, deterministic.
//! It is the default model (`offline/echo`) so a fresh install chats out of
//! the box, and it drives tests of the whole agent loop.
//!
//! Behaviour, from the conversation it is given:
//! - After tool results (the last messages are `tool` messages) it answers
//!   `Tool <name> returned: <text>` per result (its first 4,000 characters,
//!   then how many more there were), then stops.
//! - Otherwise it reads the last user message (the text inside untrusted
//!   content blocks as if it were not wrapped: it obeys a stranger as
//!   readily as the operator, the worst model to defend). Lines of these
//!   forms are script, the rest is the text to answer:
//!   - `@tool <name> <json object>`: call that tool (one call per line, in
//!     order); the turn ends with stop reason `toolUse`. Arguments that are
//!     not a JSON object are passed as `{"input": "<text>"}`.
//!   - `@tokens <n>`: answer with `n` numbered words (`w1 w2 ...`).
//!   - `@delay <ms>`: wait this long before each streamed word (for abort,
//!     steer and timeout tests).
//!   - `@error <rate_limit|auth|billing|overflow|unavailable|bad_request>`:
//!     fail with that error kind.
//!   - `@context`: answer `context: <n> messages` (how much history it was sent).
//!   - `@think <text>`: reason `<text>` first (streamed as thinking, word
//!     by word, before the answer).
//! - A plain message is answered with `You said: <text>`.
//!   Words are streamed one `TextDelta` each (the word plus its following space).
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use actix::prelude::*;
use tokio::sync::mpsc;

use super::*;

mod plan;
pub use plan::{plan, Plan};

/// The offline provider actor.
pub struct OfflineProvider {
    /// Completions being streamed right now.
    active: Arc<AtomicUsize>,
    /// The actor's span, entered by its handler.
    span: tracing::Span,
}

impl Default for OfflineProvider {
    fn default() -> Self {
        OfflineProvider::new()
    }
}

impl OfflineProvider {
    pub fn new() -> OfflineProvider {
        OfflineProvider {
            active: Arc::default(),
            span: tracing::info_span!("provider_actor", provider = "offline"),
        }
    }

    /// Shared count of live completions (metrics, tests).
    pub fn active(&self) -> Arc<AtomicUsize> {
        self.active.clone()
    }
}

impl Actor for OfflineProvider {
    type Context = Context<Self>;
}

impl Supervised for OfflineProvider {}

impl Handler<StreamCompletion> for OfflineProvider {
    type Result = MessageResult<StreamCompletion>;
    fn handle(&mut self, msg: StreamCompletion, _: &mut Context<Self>) -> Self::Result {
        let _span = self.span.clone().entered();
        let (tx, rx) = mpsc::channel(STREAM_BUFFER);
        let plan = plan(&msg.request);
        let active = self.active.clone();
        active.fetch_add(1, Ordering::Relaxed);
        actix::spawn(async move {
            for event in plan.events {
                if !plan.delay.is_zero() {
                    tokio::select! {
                        _ = actix::clock::sleep(plan.delay) => {}
                        _ = tx.closed() => break,
                    }
                } else {
                    // A token at a time, as a model's stream arrives: the
                    // run reads each before the next is made (it forwards
                    // whatever it finds waiting as one delta).
                    tokio::task::yield_now().await;
                }
                if tx.send(event).await.is_err() {
                    break; // the reader went away: cancelled
                }
            }
            active.fetch_sub(1, Ordering::Relaxed);
        });
        MessageResult(rx)
    }
}
