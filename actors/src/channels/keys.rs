//! A `channels.<channel>` section as accounts, the way OpenClaw reads it
//! for every channel: the section's own keys are the `default` account;
//! `accounts.<id>` adds accounts that inherit the section's keys and
//! override their own. Each adapter reads its keys from the merged object
//! (`parse`), so a key with the wrong type stops the start with its path
//! named.

use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::{Map, Value};

/// One account's keys, merged.
#[derive(Debug, Clone)]
pub struct AccountKeys {
    pub id: String,
    /// The config path errors name (`channels.slack.accounts.work`).
    pub path: String,
    pub keys: Value,
}

/// Keys of a section that are not an account's settings.
const SECTION_ONLY: &[&str] = &["accounts", "defaultAccount", "skillFilter", "tools"];

/// `v` read as `T`; an error names the key's path.
pub fn parse<T: DeserializeOwned>(path: &str, v: &Value) -> Result<T, String> {
    let mut obj = v
        .as_object()
        .cloned()
        .ok_or_else(|| format!("{path}: expected an object"))?;
    for k in SECTION_ONLY {
        obj.remove(*k);
    }
    serde_path_to_error::deserialize::<_, T>(Value::Object(obj)).map_err(|e| {
        let at = e.path().to_string();
        if at.is_empty() || at == "." {
            format!("{path}: {}", e.inner())
        } else {
            format!("{path}.{at}: {}", e.inner())
        }
    })
}

fn enabled(v: &Value) -> bool {
    v.get("enabled").and_then(Value::as_bool) != Some(false)
}

/// The enabled accounts of `channels.<channel>`. The section itself is the
/// `default` account when it lists no accounts or `own_credentials` says it
/// carries its own (a token, or one from the environment).
pub fn accounts(
    channel: &str,
    section: &Map<String, Value>,
    own_credentials: bool,
) -> Result<Vec<AccountKeys>, String> {
    let root = format!("channels.{channel}");
    if !enabled(&Value::Object(section.clone())) {
        return Ok(Vec::new());
    }
    let listed = match section.get("accounts") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(m)) => m.clone(),
        Some(_) => return Err(format!("{root}.accounts: expected an object")),
    };
    let base: Map<String, Value> = section
        .iter()
        .filter(|(k, _)| !SECTION_ONLY.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let mut out = Vec::new();
    if listed.is_empty() || own_credentials {
        out.push(AccountKeys {
            id: "default".into(),
            path: root.clone(),
            keys: Value::Object(base.clone()),
        });
    }
    for (id, over) in listed {
        let path = format!("{root}.accounts.{id}");
        let Some(o) = over.as_object() else {
            return Err(format!("{path}: expected an object"));
        };
        let mut keys = base.clone();
        for (k, v) in o {
            keys.insert(k.clone(), v.clone());
        }
        let keys = Value::Object(keys);
        if !enabled(&keys) {
            continue;
        }
        if id == "default" {
            out.retain(|a| a.id != "default");
        }
        out.push(AccountKeys { id, path, keys });
    }
    Ok(out)
}

/// An id as the config writes it (a number or a string), without the
/// channel's prefixes (`slack:`, `discord:`, `user:`...).
pub fn id_text(v: &Value, prefixes: &[&str]) -> Option<String> {
    match v {
        Value::Number(n) => Some(n.to_string()),
        Value::String(s) => {
            let mut t = s.trim();
            for p in prefixes {
                t = t.strip_prefix(p).unwrap_or(t);
            }
            Some(t.to_string())
        }
        _ => None,
    }
}

/// The ids of a list as the config writes it, without `prefixes`.
pub fn ids(v: Option<Vec<Value>>, prefixes: &[&str]) -> Vec<String> {
    v.unwrap_or_default()
        .iter()
        .filter_map(|v| id_text(v, prefixes))
        .collect()
}

/// OpenClaw's legacy `dm: {policy, allowFrom}` (Slack, Discord).
#[derive(Debug, Default, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LegacyDm {
    pub policy: Option<crate::channels::access::DmPolicy>,
    pub allow_from: Option<Vec<Value>>,
}

/// A conversation's rule as Slack's `channels.<id>` and Discord's
/// `guilds.<id>.channels.<id>` write it.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChannelRule {
    pub allow: Option<bool>,
    pub enabled: Option<bool>,
    pub require_mention: Option<bool>,
    pub users: Option<Vec<Value>>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn section(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    #[test]
    fn the_section_is_default_and_accounts_inherit_and_override() {
        let s = section(json!({ "mode": "http", "botToken": "a",
            "accounts": { "work": { "botToken": "b" }, "off": { "enabled": false } } }));
        let a = accounts("slack", &s, true).unwrap();
        assert_eq!(a.len(), 2);
        assert_eq!(a[0].id, "default");
        assert_eq!(a[1].id, "work");
        assert_eq!(a[1].path, "channels.slack.accounts.work");
        assert_eq!(a[1].keys["mode"], "http");
        assert_eq!(a[1].keys["botToken"], "b");
        assert!(a[1].keys.get("accounts").is_none());
        let a = accounts("slack", &s, false).unwrap();
        assert_eq!(a.len(), 1, "listed accounts without own credentials");
        assert!(
            accounts("slack", &section(json!({ "enabled": false })), true)
                .unwrap()
                .is_empty()
        );
        let e = accounts("slack", &section(json!({ "accounts": [] })), true).unwrap_err();
        assert_eq!(e, "channels.slack.accounts: expected an object");
    }

    #[test]
    fn parse_names_the_key() {
        #[derive(serde::Deserialize, Debug)]
        #[serde(rename_all = "camelCase")]
        #[allow(dead_code)]
        struct Raw {
            text_chunk_limit: Option<usize>,
        }
        let e = parse::<Raw>("channels.x", &json!({ "textChunkLimit": "many" })).unwrap_err();
        assert!(e.starts_with("channels.x.textChunkLimit"), "{e}");
        assert_eq!(
            id_text(&json!(" slack:U1 "), &["slack:"]).as_deref(),
            Some("U1")
        );
        assert_eq!(id_text(&json!(7), &[]).as_deref(), Some("7"));
    }
}

/// How a reply reaches the chat while it is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StreamMode {
    /// One message, edited as the text grows (rate-limited).
    Partial,
    /// 800-1200 character blocks, each its own message.
    Block,
    /// The whole reply once it is done.
    Off,
}

impl From<StreamMode> for crate::channels::deliver::Stream {
    fn from(m: StreamMode) -> Self {
        match m {
            StreamMode::Partial => Self::Partial,
            StreamMode::Block => Self::Block,
            StreamMode::Off => Self::Off,
        }
    }
}

/// Where replies to a channel message go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReplyToMode {
    /// In the channel (a message in a thread is answered in its thread).
    Off,
    /// In a thread under the message.
    First,
    All,
}
