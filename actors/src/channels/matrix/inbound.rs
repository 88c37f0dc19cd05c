//! A Matrix timeline event as the pipeline's `Incoming`, recorded under
//! `matrix/<account>/<room>/<event id>`: a sync that replays an event
//! (after a restart that had not stored its `since` token) finds the key.
//! Text (`m.text`, `m.emote`) and files (`m.image`, `m.file`, `m.audio`,
//! `m.video`, their `mxc://` URL) are messages; `m.notice` (what bots
//! write), edits (`m.replace`), the bot's own events, unknown msgtypes and
//! bodies over `MAX_BODY` are skipped with their reason. A room is direct
//! or a group as the sync actor classified it; in a group the bot is
//! mentioned by `m.mentions`, or its user id in the text or a link to it.

use serde_json::Value;

use super::config::MatrixAccount;
use crate::channels::dispatch::{record_incoming, Incoming, MediaRef, Received};
use crate::store::{Store, StoreError};

/// The longest body taken (a longer one is skipped).
pub const MAX_BODY: usize = 32_000;

fn text(v: &Value) -> Option<String> {
    v.as_str().map(str::to_string)
}

fn mentioned(cfg: &MatrixAccount, c: &Value) -> bool {
    let me = cfg.user_id.as_str();
    c["m.mentions"]["user_ids"]
        .as_array()
        .is_some_and(|l| l.iter().any(|u| u == me))
        || c["body"].as_str().is_some_and(|b| b.contains(me))
        || c["formatted_body"]
            .as_str()
            .is_some_and(|b| b.contains(&format!("matrix.to/#/{me}")))
}

/// A file message's caption (its body when a `filename` names the file)
/// and the file.
fn file_of(c: &Value, body: &str) -> Result<(String, Vec<MediaRef>), &'static str> {
    let url = c["url"]
        .as_str()
        .ok_or("a file without a url (encrypted?)")?;
    let name = text(&c["filename"]).unwrap_or_else(|| body.to_string());
    let caption = if c["filename"].is_string() && body != name {
        body.to_string()
    } else {
        String::new()
    };
    let file = MediaRef {
        id: url.to_string(),
        mime_type: text(&c["info"]["mimetype"]),
        name: Some(name),
        size: c["info"]["size"].as_u64(),
        url: None,
    };
    Ok((caption, vec![file]))
}

/// An event's ledger key.
pub fn key(account: &str, room: &str, event_id: &str) -> String {
    format!("matrix/{account}/{room}/{event_id}")
}

pub fn incoming(
    cfg: &MatrixAccount,
    room: &str,
    direct: bool,
    e: &Value,
) -> Result<Incoming, &'static str> {
    if e["type"] != "m.room.message" {
        return Err("not a message");
    }
    let sender = e["sender"].as_str().ok_or("no sender")?;
    if sender == cfg.user_id {
        return Err("the bot's own message");
    }
    let id = e["event_id"].as_str().ok_or("no event id")?;
    let c = &e["content"];
    let relates = &c["m.relates_to"];
    if relates["rel_type"] == "m.replace" {
        return Err("edited message");
    }
    let body = c["body"].as_str().ok_or("no body")?;
    if body.len() > MAX_BODY {
        return Err("body over 32000 bytes");
    }
    let (text_in, media) = match c["msgtype"].as_str() {
        Some("m.text" | "m.emote") => (body.to_string(), Vec::new()),
        Some("m.notice") => return Err("a notice (what bots write)"),
        Some("m.image" | "m.file" | "m.audio" | "m.video") => file_of(c, body)?,
        _ => return Err("an unknown msgtype"),
    };
    // threadReplies "off": answered in the room's main timeline.
    let thread = (relates["rel_type"] == "m.thread"
        && cfg.thread_replies != crate::settings::MatrixThreadReplies::Off)
        .then(|| text(&relates["event_id"]))
        .flatten();
    Ok(Incoming {
        channel: "matrix".into(),
        account: cfg.account_id.clone(),
        dedupe_key: key(&cfg.account_id, room, id),
        chat_id: room.to_string(),
        chat_type: if direct { "direct" } else { "group" }.into(),
        thread_id: thread,
        sender: sender.to_string(),
        message_id: id.to_string(),
        text: text_in,
        mentioned: !direct && mentioned(cfg, c),
        media,
        ts_ms: e["origin_server_ts"].as_u64().unwrap_or(0),
        ..Incoming::default()
    })
}

/// Records an event (not flushed: the sync actor flushes the batch with
/// its `since` token before handing anything over).
pub fn record(
    store: &Store,
    cfg: &MatrixAccount,
    room: &str,
    direct: bool,
    e: &Value,
    now_ms: u64,
) -> Result<Received, StoreError> {
    record_incoming(store, incoming(cfg, room, direct, e), now_ms)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cfg() -> MatrixAccount {
        let d = crate::settings::shipped().channels.defaults.layer("matrix");
        let v = json!({ "homeserver": "http://hs", "userId": "@bot:hs", "accessToken": "t" });
        super::super::config::accounts(v.as_object().unwrap(), &d)
            .unwrap()
            .remove(0)
    }

    fn msg(content: Value) -> Value {
        json!({ "type": "m.room.message", "event_id": "$e1", "sender": "@u:hs",
            "origin_server_ts": 1700000000000u64, "content": content })
    }

    #[test]
    fn text_threads_mentions_and_files_read_as_the_pipeline_needs() {
        let c = cfg();
        let i = incoming(
            &c,
            "!r:hs",
            true,
            &msg(json!({ "msgtype": "m.text", "body": "hi" })),
        )
        .unwrap();
        assert_eq!(i.dedupe_key, "matrix/default/!r:hs/$e1");
        assert!(!i.is_group() && !i.mentioned);
        let t = msg(json!({ "msgtype": "m.text", "body": "@bot:hs look",
            "m.relates_to": { "rel_type": "m.thread", "event_id": "$root" } }));
        let i = incoming(&c, "!g:hs", false, &t).unwrap();
        assert!(i.is_group() && i.mentioned);
        assert_eq!(i.thread_id.as_deref(), Some("$root"));
        let m = msg(
            json!({ "msgtype": "m.text", "body": "hey", "m.mentions": { "user_ids": ["@bot:hs"] } }),
        );
        assert!(incoming(&c, "!g:hs", false, &m).unwrap().mentioned);
        let f = msg(
            json!({ "msgtype": "m.file", "body": "report.pdf", "url": "mxc://hs/abc",
            "info": { "mimetype": "application/pdf", "size": 900 } }),
        );
        let i = incoming(&c, "!r:hs", true, &f).unwrap();
        assert_eq!(i.media[0].id, "mxc://hs/abc");
        assert_eq!(i.media[0].name.as_deref(), Some("report.pdf"));
        assert!(i.text.is_empty());
    }

    #[test]
    fn edits_notices_own_unknown_and_huge_events_are_skipped() {
        let c = cfg();
        let skip = |e: Value| incoming(&c, "!r:hs", true, &e).unwrap_err();
        assert_eq!(
            skip(msg(json!({ "msgtype": "m.text", "body": "* fixed",
                "m.relates_to": { "rel_type": "m.replace", "event_id": "$e0" } }))),
            "edited message"
        );
        assert_eq!(
            skip(msg(json!({ "msgtype": "m.notice", "body": "bot" }))),
            "a notice (what bots write)"
        );
        assert_eq!(
            skip(msg(json!({ "msgtype": "org.example.poll", "body": "?" }))),
            "an unknown msgtype"
        );
        let huge = "x".repeat(MAX_BODY + 1);
        assert_eq!(
            skip(msg(json!({ "msgtype": "m.text", "body": huge }))),
            "body over 32000 bytes"
        );
        let mut own = msg(json!({ "msgtype": "m.text", "body": "me" }));
        own["sender"] = json!("@bot:hs");
        assert_eq!(skip(own), "the bot's own message");
        assert_eq!(skip(json!({ "type": "m.room.member" })), "not a message");
    }
}
