//! The keys of a config that ferroclaw does not read, at every depth, each
//! with the closest key it does read in that place ("did you mean"). Read
//! against the settings' JSON Schema (`settings::json_schema`, the one
//! `config.schema` serves) and `config/default.json5`: `modle` at the top,
//! `channel`, `botTokn` inside a channel's section. Maps keyed by ids
//! (`agents.list[]`, `channels`' accounts, `mcp.servers`) are walked into,
//! free-form values are not. A section that still keeps the keys it does
//! not type in a map (`session`, `tools`, `cron`...: read there by the code
//! that needs them) names only a key that is a near miss of a known one:
//! any other key there may be one that code reads.

use serde_json::{Map, Value};

/// A key no setting reads: where it is (`channels.telegram.botTokn`) and
/// the known key it most likely meant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownKey {
    pub path: String,
    pub suggestion: Option<String>,
}

impl std::fmt::Display for UnknownKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "unknown config key {} (ignored)", self.path)?;
        if let Some(s) = &self.suggestion {
            write!(f, ": did you mean {s}?")?;
        }
        Ok(())
    }
}

/// Every key of `config` the settings do not read, in document order.
pub fn unknown_keys(config: &Value) -> Vec<UnknownKey> {
    static DEFAULTS: std::sync::OnceLock<Value> = std::sync::OnceLock::new();
    let defaults = DEFAULTS
        .get_or_init(|| json5::from_str(crate::config::DEFAULT_JSON5).unwrap_or(Value::Null));
    let root = ferroclaw_actors::settings::json_schema();
    let mut out = Vec::new();
    let at = Place {
        root,
        schema: root,
        defaults: Some(defaults),
    };
    walk(&at, config, "", &mut out);
    out
}

/// Where the walk is: the schema there and the defaults there, if any.
struct Place<'a> {
    root: &'a Value,
    schema: &'a Value,
    defaults: Option<&'a Value>,
}

/// What a schema says an object holds: its named keys (with their
/// schemas) and the schema of any other key (a map's values), if any.
#[derive(Default)]
struct Shape<'a> {
    named: Map<String, Value>,
    rest: Option<&'a Value>,
    /// Only named keys are read (some part of the schema lists them).
    listed: bool,
    /// The typed part keeps the other keys in a map some code reads.
    open: bool,
    items: Option<&'a Value>,
}

fn resolve<'a>(root: &'a Value, schema: &'a Value) -> &'a Value {
    let mut s = schema;
    for _ in 0..32 {
        let Some(r) = s.get("$ref").and_then(Value::as_str) else {
            break;
        };
        let Some(name) = r.strip_prefix("#/$defs/") else {
            break;
        };
        match root.get("$defs").and_then(|d| d.get(name)) {
            Some(next) => s = next,
            None => break,
        }
    }
    s
}

/// Gathers the shape of `schema`, through `$ref`, `allOf` and the object
/// branches of `anyOf`/`oneOf`.
fn shape<'a>(root: &'a Value, schema: &'a Value, into: &mut Shape<'a>) {
    let s = resolve(root, schema);
    // An untyped value (`true`, or a schema that names no keys of an
    // object): whatever it holds, some code may read.
    if s.as_bool() == Some(true)
        || (s.get("type") == Some(&Value::from("object"))
            && s.get("properties").is_none()
            && s.get("additionalProperties").is_none())
    {
        into.open = true;
    }
    if let Some(props) = s.get("properties").and_then(Value::as_object) {
        into.listed = true;
        for (k, v) in props {
            into.named.entry(k.clone()).or_insert_with(|| v.clone());
        }
    }
    match s.get("additionalProperties") {
        Some(extra) if extra.is_object() => into.rest = Some(extra),
        Some(Value::Bool(true)) => into.open = true,
        _ => {}
    }
    if let Some(items) = s.get("items") {
        into.items = Some(items);
    }
    for key in ["allOf", "anyOf", "oneOf"] {
        for branch in s.get(key).and_then(Value::as_array).into_iter().flatten() {
            shape(root, branch, into);
        }
    }
}

fn walk(at: &Place<'_>, v: &Value, path: &str, out: &mut Vec<UnknownKey>) {
    let mut sh = Shape::default();
    shape(at.root, at.schema, &mut sh);
    let defaults = at.defaults.and_then(Value::as_object);
    match v {
        Value::Object(map) => {
            for (k, child) in map {
                let here = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                let default = defaults.and_then(|d| d.get(k));
                let schema = sh.named.get(k).or(sh.rest);
                if schema.is_some() || default.is_some() {
                    let next = Place {
                        root: at.root,
                        schema: schema.unwrap_or(&Value::Bool(true)),
                        defaults: default,
                    };
                    walk(&next, child, &here, out);
                } else if sh.listed || defaults.is_some_and(|d| !d.is_empty()) {
                    let known = sh
                        .named
                        .keys()
                        .chain(defaults.into_iter().flat_map(|d| d.keys()));
                    let suggestion = closest(k, known.map(String::as_str));
                    if !sh.open || suggestion.is_some() {
                        out.push(UnknownKey {
                            path: here,
                            suggestion,
                        });
                    }
                }
            }
        }
        Value::Array(items) => {
            if let Some(item) = sh.items {
                for (i, child) in items.iter().enumerate() {
                    let next = Place {
                        root: at.root,
                        schema: item,
                        defaults: None,
                    };
                    walk(&next, child, &format!("{path}[{i}]"), out);
                }
            }
        }
        _ => {}
    }
}

/// The known key `key` most likely meant: the same but for case, or
/// within a few edits (a third of its length, at most 3).
fn closest<'a>(key: &str, known: impl Iterator<Item = &'a str>) -> Option<String> {
    let lower = key.to_lowercase();
    let limit = (key.chars().count() / 3).clamp(1, 3);
    known
        .filter_map(|k| {
            let d = strsim::damerau_levenshtein(&lower, &k.to_lowercase());
            (d <= limit).then_some((d, k))
        })
        .min_by_key(|(d, k)| (*d, k.len()))
        .map(|(_, k)| k.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn paths(v: Value) -> Vec<String> {
        unknown_keys(&v).iter().map(ToString::to_string).collect()
    }

    #[test]
    fn a_typo_is_named_with_the_key_it_meant_at_every_depth() {
        let found = paths(json!({
            "modle": "x",
            "channel": {},
            "gateway": { "prot": 1, "auth": { "mdoe": "token" } },
            "channels": { "telegram": { "botTokn": "1:a", "allowFrom": [42] } },
            "agents": { "list": [{ "id": "main", "worksapce": "/w" }] },
        }));
        for want in [
            "unknown config key modle (ignored)",
            "unknown config key channel (ignored): did you mean channels?",
            "unknown config key gateway.prot (ignored): did you mean port?",
            "unknown config key gateway.auth.mdoe (ignored): did you mean mode?",
            "unknown config key channels.telegram.botTokn (ignored): did you mean botToken?",
            "unknown config key agents.list[0].worksapce (ignored): did you mean workspace?",
        ] {
            assert!(found.iter().any(|f| f == want), "{want} not in {found:#?}");
        }
    }

    #[test]
    fn the_defaults_and_a_correct_config_have_no_unknown_key() {
        let defaults = crate::config::parse_json5(crate::config::DEFAULT_JSON5, "default").unwrap();
        assert_eq!(paths(defaults), Vec::<String>::new());
        let ok = json!({
            "gateway": { "port": 1, "auth": { "mode": "token" } },
            "channels": { "telegram": { "botToken": "1:a", "accounts": { "work": { "botToken": "2:b" } } } },
            "mcp": { "servers": { "docs": { "command": "x", "args": ["a"] } } },
        });
        assert_eq!(paths(ok), Vec::<String>::new());
    }
}

/// Every key the settings type by name that `config/default.json5` does
/// not carry, at every depth it carries the parent (maps keyed by ids and
/// lists are not walked into): a default written in Rust.
pub fn missing_defaults() -> Vec<String> {
    let defaults: Value = json5::from_str(crate::config::DEFAULT_JSON5).unwrap_or(Value::Null);
    let root = ferroclaw_actors::settings::json_schema();
    let mut out = Vec::new();
    missing(root, root, &defaults, "", &mut out);
    out
}

fn missing(root: &Value, schema: &Value, defaults: &Value, path: &str, out: &mut Vec<String>) {
    let Some(have) = defaults.as_object() else {
        return;
    };
    let mut sh = Shape::default();
    shape(root, schema, &mut sh);
    for (k, child) in &sh.named {
        let here = if path.is_empty() {
            k.clone()
        } else {
            format!("{path}.{k}")
        };
        match have.get(k) {
            None => out.push(here),
            Some(d) => missing(root, child, d, &here, out),
        }
    }
}

#[cfg(test)]
mod defaults_tests {
    /// Keys whose absence means "not set", never a default: a channel's
    /// section (present: the channel runs), an account's own credentials and
    /// overrides (never shared by `channels.defaults`), and the secret keys
    /// the schema marks inside sections it does not type.
    const UNSET_WHEN_ABSENT: &[&str] = &[
        "channels.defaults.discord.gatewayUrl",
        "channels.defaults.discord.modelOverride",
        "channels.defaults.discord.token",
        "channels.defaults.matrix.dm.allowFrom",
        "channels.defaults.matrix.dm.enabled",
        "channels.defaults.matrix.dm.policy",
        "channels.defaults.matrix.modelOverride",
        "channels.defaults.signal.modelOverride",
        "channels.defaults.slack.appToken",
        "channels.defaults.slack.botToken",
        "channels.defaults.slack.modelOverride",
        "channels.defaults.slack.signingSecret",
        "channels.defaults.telegram.apiRoot",
        "channels.defaults.telegram.botToken",
        "channels.defaults.telegram.modelOverride",
        "channels.defaults.whatsapp.accessToken",
        "channels.defaults.whatsapp.appSecret",
        "channels.defaults.whatsapp.modelOverride",
        "channels.defaults.whatsapp.phoneNumberId",
        "channels.defaults.whatsapp.verifyToken",
        "channels.discord",
        "channels.matrix",
        "channels.signal",
        "channels.slack",
        "channels.telegram",
        "channels.whatsapp",
        "messages.tts",
        "plugins.entries",
        "talk.apiKey",
    ];

    /// A key the settings read gets its default in `config/default.json5`
    /// (`null` when unset is its default): a new one written only in Rust
    /// fails here until it is added there, or listed above with its reason.
    #[test]
    fn default_json5_carries_every_key_the_settings_type() {
        let missing = super::missing_defaults();
        let new: Vec<&String> = missing
            .iter()
            .filter(|k| !UNSET_WHEN_ABSENT.contains(&k.as_str()))
            .collect();
        assert!(
            new.is_empty(),
            "keys with no default in config/default.json5: {new:?}"
        );
        let stale: Vec<&&str> = UNSET_WHEN_ABSENT
            .iter()
            .filter(|k| !missing.iter().any(|m| m == *k))
            .collect();
        assert!(
            stale.is_empty(),
            "listed as unset but now in default.json5: {stale:?}"
        );
    }
}
