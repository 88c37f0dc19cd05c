//! `channels.matrix` per account (`channels::keys`): OpenClaw's
//! `homeserver`, `userId`, `accessToken` or `password` (a login at start,
//! with `deviceId`/`deviceName`), `dm.policy`/`dm.allowFrom` (or the
//! shared `dmPolicy`/`allowFrom`), `groupPolicy`, `groupAllowFrom`,
//! `groups` (legacy `rooms`) by room id with `requireMention`, `users`,
//! `autoReply`, `autoJoin` (`off` | `allowlist` | `always`) with
//! `autoJoinAllowlist`, `threadReplies`, `textChunkLimit`, `mediaMaxMb`.
//! An account with `encryption: true` is not started (a line in the log):
//! end-to-end encrypted rooms are not supported (README).

use crate::channels::error::ConfigError;
use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::channels::access::AccessConfig;
use crate::channels::keys::{self, StreamMode};
use crate::settings::{DmPolicy, GroupRule, MatrixAutoJoin, MatrixKeys, MatrixThreadReplies};

#[derive(Debug, Clone, PartialEq)]
pub struct MatrixAccount {
    pub account_id: String,
    /// The homeserver's base URL (`/_matrix/...` under it).
    pub homeserver: String,
    /// `@bot:server`.
    pub user_id: String,
    pub access_token: Option<String>,
    pub password: Option<String>,
    pub device_id: Option<String>,
    pub device_name: String,
    pub access: AccessConfig,
    pub auto_join: MatrixAutoJoin,
    pub auto_join_allowlist: Vec<String>,
    pub thread_replies: MatrixThreadReplies,
    pub stream_mode: StreamMode,
    pub text_chunk_limit: usize,
    pub request_timeout_s: u64,
    pub poll_timeout_s: u64,
    pub send_interval_ms: u64,
    pub edit_interval_ms: u64,
    pub debounce_ms: u64,
    pub model_override: Option<String>,
    pub catch_up: crate::settings::CatchUp,
    pub media_max_bytes: u64,
    pub read_markers: bool,
}

/// The longest text sent as one event (Matrix events are at most 64 KiB).
pub const MAX_MESSAGE_CHARS: usize = 16_000;
const PREFIXES: &[&str] = &["matrix:"];

fn user_id(v: &str) -> bool {
    v.starts_with('@') && v[1..].contains(':') && !v.contains(char::is_whitespace)
}

fn secret(v: Option<String>) -> Option<String> {
    v.filter(|t| !t.trim().is_empty())
}

/// The accounts of `channels.matrix`.
pub fn accounts(
    section: &Map<String, Value>,
    defaults: &Map<String, Value>,
) -> Result<Vec<MatrixAccount>, ConfigError> {
    let mut out = Vec::new();
    for a in keys::accounts("matrix", section, defaults, true)? {
        let k: MatrixKeys = keys::parse(&a.path, &a.keys)?;
        if k.encryption {
            tracing::warn!(path = %a.path, "end-to-end encrypted Matrix is not supported by ferroclaw: this account is not started (encryption: false runs it in unencrypted rooms)");
            continue;
        }
        out.push(resolve(&a.id, k, &a.path)?);
    }
    let mut users: Vec<&str> = out.iter().map(|a| a.user_id.as_str()).collect();
    users.sort_unstable();
    if users.windows(2).any(|w| w[0] == w[1]) {
        return Err(
            "channels.matrix.accounts: two accounts use one userId (one sync per user)".into(),
        );
    }
    Ok(out)
}

/// Users as the allowlists write them (full ids; other entries are
/// ignored, as OpenClaw does without name matching).
fn users(list: &[crate::settings::IdValue], path: &str, key: &str) -> Vec<String> {
    keys::ids(list, PREFIXES)
        .into_iter()
        .filter(|u| {
            let ok = u == "*" || user_id(u);
            if !ok {
                tracing::warn!(path = %format!("{path}.{key}"), entry = %u, "not a Matrix user id (@user:server): ignored");
            }
            ok
        })
        .collect()
}

fn rooms(k: &MatrixKeys) -> BTreeMap<String, GroupRule> {
    let mut out = k.rooms.clone();
    out.extend(k.groups.clone());
    out.into_iter()
        .map(|(room, r)| {
            let mut rule = r.rule;
            // OpenClaw's autoReply: true answers without a mention.
            if let Some(auto) = r.auto_reply {
                rule.require_mention = Some(!auto);
            }
            if rule.allow_from.is_none() {
                rule.allow_from = r.users;
            }
            (room, rule)
        })
        .collect()
}

/// Who may talk to the account: OpenClaw's `dm` section over the flat
/// keys, then the group keys and rooms.
fn access_of(k: &MatrixKeys, path: &str) -> Result<AccessConfig, ConfigError> {
    let dm = &k.dm;
    let dm_policy = match (dm.enabled, dm.policy) {
        (Some(false), _) => DmPolicy::Disabled,
        (_, Some(p)) => p,
        _ => k.dm_policy,
    };
    let allow_from = match &dm.allow_from {
        Some(l) => users(l, path, "dm.allowFrom"),
        None => users(&k.allow_from, path, "allowFrom"),
    };
    let access = AccessConfig {
        dm_policy,
        allow_from,
        group_policy: k.group_policy,
        group_allow_from: users(&k.group_allow_from, path, "groupAllowFrom"),
        groups: rooms(k),
    };
    access.check(path)?;
    Ok(access)
}

fn resolve(id: &str, k: MatrixKeys, path: &str) -> Result<MatrixAccount, ConfigError> {
    let homeserver = k
        .homeserver
        .clone()
        .map(|h| h.trim().trim_end_matches('/').to_string())
        .filter(|h| !h.is_empty())
        .ok_or_else(|| format!("{path}.homeserver: missing (e.g. https://matrix.example.org)"))?;
    let ok = (homeserver.starts_with("https://") || homeserver.starts_with("http://"))
        && reqwest::Url::parse(&homeserver).is_ok();
    if !ok {
        return Err(ConfigError::from(format!(
            "{path}.homeserver: expected an http(s) URL"
        )));
    }
    let user = k
        .user_id
        .clone()
        .map(|u| u.trim().to_string())
        .ok_or_else(|| format!("{path}.userId: missing (the bot's @user:server)"))?;
    if !user_id(&user) {
        return Err(ConfigError::from(format!(
            "{path}.userId: expected a full user id such as @bot:example.org"
        )));
    }
    let (access_token, password) = (secret(k.access_token.clone()), secret(k.password.clone()));
    if access_token.is_none() && password.is_none() {
        return Err(ConfigError::from(format!(
            "{path}.accessToken: missing (or set password to log in)"
        )));
    }
    let access = access_of(&k, path)?;
    Ok(MatrixAccount {
        account_id: id.to_string(),
        homeserver,
        user_id: user,
        access_token,
        password,
        device_id: secret(k.device_id),
        device_name: k.device_name,
        access,
        auto_join: k.auto_join,
        auto_join_allowlist: k.auto_join_allowlist,
        thread_replies: k.thread_replies,
        stream_mode: k.stream_mode,
        text_chunk_limit: k.text_chunk_limit.clamp(100, MAX_MESSAGE_CHARS),
        request_timeout_s: k.request_timeout_seconds.clamp(1, 300),
        poll_timeout_s: k.poll_timeout_seconds.clamp(1, 120),
        send_interval_ms: k.send_interval_ms.min(10_000),
        edit_interval_ms: k.edit_interval_ms.max(250),
        debounce_ms: 0,
        model_override: k.model_override,
        catch_up: k.catch_up,
        media_max_bytes: keys::media_bytes(path, k.media_max_mb)?,
        read_markers: k.read_markers,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn accounts(v: Value) -> Result<Vec<MatrixAccount>, ConfigError> {
        let d = crate::settings::shipped().channels.defaults.layer("matrix");
        super::accounts(v.as_object().unwrap(), &d)
    }

    fn base() -> Value {
        json!({ "homeserver": "https://matrix.example.org/", "userId": "@bot:example.org",
            "accessToken": "syt_x" })
    }

    #[test]
    fn openclaws_dm_keys_win_and_only_full_user_ids_are_kept() {
        let mut v = base();
        v["dm"] = json!({ "policy": "allowlist", "allowFrom": ["@me:example.org", "Alice"] });
        v["allowFrom"] = json!(["@other:example.org"]);
        let a = &accounts(v).unwrap()[0];
        assert_eq!(a.homeserver, "https://matrix.example.org");
        assert_eq!(a.access.dm_policy, DmPolicy::Allowlist);
        assert_eq!(a.access.allow_from, ["@me:example.org"]);
        assert_eq!(a.auto_join, MatrixAutoJoin::Allowlist);
        let mut v = base();
        v["dm"] = json!({ "enabled": false });
        assert_eq!(accounts(v).unwrap()[0].access.dm_policy, DmPolicy::Disabled);
    }

    #[test]
    fn rooms_and_groups_are_one_map_with_auto_reply_and_users() {
        let mut v = base();
        v["rooms"] = json!({ "!old:example.org": {} });
        v["groups"] =
            json!({ "!a:example.org": { "autoReply": true, "users": ["@me:example.org"] } });
        let a = &accounts(v).unwrap()[0];
        assert_eq!(a.access.groups.len(), 2);
        let r = &a.access.groups["!a:example.org"];
        assert_eq!(r.require_mention, Some(false));
        assert_eq!(r.allow_from, Some(vec![json!("@me:example.org")]));
    }

    #[test]
    fn an_encrypted_account_is_left_alone_and_missing_credentials_or_bad_ids_are_named() {
        let mut v = base();
        v["encryption"] = json!(true);
        assert!(
            accounts(v).unwrap().is_empty(),
            "not started, the rest of the config runs"
        );
        let mut v = base();
        v.as_object_mut().unwrap().remove("accessToken");
        assert!(accounts(v.clone())
            .unwrap_err()
            .to_string()
            .contains("accessToken: missing"));
        v["password"] = json!("pw");
        assert!(accounts(v).is_ok(), "a password logs in");
        let mut v = base();
        v["userId"] = json!("bot");
        assert!(accounts(v).unwrap_err().to_string().contains("userId"));
    }
}
