//! `channels.slack` with OpenClaw's keys, per account (`channels::keys`):
//! `mode` (`socket`, the default, or `http`), `botToken`, `appToken`
//! (Socket Mode), `signingSecret` and `webhookPath` (HTTP), `dmPolicy`,
//! `allowFrom`, `groupPolicy`, `channels.<id>` (`allow`, `requireMention`,
//! `users`), `streamMode`, `textChunkLimit`, `replyToMode`; and ferroclaw's
//! `apiBaseUrl` (the Web API, `https://slack.com/api` by default) so tests
//! run against a local fake. `SLACK_BOT_TOKEN` and `SLACK_APP_TOKEN` serve
//! the default account when its section has none.

use crate::channels::error::ConfigError;
use serde_json::{Map, Value};

use crate::channels::access::{AccessConfig, GroupRule};
use crate::channels::keys::{self, StreamMode};
use crate::settings::{ChannelRule, SlackKeys};

/// The longest text a markdown block takes.
pub const MAX_MESSAGE_CHARS: usize = 12_000;

pub use crate::channels::keys::ReplyToMode;
pub use crate::settings::SlackMode as Mode;

#[derive(Debug, Clone, PartialEq)]
pub struct SlackAccount {
    pub account_id: String,
    pub mode: Mode,
    pub bot_token: String,
    pub app_token: Option<String>,
    pub signing_secret: Option<String>,
    pub webhook_path: String,
    pub api_base: String,
    pub access: AccessConfig,
    pub stream_mode: StreamMode,
    pub reply_to_mode: ReplyToMode,
    pub text_chunk_limit: usize,
    pub edit_interval_ms: u64,
    pub request_timeout_s: u64,
    /// Spacing of two calls of one method (ms).
    pub send_interval_ms: u64,
    /// Socket Mode: a ping this often; a connection that shows no frame
    /// for two of these is a zombie and is replaced.
    pub ping_interval_ms: u64,
    pub debounce_ms: u64,
    pub model_override: Option<String>,
    pub catch_up: crate::settings::CatchUp,
    /// `mediaMaxMb` in bytes.
    pub media_max_bytes: u64,
}

const PREFIXES: &[&str] = &["slack:", "user:", "channel:"];

fn ids(v: &[crate::settings::IdValue]) -> Vec<String> {
    keys::ids(v, PREFIXES)
}

fn token(v: Option<String>) -> Option<String> {
    v.filter(|t| !t.trim().is_empty())
}

/// The enabled accounts of `channels.slack`. `env`: `SLACK_BOT_TOKEN` and
/// `SLACK_APP_TOKEN`, for the default account.
pub fn accounts(
    section: &Map<String, Value>,
    defaults: &Map<String, Value>,
    env: (Option<String>, Option<String>),
) -> Result<Vec<SlackAccount>, ConfigError> {
    let own_bot = section
        .get("botToken")
        .and_then(Value::as_str)
        .map(str::to_string);
    let own = token(own_bot).or(env.0.clone()).is_some();
    let mut out = Vec::new();
    for a in keys::accounts("slack", section, defaults, own)? {
        let k: SlackKeys = keys::parse(&a.path, &a.keys)?;
        let env = if a.path == "channels.slack" {
            env.clone()
        } else {
            (None, None)
        };
        out.push(resolve(&a.id, k, env, &a.path)?);
    }
    let mut paths: Vec<&str> = out
        .iter()
        .filter(|a| a.mode == Mode::Http)
        .map(|a| a.webhook_path.as_str())
        .collect();
    paths.sort_unstable();
    if paths.windows(2).any(|w| w[0] == w[1]) {
        return Err("channels.slack.accounts: two HTTP accounts share one webhookPath".into());
    }
    Ok(out)
}

/// The account's tokens (its own, else the environment's for the
/// default account), each there when its mode needs it.
fn credentials(
    k: &SlackKeys,
    env: (Option<String>, Option<String>),
    path: &str,
) -> Result<(String, Option<String>, Option<String>), ConfigError> {
    let bot_token = token(k.bot_token.clone())
        .or(env.0)
        .ok_or_else(|| format!("{path}.botToken: missing (or set SLACK_BOT_TOKEN)"))?;
    let app_token = token(k.app_token.clone()).or(env.1);
    let signing_secret = token(k.signing_secret.clone());
    match k.mode {
        Mode::Socket if app_token.is_none() => {
            return Err(ConfigError::from(format!(
                "{path}.appToken: Socket Mode needs an app token (xapp-...; or set SLACK_APP_TOKEN)"
            )))
        }
        Mode::Http if signing_secret.is_none() => {
            return Err(ConfigError::from(format!(
                "{path}.signingSecret: HTTP mode needs the app's signing secret"
            )))
        }
        _ => {}
    }
    for (key, t) in [
        ("botToken", Some(&bot_token)),
        ("appToken", app_token.as_ref()),
    ] {
        if t.is_some_and(|t| t.contains(char::is_whitespace)) {
            return Err(ConfigError::from(format!("{path}.{key}: not a token")));
        }
    }
    Ok((bot_token, app_token, signing_secret))
}

/// A channel's rule as the access check reads it.
fn rule(r: ChannelRule) -> GroupRule {
    GroupRule {
        enabled: r.enabled.or(r.allow),
        require_mention: r.require_mention,
        allow_from: r.users,
        other: Map::new(),
    }
}

fn resolve(
    id: &str,
    k: SlackKeys,
    env: (Option<String>, Option<String>),
    path: &str,
) -> Result<SlackAccount, ConfigError> {
    let mode = k.mode;
    let (bot_token, app_token, signing_secret) = credentials(&k, env, path)?;
    let webhook_path = k.webhook_path;
    if !webhook_path.starts_with('/') || webhook_path.contains(char::is_whitespace) {
        return Err(ConfigError::from(format!(
            "{path}.webhookPath: expected a path such as /slack/events"
        )));
    }
    let api_base = k.api_base_url.trim_end_matches('/').to_string();
    if !(api_base.starts_with("https://") || api_base.starts_with("http://")) {
        return Err(ConfigError::from(format!(
            "{path}.apiBaseUrl: expected an http(s) URL"
        )));
    }
    let groups = k.channels.into_iter().map(|(c, r)| (c, rule(r))).collect();
    let access = AccessConfig {
        dm_policy: k.dm_policy,
        allow_from: ids(&k.allow_from),
        group_policy: k.group_policy,
        group_allow_from: ids(&k.group_allow_from),
        groups,
    };
    access.check(path)?;
    let media_max_bytes = super::super::keys::media_bytes(path, k.media_max_mb)?;
    let ping = k.ping_interval_seconds;
    if !(ping.is_finite() && ping > 0.0) {
        return Err(ConfigError::from(format!(
            "{path}.pingIntervalSeconds: expected seconds"
        )));
    }
    Ok(SlackAccount {
        account_id: id.to_string(),
        mode,
        bot_token,
        app_token,
        signing_secret,
        webhook_path,
        api_base,
        access,
        stream_mode: k.stream_mode,
        reply_to_mode: k.reply_to_mode,
        text_chunk_limit: k.text_chunk_limit.clamp(100, MAX_MESSAGE_CHARS),
        edit_interval_ms: k.edit_interval_ms,
        request_timeout_s: k.request_timeout_seconds.clamp(1, 300),
        send_interval_ms: k.send_interval_ms.min(10_000),
        ping_interval_ms: ((ping * 1000.0) as u64).clamp(50, 600_000),
        debounce_ms: 0,
        model_override: k.model_override,
        catch_up: k.catch_up,
        media_max_bytes,
    })
}

/// The paths the HTTP-mode accounts of `channels.slack` answer on (a
/// section that does not read is answered nowhere; the start names why).
pub fn http_paths(section: &Map<String, Value>, defaults: &Map<String, Value>) -> Vec<String> {
    keys::accounts("slack", section, defaults, true)
        .unwrap_or_default()
        .iter()
        .filter_map(|a| keys::parse::<SlackKeys>(&a.path, &a.keys).ok())
        .filter(|k| k.mode == Mode::Http)
        .map(|k| k.webhook_path)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::{DmPolicy, GroupPolicy};
    use serde_json::json;

    fn section(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    fn accounts(
        s: &Map<String, Value>,
        env: (Option<String>, Option<String>),
    ) -> Result<Vec<SlackAccount>, ConfigError> {
        let d = crate::settings::shipped().channels.defaults.layer("slack");
        super::accounts(s, &d, env)
    }

    #[test]
    fn socket_mode_is_the_default_and_needs_both_tokens() {
        let a = accounts(
            &section(json!({ "botToken": "xoxb-1", "appToken": "xapp-1" })),
            (None, None),
        )
        .unwrap();
        assert_eq!(a[0].mode, Mode::Socket);
        assert_eq!(a[0].api_base, "https://slack.com/api");
        assert_eq!(a[0].access.dm_policy, DmPolicy::Pairing);
        assert_eq!(a[0].access.group_policy, GroupPolicy::Open);
        let e = accounts(&section(json!({ "botToken": "xoxb-1" })), (None, None)).unwrap_err();
        assert!(e.to_string().starts_with("channels.slack.appToken"), "{e}");
        let a = accounts(
            &section(json!({})),
            (Some("xoxb-e".into()), Some("xapp-e".into())),
        )
        .unwrap();
        assert_eq!(a[0].bot_token, "xoxb-e");
    }

    #[test]
    fn http_mode_needs_a_signing_secret_and_distinct_paths() {
        let e = accounts(
            &section(json!({ "mode": "http", "botToken": "xoxb-1" })),
            (None, None),
        )
        .unwrap_err();
        assert!(
            e.to_string().starts_with("channels.slack.signingSecret"),
            "{e}"
        );
        let e = accounts(
            &section(json!({ "mode": "http", "signingSecret": "s",
                "accounts": { "a": { "botToken": "x1" }, "b": { "botToken": "x2" } } })),
            (None, None),
        )
        .unwrap_err();
        assert!(e.to_string().contains("webhookPath"), "{e}");
    }

    #[test]
    fn channel_rules_and_legacy_dm_keys_become_access_rules() {
        let a = accounts(
            &section(json!({ "botToken": "xoxb-1", "appToken": "xapp-1",
                "dm": { "policy": "allowlist", "allowFrom": ["slack:U1"] },
                "groupPolicy": "allowlist",
                "channels": { "C1": { "allow": true, "requireMention": false, "users": ["U2"] } } })),
            (None, None),
        )
        .unwrap();
        let acc = &a[0].access;
        assert_eq!(acc.dm_policy, DmPolicy::Allowlist);
        assert_eq!(acc.allow_from, vec!["U1"]);
        assert_eq!(acc.groups["C1"].enabled, Some(true));
        assert_eq!(acc.groups["C1"].require_mention, Some(false));
        let e = accounts(
            &section(json!({ "botToken": "xoxb-1", "appToken": "xapp-1", "replyToMode": 3 })),
            (None, None),
        )
        .unwrap_err();
        assert!(
            e.to_string().starts_with("channels.slack.replyToMode"),
            "{e}"
        );
    }
}
