//! A room's timeline gap read back: when more happened in a room since the
//! last sync than one sync holds (the gateway was down, or a burst), the
//! answer's timeline is `limited` and starts at `prev_batch`. What it
//! skipped is read backwards from there with `/messages`, page by page,
//! until a message the ledger already holds (where the last sync left
//! off), one older than `catchUp.maxAgeMinutes` (kept, so the chat's
//! catch-up note counts it; nothing older is read), or `PAGES` pages. The
//! events come back oldest first, to be recorded before the timeline's.

use serde_json::Value;

use super::api::{MatrixApi, MxError};
use super::sync::{Gap, RoomEvent};
use crate::channels::ledger;
use crate::channels::sender::Limiter;
use crate::store::Store;

/// Messages per `/messages` page.
const PAGE: usize = 100;
/// Pages read back per gap at most.
const PAGES: usize = 5;

/// What reads the gaps.
pub struct Backfill {
    pub api: MatrixApi,
    pub limiter: Limiter,
    pub store: Store,
    pub account: String,
    /// Messages sent before this are the last read (`catchUp.maxAgeMinutes`).
    pub oldest_ms: u64,
}

impl Backfill {
    /// The gaps' events, oldest first per room. A room the homeserver
    /// refuses to read back (4xx) is skipped (logged); any other failure
    /// is the error, and the sync is polled again from its token.
    pub async fn read(&self, gaps: &[Gap]) -> Result<Vec<RoomEvent>, MxError> {
        let mut out = Vec::new();
        for gap in gaps {
            let Some(from) = &gap.from else {
                tracing::warn!(account = %self.account, room = %gap.room, "matrix gap without prev_batch: not read back");
                continue;
            };
            match self.room(&gap.room, from).await {
                Ok(events) => out.extend(events.into_iter().map(|event| RoomEvent {
                    room: gap.room.clone(),
                    event,
                })),
                Err(MxError::Refused(code, msg)) => {
                    tracing::warn!(account = %self.account, room = %gap.room, %code, %msg, "matrix gap not read back: refused");
                }
                Err(e) => return Err(e),
            }
        }
        Ok(out)
    }

    /// One room's gap, oldest first.
    async fn room(&self, room: &str, from: &str) -> Result<Vec<Value>, MxError> {
        let mut got = Vec::new();
        let mut from = from.to_string();
        for _ in 0..PAGES {
            let (api, at) = (&self.api, from.clone());
            let (chunk, end) = self
                .limiter
                .call(true, || api.messages_before(room, &at, PAGE))
                .await?;
            for ev in &chunk {
                if self.reached(room, ev) {
                    got.reverse();
                    return Ok(got);
                }
                got.push(ev.clone());
                if ev["origin_server_ts"].as_u64().unwrap_or(0) < self.oldest_ms {
                    got.reverse();
                    return Ok(got);
                }
            }
            match end {
                Some(e) if !chunk.is_empty() => from = e,
                _ => break,
            }
        }
        got.reverse();
        Ok(got)
    }

    /// Whether the ledger holds the event (an unreadable ledger counts as
    /// holding it: read no further).
    fn reached(&self, room: &str, ev: &Value) -> bool {
        let id = ev["event_id"].as_str().unwrap_or_default();
        ledger::seen(&self.store, &super::inbound::key(&self.account, room, id)).unwrap_or(true)
    }
}
