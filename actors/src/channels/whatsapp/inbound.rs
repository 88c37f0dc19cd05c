//! A WhatsApp message as the pipeline's `Incoming`, recorded in the ledger
//! under `whatsapp/<account>/<sender>/<wamid>`: Meta's retry of a webhook
//! it did not see answered (or a replay of an old body) finds the key and
//! is not run again, across restarts. The chat is the sender's number:
//! Cloud API numbers have no groups.

use super::envelope::WaMessage;
pub use crate::channels::dispatch::Received;
use crate::channels::dispatch::{record_incoming, Incoming};
use crate::channels::ledger::InboundKey;
use crate::store::{Store, StoreError};

pub fn incoming(m: &WaMessage, account: &str) -> Result<Incoming, &'static str> {
    if m.from.is_empty() || !m.from.chars().all(|c| c.is_ascii_digit()) {
        return Err("not a sender's number");
    }
    let dedupe_key = InboundKey {
        channel: "whatsapp",
        account,
        peer: &m.from,
        message_id: &m.id,
    }
    .key();
    Ok(Incoming {
        channel: "whatsapp".into(),
        account: account.into(),
        dedupe_key,
        chat_id: m.from.clone(),
        chat_type: "direct".into(),
        sender: m.from.clone(),
        sender_name: m.name.clone(),
        message_id: m.id.clone(),
        text: m.text.clone(),
        media: m.media.clone(),
        ts_ms: m.timestamp_s.saturating_mul(1000),
        ..Incoming::default()
    })
}

/// Records a message (not flushed: the caller flushes before the 200).
pub fn record(
    store: &Store,
    account: &str,
    m: &WaMessage,
    now_ms: u64,
) -> Result<Received, StoreError> {
    record_incoming(store, incoming(m, account), now_ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_is_a_direct_chat_with_its_sender_keyed_by_wamid() {
        let m = WaMessage {
            from: "15551234567".into(),
            name: Some("Ann".into()),
            id: "wamid.A".into(),
            timestamp_s: 1_700_000_000,
            kind: "text".into(),
            text: "hi".into(),
            ..WaMessage::default()
        };
        let i = incoming(&m, "default").unwrap();
        assert_eq!(i.dedupe_key, "whatsapp/default/15551234567/wamid.A");
        assert_eq!(
            (i.chat_id.as_str(), i.sender.as_str()),
            ("15551234567", "15551234567")
        );
        assert!(!i.is_group());
        assert_eq!(i.ts_ms, 1_700_000_000_000);
        let odd = WaMessage {
            from: "+1 555".into(),
            ..m
        };
        assert!(incoming(&odd, "default").is_err());
    }
}
