//! Secrets in the config. Which settings are secret is declared on the
//! settings types (`settings.rs`): a secret field carries `writeOnly: true`
//! in the config's JSON Schema (a field attribute, or a type's schema
//! transform for the keys of sections kept as JSON); a secret map
//! (`headers`, `env`) makes every value in it secret, whatever its key.
//! Credentials in a URL (`https://user:pass@host`) are secret wherever the
//! URL is. Nothing here matches key names.
//!
//! [`redact`] puts OpenClaw's sentinel in their place (`config.get`, the
//! Control UI); [`restore`] puts the stored secret back where a client sent
//! the sentinel (`config.set/patch/apply`), so saving a redacted page never
//! erases a secret; [`values`] lists them (what `logs.tail` scrubs).

use serde_json::Value;

/// What a secret reads as outside the process (OpenClaw's sentinel).
pub const REDACTED: &str = "__OPENCLAW_REDACTED__";

/// The schema nodes that describe one place in the config.
struct Walker<'a> {
    root: &'a Value,
}

impl<'a> Walker<'a> {
    /// `node` with its `$ref` and `anyOf`/`oneOf`/`allOf` branches.
    fn expand(&self, node: &'a Value, out: &mut Vec<&'a Value>, depth: u8) {
        if depth > 16 {
            return;
        }
        let Value::Object(o) = node else { return };
        out.push(node);
        if let Some(r) = o.get("$ref").and_then(Value::as_str) {
            if let Some(target) = r.strip_prefix('#').and_then(|p| self.root.pointer(p)) {
                self.expand(target, out, depth + 1);
            }
        }
        for k in ["anyOf", "oneOf", "allOf"] {
            for branch in o.get(k).and_then(Value::as_array).into_iter().flatten() {
                self.expand(branch, out, depth + 1);
            }
        }
    }

    fn nodes(&self, start: &[&'a Value]) -> Vec<&'a Value> {
        let mut out = Vec::new();
        for n in start {
            self.expand(n, &mut out, 0);
        }
        out
    }

    fn secret(nodes: &[&Value]) -> bool {
        nodes
            .iter()
            .any(|n| n.get("writeOnly") == Some(&Value::Bool(true)))
    }

    fn child(&self, nodes: &[&'a Value], key: &str) -> Vec<&'a Value> {
        let direct: Vec<&Value> = nodes
            .iter()
            .filter_map(|n| n.get("properties").and_then(|p| p.get(key)))
            .collect();
        let start = if direct.is_empty() {
            nodes
                .iter()
                .filter_map(|n| n.get("additionalProperties"))
                .collect()
        } else {
            direct
        };
        self.nodes(&start)
    }

    fn items(&self, nodes: &[&'a Value]) -> Vec<&'a Value> {
        let start: Vec<&Value> = nodes.iter().filter_map(|n| n.get("items")).collect();
        self.nodes(&start)
    }

    /// Calls `f` on every string of `v` with whether it is secret.
    fn each(
        &self,
        v: &mut Value,
        nodes: &[&'a Value],
        secret: bool,
        f: &mut impl FnMut(&mut String, bool),
    ) {
        let secret = secret || Self::secret(nodes);
        match v {
            Value::String(s) => f(s, secret),
            Value::Object(map) => {
                for (k, child) in map.iter_mut() {
                    let sub = if secret {
                        Vec::new()
                    } else {
                        self.child(nodes, k)
                    };
                    self.each(child, &sub, secret, f);
                }
            }
            Value::Array(items) => {
                let sub = if secret {
                    Vec::new()
                } else {
                    self.items(nodes)
                };
                for item in items {
                    self.each(item, &sub, secret, f);
                }
            }
            _ => {}
        }
    }
}

/// Calls `f` on every string in a config value with whether the settings
/// declare it secret.
fn visit(config: &mut Value, f: &mut impl FnMut(&mut String, bool)) {
    let schema = crate::settings::json_schema();
    let w = Walker { root: schema };
    let start = w.nodes(&[schema]);
    w.each(config, &start, false, f);
}

/// The byte range of the credentials in a URL (`user:pass` of
/// `scheme://user:pass@host/...`), if it has any.
fn userinfo(s: &str) -> Option<std::ops::Range<usize>> {
    let scheme_end = s.find("://")?;
    let scheme = &s[..scheme_end];
    if scheme.is_empty()
        || !scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
    {
        return None;
    }
    let start = scheme_end + 3;
    let authority_end = s[start..]
        .find(['/', '?', '#'])
        .map_or(s.len(), |i| start + i);
    let at = s[start..authority_end].rfind('@')? + start;
    (at > start).then_some(start..at)
}

/// A copy with every secret string replaced by [`REDACTED`] (a URL keeps
/// its scheme and host: only its credentials are replaced).
pub fn redact(config: &Value) -> Value {
    let mut out = config.clone();
    visit(&mut out, &mut |s, secret| {
        if secret {
            if !s.is_empty() {
                *s = REDACTED.to_string();
            }
        } else if let Some(r) = userinfo(s) {
            s.replace_range(r, REDACTED);
        }
    });
    out
}

/// Every secret value in a config (non-empty, at least 4 characters: a
/// shorter one would scrub ordinary text).
pub fn values(config: &Value) -> Vec<String> {
    let mut found = Vec::new();
    let mut copy = config.clone();
    visit(&mut copy, &mut |s, secret| {
        let value = if secret {
            Some(s.clone())
        } else {
            userinfo(s).map(|r| s[r].to_string())
        };
        if let Some(v) = value.filter(|v| v.chars().count() >= 4 && v != REDACTED) {
            found.push(v);
        }
    });
    found.sort_by_key(|v| std::cmp::Reverse(v.len()));
    found.dedup();
    found
}

/// `text` with every one of `secrets` replaced by [`REDACTED`].
pub fn scrub(text: &str, secrets: &[String]) -> String {
    let mut out = text.to_string();
    for s in secrets {
        if out.contains(s.as_str()) {
            out = out.replace(s.as_str(), REDACTED);
        }
    }
    out
}

/// Puts back the secrets a client sent as [`REDACTED`] (a round-tripped
/// `config.get`), taking them from `old` (the file as it is): a whole
/// value sent as the sentinel is the stored one; a URL whose credentials
/// are the sentinel gets the stored URL's credentials.
pub fn restore(new: &mut Value, old: &Value) {
    match new {
        Value::String(s) if s == REDACTED => *new = old.clone(),
        Value::String(s) if s.contains(REDACTED) => {
            let stored = old
                .as_str()
                .and_then(|o| userinfo(o).map(|r| o[r].to_string()));
            match stored {
                Some(creds) => *s = s.replace(REDACTED, &creds),
                None => *new = old.clone(),
            }
        }
        Value::Object(map) => {
            for (k, v) in map.iter_mut() {
                restore(v, old.get(k).unwrap_or(&Value::Null));
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter_mut().enumerate() {
                restore(v, old.get(i).unwrap_or(&Value::Null));
            }
        }
        _ => {}
    }
}

/// The dotted paths the schema declares secret (`*` for every key of a
/// map, `[]` for every item), for the Control UI's `uiHints`.
pub fn paths() -> Vec<String> {
    let schema = crate::settings::json_schema();
    let w = Walker { root: schema };
    let mut out = Vec::new();
    fn go<'a>(
        w: &Walker<'a>,
        nodes: Vec<&'a Value>,
        path: String,
        out: &mut Vec<String>,
        depth: u8,
    ) {
        if depth > 12 {
            return;
        }
        if Walker::secret(&nodes) {
            out.push(path);
            return;
        }
        let mut keys: Vec<String> = nodes
            .iter()
            .filter_map(|n| n.get("properties").and_then(Value::as_object))
            .flat_map(|p| p.keys().cloned())
            .collect();
        keys.sort();
        keys.dedup();
        let join = |k: &str| {
            if path.is_empty() {
                k.to_string()
            } else {
                format!("{path}.{k}")
            }
        };
        for k in keys {
            let sub = w.child(&nodes, &k);
            go(w, sub, join(&k), out, depth + 1);
        }
        let extra: Vec<&Value> = nodes
            .iter()
            .filter_map(|n| n.get("additionalProperties"))
            .filter(|a| a.is_object())
            .collect();
        if !extra.is_empty() {
            go(w, w.nodes(&extra), join("*"), out, depth + 1);
        }
        let items = w.items(&nodes);
        if !items.is_empty() {
            go(w, items, format!("{path}[]"), out, depth + 1);
        }
    }
    go(&w, w.nodes(&[schema]), String::new(), &mut out, 0);
    out.sort();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A config with a secret in every place the settings declare one.
    fn planted() -> Value {
        json!({
            "gateway": { "auth": { "token": "tok-AAAA", "password": "pw-BBBB" },
                         "remote": { "url": "wss://gw", "token": "remote-CCCC" } },
            "models": { "providers": { "x": {
                "baseUrl": "https://user:url-DDDD@llm.example/v1", "apiKey": "key-EEEE",
                "headers": { "X-Weird-Auth": "hdr-FFFF" },
                "models": [{ "id": "m", "contextWindow": 1000 }] } } },
            "channels": {
                "telegram": { "botToken": "tg-GGGG", "dmPolicy": "pairing",
                              "accounts": { "b": { "botToken": "tg-HHHH" } } },
                "slack": { "appToken": "xapp-IIII", "signingSecret": "sig-JJJJ" },
            },
            "skills": { "entries": { "w": { "apiKey": "sk-KKKK", "env": { "ODD_NAME": "env-LLLL" } } } },
            "env": { "vars": { "ANYTHING": "envv-MMMM" }, "DIRECT": "envd-NNNN" },
            "hooks": { "enabled": true, "token": "hook-OOOO", "messageReceived": { "url": "https://h", "token": "mr-PPPP" } },
            "agents": { "defaults": { "memorySearch": { "remote": { "apiKey": "mem-QQQQ", "baseUrl": "https://e" } } } },
            "tools": { "web": { "search": { "apiKey": "brave-RRRR" } } },
            "talk": { "apiKey": "talk-SSSS", "providers": { "eleven": { "apiKey": "talkp-UUUU", "voiceId": "v" } } },
            "plugins": { "entries": { "brave": { "config": { "webSearch": { "apiKey": "ws-VVVV", "baseUrl": "https://b" } } } } },
            "cron": { "webhookToken": "cron-TTTT" },
        })
    }

    #[test]
    fn every_declared_secret_is_redacted_and_nothing_else() {
        let red = redact(&planted());
        let text = red.to_string();
        for s in [
            "AAAA", "BBBB", "CCCC", "DDDD", "EEEE", "FFFF", "GGGG", "HHHH", "IIII", "JJJJ", "KKKK",
            "LLLL", "MMMM", "NNNN", "OOOO", "PPPP", "QQQQ", "RRRR", "SSSS", "TTTT", "UUUU", "VVVV",
        ] {
            assert!(!text.contains(s), "{s} in {text}");
        }
        assert_eq!(
            red["models"]["providers"]["x"]["baseUrl"],
            format!("https://{REDACTED}@llm.example/v1")
        );
        assert_eq!(red["channels"]["telegram"]["dmPolicy"], "pairing");
        assert_eq!(
            red["models"]["providers"]["x"]["models"][0]["contextWindow"],
            1000
        );
        assert_eq!(red["hooks"]["enabled"], true);
        assert_eq!(red["gateway"]["remote"]["url"], "wss://gw");
        assert_eq!(red["talk"]["providers"]["eleven"]["voiceId"], "v");
        assert_eq!(
            red["plugins"]["entries"]["brave"]["config"]["webSearch"]["baseUrl"],
            "https://b"
        );
        assert_eq!(values(&planted()).len(), 22);
    }

    #[test]
    fn the_sentinel_round_trips_to_the_stored_secret() {
        let old = planted();
        let mut back = redact(&old);
        back["channels"]["telegram"]["dmPolicy"] = json!("allowlist");
        back["models"]["providers"]["x"]["baseUrl"] =
            json!(format!("https://{REDACTED}@llm2.example/v1"));
        restore(&mut back, &old);
        let mut want = old.clone();
        want["channels"]["telegram"]["dmPolicy"] = json!("allowlist");
        want["models"]["providers"]["x"]["baseUrl"] =
            json!("https://user:url-DDDD@llm2.example/v1");
        assert_eq!(back, want);
    }

    #[test]
    fn the_schema_lists_the_secret_paths() {
        let p = paths();
        for want in [
            "gateway.auth.token",
            "models.providers.*.apiKey",
            "models.providers.*.headers",
            "channels.*.botToken",
            "channels.*.accounts.*.botToken",
            "env",
            "skills.entries.*.env",
        ] {
            assert!(p.iter().any(|x| x == want), "{want}: {p:?}");
        }
    }

    #[test]
    fn logs_lose_every_secret() {
        let s = values(&planted());
        let line = "exec curl -H 'Authorization: Bearer key-EEEE' https://user:url-DDDD@x";
        let clean = scrub(line, &s);
        assert!(
            !clean.contains("EEEE") && !clean.contains("DDDD"),
            "{clean}"
        );
        assert_eq!(userinfo("https://a@b"), Some(8..9));
        assert_eq!(userinfo("mailto:x@y"), None);
        assert_eq!(userinfo("https://host/path@x"), None);
    }
}
