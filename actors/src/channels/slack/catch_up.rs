//! Slack's catch-up after a stop or a dropped socket: Slack stops retrying
//! an event nobody acknowledged, so what was said while the gateway was
//! down is read back. When a socket says `hello` after a time with none
//! (a start, a drop; not Slack's refresh, whose new socket comes before
//! the old one closes) and when the Events API receiver starts, each conversation the account
//! has taken a message in is read from its mark (the newest `ts` taken:
//! `ledger::conversation_mark`) with `conversations.history`, one page,
//! oldest first; each message is recorded as an event is (the same ledger
//! key: a message an event brings too is answered once), the store is
//! flushed, and the new ones go to the desk as one batch, which
//! `channels.slack.catchUp` bounds (`channels/catch_up.rs`).

use serde_json::{json, Value};

use super::api::{BotIdentity, WebApi};
use super::envelope::{parse_callback, Callback};
use super::inbound::{record, Received};
use crate::channels::dispatch::Incoming;
use crate::channels::ledger;
use crate::store::Store;

/// One page of history per conversation.
const PAGE: usize = 200;

/// A history message as the event Slack would have sent for it.
fn as_event(raw: Value, channel: &str, team: &str) -> Value {
    let mut event = raw;
    event["channel"] = Value::String(channel.to_string());
    if event.get("type").is_none() {
        event["type"] = Value::String("message".into());
    }
    json!({ "type": "event_callback", "team_id": team, "event": event })
}

/// The messages new since the marks, recorded and flushed, oldest first
/// per conversation. A conversation whose history cannot be read is
/// skipped (logged); a store that cannot flush hands nothing over now
/// (the records are handed over at the next start).
pub async fn read(api: WebApi, store: Store, account: String, bot: BotIdentity) -> Vec<Incoming> {
    let marks = match ledger::conversation_marks(&store, "slack", &account) {
        Ok(m) => m,
        Err(e) => {
            tracing::error!(account = %account, error = %e, "slack catch-up: cannot read the marks");
            return Vec::new();
        }
    };
    let mut fresh = Vec::new();
    for (channel, ts) in marks {
        let page = match api.history(&channel, &ts, PAGE).await {
            Ok(p) => p,
            Err(e) => {
                tracing::warn!(account = %account, %channel, error = %e, "slack catch-up: history not read");
                continue;
            }
        };
        for raw in page.into_iter().rev() {
            let Callback::Message(m) = parse_callback(&as_event(raw, &channel, &bot.team_id))
            else {
                continue;
            };
            match record(&store, &account, &bot, &m, crate::now_ms()) {
                Ok(Received::New(inc)) => fresh.push(*inc),
                Ok(_) => {}
                Err(e) => {
                    tracing::error!(account = %account, error = %e, "slack catch-up: cannot record a message");
                    break;
                }
            }
        }
    }
    if fresh.is_empty() {
        return fresh;
    }
    if let Err(e) = store.flush().await {
        tracing::error!(account = %account, error = %e, "slack catch-up: not flushed; handed over at the next start");
        return Vec::new();
    }
    tracing::info!(account = %account, count = fresh.len(), "slack catch-up: messages from while the gateway was away");
    fresh
}
