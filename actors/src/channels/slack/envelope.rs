//! What Slack sends, read into plain types: Socket Mode envelopes (`hello`,
//! `disconnect`, `events_api` with its `envelope_id` to acknowledge) and
//! Events API bodies (`url_verification`, `event_callback`), and the
//! message events in them. Anything else is `Ignored` with its type, never
//! an error that stops the adapter; unreadable JSON is an error to log.

use serde_json::Value;

/// One Socket Mode frame.
#[derive(Debug, Clone, PartialEq)]
pub enum Envelope {
    /// The connection is ready.
    Hello { num_connections: u64 },
    /// Slack will close this connection: open the next one first.
    Disconnect { reason: String },
    /// An event to acknowledge by `envelope_id` (within 3 s).
    Event {
        envelope_id: String,
        retry_attempt: u64,
        callback: Callback,
    },
    /// Slash commands, interactivity and what else comes: acknowledged
    /// when it carries an id, otherwise ignored.
    Other {
        envelope_id: Option<String>,
        kind: String,
    },
}

/// An Events API body (inside an `events_api` envelope, or POSTed).
#[derive(Debug, Clone, PartialEq)]
pub enum Callback {
    UrlVerification { challenge: String },
    Message(Box<SlackMessage>),
    Ignored { kind: String },
}

/// A message event, as the inbound pipeline needs it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SlackMessage {
    pub team_id: String,
    pub event_id: String,
    pub channel: String,
    /// `im`, `mpim`, `channel` or `group`.
    pub channel_type: String,
    pub user: String,
    pub text: String,
    /// The message's own timestamp (its id in the channel).
    pub ts: String,
    /// The thread it belongs to, when it is in one.
    pub thread_ts: Option<String>,
    /// Sent by a bot (ours included): never answered.
    pub from_bot: bool,
    /// Shared files (`files[]`: id, name, mimetype, size, the download URL).
    pub files: Vec<crate::channels::dispatch::MediaRef>,
}

impl SlackMessage {
    /// The key a retry of this message shares (`channel` + `ts`).
    pub fn dedupe_key(&self) -> String {
        format!("{}/{}", self.channel, self.ts)
    }

    pub fn is_direct(&self) -> bool {
        self.channel_type == "im"
    }
}

fn text(v: &Value, key: &str) -> String {
    v.get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// A Socket Mode frame.
pub fn parse_envelope(frame: &str) -> Result<Envelope, serde_json::Error> {
    let v: Value = serde_json::from_str(frame)?;
    let kind = text(&v, "type");
    let id = v
        .get("envelope_id")
        .and_then(Value::as_str)
        .map(str::to_string);
    Ok(match (kind.as_str(), id) {
        ("hello", _) => Envelope::Hello {
            num_connections: v["num_connections"].as_u64().unwrap_or(1),
        },
        ("disconnect", _) => Envelope::Disconnect {
            reason: text(&v, "reason"),
        },
        ("events_api", Some(envelope_id)) => Envelope::Event {
            envelope_id,
            retry_attempt: v["retry_attempt"].as_u64().unwrap_or(0),
            callback: parse_callback(&v["payload"]),
        },
        (_, envelope_id) => Envelope::Other { envelope_id, kind },
    })
}

/// An Events API body.
pub fn parse_callback(v: &Value) -> Callback {
    match v.get("type").and_then(Value::as_str).unwrap_or_default() {
        "url_verification" => Callback::UrlVerification {
            challenge: text(v, "challenge"),
        },
        "event_callback" => message(v),
        other => Callback::Ignored {
            kind: other.to_string(),
        },
    }
}

fn message(v: &Value) -> Callback {
    let e = &v["event"];
    let kind = text(e, "type");
    let subtype = text(e, "subtype");
    // Edits, deletions, joins and the like are not new messages.
    let plain = matches!(subtype.as_str(), "" | "thread_broadcast" | "file_share");
    if !matches!(kind.as_str(), "message" | "app_mention") || !plain {
        let what = match subtype.is_empty() {
            true => kind,
            false => format!("{kind}/{subtype}"),
        };
        return Callback::Ignored { kind: what };
    }
    let m = SlackMessage {
        team_id: e
            .get("team")
            .and_then(Value::as_str)
            .map_or_else(|| text(v, "team_id"), str::to_string),
        event_id: text(v, "event_id"),
        channel: text(e, "channel"),
        channel_type: text(e, "channel_type"),
        user: text(e, "user"),
        text: text(e, "text"),
        ts: text(e, "ts"),
        thread_ts: e
            .get("thread_ts")
            .and_then(Value::as_str)
            .map(str::to_string),
        from_bot: e.get("bot_id").is_some_and(|b| !b.is_null()) || subtype == "bot_message",
        files: files(e),
    };
    if m.channel.is_empty() || m.ts.is_empty() {
        return Callback::Ignored {
            kind: "message without channel or ts".into(),
        };
    }
    Callback::Message(Box::new(m))
}

/// A message's files that can be downloaded (a file over the workspace's
/// plan limit, or deleted, comes without a URL and is left out).
fn files(e: &Value) -> Vec<crate::channels::dispatch::MediaRef> {
    let Some(list) = e.get("files").and_then(Value::as_array) else {
        return Vec::new();
    };
    list.iter()
        .filter_map(|f| {
            let url = f
                .get("url_private_download")
                .or_else(|| f.get("url_private"))
                .and_then(Value::as_str)?;
            Some(crate::channels::dispatch::MediaRef {
                id: f.get("id").and_then(Value::as_str)?.to_string(),
                mime_type: f
                    .get("mimetype")
                    .and_then(Value::as_str)
                    .map(str::to_string),
                name: f.get("name").and_then(Value::as_str).map(str::to_string),
                size: f.get("size").and_then(Value::as_u64),
                url: Some(url.to_string()),
            })
        })
        .collect()
}

/// Slack's mention markup as plain text: `<@U123>` and `<@U123|ana>` become
/// `@U123` and `@ana`; `<#C1|general>` becomes `#general`; links keep their
/// label or URL. Also says whether `bot_user` was mentioned.
pub fn plain_text(raw: &str, bot_user: Option<&str>) -> (String, bool) {
    let mut out = String::with_capacity(raw.len());
    let mut mentioned = false;
    let mut rest = raw;
    while let Some(start) = rest.find('<') {
        out.push_str(&rest[..start]);
        let Some(len) = rest[start..].find('>') else {
            out.push_str(&rest[start..]);
            rest = "";
            break;
        };
        let inner = &rest[start + 1..start + len];
        let (target, label) = inner.split_once('|').unwrap_or((inner, ""));
        if let Some(user) = target.strip_prefix('@') {
            mentioned |= bot_user == Some(user);
            out.push('@');
            out.push_str(if label.is_empty() { user } else { label });
        } else if let Some(channel) = target.strip_prefix('#') {
            out.push('#');
            out.push_str(if label.is_empty() { channel } else { label });
        } else if let Some(special) = target.strip_prefix('!') {
            out.push('@');
            out.push_str(special.split('^').next().unwrap_or(special));
        } else {
            out.push_str(if label.is_empty() { target } else { label });
        }
        rest = &rest[start + len + 1..];
    }
    out.push_str(rest);
    let unescaped = out
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&");
    (unescaped, mentioned)
}

/// A Socket Mode envelope's acknowledgement.
pub fn ack(envelope_id: &str) -> String {
    #[derive(serde::Serialize)]
    struct Ack<'a> {
        envelope_id: &'a str,
    }
    serde_json::to_string(&Ack { envelope_id }).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn event(e: Value) -> String {
        json!({"envelope_id": "env-1", "type": "events_api", "retry_attempt": 2, "accepts_response_payload": false,
            "payload": {"type": "event_callback", "team_id": "T1", "event_id": "Ev1", "event": e}})
        .to_string()
    }

    #[test]
    fn socket_mode_frames_are_read() {
        assert_eq!(
            parse_envelope(r#"{"type":"hello","num_connections":1,"debug_info":{}}"#).ok(),
            Some(Envelope::Hello { num_connections: 1 })
        );
        assert_eq!(
            parse_envelope(r#"{"type":"disconnect","reason":"refresh_requested"}"#).ok(),
            Some(Envelope::Disconnect {
                reason: "refresh_requested".into()
            })
        );
        let e = parse_envelope(&event(
            json!({"type": "message", "channel": "D1", "channel_type": "im",
            "user": "U9", "text": "hi <@U0BOT>", "ts": "1700000000.000100"}),
        ))
        .unwrap();
        let Envelope::Event {
            envelope_id,
            retry_attempt,
            callback: Callback::Message(m),
        } = e
        else {
            panic!("{e:?}");
        };
        assert_eq!((envelope_id.as_str(), retry_attempt), ("env-1", 2));
        assert_eq!(
            (m.team_id.as_str(), m.channel.as_str(), m.user.as_str()),
            ("T1", "D1", "U9")
        );
        assert!(m.is_direct() && !m.from_bot);
        assert_eq!(m.dedupe_key(), "D1/1700000000.000100");
        let slash =
            parse_envelope(r#"{"type":"slash_commands","envelope_id":"e2","payload":{}}"#).unwrap();
        assert_eq!(
            slash,
            Envelope::Other {
                envelope_id: Some("e2".into()),
                kind: "slash_commands".into()
            }
        );
    }

    #[test]
    fn what_is_not_a_new_message_is_ignored_and_garbage_is_an_error() {
        for e in [
            json!({"type": "message", "subtype": "message_changed", "channel": "C1", "ts": "1.2"}),
            json!({"type": "reaction_added", "channel": "C1", "ts": "1.2"}),
            json!({"type": "message", "channel": "C1"}),
        ] {
            let Envelope::Event { callback, .. } = parse_envelope(&event(e)).unwrap() else {
                panic!()
            };
            assert!(matches!(callback, Callback::Ignored { .. }), "{callback:?}");
        }
        let bot = parse_envelope(&event(
            json!({"type": "message", "channel": "C1", "ts": "1.2", "bot_id": "B1", "text": "x"}),
        ))
        .unwrap();
        let Envelope::Event {
            callback: Callback::Message(m),
            ..
        } = bot
        else {
            panic!()
        };
        assert!(m.from_bot);
        assert!(parse_envelope("{not json").is_err());
        assert!(matches!(
            parse_envelope("[1,2]").unwrap(),
            Envelope::Other {
                envelope_id: None,
                ..
            }
        ));
        assert_eq!(
            parse_callback(&json!({"type": "url_verification", "challenge": "abc"})),
            Callback::UrlVerification {
                challenge: "abc".into()
            }
        );
    }

    #[test]
    fn mention_markup_becomes_plain_text() {
        let (t, me) = plain_text(
            "hey <@U0BOT> and <@U2|ana> in <#C1|general>: <https://x.io|docs> &lt;3 <!here>",
            Some("U0BOT"),
        );
        assert_eq!(t, "hey @U0BOT and @ana in #general: docs <3 @here");
        assert!(me);
        let (t, me) = plain_text("no markup <unclosed", Some("U0BOT"));
        assert_eq!((t.as_str(), me), ("no markup <unclosed", false));
    }

    #[test]
    fn a_file_share_carries_its_downloadable_files() {
        let e = json!({"type": "message", "subtype": "file_share", "channel": "D1", "user": "U2",
        "text": "", "ts": "1.2", "files": [
            {"id": "F1", "name": "memo.m4a", "mimetype": "audio/mp4", "size": 1200,
             "url_private": "https://files.slack.com/files-pri/T1-F1/memo.m4a",
             "url_private_download": "https://files.slack.com/files-pri/T1-F1/download/memo.m4a"},
            {"id": "F2", "mode": "hidden_by_limit"},
        ]});
        let Envelope::Event {
            callback: Callback::Message(m),
            ..
        } = parse_envelope(&event(e)).unwrap()
        else {
            panic!()
        };
        assert_eq!(m.files.len(), 1, "the hidden file has no URL");
        let f = &m.files[0];
        assert_eq!((f.id.as_str(), f.size), ("F1", Some(1200)));
        assert_eq!(f.mime_type.as_deref(), Some("audio/mp4"));
        assert_eq!(
            f.url.as_deref(),
            Some("https://files.slack.com/files-pri/T1-F1/download/memo.m4a")
        );
    }
}
