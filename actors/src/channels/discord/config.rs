//! `channels.discord` with OpenClaw's keys, per account (`channels::keys`):
//! `token` (`DISCORD_BOT_TOKEN` for the default account), `dmPolicy`,
//! `allowFrom`, `groupPolicy`, `guilds.<id>` (`requireMention`, `users`,
//! `channels.<id>` with `allow` and `requireMention`), `streamMode`,
//! `textChunkLimit` (Discord takes 2,000 characters), `replyToMode`,
//! `intents`; and ferroclaw's `apiBaseUrl` (REST, default
//! `https://discord.com/api/v10`) and `gatewayUrl` (instead of the URL
//! `GET /gateway/bot` names) so tests run against local fakes.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::channels::access::{AccessConfig, DmPolicy, GroupPolicy, GroupRule};
use crate::channels::keys::ReplyToMode;
use crate::channels::keys::StreamMode;
use crate::channels::keys::{self, ChannelRule, LegacyDm};

pub const DEFAULT_API: &str = "https://discord.com/api/v10";
pub const MAX_MESSAGE_CHARS: usize = 2000;
/// GUILDS, GUILD_MESSAGES, DIRECT_MESSAGES, MESSAGE_CONTENT.
pub const DEFAULT_INTENTS: u64 = 1 | (1 << 9) | (1 << 12) | (1 << 15);

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
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Raw {
    token: Option<String>,
    api_base_url: Option<String>,
    gateway_url: Option<String>,
    intents: Option<u64>,
    dm_policy: Option<DmPolicy>,
    allow_from: Option<Vec<Value>>,
    dm: Option<LegacyDm>,
    group_policy: Option<GroupPolicy>,
    guilds: Option<BTreeMap<String, GuildRule>>,
    stream_mode: Option<StreamMode>,
    streaming: Option<StreamMode>,
    reply_to_mode: Option<ReplyToMode>,
    text_chunk_limit: Option<usize>,
    edit_interval_ms: Option<u64>,
    request_timeout_seconds: Option<u64>,
    send_interval_ms: Option<u64>,
    typing_interval_seconds: Option<u64>,
    model_override: Option<String>,
}

/// `guilds.<id>`.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct GuildRule {
    require_mention: Option<bool>,
    users: Option<Vec<Value>>,
    channels: Option<BTreeMap<String, ChannelRule>>,
}

const PREFIXES: &[&str] = &["discord:", "user:", "channel:"];

fn ids(v: Option<Vec<Value>>) -> Vec<String> {
    keys::ids(v, PREFIXES)
}

/// The enabled accounts of `channels.discord`; `env_token`:
/// `DISCORD_BOT_TOKEN`, for the default account.
pub fn accounts(
    section: &Map<String, Value>,
    env_token: Option<String>,
) -> Result<Vec<DiscordAccount>, String> {
    let root: Raw = keys::parse("channels.discord", &Value::Object(section.clone()))?;
    let own = root
        .token
        .clone()
        .filter(|t| !t.trim().is_empty())
        .or(env_token.clone());
    let mut out = Vec::new();
    for a in keys::accounts("discord", section, own.is_some())? {
        let raw: Raw = keys::parse(&a.path, &a.keys)?;
        let mut token = raw.token.clone().filter(|t| !t.trim().is_empty());
        if a.path == "channels.discord" {
            token = token.or(own.clone());
        }
        out.push(resolve(&a.id, raw, token, &a.path)?);
    }
    Ok(out)
}

fn url(path: &str, key: &str, v: String, schemes: &[&str]) -> Result<String, String> {
    if schemes.iter().any(|s| v.starts_with(s)) {
        Ok(v.trim_end_matches('/').to_string())
    } else {
        Err(format!(
            "{path}.{key}: expected a {} URL",
            schemes.join(" or ")
        ))
    }
}

fn resolve(
    id: &str,
    raw: Raw,
    token: Option<String>,
    path: &str,
) -> Result<DiscordAccount, String> {
    let token = token.ok_or_else(|| format!("{path}.token: missing (or set DISCORD_BOT_TOKEN)"))?;
    if token.contains(char::is_whitespace) {
        return Err(format!("{path}.token: not a bot token"));
    }
    let api_base = url(
        path,
        "apiBaseUrl",
        raw.api_base_url.unwrap_or_else(|| DEFAULT_API.to_string()),
        &["https://", "http://"],
    )?;
    let gateway_url = raw
        .gateway_url
        .map(|u| url(path, "gatewayUrl", u, &["wss://", "ws://"]))
        .transpose()?;
    let legacy = raw.dm.unwrap_or_default();
    let mut groups = BTreeMap::new();
    for (guild, g) in raw.guilds.unwrap_or_default() {
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
        for (channel, c) in g.channels.unwrap_or_default() {
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
    let access = AccessConfig {
        dm_policy: raw.dm_policy.or(legacy.policy).unwrap_or(DmPolicy::Pairing),
        allow_from: ids(raw.allow_from.or(legacy.allow_from)),
        group_policy: raw.group_policy.unwrap_or(GroupPolicy::Allowlist),
        group_allow_from: Vec::new(),
        groups,
    };
    access.check().map_err(|e| format!("{path}.{e}"))?;
    Ok(DiscordAccount {
        account_id: id.to_string(),
        token,
        api_base,
        gateway_url,
        intents: raw.intents.unwrap_or(DEFAULT_INTENTS),
        access,
        stream_mode: raw
            .stream_mode
            .or(raw.streaming)
            .unwrap_or(StreamMode::Partial),
        reply_to_mode: raw.reply_to_mode.unwrap_or(ReplyToMode::Off),
        text_chunk_limit: raw
            .text_chunk_limit
            .unwrap_or(MAX_MESSAGE_CHARS)
            .clamp(100, MAX_MESSAGE_CHARS),
        edit_interval_ms: raw.edit_interval_ms.unwrap_or(1000),
        request_timeout_s: raw.request_timeout_seconds.unwrap_or(30).clamp(1, 300),
        send_interval_ms: raw.send_interval_ms.unwrap_or(0).min(10_000),
        typing_interval_s: raw.typing_interval_seconds.unwrap_or(8).max(1),
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
    fn the_section_is_the_default_account_with_discords_limits() {
        let a = accounts(&section(json!({ "token": "t.1" })), None).unwrap();
        assert_eq!(a[0].api_base, DEFAULT_API);
        assert_eq!(a[0].gateway_url, None);
        assert_eq!(a[0].intents, 37377);
        assert_eq!(a[0].text_chunk_limit, 2000);
        assert_eq!(a[0].access.group_policy, GroupPolicy::Allowlist);
        let a = accounts(&section(json!({})), Some("env.t".into())).unwrap();
        assert_eq!(a[0].token, "env.t");
        let e = accounts(&section(json!({})), None).unwrap_err();
        assert!(e.starts_with("channels.discord.token"), "{e}");
        let e = accounts(
            &section(json!({ "token": "t", "gatewayUrl": "http://x" })),
            None,
        )
        .unwrap_err();
        assert!(e.starts_with("channels.discord.gatewayUrl"), "{e}");
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
