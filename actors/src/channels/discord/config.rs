//! `channels.discord` with OpenClaw's keys, per account (`channels::keys`):
//! `token` (`DISCORD_BOT_TOKEN` for the default account), `dmPolicy`,
//! `allowFrom`, `groupPolicy`, `guilds.<id>` (`requireMention`, `users`,
//! `channels.<id>` with `allow` and `requireMention`), `streamMode`,
//! `textChunkLimit` (Discord takes 2,000 characters), `replyToMode`,
//! `intents`; and ferroclaw's `apiBaseUrl` (REST, default
//! `https://discord.com/api/v10`) and `gatewayUrl` (instead of the URL
//! `GET /gateway/bot` names) so tests run against local fakes.

use crate::channels::error::ConfigError;
use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::channels::access::{AccessConfig, GroupRule};
use crate::channels::keys::{self, ReplyToMode, StreamMode};
use crate::settings::{DiscordKeys, GuildRule};

/// The longest message Discord takes.
pub const MAX_MESSAGE_CHARS: usize = 2000;

#[derive(Debug, Clone, PartialEq)]
pub struct DiscordAccount {
    pub account_id: String,
    pub token: String,
    pub api_base: String,
    pub gateway_url: Option<String>,
    pub intents: u64,
    pub access: AccessConfig,
    pub stream_mode: StreamMode,
    pub reply_to_mode: ReplyToMode,
    pub text_chunk_limit: usize,
    pub edit_interval_ms: u64,
    pub request_timeout_s: u64,
    pub send_interval_ms: u64,
    pub typing_interval_s: u64,
    pub debounce_ms: u64,
    pub model_override: Option<String>,
    pub catch_up: crate::settings::CatchUp,
    /// `mediaMaxMb` in bytes.
    pub media_max_bytes: u64,
}

const PREFIXES: &[&str] = &["discord:", "user:", "channel:"];

fn ids(v: &[crate::settings::IdValue]) -> Vec<String> {
    keys::ids(v, PREFIXES)
}

/// The enabled accounts of `channels.discord`; `env_token`:
/// `DISCORD_BOT_TOKEN`, for the default account.
pub fn accounts(
    section: &Map<String, Value>,
    defaults: &Map<String, Value>,
    env_token: Option<String>,
) -> Result<Vec<DiscordAccount>, ConfigError> {
    let own = section
        .get("token")
        .and_then(Value::as_str)
        .filter(|t| !t.trim().is_empty())
        .map(str::to_string)
        .or(env_token);
    let mut out = Vec::new();
    for a in keys::accounts("discord", section, defaults, own.is_some())? {
        let k: DiscordKeys = keys::parse(&a.path, &a.keys)?;
        let mut token = k.token.clone().filter(|t| !t.trim().is_empty());
        if a.path == "channels.discord" {
            token = token.or(own.clone());
        }
        out.push(resolve(&a.id, k, token, &a.path)?);
    }
    Ok(out)
}

fn url(path: &str, key: &str, v: String, schemes: &[&str]) -> Result<String, ConfigError> {
    if schemes.iter().any(|s| v.starts_with(s)) {
        Ok(v.trim_end_matches('/').to_string())
    } else {
        Err(ConfigError::from(format!(
            "{path}.{key}: expected a {} URL",
            schemes.join(" or ")
        )))
    }
}

/// Guild and channel rules as the access check reads them: a channel
/// inherits its guild's `requireMention` and `users`.
fn guild_rules(guilds: BTreeMap<String, GuildRule>) -> BTreeMap<String, GroupRule> {
    let mut groups = BTreeMap::new();
    for (guild, g) in guilds {
        let users = g.users.clone();
        groups.insert(
            guild.clone(),
            GroupRule {
                enabled: None,
                require_mention: g.require_mention,
                allow_from: users.clone(),
                other: Map::new(),
            },
        );
        for (channel, c) in g.channels {
            groups.insert(
                channel,
                GroupRule {
                    enabled: c.enabled.or(c.allow),
                    require_mention: c.require_mention.or(g.require_mention),
                    allow_from: c.users.or(users.clone()),
                    other: Map::new(),
                },
            );
        }
    }
    groups
}

fn resolve(
    id: &str,
    k: DiscordKeys,
    token: Option<String>,
    path: &str,
) -> Result<DiscordAccount, ConfigError> {
    let token = token.ok_or_else(|| format!("{path}.token: missing (or set DISCORD_BOT_TOKEN)"))?;
    if token.contains(char::is_whitespace) {
        return Err(ConfigError::from(format!("{path}.token: not a bot token")));
    }
    let api_base = url(path, "apiBaseUrl", k.api_base_url, &["https://", "http://"])?;
    let gateway_url = k
        .gateway_url
        .map(|u| url(path, "gatewayUrl", u, &["wss://", "ws://"]))
        .transpose()?;
    let groups = guild_rules(k.guilds);
    let access = AccessConfig {
        dm_policy: k.dm_policy,
        allow_from: ids(&k.allow_from),
        group_policy: k.group_policy,
        group_allow_from: Vec::new(),
        groups,
    };
    access.check(path)?;
    let media_max_bytes = keys::media_bytes(path, k.media_max_mb)?;
    Ok(DiscordAccount {
        account_id: id.to_string(),
        token,
        api_base,
        gateway_url,
        intents: k.intents,
        access,
        stream_mode: k.stream_mode,
        reply_to_mode: k.reply_to_mode,
        text_chunk_limit: k.text_chunk_limit.clamp(100, MAX_MESSAGE_CHARS),
        edit_interval_ms: k.edit_interval_ms,
        request_timeout_s: k.request_timeout_seconds.clamp(1, 300),
        send_interval_ms: k.send_interval_ms.min(10_000),
        typing_interval_s: k.typing_interval_seconds.max(1),
        debounce_ms: 0,
        model_override: k.model_override,
        catch_up: k.catch_up,
        media_max_bytes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::GroupPolicy;
    use serde_json::json;

    fn section(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    fn accounts(
        s: &Map<String, Value>,
        env: Option<String>,
    ) -> Result<Vec<DiscordAccount>, ConfigError> {
        let d = crate::settings::shipped()
            .channels
            .defaults
            .layer("discord");
        super::accounts(s, &d, env)
    }

    #[test]
    fn the_section_is_the_default_account_with_discords_limits() {
        let a = accounts(&section(json!({ "token": "t.1" })), None).unwrap();
        assert_eq!(a[0].api_base, "https://discord.com/api/v10");
        assert_eq!(a[0].gateway_url, None);
        assert_eq!(a[0].intents, 37377);
        assert_eq!(a[0].text_chunk_limit, 2000);
        assert_eq!(a[0].access.group_policy, GroupPolicy::Allowlist);
        let a = accounts(&section(json!({})), Some("env.t".into())).unwrap();
        assert_eq!(a[0].token, "env.t");
        let e = accounts(&section(json!({})), None).unwrap_err();
        assert!(e.to_string().starts_with("channels.discord.token"), "{e}");
        let e = accounts(
            &section(json!({ "token": "t", "gatewayUrl": "http://x" })),
            None,
        )
        .unwrap_err();
        assert!(
            e.to_string().starts_with("channels.discord.gatewayUrl"),
            "{e}"
        );
    }

    #[test]
    fn guild_and_channel_rules_become_access_rules() {
        let a = accounts(
            &section(json!({ "token": "t",
                "guilds": { "G1": { "requireMention": false, "users": ["7"],
                    "channels": { "C1": { "allow": true }, "C2": { "allow": false } } } } })),
            None,
        )
        .unwrap();
        let g = &a[0].access.groups;
        assert_eq!(g["G1"].require_mention, Some(false));
        assert_eq!(g["C1"].enabled, Some(true));
        assert_eq!(g["C1"].require_mention, Some(false), "inherits the guild's");
        assert_eq!(g["C2"].enabled, Some(false));
        assert!(g["C1"].allow_from.is_some());
    }
}
