//! `channels.telegram` with OpenClaw's keys, resolved per account
//! (`channels::keys`: the section is the `default` account, `accounts.<id>`
//! inherit and override, `channels.defaults.telegram` lies under both). A
//! key with the wrong type stops the start with its path named.

use crate::channels::error::ConfigError;
use serde_json::{Map, Value};

use crate::channels::access::AccessConfig;
use crate::channels::keys;
use crate::settings::TelegramKeys;

pub use crate::channels::keys::StreamMode;
pub use crate::settings::TypingMode;

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
    pub catch_up: crate::settings::CatchUp,
}

const PREFIXES: &[&str] = &["telegram:", "tg:"];

fn token(v: Option<String>) -> Option<String> {
    v.filter(|t| !t.trim().is_empty())
}

/// The enabled accounts of a `channels.telegram` section over `defaults`
/// (`ChannelDefaults::layer`). `env_token`: `TELEGRAM_BOT_TOKEN`, used by
/// the default account when its section has no token.
pub fn accounts(
    section: &Map<String, Value>,
    defaults: &Map<String, Value>,
    env_token: Option<String>,
) -> Result<Vec<TelegramAccount>, ConfigError> {
    let own_token = token(
        section
            .get("botToken")
            .and_then(Value::as_str)
            .map(str::to_string),
    )
    .or(env_token);
    let mut out = Vec::new();
    for a in keys::accounts("telegram", section, defaults, own_token.is_some())? {
        let k: TelegramKeys = keys::parse(&a.path, &a.keys)?;
        let mut token = token(k.bot_token.clone());
        if a.path == "channels.telegram" {
            token = token.or(own_token.clone());
        }
        out.push(resolve(&a.id, k, token, &a.path)?);
    }
    Ok(out)
}

fn resolve(
    id: &str,
    k: TelegramKeys,
    token: Option<String>,
    path: &str,
) -> Result<TelegramAccount, ConfigError> {
    let Some(bot_token) = token else {
        return Err(ConfigError::from(format!(
            "{path}.botToken: missing (or set TELEGRAM_BOT_TOKEN)"
        )));
    };
    if bot_token.contains(char::is_whitespace) || bot_token.contains('/') {
        return Err(ConfigError::from(format!(
            "{path}.botToken: not a bot token"
        )));
    }
    let api_base = k.api_base_url;
    if !(api_base.starts_with("https://") || api_base.starts_with("http://")) {
        return Err(ConfigError::from(format!(
            "{path}.apiBaseUrl: expected an http(s) URL"
        )));
    }
    let access = AccessConfig {
        dm_policy: k.dm_policy,
        allow_from: keys::ids(&k.allow_from, PREFIXES),
        group_policy: k.group_policy,
        group_allow_from: keys::ids(&k.group_allow_from, PREFIXES),
        groups: k.groups,
    };
    access.check(path)?;
    let media_max_bytes = super::super::keys::media_bytes(path, k.media_max_mb)?;
    Ok(TelegramAccount {
        account_id: id.to_string(),
        bot_token,
        api_base,
        access,
        stream_mode: k.stream_mode,
        typing_mode: k.typing_mode,
        typing_interval_s: k.typing_interval_seconds.max(1),
        text_chunk_limit: k
            .text_chunk_limit
            .clamp(100, super::format::MAX_MESSAGE_CHARS),
        media_max_bytes,
        poll_timeout_s: k.poll_timeout_seconds.min(50),
        edit_interval_ms: k.edit_interval_ms,
        request_timeout_s: k.request_timeout_seconds.clamp(1, 300),
        send_interval_ms: k.send_interval_ms.min(10_000),
        debounce_ms: 0,
        model_override: k.model_override,
        catch_up: k.catch_up,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::DmPolicy;
    use serde_json::json;

    fn section(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    fn accounts(
        s: &Map<String, Value>,
        env: Option<String>,
    ) -> Result<Vec<TelegramAccount>, ConfigError> {
        let d = crate::settings::shipped()
            .channels
            .defaults
            .layer("telegram");
        super::accounts(s, &d, env)
    }

    #[test]
    fn the_section_is_the_default_account_with_openclaw_defaults() {
        let a = accounts(&section(json!({ "botToken": "123:abc" })), None).unwrap();
        assert_eq!(a.len(), 1);
        assert_eq!(a[0].account_id, "default");
        assert_eq!(a[0].api_base, "https://api.telegram.org");
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
        assert!(
            e.to_string().starts_with("channels.telegram.dmPolicy"),
            "{e}"
        );
        let e = accounts(&section(json!({})), None).unwrap_err();
        assert!(e.to_string().contains("channels.telegram.botToken"), "{e}");
        let e = accounts(
            &section(json!({ "botToken": "1:a", "dmPolicy": "open" })),
            None,
        )
        .unwrap_err();
        assert!(e.to_string().contains("allowFrom"), "{e}");
        let e = accounts(
            &section(json!({ "botToken": "1:a", "streamMode": 3 })),
            None,
        )
        .unwrap_err();
        assert!(
            e.to_string().starts_with("channels.telegram.streamMode"),
            "{e}"
        );
        assert!(accounts(&section(json!({ "enabled": false })), None)
            .unwrap()
            .is_empty());
    }
}
