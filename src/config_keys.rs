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

use std::collections::BTreeMap;

use serde_json::Value;

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
///
/// The schema and the defaults are built for the call and dropped after
/// it: a gateway reads its config once at start and rarely after, and
/// kept they would stay resident at idle.
pub fn unknown_keys(config: &Value) -> Vec<UnknownKey> {
    let defaults = json5::from_str(crate::config::DEFAULT_JSON5).unwrap_or(Value::Null);
    let schema = ferroclaw_actors::settings::built_json_schema();
    let root = &schema;
    let mut out = Vec::new();
    let at = Place {
        root,
        schema: root,
        defaults: Some(&defaults),
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
    named: BTreeMap<&'a str, &'a Value>,
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
            into.named.entry(k.as_str()).or_insert(v);
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
    // What the defaults hold as they are holds no key that is not read.
    if at.defaults == Some(v) {
        return;
    }
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
                let schema = sh.named.get(k.as_str()).copied().or(sh.rest);
                if schema.is_some() || default.is_some() {
                    let next = Place {
                        root: at.root,
                        schema: schema.unwrap_or(&Value::Bool(true)),
                        defaults: default,
                    };
                    walk(&next, child, &here, out);
                } else if sh.listed || defaults.is_some_and(|d| !d.is_empty()) {
                    let known = sh.named.keys().copied().chain(
                        defaults
                            .into_iter()
                            .flat_map(|d| d.keys().map(String::as_str)),
                    );
                    let suggestion = closest(k, known);
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
            "ui": { "prefs": { "thme": "crt" } },
            "update": { "chanel": "beta" },
            "plugins": { "entries": { "brave": { "enabeld": true } } },
        }));
        let found_too =
            paths(json!({ "gateway": { "tls": { "enabeld": true } }, "talk": { "provder": "x" } }));
        for want in [
            "unknown config key modle (ignored)",
            "unknown config key channel (ignored): did you mean channels?",
            "unknown config key gateway.prot (ignored): did you mean port?",
            "unknown config key gateway.auth.mdoe (ignored): did you mean mode?",
            "unknown config key channels.telegram.botTokn (ignored): did you mean botToken?",
            "unknown config key agents.list[0].worksapce (ignored): did you mean workspace?",
            "unknown config key ui.prefs.thme (ignored): did you mean theme?",
            "unknown config key update.chanel (ignored): did you mean channel?",
            "unknown config key plugins.entries.brave.enabeld (ignored): did you mean enabled?",
        ] {
            assert!(found.iter().any(|f| f == want), "{want} not in {found:#?}");
        }
        assert_eq!(
            found_too,
            [
                "unknown config key gateway.tls.enabeld (ignored): did you mean enabled?",
                "unknown config key talk.provder (ignored): did you mean provider?",
            ]
        );
    }

    /// The tool policy's settings are typed: a typo in the stranger's
    /// profile, in a layer's widening of it, or beside `allow` is named.
    #[test]
    fn a_typo_in_the_tool_policy_is_named() {
        let found = paths(json!({
            "tools": { "alow": ["read"], "untrusted": { "alow": ["read"] } },
            "channels": { "telegram": { "tools": { "untrusted": { "dny": ["exec"] } } } },
            "agents": { "list": [{ "id": "main", "tools": { "untrusted": { "alow": [] } } }] },
        }));
        for want in [
            "unknown config key tools.alow (ignored): did you mean allow?",
            "unknown config key tools.untrusted.alow (ignored): did you mean allow?",
            "unknown config key channels.telegram.tools.untrusted.dny (ignored): did you mean deny?",
            "unknown config key agents.list[0].tools.untrusted.alow (ignored): did you mean allow?",
        ] {
            assert!(found.iter().any(|f| f == want), "{want} not in {found:#?}");
        }
    }

    /// Every section (and `gateway`'s) is typed: its keys are named, so a
    /// typo in it is named too; none is kept as bare JSON.
    #[test]
    fn no_section_is_untyped_json() {
        let root = ferroclaw_actors::settings::json_schema();
        fn sections(
            root: &'static Value,
            schema: &'static Value,
        ) -> BTreeMap<&'static str, &'static Value> {
            let mut sh = Shape::default();
            shape(root, schema, &mut sh);
            sh.named
        }
        let top = sections(root, root);
        let gateway = sections(root, top["gateway"]);
        let mut untyped = Vec::new();
        for (prefix, named) in [("", &top), ("gateway.", &gateway)] {
            for (k, schema) in named {
                let mut sh = Shape::default();
                shape(root, schema, &mut sh);
                let s = resolve(root, schema);
                let says_what = ["type", "anyOf", "oneOf", "allOf", "enum", "const"]
                    .iter()
                    .any(|w| s.get(w).is_some());
                let object = s.get("type") == Some(&Value::from("object"));
                if !says_what || (object && !sh.listed && sh.rest.is_none()) {
                    untyped.push(format!("{prefix}{k}"));
                }
            }
        }
        assert!(top.len() > 20 && gateway.len() > 15);
        assert_eq!(untyped, Vec::<String>::new());
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
        // OpenClaw's own keys in the sections ferroclaw keeps for it.
        let openclaw = json!({
            "meta": { "lastTouchedVersion": "2026.11.1", "migrations": { "utilityModelSeparation": true } },
            "env": { "shellEnv": { "enabled": true }, "vars": { "A": "1" }, "B": "2" },
            "wizard": { "lastRunAt": "2026-11-01T00:00:00Z", "lastRunMode": "local" },
            "update": { "channel": "stable", "auto": { "enabled": false } },
            "ui": { "seamColor": "#ff0000", "prefs": { "theme": "crt", "sidebarEntries": ["chat"] } },
            "commands": { "native": "auto", "restart": true, "ownerAllowFrom": ["42", 7] },
            "memory": { "citations": "auto" },
            "talk": { "provider": "eleven", "providers": { "eleven": { "apiKey": "k", "voiceId": "v" } } },
            "browser": { "enabled": true, "headless": true, "profiles": { "work": { "cdpPort": 9222 } } },
            "plugins": { "enabled": true, "entries": { "tavily": { "enabled": true, "config": { "webSearch": { "apiKey": "t" }, "other": 1 } } } },
            "gateway": { "tls": { "enabled": false }, "reload": { "mode": "hybrid" }, "tailscale": { "mode": "off" },
                         "remote": { "url": "wss://gw", "token": "t" },
                         "http": { "endpoints": { "chatCompletions": { "enabled": true }, "responses": { "enabled": false } } } },
            "agents": { "defaults": { "models": { "openai/gpt-5": { "alias": "gpt", "params": { "temperature": 0.2 } } } } },
        });
        assert_eq!(paths(openclaw), Vec::<String>::new());
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
            k.to_string()
        } else {
            format!("{path}.{k}")
        };
        match have.get(*k) {
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
        // OpenClaw's keys in the sections ferroclaw accepts and does not
        // read (`settings/compat.rs`, `settings/gateway.rs`): unset is
        // OpenClaw's "not set". What is read there has its default.
        "browser.allowSystemProfileImport",
        "browser.attachOnly",
        "browser.cdpUrl",
        "browser.executablePath",
        "browser.extensionRelay",
        "browser.headless",
        "browser.snapshotDefaults.mode",
        "browser.ssrfPolicy.allowPrivateNetwork",
        "browser.tabCleanup",
        "commands.*",
        "env.*",
        "gateway.http.endpoints.chatCompletions.images",
        "gateway.http.endpoints.responses",
        "gateway.http.securityHeaders",
        "gateway.reload.*",
        "gateway.remote.*",
        "gateway.tailscale.*",
        "gateway.tls.*",
        "memory.*",
        "meta.*",
        "plugins.*",
        "talk.*",
        // OpenClaw's legacy place for the Brave key (a secret, never shipped).
        "tools.web.search.apiKey",
        "ui.prefs.*",
        "ui.seamColor",
        "update.*",
        "wizard.*",
    ];

    /// Whether `key` is listed above, itself or under a `.*` entry.
    fn unset_when_absent(key: &str) -> bool {
        UNSET_WHEN_ABSENT
            .iter()
            .any(|u| match u.strip_suffix(".*") {
                Some(section) => key
                    .strip_prefix(section)
                    .is_some_and(|r| r.starts_with('.')),
                None => *u == key,
            })
    }

    /// A key the settings read gets its default in `config/default.json5`
    /// (`null` when unset is its default): a new one written only in Rust
    /// fails here until it is added there, or listed above with its reason.
    #[test]
    fn default_json5_carries_every_key_the_settings_type() {
        let missing = super::missing_defaults();
        let new: Vec<&String> = missing.iter().filter(|k| !unset_when_absent(k)).collect();
        assert!(
            new.is_empty(),
            "keys with no default in config/default.json5: {new:?}"
        );
        let stale: Vec<&&str> = UNSET_WHEN_ABSENT
            .iter()
            .filter(|k| {
                let section = k.strip_suffix(".*");
                !missing.iter().any(|m| match section {
                    Some(s) => m.strip_prefix(s).is_some_and(|r| r.starts_with('.')),
                    None => m == *k,
                })
            })
            .collect();
        assert!(
            stale.is_empty(),
            "listed as unset but now in default.json5: {stale:?}"
        );
    }
}

/// Every number or switch the settings type as optional whose shipped
/// value is unset (`null` or absent), at every depth (a map's entries as
/// `*`, a list's as `[]`): each one's "unset" is decided somewhere, and
/// unless it is declared to mean something (`UNSET_MEANS`), that somewhere
/// is a default written in Rust.
pub fn unset_scalars() -> Vec<String> {
    let defaults: Value = json5::from_str(crate::config::DEFAULT_JSON5).unwrap_or(Value::Null);
    let root = ferroclaw_actors::settings::json_schema();
    let mut out = Vec::new();
    unset_in(root, root, Some(&defaults), "", &mut out, 0);
    out.sort();
    out.dedup();
    out
}

fn unset_in(
    root: &Value,
    schema: &Value,
    shipped: Option<&Value>,
    path: &str,
    out: &mut Vec<String>,
    depth: u8,
) {
    if depth > 12 {
        return;
    }
    let mut sh = Shape::default();
    shape(root, schema, &mut sh);
    let at = |k: &str| {
        if path.is_empty() {
            k.to_string()
        } else {
            format!("{path}.{k}")
        }
    };
    for (k, child) in &sh.named {
        let here = at(k);
        let value = shipped.and_then(|d| d.get(k)).filter(|v| !v.is_null());
        if value.is_none() && optional_scalar(resolve(root, child)) {
            out.push(here.clone());
        }
        unset_in(root, child, value, &here, out, depth + 1);
    }
    if let Some(rest) = sh.rest {
        unset_in(root, rest, None, &at("*"), out, depth + 1);
    }
    if let Some(items) = sh.items {
        unset_in(root, items, None, &format!("{path}[]"), out, depth + 1);
    }
}

/// A number or a switch that may be null.
fn optional_scalar(s: &Value) -> bool {
    let types: Vec<&str> = match s.get("type") {
        Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    types.contains(&"null")
        && types
            .iter()
            .any(|t| ["integer", "number", "boolean"].contains(t))
}

#[cfg(test)]
mod unset_tests {
    /// What unset means for each optional number or switch shipped unset
    /// (`channels.<id>` stands for `channels.defaults.<id>` too; `x.*` for
    /// everything under `x`). A new one fails
    /// `an_unset_number_or_switch_says_what_unset_means` until its default
    /// is in `config/default.json5` or its meaning is here.
    const UNSET_MEANS: &[(&str, &str)] = &[
        (
            "agents.defaults.contextTokens",
            "the model's context window",
        ),
        ("agents.defaults.models.*.codeMode", "OpenClaw's, not read"),
        ("agents.defaults.models.*.streaming", "OpenClaw's, not read"),
        (
            "agents.list[].default",
            "not the default agent (the first is)",
        ),
        ("attachments.ttlHours", "no age limit"),
        ("tts.providers.*.timeoutMs", "tts.timeoutMs"),
        (
            "tts.providers.*.enabled",
            "OpenClaw's Microsoft switch, not read",
        ),
        ("tts.providers.*.seed", "the provider picks"),
        ("tts.providers.*.speed", "the provider's normal speed"),
        ("tts.personas.*.providers.*.seed", "the provider's setting"),
        ("tts.personas.*.providers.*.speed", "the provider's setting"),
        ("agents.list[].tts.providers.*.seed", "the tts setting"),
        ("agents.list[].tts.providers.*.speed", "the tts setting"),
        ("browser.allowSystemProfileImport", "OpenClaw's, not read"),
        (
            "browser.attachOnly",
            "OpenClaw's, not read: ferroclaw launches",
        ),
        (
            "browser.headless",
            "headless without DISPLAY/WAYLAND_DISPLAY",
        ),
        ("browser.profiles.*.cdpPort", "a port the browser picks"),
        ("browser.profiles.*.headless", "browser.headless"),
        (
            "browser.ssrfPolicy.allowPrivateNetwork",
            "dangerouslyAllowPrivateNetwork decides",
        ),
        ("browser.tabCleanup.enabled", "OpenClaw's, not read"),
        (
            "channels.discord.guilds.*.channels.*.allow",
            "the guild's rule",
        ),
        ("channels.discord.guilds.*.channels.*.enabled", "enabled"),
        (
            "channels.discord.guilds.*.channels.*.requireMention",
            "the guild's rule",
        ),
        (
            "channels.discord.guilds.*.requireMention",
            "the channel's rule",
        ),
        ("channels.matrix.dm.enabled", "from dm.policy"),
        (
            "channels.matrix.groups.*.autoReply",
            "requireMention decides",
        ),
        ("channels.matrix.groups.*.enabled", "enabled"),
        (
            "channels.matrix.groups.*.requireMention",
            "the channel's rule",
        ),
        (
            "channels.matrix.rooms.*.autoReply",
            "requireMention decides",
        ),
        ("channels.matrix.rooms.*.enabled", "enabled"),
        (
            "channels.matrix.rooms.*.requireMention",
            "the channel's rule",
        ),
        (
            "channels.signal.autoStart",
            "true unless httpUrl is set (OpenClaw's)",
        ),
        ("channels.signal.groups.*.enabled", "enabled"),
        (
            "channels.signal.groups.*.requireMention",
            "the channel's rule",
        ),
        (
            "channels.signal.transport.httpPort",
            "the httpPort beside transport",
        ),
        (
            "channels.signal.transport.ignoreStories",
            "the ignoreStories beside transport",
        ),
        (
            "channels.signal.transport.startupTimeoutMs",
            "the startupTimeoutMs beside it",
        ),
        ("channels.slack.channels.*.allow", "the channel's rule"),
        ("channels.slack.channels.*.enabled", "enabled"),
        (
            "channels.slack.channels.*.requireMention",
            "the channel's rule",
        ),
        ("channels.telegram.groups.*.enabled", "enabled"),
        (
            "channels.telegram.groups.*.requireMention",
            "the channel's rule",
        ),
        ("commands.*", "OpenClaw's, not read"),
        ("env.*", "OpenClaw's, not read"),
        ("gateway.auth.allowTailscale", "OpenClaw's, not read"),
        ("gateway.remote.*", "for clients, not read"),
        ("gateway.tailscale.*", "OpenClaw's, not read"),
        ("gateway.tls.*", "OpenClaw's, not read"),
        ("hooks.mappings[].deliver", "as the request says"),
        ("hooks.mappings[].timeoutSeconds", "as the request says"),
        ("mcp.servers.*.connectionTimeoutMs", "mcp.defaults'"),
        ("mcp.servers.*.enabled", "enabled"),
        ("mcp.servers.*.idleTimeoutMs", "mcp.defaults'"),
        ("mcp.servers.*.lazy", "started at boot"),
        (
            "mcp.servers.*.requestTimeoutMs",
            "timeoutMs, else mcp.defaults'",
        ),
        (
            "mcp.servers.*.supportsParallelToolCalls",
            "OpenClaw's, not read",
        ),
        (
            "mcp.servers.*.timeoutMs",
            "ferroclaw's older requestTimeoutMs",
        ),
        ("meta.*", "OpenClaw's, not read"),
        (
            "models.providers.*.models[].contextWindow",
            "the built-in catalog's",
        ),
        (
            "models.providers.*.models[].maxTokens",
            "the provider's own limit",
        ),
        (
            "models.providers.*.models[].reasoning",
            "not a reasoning model",
        ),
        ("hooks.commands.*[].enabled", "on"),
        ("hooks.commands.*[].priority", "0"),
        (
            "hooks.commands.*[].timeoutMs",
            "the point's default: 15 s (agent_end 30 s, gateway_stop 5 s)",
        ),
        (
            "plugins.*",
            "OpenClaw's; an installed bundle whose entries.<id>.enabled is unset is off",
        ),
        ("session.reset.atHour", "session.resetDefaults.atHour"),
        ("session.reset.idleMinutes", "no idle reset"),
        (
            "session.resetByChannel.*.atHour",
            "session.resetDefaults.atHour",
        ),
        ("session.resetByChannel.*.idleMinutes", "no idle reset"),
        ("session.resetByType.*.atHour", "session.reset's"),
        ("session.resetByType.*.idleMinutes", "session.reset's"),
        ("skills.entries.*.enabled", "enabled"),
        ("talk.*", "OpenClaw's, not read yet"),
        (
            "tools.links.enabled",
            "on when models[] is set (OpenClaw's)",
        ),
        (
            "tools.links.models[].timeoutSeconds",
            "tools.links.timeoutSeconds",
        ),
        ("tools.media.audio.maxChars", "the whole transcript"),
        ("tools.media.*.models[].maxBytes", "the capability's"),
        ("tools.media.*.models[].maxChars", "the capability's"),
        ("tools.media.*.models[].timeoutSeconds", "the capability's"),
        ("tools.media.models[].maxBytes", "the capability's"),
        ("tools.media.models[].maxChars", "the capability's"),
        ("tools.media.models[].timeoutSeconds", "the capability's"),
        ("ui.prefs.*", "the Control UI's own choice"),
        ("update.*", "OpenClaw's, not read"),
        ("wizard.*", "OpenClaw's, not read"),
    ];

    /// Whether `pattern` names `key`: `*` stands for any one key, a
    /// trailing `.*` for everything under the part before it.
    fn covered(key: &str, pattern: &str) -> bool {
        let key = key.replacen("channels.defaults.", "channels.", 1);
        let (pattern, under) = match pattern.strip_suffix(".*") {
            Some(section) => (section, true),
            None => (pattern, false),
        };
        let k: Vec<&str> = key.split('.').collect();
        let p: Vec<&str> = pattern.split('.').collect();
        let fits = k.iter().zip(&p).all(|(k, p)| *p == "*" || k == p);
        fits && if under {
            k.len() > p.len()
        } else {
            k.len() == p.len()
        }
    }

    #[test]
    fn an_unset_number_or_switch_says_what_unset_means() {
        let unset = super::unset_scalars();
        let known = |k: &String| UNSET_MEANS.iter().any(|(p, _)| covered(k, p));
        let new: Vec<&String> = unset.iter().filter(|k| !known(k)).collect();
        assert!(
            new.is_empty(),
            "optional numbers or switches shipped unset: give each its default in \
             config/default.json5, or say in UNSET_MEANS what unset means: {new:#?}"
        );
        let stale: Vec<&&str> = (UNSET_MEANS.iter().map(|(p, _)| p))
            .filter(|p| !unset.iter().any(|k| covered(k, p)))
            .collect();
        assert!(stale.is_empty(), "listed but no longer unset: {stale:?}");
        assert!(covered(
            "channels.defaults.signal.autoStart",
            "channels.signal.autoStart"
        ));
        assert!(covered("commands.x", "commands.*") && !covered("commandsx", "commands.*"));
        assert!(covered(
            "tools.media.audio.models[].maxBytes",
            "tools.media.*.models[].maxBytes"
        ));
        assert!(!covered(
            "tools.media.models[].maxBytes",
            "tools.media.*.models[].maxBytes"
        ));
    }
}
