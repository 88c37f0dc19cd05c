//! `channels.telegram` with OpenClaw's keys, resolved per account
//! (`channels::keys`: the section is the `default` account, `accounts.<id>`
//! inherit and override). A key with the wrong type stops the start with
//! its path named.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::channels::access::{AccessConfig, DmPolicy, GroupPolicy, GroupRule};
use crate::channels::keys;

/// Where the Bot API lives unless `apiBaseUrl` (or OpenClaw's `apiRoot`)
/// says otherwise.
pub const DEFAULT_API: &str = "https://api.telegram.org";

pub use crate::channels::keys::StreamMode;

/// When the chat shows "typing".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TypingMode {
    Never,
    /// From the first reply text on.
    Message,
    /// From the start of the run (the model thinking) on.
    Thinking,
    /// As soon as the message is accepted.
    Instant,
}

/// One Telegram account as the adapter runs it.
#[derive(Debug, Clone, PartialEq)]
pub struct TelegramAccount {
    pub account_id: String,
    pub bot_token: String,
    pub api_base: String,
    pub access: AccessConfig,
    pub stream_mode: StreamMode,
    pub typing_mode: TypingMode,
    pub typing_interval_s: u64,
    /// The longest message sent; longer replies are split.
    pub text_chunk_limit: usize,
    /// Photos and documents larger than this are not downloaded.
    pub media_max_bytes: u64,
    /// `getUpdates`' long-poll hold.
    pub poll_timeout_s: u64,
    /// The shortest spacing between edits of one preview (ms).
    pub edit_interval_ms: u64,
    /// A call without an answer by then (s) has an unknown outcome.
    pub request_timeout_s: u64,
    /// The shortest spacing of two sends with this token (ms): Telegram
    /// takes about 30 messages a second per bot.
    pub send_interval_ms: u64,
    /// Rapid texts of one conversation within this window become one
    /// message (`messages.inbound.debounceMs`, `byChannel.telegram`; set by
    /// `channels::plan`); 0: off.
    pub debounce_ms: u64,
    /// Agent for this account's messages when no binding says otherwise.
    pub model_override: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Raw {
    #[allow(dead_code)] // read by `keys::accounts`
    enabled: Option<bool>,
    bot_token: Option<String>,
    api_base_url: Option<String>,
    api_root: Option<String>,
    dm_policy: Option<DmPolicy>,
    allow_from: Option<Vec<IdValue>>,
    group_policy: Option<GroupPolicy>,
    group_allow_from: Option<Vec<IdValue>>,
    groups: Option<BTreeMap<String, GroupRule>>,
    stream_mode: Option<StreamMode>,
    typing_mode: Option<TypingMode>,
    typing_interval_seconds: Option<u64>,
    text_chunk_limit: Option<usize>,
    media_max_mb: Option<f64>,
    poll_timeout_seconds: Option<u64>,
    edit_interval_ms: Option<u64>,
    request_timeout_seconds: Option<u64>,
    send_interval_ms: Option<u64>,
    model_override: Option<String>,
}

/// A sender or chat id as the config writes it: a number or a string.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
enum IdValue {
    Num(i64),
    Text(String),
}

impl IdValue {
    fn text(&self) -> String {
        match self {
            IdValue::Num(n) => n.to_string(),
            IdValue::Text(s) => s
                .trim()
                .trim_start_matches("telegram:")
                .trim_start_matches("tg:")
                .to_string(),
        }
    }
}

/// The enabled accounts of a `channels.telegram` section (its keys without
/// `skillFilter` and `tools`, which ferroclaw reads elsewhere).
/// `env_token`: `TELEGRAM_BOT_TOKEN`, used by the default account when
/// its section has no token.
pub fn accounts(
    section: &Map<String, Value>,
    env_token: Option<String>,
) -> Result<Vec<TelegramAccount>, String> {
    let root: Raw = keys::parse("channels.telegram", &Value::Object(section.clone()))?;
    let own_token = root
        .bot_token
        .clone()
        .filter(|t| !t.trim().is_empty())
        .or(env_token);
    let mut out = Vec::new();
    for a in keys::accounts("telegram", section, own_token.is_some())? {
        let raw: Raw = keys::parse(&a.path, &a.keys)?;
        let mut token = raw.bot_token.clone().filter(|t| !t.trim().is_empty());
        if a.path == "channels.telegram" {
            token = token.or(own_token.clone());
        }
        out.push(resolve(&a.id, raw, token, &a.path)?);
    }
    Ok(out)
}

fn resolve(
    id: &str,
    raw: Raw,
    token: Option<String>,
    path: &str,
) -> Result<TelegramAccount, String> {
    let Some(bot_token) = token else {
        return Err(format!(
            "{path}.botToken: missing (or set TELEGRAM_BOT_TOKEN)"
        ));
    };
    if bot_token.contains(char::is_whitespace) || bot_token.contains('/') {
        return Err(format!("{path}.botToken: not a bot token"));
    }
    let api_base = raw
        .api_base_url
        .or(raw.api_root)
        .unwrap_or_else(|| DEFAULT_API.to_string());
    if !(api_base.starts_with("https://") || api_base.starts_with("http://")) {
        return Err(format!("{path}.apiBaseUrl: expected an http(s) URL"));
    }
    let ids = |v: Option<Vec<IdValue>>| {
        v.unwrap_or_default()
            .iter()
            .map(IdValue::text)
            .collect::<Vec<_>>()
    };
    let access = AccessConfig {
        dm_policy: raw.dm_policy.unwrap_or(DmPolicy::Pairing),
        allow_from: ids(raw.allow_from),
        group_policy: raw.group_policy.unwrap_or(GroupPolicy::Allowlist),
        group_allow_from: ids(raw.group_allow_from),
        groups: raw.groups.unwrap_or_default(),
    };
    access.check().map_err(|e| format!("{path}.{e}"))?;
    let media_mb = raw.media_max_mb.unwrap_or(5.0);
    if !(media_mb.is_finite() && media_mb >= 0.0) {
        return Err(format!("{path}.mediaMaxMb: expected a size in MB"));
    }
    Ok(TelegramAccount {
        account_id: id.to_string(),
        bot_token,
        api_base,
        access,
        stream_mode: raw.stream_mode.unwrap_or(StreamMode::Partial),
        typing_mode: raw.typing_mode.unwrap_or(TypingMode::Thinking),
        typing_interval_s: raw.typing_interval_seconds.unwrap_or(6).max(1),
        text_chunk_limit: raw
            .text_chunk_limit
            .unwrap_or(4000)
            .clamp(100, super::format::MAX_MESSAGE_CHARS),
        media_max_bytes: (media_mb * 1024.0 * 1024.0) as u64,
        poll_timeout_s: raw.poll_timeout_seconds.unwrap_or(30).min(50),
        edit_interval_ms: raw.edit_interval_ms.unwrap_or(1000),
        request_timeout_s: raw.request_timeout_seconds.unwrap_or(30).clamp(1, 300),
        send_interval_ms: raw.send_interval_ms.unwrap_or(35).min(10_000),
        debounce_ms: 0,
        model_override: raw.model_override,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn section(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    #[test]
    fn the_section_is_the_default_account_with_openclaw_defaults() {
        let a = accounts(&section(json!({ "botToken": "123:abc" })), None).unwrap();
        assert_eq!(a.len(), 1);
        assert_eq!(a[0].account_id, "default");
        assert_eq!(a[0].api_base, DEFAULT_API);
        assert_eq!(a[0].access.dm_policy, DmPolicy::Pairing);
        assert_eq!(a[0].stream_mode, StreamMode::Partial);
        assert_eq!(a[0].typing_interval_s, 6);
    }

    #[test]
    fn accounts_inherit_and_override() {
        let a = accounts(
            &section(json!({
                "apiBaseUrl": "http://127.0.0.1:9", "dmPolicy": "allowlist", "allowFrom": [42],
                "accounts": { "work": { "botToken": "9:w", "streamMode": "off" } }
            })),
            None,
        )
        .unwrap();
        assert_eq!(a.len(), 1);
        assert_eq!(a[0].account_id, "work");
        assert_eq!(a[0].api_base, "http://127.0.0.1:9");
        assert_eq!(a[0].access.allow_from, vec!["42"]);
        assert_eq!(a[0].stream_mode, StreamMode::Off);
    }

    #[test]
    fn bad_sections_name_the_key() {
        let e = accounts(
            &section(json!({ "botToken": "1:a", "dmPolicy": "sometimes" })),
            None,
        )
        .unwrap_err();
        assert!(e.starts_with("channels.telegram.dmPolicy"), "{e}");
        let e = accounts(&section(json!({})), None).unwrap_err();
        assert!(e.contains("channels.telegram.botToken"), "{e}");
        let e = accounts(
            &section(json!({ "botToken": "1:a", "dmPolicy": "open" })),
            None,
        )
        .unwrap_err();
        assert!(e.contains("allowFrom"), "{e}");
        let e = accounts(
            &section(json!({ "botToken": "1:a", "streamMode": 3 })),
            None,
        )
        .unwrap_err();
        assert!(e.starts_with("channels.telegram.streamMode"), "{e}");
        assert!(accounts(&section(json!({ "enabled": false })), None)
            .unwrap()
            .is_empty());
    }
}
