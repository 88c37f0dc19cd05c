//! A `channels.<channel>` section as accounts, the way OpenClaw reads it
//! for every channel: the section's own keys are the `default` account;
//! `accounts.<id>` adds accounts that inherit the section's keys and
//! override their own. Under them lie the channel's defaults
//! (`channels.defaults.<channel>`, `ChannelDefaults::layer`). Each adapter
//! reads its typed keys (`settings::TelegramKeys`...) from the merged
//! object (`parse`), so a key with the wrong type names its path.
//!
//! OpenClaw's older spellings are read as the current key in the layer
//! that wrote them (so a section's `dm.policy` still wins over the
//! channel's default `dmPolicy`): `apiRoot` is `apiBaseUrl`, `streaming`
//! is `streamMode`, `dm.policy` and `dm.allowFrom` are `dmPolicy` and
//! `allowFrom`.

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

pub use crate::settings::{ChannelRule, ReplyToMode, StreamMode};

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

pub use super::error::ConfigError;

/// `v` read as `T`; an error names the key's path.
pub fn parse<T: DeserializeOwned>(path: &str, v: &Value) -> Result<T, ConfigError> {
    let mut obj = v
        .as_object()
        .cloned()
        .ok_or_else(|| format!("{path}: expected an object"))?;
    for k in SECTION_ONLY {
        obj.remove(*k);
    }
    serde_path_to_error::deserialize::<_, T>(Value::Object(obj)).map_err(|e| {
        let at = e.path().to_string();
        ConfigError::from(match at.is_empty() || at == "." {
            true => format!("{path}: {}", e.inner()),
            false => format!("{path}.{at}: {}", e.inner()),
        })
    })
}

fn enabled(v: &Value) -> bool {
    v.get("enabled").and_then(Value::as_bool) != Some(false)
}

/// One layer's older spellings as the current keys (unless the layer
/// writes the current key too).
fn current_spelling(layer: &mut Map<String, Value>) {
    let dm = layer.get("dm").and_then(Value::as_object).cloned();
    let older = [
        ("apiBaseUrl", layer.get("apiRoot").cloned()),
        (
            "streamMode",
            layer.get("streaming").filter(|v| v.is_string()).cloned(),
        ),
        (
            "dmPolicy",
            dm.as_ref().and_then(|d| d.get("policy").cloned()),
        ),
        (
            "allowFrom",
            dm.as_ref().and_then(|d| d.get("allowFrom").cloned()),
        ),
    ];
    for (key, v) in older {
        if let Some(v) = v {
            layer.entry(key.to_string()).or_insert(v);
        }
    }
}

/// ferroclaw's own object keys whose fields a layer sets one by one (a
/// section's `catchUp: { maxMessages: 5 }` keeps the default age); every
/// other key, OpenClaw's, is replaced whole by the layer above, as
/// OpenClaw does.
const FIELD_BY_FIELD: &[&str] = &["catchUp"];

/// `over`'s keys over `base`'s.
fn overlay(base: &mut Map<String, Value>, over: Map<String, Value>) {
    for (k, v) in over {
        match (base.get_mut(&k), v) {
            (Some(Value::Object(b)), Value::Object(o)) if FIELD_BY_FIELD.contains(&k.as_str()) => {
                b.extend(o)
            }
            (_, v) => {
                base.insert(k, v);
            }
        }
    }
}

/// The enabled accounts of `channels.<channel>`, each over `defaults`. The
/// section itself is the `default` account when it lists no accounts or
/// `own_credentials` says it carries its own (a token, or one from the
/// environment).
pub fn accounts(
    channel: &str,
    section: &Map<String, Value>,
    defaults: &Map<String, Value>,
    own_credentials: bool,
) -> Result<Vec<AccountKeys>, ConfigError> {
    let root = format!("channels.{channel}");
    if !enabled(&Value::Object(section.clone())) {
        return Ok(Vec::new());
    }
    let listed = match section.get("accounts") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(m)) => m.clone(),
        Some(_) => {
            return Err(ConfigError::from(format!(
                "{root}.accounts: expected an object"
            )))
        }
    };
    let mut own: Map<String, Value> = section
        .iter()
        .filter(|(k, _)| !SECTION_ONLY.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    current_spelling(&mut own);
    let mut base = defaults.clone();
    overlay(&mut base, own);
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
            return Err(ConfigError::from(format!("{path}: expected an object")));
        };
        let mut o = o.clone();
        current_spelling(&mut o);
        let mut keys = base.clone();
        overlay(&mut keys, o);
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

/// An id as a group rule writes it (a number or a string), without the
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

/// The ids of a list, without `prefixes`.
pub fn ids(v: &[crate::settings::IdValue], prefixes: &[&str]) -> Vec<String> {
    v.iter().map(|i| i.text(prefixes)).collect()
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

/// `mediaMaxMb` in bytes, or why it does not read.
pub fn media_bytes(path: &str, mb: f64) -> Result<u64, ConfigError> {
    if !(mb.is_finite() && mb >= 0.0) {
        return Err(ConfigError::from(format!(
            "{path}.mediaMaxMb: expected a size in MB"
        )));
    }
    Ok((mb * 1024.0 * 1024.0) as u64)
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
        let a = accounts("slack", &s, &Map::new(), true).unwrap();
        assert_eq!(a.len(), 2);
        assert_eq!(a[0].id, "default");
        assert_eq!(a[1].id, "work");
        assert_eq!(a[1].path, "channels.slack.accounts.work");
        assert_eq!(a[1].keys["mode"], "http");
        assert_eq!(a[1].keys["botToken"], "b");
        assert!(a[1].keys.get("accounts").is_none());
        let a = accounts("slack", &s, &Map::new(), false).unwrap();
        assert_eq!(a.len(), 1, "listed accounts without own credentials");
        assert!(accounts(
            "slack",
            &section(json!({ "enabled": false })),
            &Map::new(),
            true
        )
        .unwrap()
        .is_empty());
        let e = accounts(
            "slack",
            &section(json!({ "accounts": [] })),
            &Map::new(),
            true,
        )
        .unwrap_err();
        assert_eq!(e.to_string(), "channels.slack.accounts: expected an object");
    }

    #[test]
    fn older_spellings_win_over_the_defaults_in_the_layer_that_wrote_them() {
        use crate::settings::{DmPolicy, GroupPolicy, SlackKeys, StreamMode, TelegramKeys};
        let shipped = crate::settings::shipped().channels.defaults;
        let s = section(
            json!({ "botToken": "a", "dm": { "policy": "allowlist", "allowFrom": ["slack:U1"] },
            "streaming": "block",
            "accounts": { "work": { "botToken": "b", "dmPolicy": "disabled", "streamMode": "off" } } }),
        );
        let a = accounts("slack", &s, &shipped.layer("slack"), true).unwrap();
        let k: Vec<SlackKeys> = a.iter().map(|a| parse(&a.path, &a.keys).unwrap()).collect();
        assert_eq!(
            k[0].dm_policy,
            DmPolicy::Allowlist,
            "dm.policy over the default"
        );
        assert_eq!(ids(&k[0].allow_from, &["slack:"]), ["U1"]);
        assert_eq!(k[0].stream_mode, StreamMode::Block);
        assert_eq!(k[0].group_policy, GroupPolicy::Open, "Slack's default");
        assert_eq!(k[0].webhook_path, "/slack/events");
        assert_eq!(
            k[1].dm_policy,
            DmPolicy::Disabled,
            "the account over the section"
        );
        assert_eq!(k[1].stream_mode, StreamMode::Off);
        // OpenClaw's channels.defaults.groupPolicy is under every section.
        let mut d = shipped.clone();
        d.group_policy = Some(GroupPolicy::Disabled);
        let a = accounts("slack", &s, &d.layer("slack"), true).unwrap();
        let k: SlackKeys = parse(&a[0].path, &a[0].keys).unwrap();
        assert_eq!(k.group_policy, GroupPolicy::Disabled);
        let s = section(
            json!({ "botToken": "1:a", "apiRoot": "http://127.0.0.1:9", "groupPolicy": "open" }),
        );
        let a = accounts("telegram", &s, &d.layer("telegram"), true).unwrap();
        let k: TelegramKeys = parse(&a[0].path, &a[0].keys).unwrap();
        assert_eq!(k.api_base_url, "http://127.0.0.1:9");
        assert_eq!(
            k.group_policy,
            GroupPolicy::Open,
            "the section over the defaults"
        );
        assert_eq!((k.send_interval_ms, k.typing_interval_seconds), (35, 6));
    }

    #[test]
    fn a_layer_sets_catch_up_field_by_field() {
        use crate::settings::SlackKeys;
        let shipped = crate::settings::shipped().channels.defaults;
        let s = section(json!({ "botToken": "a", "catchUp": { "maxMessages": 5 },
            "accounts": { "work": { "botToken": "b", "catchUp": { "maxAgeMinutes": 60 } } } }));
        let a = accounts("slack", &s, &shipped.layer("slack"), true).unwrap();
        let k: Vec<SlackKeys> = a.iter().map(|a| parse(&a.path, &a.keys).unwrap()).collect();
        let bound = |k: &SlackKeys| (k.catch_up.max_age_minutes, k.catch_up.max_messages);
        assert_eq!(bound(&k[0]), (1440, 5));
        assert_eq!(bound(&k[1]), (60, 5));
    }

    #[test]
    fn strangers_are_let_in_by_open_policies_defaults_included() {
        let shipped = crate::settings::shipped().channels.defaults;
        let open = |channel: &str, v: Value| {
            let a = accounts(channel, &section(v), &shipped.layer(channel), true).unwrap();
            a.iter()
                .any(|a| crate::channels::open_to_strangers(channel, a))
        };
        assert!(
            open("slack", json!({})),
            "Slack's channels are open by default"
        );
        assert!(!open("slack", json!({ "groupPolicy": "allowlist" })));
        assert!(!open("telegram", json!({})));
        assert!(open(
            "telegram",
            json!({ "accounts": { "x": { "allowFrom": ["*"] } } })
        ));
        assert!(open("discord", json!({ "dmPolicy": "open" })));
        assert!(open("whatsapp", json!({ "groupPolicy": "open" })));
        assert!(!open("whatsapp", json!({ "allowFrom": ["+1"] })));
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
        assert!(
            e.to_string().starts_with("channels.x.textChunkLimit"),
            "{e}"
        );
        assert_eq!(
            id_text(&json!(" slack:U1 "), &["slack:"]).as_deref(),
            Some("U1")
        );
        assert_eq!(id_text(&json!(7), &[]).as_deref(), Some("7"));
    }
}
