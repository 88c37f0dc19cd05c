//! A Signal message as the pipeline's `Incoming`, recorded under
//! `signal/<account>/<chat>/<message id>` (the sender's timestamp; in a
//! group `<timestamp>:<sender>`, Signal's own name for it): a daemon's
//! replay of its kept events (after a reconnect, or all of them after its
//! restart) finds the key and is not run again, across restarts. A direct
//! chat is the sender (its number, or `uuid:<ACI>` when it has none or the
//! config names it so); a group is `group:<id>`. The bot is mentioned by a
//! native @mention of its number or ACI, or a quote of its message.

use super::config::SignalAccount;
use super::envelope::SigMessage;
pub use crate::channels::dispatch::Received;
use crate::channels::dispatch::{record_incoming, Incoming};
use crate::store::{Store, StoreError};

/// The sender as the access lists name it.
pub fn sender(m: &SigMessage, cfg: &SignalAccount) -> Option<String> {
    let uuid = m.source_uuid.as_ref().map(|u| format!("uuid:{u}"));
    let named = |id: &str| {
        cfg.access
            .allow_from
            .iter()
            .chain(&cfg.access.group_allow_from)
            .any(|a| a.eq_ignore_ascii_case(id))
    };
    match (&m.source_number, uuid) {
        (Some(n), Some(u)) if !named(n) && named(&u) => Some(u),
        (Some(n), _) => Some(n.clone()),
        (None, u) => u,
    }
}

fn is_me(cfg: &SignalAccount, number: Option<&str>, uuid: Option<&str>) -> bool {
    number == Some(cfg.number.as_str()) || (uuid.is_some() && uuid == cfg.uuid.as_deref())
}

pub fn incoming(m: &SigMessage, cfg: &SignalAccount) -> Result<Incoming, &'static str> {
    let from = sender(m, cfg).ok_or("no sender")?;
    if is_me(cfg, m.source_number.as_deref(), m.source_uuid.as_deref()) {
        return Err("the bot's own message");
    }
    let chat = m.group.clone().unwrap_or_else(|| from.clone());
    // Signal names a message by its author and timestamp: a group's may
    // share a millisecond, and a quote or reaction names the author.
    let message_id = match &m.group {
        Some(_) => format!("{}:{from}", m.timestamp),
        None => m.timestamp.to_string(),
    };
    let dedupe_key = format!("signal/{}/{chat}/{message_id}", cfg.account_id);
    let mentioned = m.group.is_some()
        && (m
            .mentions
            .iter()
            .any(|(n, u)| is_me(cfg, n.as_deref(), u.as_deref()))
            || m.quote_author
                .as_deref()
                .is_some_and(|a| a == cfg.number || Some(a) == cfg.uuid.as_deref()));
    Ok(Incoming {
        channel: "signal".into(),
        account: cfg.account_id.clone(),
        dedupe_key,
        chat_id: chat,
        chat_type: if m.group.is_some() { "group" } else { "direct" }.into(),
        sender: from,
        sender_name: m.source_name.clone(),
        message_id,
        text: m.text.replace('\u{fffc}', "@"),
        mentioned,
        media: if cfg.ignore_attachments {
            Vec::new()
        } else {
            m.attachments.clone()
        },
        ts_ms: m.received_ms,
        ..Incoming::default()
    })
}

/// Records a message (not flushed: the caller flushes before handing it
/// over and before the event stream's cursor is trusted past it).
pub fn record(
    store: &Store,
    cfg: &SignalAccount,
    m: &SigMessage,
    now_ms: u64,
) -> Result<Received, StoreError> {
    record_incoming(store, incoming(m, cfg), now_ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> SignalAccount {
        let d = crate::settings::shipped().channels.defaults.layer("signal");
        let v = serde_json::json!({ "account": "+15550000000", "accountUuid": "bot-u",
            "allowFrom": ["uuid:u-2", "+15551110001"] });
        super::super::config::accounts(v.as_object().unwrap(), &d)
            .unwrap()
            .remove(0)
    }

    fn msg(number: Option<&str>, uuid: Option<&str>) -> SigMessage {
        SigMessage {
            source_number: number.map(str::to_string),
            source_uuid: uuid.map(str::to_string),
            timestamp: 1_700_000_000_005,
            text: "hi \u{fffc}".into(),
            ..SigMessage::default()
        }
    }

    #[test]
    fn a_direct_message_is_the_senders_chat_named_as_the_allowlist_names_it() {
        let c = cfg();
        let i = incoming(&msg(Some("+15551110001"), Some("u-1")), &c).unwrap();
        assert_eq!(
            (i.chat_id.as_str(), i.sender.as_str()),
            ("+15551110001", "+15551110001")
        );
        assert_eq!(i.dedupe_key, "signal/default/+15551110001/1700000000005");
        assert_eq!(i.text, "hi @");
        assert!(!i.is_group() && !i.mentioned);
        let i = incoming(&msg(Some("+15551110002"), Some("u-2")), &c).unwrap();
        assert_eq!(
            i.sender, "uuid:u-2",
            "the allowlist names this sender by ACI"
        );
        let i = incoming(&msg(None, Some("u-3")), &c).unwrap();
        assert_eq!(i.chat_id, "uuid:u-3");
        assert!(
            incoming(&msg(None, Some("bot-u")), &c).is_err(),
            "the bot's own ACI"
        );
    }

    #[test]
    fn a_group_message_mentions_the_bot_by_number_uuid_or_quote() {
        let c = cfg();
        let mut m = msg(Some("+15551110001"), None);
        m.group = Some("group:g==".into());
        assert!(!incoming(&m, &c).unwrap().mentioned);
        m.mentions = vec![(None, Some("bot-u".into()))];
        let i = incoming(&m, &c).unwrap();
        assert!(i.mentioned && i.is_group());
        assert_eq!(i.chat_id, "group:g==");
        assert_eq!(i.message_id, "1700000000005:+15551110001");
        m.mentions.clear();
        m.quote_author = Some("+15550000000".into());
        assert!(incoming(&m, &c).unwrap().mentioned);
    }
}
