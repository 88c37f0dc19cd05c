//! A `MESSAGE_CREATE` as the pipeline's `Incoming`, recorded in the ledger
//! under `discord/<account>/<channel>/<message id>`: an event Discord
//! replays after a resume finds the key and is not run again. Guild,
//! member roles and a thread's parent channel go along for routing
//! (`binding.guild`, `binding.guild+roles`) and access (guild rules).
//! Each channel's newest id is its catch-up mark (`catch_up.rs`).

use std::collections::HashMap;

use serde_json::Value;

pub use crate::channels::dispatch::Received;
use crate::channels::dispatch::{record_incoming, Incoming};
use crate::channels::ledger::{self, InboundKey};
use crate::store::{Store, StoreError};

fn s(v: &Value, k: &str) -> String {
    v.get(k)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// `<@123>` and `<@!123>` as `@name` (the mentioned user's name when the
/// event lists it); whether `bot` was mentioned.
pub fn plain_text(content: &str, mentions: &[Value], bot: &str) -> (String, bool) {
    let mut out = String::with_capacity(content.len());
    let mut mentioned = false;
    let mut rest = content;
    while let Some(start) = rest.find("<@") {
        out.push_str(&rest[..start]);
        let tail = &rest[start + 2..];
        let id_start = usize::from(tail.starts_with('!'));
        let Some(end) = tail.find('>') else {
            out.push_str(&rest[start..]);
            rest = "";
            break;
        };
        let id = &tail[id_start..end];
        if id.is_empty() || !id.bytes().all(|b| b.is_ascii_digit()) {
            out.push_str("<@");
            rest = tail;
            continue;
        }
        mentioned |= id == bot;
        let name = mentions
            .iter()
            .find(|m| m["id"].as_str() == Some(id))
            .and_then(|m| m["username"].as_str())
            .unwrap_or(id);
        out.push('@');
        out.push_str(name);
        rest = &tail[end + 1..];
    }
    out.push_str(rest);
    (out, mentioned)
}

/// A message's `attachments[]` (id, filename, content_type, size, CDN url).
fn attachments(d: &Value) -> Vec<crate::channels::dispatch::MediaRef> {
    let Some(list) = d["attachments"].as_array() else {
        return Vec::new();
    };
    list.iter()
        .filter_map(|a| {
            Some(crate::channels::dispatch::MediaRef {
                id: a["id"].as_str()?.to_string(),
                mime_type: a["content_type"].as_str().map(str::to_string),
                name: a["filename"].as_str().map(str::to_string),
                size: a["size"].as_u64(),
                url: Some(a["url"].as_str()?.to_string()),
            })
        })
        .collect()
}

/// The author's shown name (the guild nick first) and their guild roles.
fn member_of(d: &Value) -> (Option<String>, Vec<String>) {
    let (member, author) = (&d["member"], &d["author"]);
    let roles: Vec<String> = member["roles"]
        .as_array()
        .map(|r| {
            r.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    let name = [&member["nick"], &author["global_name"], &author["username"]]
        .iter()
        .find_map(|v| v.as_str().map(str::to_string));
    (name, roles)
}

/// Discord's RFC 3339 timestamp in milliseconds (0 when there is none).
fn timestamp_ms(v: &Value) -> u64 {
    v.as_str()
        .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
        .map_or(0, |t| t.timestamp_millis().max(0) as u64)
}

/// The message as the pipeline sees it. `threads`: thread id -> parent
/// channel (from `GUILD_CREATE` and `THREAD_CREATE`).
pub fn incoming(
    d: &Value,
    account: &str,
    bot: &str,
    threads: &HashMap<String, String>,
) -> Result<Incoming, &'static str> {
    let author = &d["author"];
    if author["bot"].as_bool() == Some(true) || s(author, "id") == bot {
        return Err("sent by a bot");
    }
    let (id, channel, sender) = (s(d, "id"), s(d, "channel_id"), s(author, "id"));
    if id.is_empty() || channel.is_empty() || sender.is_empty() {
        return Err("no id, channel or author");
    }
    let mentions = d["mentions"].as_array().cloned().unwrap_or_default();
    let (text, by_markup) = plain_text(&s(d, "content"), &mentions, bot);
    let media = attachments(d);
    if text.trim().is_empty() && media.is_empty() {
        return Err("empty (no content: is the message content intent on?)");
    }
    let mentioned = by_markup || mentions.iter().any(|m| m["id"].as_str() == Some(bot));
    let guild = Some(s(d, "guild_id")).filter(|g| !g.is_empty());
    let (name, roles) = member_of(d);
    let ts_ms = timestamp_ms(&d["timestamp"]);
    let dedupe_key = InboundKey {
        channel: "discord",
        account,
        peer: &channel,
        message_id: &id,
    }
    .key();
    Ok(Incoming {
        channel: "discord".into(),
        account: account.into(),
        dedupe_key,
        chat_type: if guild.is_some() { "channel" } else { "dm" }.into(),
        parent_id: threads.get(&channel).cloned(),
        chat_id: channel,
        sender,
        sender_name: name,
        message_id: id,
        text,
        mentioned,
        guild_id: guild,
        member_roles: roles,
        media,
        ts_ms,
        ..Incoming::default()
    })
}

/// Records a message (not flushed: the caller flushes before it hands the
/// message over) and moves its channel's catch-up mark past it.
pub fn record(
    store: &Store,
    account: &str,
    bot: &str,
    threads: &HashMap<String, String>,
    d: &Value,
    now_ms: u64,
) -> Result<Received, StoreError> {
    let received = record_incoming(store, incoming(d, account, bot, threads), now_ms)?;
    let (id, channel) = (s(d, "id"), s(d, "channel_id"));
    // A mark left behind only makes a catch-up read more (the ledger
    // dedupes): it never fails the record.
    if !id.is_empty() && !channel.is_empty() {
        if let Err(e) = advance(store, account, &channel, &id) {
            tracing::warn!(%channel, error = %e, "discord catch-up mark not moved");
        }
    }
    Ok(received)
}

/// A snowflake's order (ids grow with time; a malformed one is 0).
pub fn snowflake(id: &str) -> u64 {
    id.parse().unwrap_or(0)
}

/// The channel's catch-up mark moves to `id` when it is newer (the bot's
/// own messages count: catch-up reads what came after them too).
fn advance(store: &Store, account: &str, channel: &str, id: &str) -> Result<(), StoreError> {
    let mark = ledger::conversation_mark(store, "discord", account, channel)?;
    if mark.is_none_or(|m| snowflake(id) > snowflake(&m)) {
        ledger::put_conversation_mark(store, "discord", account, channel, id)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn mentions_become_names_and_the_bot_mention_is_seen() {
        let m = vec![
            json!({ "id": "9", "username": "ferro" }),
            json!({ "id": "5", "username": "ana" }),
        ];
        assert_eq!(
            plain_text("<@!9> hi <@5>", &m, "9"),
            ("@ferro hi @ana".into(), true)
        );
        assert_eq!(plain_text("<@7> x", &[], "9"), ("@7 x".into(), false));
        assert_eq!(
            plain_text("a <@x> <@", &[], "9"),
            ("a <@x> <@".into(), false)
        );
    }

    #[test]
    fn a_guild_message_carries_guild_roles_and_thread_parent() {
        let d = json!({ "id": "100", "channel_id": "T1", "guild_id": "G1", "content": "<@9> go",
            "author": { "id": "42", "username": "ana" }, "member": { "roles": ["R1"], "nick": "Ana" },
            "mentions": [{ "id": "9", "username": "ferro" }], "timestamp": "2026-11-25T00:00:00+00:00" });
        let threads = HashMap::from([("T1".to_string(), "C1".to_string())]);
        let i = incoming(&d, "default", "9", &threads).unwrap();
        assert!(i.mentioned && i.is_group());
        assert_eq!(i.text, "@ferro go");
        assert_eq!(i.guild_id.as_deref(), Some("G1"));
        assert_eq!(i.member_roles, vec!["R1"]);
        assert_eq!(i.parent_id.as_deref(), Some("C1"));
        assert_eq!(i.sender_name.as_deref(), Some("Ana"));
        assert_eq!(i.dedupe_key, "discord/default/T1/100");
        let dm =
            json!({ "id": "1", "channel_id": "D1", "content": "hi", "author": { "id": "42" } });
        assert!(!incoming(&dm, "a", "9", &HashMap::new()).unwrap().is_group());
        let bot = json!({ "id": "1", "channel_id": "D1", "content": "hi", "author": { "id": "3", "bot": true } });
        assert!(incoming(&bot, "a", "9", &HashMap::new()).is_err());
        assert!(incoming(&json!({}), "a", "9", &HashMap::new()).is_err());
    }

    #[test]
    fn a_message_with_only_an_attachment_is_taken_with_it() {
        let d = json!({ "id": "101", "channel_id": "D1", "content": "",
            "author": { "id": "42", "username": "ana" },
            "attachments": [{ "id": "A1", "filename": "note.ogg", "content_type": "audio/ogg",
                "size": 5000, "url": "https://cdn.discordapp.com/attachments/D1/A1/note.ogg" }] });
        let i = incoming(&d, "default", "9", &HashMap::new()).unwrap();
        assert_eq!(i.media.len(), 1);
        assert_eq!(i.media[0].name.as_deref(), Some("note.ogg"));
        assert_eq!(i.media[0].size, Some(5000));
        let empty = json!({ "id": "102", "channel_id": "D1", "content": "",
            "author": { "id": "42", "username": "ana" } });
        assert!(incoming(&empty, "default", "9", &HashMap::new()).is_err());
    }
}
