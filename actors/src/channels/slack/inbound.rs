//! A Slack message event as the pipeline's `Incoming`, recorded in the
//! ledger under `slack/<account>/<channel>/<ts>`: a retried event, or the
//! `app_mention` Slack sends beside the `message` for one message, finds
//! the key and is not run again, across restarts. Shared by Socket Mode
//! and the Events API.

use super::api::BotIdentity;
use super::envelope::{plain_text, SlackMessage};
pub use crate::channels::dispatch::Received;
use crate::channels::dispatch::{record_incoming, Incoming};
use crate::channels::ledger::InboundKey;
use crate::store::{Store, StoreError};

/// The platform's chat type word for a message.
fn chat_type(m: &SlackMessage) -> &'static str {
    match m.channel_type.as_str() {
        "im" => "im",
        "mpim" => "mpim",
        "" if m.channel.starts_with('D') => "im",
        _ => "channel",
    }
}

fn ts_ms(ts: &str) -> u64 {
    ts.parse::<f64>()
        .ok()
        .filter(|t| t.is_finite() && *t > 0.0)
        .map_or(0, |t| (t * 1000.0) as u64)
}

/// The message as the pipeline sees it; None when it is not one to
/// answer.
pub fn incoming(
    m: &SlackMessage,
    account: &str,
    bot: &BotIdentity,
) -> Result<Incoming, &'static str> {
    if m.from_bot || (!bot.user_id.is_empty() && m.user == bot.user_id) {
        return Err("sent by a bot");
    }
    if m.user.is_empty() {
        return Err("no sender");
    }
    let (text, mentioned) = plain_text(
        &m.text,
        Some(bot.user_id.as_str()).filter(|u| !u.is_empty()),
    );
    if text.trim().is_empty() && m.files.is_empty() {
        return Err("empty");
    }
    let dedupe_key = InboundKey {
        channel: "slack",
        account,
        peer: &m.channel,
        message_id: &m.ts,
    }
    .key();
    Ok(Incoming {
        channel: "slack".into(),
        account: account.into(),
        dedupe_key,
        chat_id: m.channel.clone(),
        chat_type: chat_type(m).into(),
        thread_id: m.thread_ts.clone().filter(|t| *t != m.ts),
        sender: m.user.clone(),
        sender_name: None,
        message_id: m.ts.clone(),
        text,
        mentioned,
        team_id: Some(m.team_id.clone()).filter(|t| !t.is_empty()),
        media: m.files.clone(),
        ts_ms: ts_ms(&m.ts),
        ..Incoming::default()
    })
}

/// Records a message event (not flushed: the caller flushes before it
/// acknowledges).
pub fn record(
    store: &Store,
    account: &str,
    bot: &BotIdentity,
    m: &SlackMessage,
    now_ms: u64,
) -> Result<Received, StoreError> {
    let received = record_incoming(store, incoming(m, account, bot), now_ms)?;
    if !matches!(received, Received::Skipped(_)) {
        advance(store, account, &m.channel, &m.ts)?;
    }
    Ok(received)
}

/// A `ts` as (seconds, fraction) for ordering ("1700000000.000100").
fn ts_order(ts: &str) -> (u64, u64) {
    let (s, f) = ts.split_once('.').unwrap_or((ts, "0"));
    (s.parse().unwrap_or(0), f.parse().unwrap_or(0))
}

/// The conversation's catch-up mark moves to `ts` when it is newer.
fn advance(store: &Store, account: &str, channel: &str, ts: &str) -> Result<(), StoreError> {
    let mark = crate::channels::ledger::conversation_mark(store, "slack", account, channel)?;
    if mark.is_none_or(|m| ts_order(ts) > ts_order(&m)) {
        crate::channels::ledger::put_conversation_mark(store, "slack", account, channel, ts)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(text: &str, channel: &str, kind: &str) -> SlackMessage {
        SlackMessage {
            team_id: "T1".into(),
            event_id: "Ev1".into(),
            channel: channel.into(),
            channel_type: kind.into(),
            user: "U9".into(),
            text: text.into(),
            ts: "1700000000.000100".into(),
            thread_ts: None,
            from_bot: false,
            files: Vec::new(),
        }
    }

    fn bot() -> BotIdentity {
        BotIdentity {
            user_id: "UBOT".into(),
            team_id: "T1".into(),
        }
    }

    #[test]
    fn a_channel_mention_becomes_an_incoming_with_team_and_mention() {
        let i = incoming(&msg("<@UBOT> hello", "C1", "channel"), "default", &bot()).unwrap();
        assert_eq!(i.text, "@UBOT hello");
        assert!(i.mentioned);
        assert!(i.is_group());
        assert_eq!(i.team_id.as_deref(), Some("T1"));
        assert_eq!(i.dedupe_key, "slack/default/C1/1700000000.000100");
        assert_eq!(i.ts_ms, 1_700_000_000_000);
        let dm = incoming(&msg("hi", "D1", ""), "default", &bot()).unwrap();
        assert!(!dm.is_group());
        let mut threaded = msg("more", "C1", "channel");
        threaded.thread_ts = Some("1699999999.000001".into());
        let t = incoming(&threaded, "default", &bot()).unwrap();
        assert_eq!(t.thread_id.as_deref(), Some("1699999999.000001"));
    }

    #[test]
    fn the_bots_own_and_empty_messages_are_skipped() {
        let mut own = msg("echo", "C1", "channel");
        own.user = "UBOT".into();
        assert_eq!(incoming(&own, "a", &bot()), Err("sent by a bot"));
        let mut b = msg("x", "C1", "channel");
        b.from_bot = true;
        assert!(incoming(&b, "a", &bot()).is_err());
        assert_eq!(
            incoming(&msg("  ", "C1", "channel"), "a", &bot()),
            Err("empty")
        );
    }
}
