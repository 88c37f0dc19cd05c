//! Road 5: a read-only client reading secrets. A secret is planted in
//! every secret-bearing setting the settings schema declares
//! (`secrets::paths()`: a new one is planted here without anyone touching
//! this file), in the unusual keys of secret maps and in URL credentials;
//! `config.get` (parsed, effective and raw), `config.schema`, `logs.tail`,
//! `status`, the audit ledger and OpenClaw's Control UI show none of them
//! to an `operator.read` client, and sending the redacted config back (as
//! the Control UI's save does) keeps every stored secret. A guard checks
//! that every settings key named like a credential is declared secret.

use std::sync::OnceLock;

use serde_json::{json, Value};

use super::*;
use crate::support::{admin, connect_params, TestGateway, TOKEN};

/// What every secret-bearing place needs around it to be a valid config:
/// channels off, a provider, an MCP server that is never started.
fn skeleton() -> Value {
    json!({
        "gateway": { "auth": { "mode": "token", "token": TOKEN }, "remote": { "url": "wss://gw.example" } },
        "models": { "providers": { "planted": {
            "baseUrl": "https://user:url-planted-cred-0001@llm.example/v1", "api": "openai-completions",
            "models": [{ "id": "m", "contextWindow": 1000 }] } } },
        "channels": {
            "telegram": { "enabled": false, "dmPolicy": "pairing" },
            "slack": { "enabled": false }, "discord": { "enabled": false },
            "whatsapp": { "enabled": false }, "matrix": { "enabled": false },
            "signal": { "enabled": false, "httpUrl": "http://signal:url-planted-cred-0002@127.0.0.1:9" },
        },
        "mcp": { "servers": { "planted": { "url": "https://user:url-planted-cred-0003@mcp.example/mcp", "enabled": false } } },
        "hooks": { "enabled": true, "messageReceived": { "url": "http://127.0.0.1:9/in" } },
        "env": { "vars": { "ANYTHING": "envv-planted-cred-0004" } },
    })
}

/// The URL credentials and odd map keys `skeleton` plants.
const SKELETON_SECRETS: &[&str] = &[
    "url-planted-cred-0001",
    "url-planted-cred-0002",
    "url-planted-cred-0003",
    "envv-planted-cred-0004",
];

fn valid(cfg: &Value) -> bool {
    let mut full =
        ferroclaw::config::parse_json5(ferroclaw::config::DEFAULT_JSON5, "defaults").unwrap();
    ferroclaw::config::merge_patch(&mut full, cfg);
    ferroclaw::config::typed(&full, "planted").is_ok()
}

/// What is at the dotted `path` (`*` as the key `planted`).
fn pointer<'a>(cfg: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').try_fold(cfg, |node, seg| {
        node.get(if seg == "*" { "planted" } else { seg })
    })
}

/// Sets `value` at the dotted `path` (`*` becomes the key `planted`).
fn set_at(cfg: &mut Value, path: &str, value: Value) {
    let mut node = cfg;
    let segs: Vec<&str> = path.split('.').collect();
    for (i, seg) in segs.iter().enumerate() {
        let key = if *seg == "*" { "planted" } else { seg };
        if !node.is_object() {
            *node = json!({});
        }
        let slot = node
            .as_object_mut()
            .unwrap()
            .entry(key.to_string())
            .or_insert(Value::Null);
        if i + 1 == segs.len() {
            match (slot.as_object_mut(), value.as_object()) {
                (Some(existing), Some(more)) => existing.extend(more.clone()),
                _ => *slot = value.clone(),
            }
            return;
        }
        node = slot;
    }
}

/// The config with a secret at every place the schema declares one, and
/// every planted value (the gateway token among them).
fn planted_and_secrets() -> &'static (Value, Vec<String>) {
    static PLANTED: OnceLock<(Value, Vec<String>)> = OnceLock::new();
    PLANTED.get_or_init(|| {
        let mut cfg = skeleton();
        let mut secrets: Vec<String> = SKELETON_SECRETS.iter().map(|s| s.to_string()).collect();
        secrets.push(TOKEN.to_string());
        let paths = ferroclaw_actors::secrets::paths();
        assert!(
            paths.len() > 40,
            "the schema declares the secrets: {paths:?}"
        );
        for (i, path) in paths.iter().enumerate() {
            assert!(!path.contains("[]"), "{path}: plant into list items here");
            if path == "gateway.auth.token" {
                continue; // TOKEN: the tests sign in with it.
            }
            let secret = format!("s{i:03}-planted-{}", path.replace(['.', '*'], "-"));
            // A secret string, else a secret map (headers, env) with an odd key.
            let mut as_string = cfg.clone();
            set_at(&mut as_string, path, json!(secret));
            let mut as_map = cfg.clone();
            set_at(&mut as_map, path, json!({ "X-Odd-Name": secret }));
            // Where the place already holds a map (the skeleton's `env`), a map.
            let is_map = pointer(&cfg, path).is_some_and(Value::is_object);
            cfg = match (valid(&as_string) && !is_map, valid(&as_map)) {
                (true, _) => as_string,
                (false, true) => as_map,
                (false, false) => {
                    panic!("{path}: neither a string nor a map plants into a valid config")
                }
            };
            secrets.push(secret);
        }
        (cfg, secrets)
    })
}

pub fn planted() -> Value {
    planted_and_secrets().0.clone()
}

/// Every planted value (the gateway token among them).
pub fn secrets() -> Vec<String> {
    planted_and_secrets().1.clone()
}

pub fn assert_clean(what: &str, text: &str) {
    for s in secrets() {
        assert!(!text.contains(&s), "{what} shows {s}: {text}");
    }
}

#[test]
fn every_setting_named_like_a_credential_is_declared_secret() {
    // Names that say "credential" and are not one (counts, modes, paths).
    const NOT_SECRET: &[&str] = &[
        "maxTokens",
        "contextTokens",
        "reserveTokens",
        "reserveTokensFloor",
        "keepRecentTokens",
        "softThresholdTokens",
        "maxOutputTokens",
        "tokenSource",
        "authProfileId",
        "allowTailscale",
        "clientKey",
        "keyPath",
        "certPath",
        "apiKeyEnv",
        "tokenFile",
        "passwordFile",
        "auth",
        "rateLimit",
    ];
    let schema = ferroclaw_actors::settings::json_schema();
    let secret: Vec<String> = ferroclaw_actors::secrets::paths();
    let mut named = Vec::new();
    fn walk(node: &Value, root: &Value, path: String, out: &mut Vec<String>, depth: u8) {
        if depth > 14 {
            return;
        }
        if let Some(r) = node.get("$ref").and_then(Value::as_str) {
            if let Some(t) = r.strip_prefix('#').and_then(|p| root.pointer(p)) {
                walk(t, root, path.clone(), out, depth + 1);
            }
        }
        for k in ["anyOf", "oneOf", "allOf"] {
            for b in node.get(k).and_then(Value::as_array).into_iter().flatten() {
                walk(b, root, path.clone(), out, depth + 1);
            }
        }
        if let Some(props) = node.get("properties").and_then(Value::as_object) {
            for (k, v) in props {
                let p = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                out.push(p.clone());
                walk(v, root, p, out, depth + 1);
            }
        }
    }
    walk(schema, schema, String::new(), &mut named, 0);
    let credential = |name: &str| {
        let n = name.to_ascii_lowercase();
        ["token", "secret", "password", "apikey", "privatekey"]
            .iter()
            .any(|w| n.contains(w))
    };
    let undeclared: Vec<&String> = named
        .iter()
        .filter(|p| {
            let last = p.rsplit('.').next().unwrap_or(p);
            credential(last) && !NOT_SECRET.contains(&last)
        })
        .filter(|p| {
            !secret
                .iter()
                .any(|s| s == *p || (s.contains('*') && glob_match(s, p)))
        })
        .collect();
    assert!(
        undeclared.is_empty(),
        "settings named like credentials but not declared writeOnly: {undeclared:?}"
    );
}

/// `a.*.b` against `a.x.b`.
fn glob_match(pattern: &str, path: &str) -> bool {
    let (p, s): (Vec<&str>, Vec<&str>) = (pattern.split('.').collect(), path.split('.').collect());
    p.len() == s.len() && p.iter().zip(&s).all(|(a, b)| *a == "*" || a == b)
}

/// A read-only client and the methods its hello-ok lists.
async fn reader(url: &str) -> (crate::support::Client, Vec<String>) {
    let mut c = crate::support::Client::connect(url).await;
    let r = c
        .handshake(connect_params(
            "cli",
            "cli",
            &["operator.read"],
            Some(TOKEN),
        ))
        .await;
    assert_eq!(r["ok"], true, "{r}");
    let methods = r["payload"]["features"]["methods"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m.as_str().unwrap().to_string())
        .collect();
    (c, methods)
}

/// Every method a read-only client may call, called with no parameters:
/// whatever each answers (a result or an error) carries no secret.
async fn sweep(c: &mut crate::support::Client, methods: &[String]) -> usize {
    let mut answered = 0;
    for chunk in methods.chunks(16) {
        let mut ids = Vec::new();
        for m in chunk {
            ids.push((m.clone(), c.send_req(m, json!({})).await));
        }
        for (m, id) in ids {
            let r = c.res(&id).await;
            assert_clean(&m, &r.to_string());
            answered += usize::from(r["ok"] == true);
        }
    }
    answered
}

#[tokio::test]
async fn a_read_only_client_sees_no_secret_anywhere() {
    // The real binary: its log file is what logs.tail reads.
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = planted();
    let api_key = cfg["models"]["providers"]["planted"]["apiKey"]
        .as_str()
        .unwrap()
        .to_string();
    let bot_token = cfg["channels"]["telegram"]["botToken"]
        .as_str()
        .unwrap()
        .to_string();
    // An approval is asked for a command that carries a secret.
    cfg["tools"]["exec"] =
        json!({ "security": "full", "ask": "always", "approvalTimeoutSeconds": 1 });
    std::fs::write(dir.path().join("ferroclaw.json"), cfg.to_string()).unwrap();
    let (_gw, addr, _) = crate::support::process::spawn_gateway(dir.path());
    let url = format!("ws://{addr}/");
    let mut admin_c = crate::support::admin_at(&url, TOKEN).await;
    let events = crate::support::say(
        &mut admin_c,
        "main",
        &tool("exec", json!({"command": format!("curl -H 'Authorization: Bearer {api_key}' https://llm.example")})),
        "a1",
    )
    .await;
    assert!(
        crate::support::final_text(&events).contains("not run"),
        "{events:?}"
    );
    // Something else logged a secret (a library, a future bug): logs.tail hides it.
    let log = dir.path().join("logs/ferroclaw.log");
    let line = json!({"timestamp": "2026-11-26T08:00:00Z", "level": "WARN", "target": "x",
        "fields": {"message": format!("retrying https://user:url-planted-cred-0001@llm.example with {api_key} and {bot_token}")}});
    let mut f = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
    std::io::Write::write_all(&mut f, format!("{line}\n").as_bytes()).unwrap();

    let (mut c, methods) = reader(&url).await;
    let answered = sweep(&mut c, &methods).await;
    assert!(
        answered > 40,
        "{answered} of {} methods answered",
        methods.len()
    );
    let got = c.call("config.get", json!({})).await;
    assert_eq!(got["ok"], true, "{got}");
    let p = &got["payload"];
    assert_clean("config.get", &p.to_string());
    let red = crate::support::REDACTED_SENTINEL;
    assert_eq!(
        p["parsed"]["models"]["providers"]["planted"]["headers"]["X-Odd-Name"],
        red
    );
    assert_eq!(p["config"]["env"]["vars"]["ANYTHING"], red);
    assert_eq!(
        p["parsed"]["channels"]["telegram"]["dmPolicy"], "pairing",
        "what is not secret is shown"
    );
    assert!(p["raw"].as_str().is_some_and(|r| r.contains(red)), "{p}");
    let logs = c.call("logs.tail", json!({ "limit": 5000 })).await;
    assert_eq!(logs["ok"], true, "{logs}");
    let text = logs["payload"].to_string();
    assert!(
        text.contains("retrying https://"),
        "the line is there: {text}"
    );
    assert!(text.contains("exec approval requested"), "{text}");
    assert!(
        !text.contains("curl -H"),
        "an approval line never prints the command: {text}"
    );
    assert_clean("logs.tail", &text);
    let status = c.call("status", json!({})).await;
    assert_eq!(status["ok"], true, "{status}");
    assert_clean("status", &status["payload"].to_string());
    // The audit ledger: the approval asked for, the tool call refused.
    let audit = admin_c
        .call("audit.activity.list", json!({ "limit": 500 }))
        .await;
    assert_eq!(audit["ok"], true, "{audit}");
    assert!(audit["payload"].to_string().contains("exec"), "{audit}");
    assert_clean("audit.activity.list", &audit["payload"].to_string());
    let schema = c.call("config.schema", json!({})).await;
    let hints = &schema["payload"]["uiHints"];
    for path in [
        "gateway.auth.token",
        "models.providers.*.headers",
        "channels.*.botToken",
        "env",
    ] {
        assert_eq!(hints[path]["sensitive"], true, "{path}: {hints}");
    }
}

#[tokio::test]
async fn sending_the_redacted_config_back_keeps_every_secret() {
    let gw = TestGateway::with_config(planted());
    let mut c = admin(&gw).await;
    let got = c.call("config.get", json!({})).await["payload"].clone();
    // The Control UI's save: the page's (redacted) config with one change.
    let mut edited = got["parsed"].clone();
    edited["channels"]["telegram"]["dmPolicy"] = json!("allowlist");
    let set = c
        .call(
            "config.set",
            json!({ "raw": edited.to_string(), "baseHash": got["hash"] }),
        )
        .await;
    assert_eq!(set["ok"], true, "{set}");
    let on_disk = std::fs::read_to_string(gw.config_path()).unwrap();
    for s in secrets() {
        assert!(on_disk.contains(&s), "{s} was lost: {on_disk}");
    }
    assert!(on_disk.contains("allowlist"), "{on_disk}");
    assert!(
        !on_disk.contains(crate::support::REDACTED_SENTINEL),
        "{on_disk}"
    );
    // config.patch and config.set by key send the sentinel back too.
    let hash = c.call("config.get", json!({})).await["payload"]["hash"].clone();
    let patch = json!({ "models": { "providers": { "planted": {
        "apiKey": crate::support::REDACTED_SENTINEL,
        "baseUrl": format!("https://{}@llm2.example/v1", crate::support::REDACTED_SENTINEL) } } } });
    let r = c
        .call(
            "config.patch",
            json!({ "raw": patch.to_string(), "baseHash": hash }),
        )
        .await;
    assert_eq!(r["ok"], true, "{r}");
    let hash = c.call("config.get", json!({})).await["payload"]["hash"].clone();
    let r = c
        .call("config.set", json!({ "key": "hooks.token", "value": crate::support::REDACTED_SENTINEL, "baseHash": hash }))
        .await;
    assert_eq!(r["ok"], true, "{r}");
    let on_disk = std::fs::read_to_string(gw.config_path()).unwrap();
    for s in secrets() {
        assert!(on_disk.contains(&s), "{s} was lost: {on_disk}");
    }
    assert!(
        on_disk.contains("https://user:url-planted-cred-0001@llm2.example/v1"),
        "{on_disk}"
    );
    // The audit ledger names the changed keys, never a value.
    let control = c
        .call(
            "audit.activity.list",
            json!({ "kind": "control", "limit": 500 }),
        )
        .await;
    assert_eq!(control["ok"], true, "{control}");
    let text = control["payload"].to_string();
    assert!(
        text.contains("models.providers.planted"),
        "the change is recorded: {text}"
    );
    assert_clean("audit.activity.list", &text);
    let legacy = c.call("audit.list", json!({ "limit": 500 })).await;
    assert_eq!(legacy["ok"], true, "{legacy}");
    assert_clean("audit.list", &legacy["payload"].to_string());
}

#[tokio::test]
async fn openclaws_control_ui_shows_no_secret_and_saving_its_raw_editor_keeps_them() {
    let root = super::super::control_ui::installed_ui()
        .display()
        .to_string();
    let mut cfg = planted();
    cfg["gateway"]["controlUi"] = json!({ "root": root });
    let gw = TestGateway::with_config(cfg);
    let shots =
        std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("control-ui-config-screenshots");
    let base = format!("http://{}", gw.addr);
    let report = crate::support::browser::browser_script(
        "control_ui_config.test.mjs",
        &[base.as_ref(), TOKEN.as_ref()],
        &shots,
    )
    .await;
    let pages = report["pages"].as_object().unwrap();
    assert!(
        pages.len() >= 10 && pages.contains_key("/settings/advanced"),
        "{report}"
    );
    for (page, text) in pages {
        let text = text.as_str().unwrap();
        for s in secrets() {
            // The connection page shows the token this browser signed in
            // with (kept in the browser), not the gateway's config.
            if s == TOKEN && page == "/settings/connection" {
                continue;
            }
            assert!(!text.contains(&s), "{page} shows {s}");
        }
    }
    // Every setting is rendered as a field: none falls back to the UI's
    // "Unsupported schema node" (a schema it cannot draw).
    let undrawn: Vec<String> = pages
        .iter()
        .flat_map(|(page, text)| {
            let lines: Vec<&str> = text.as_str().unwrap().lines().collect();
            lines
                .iter()
                .enumerate()
                .filter(|(_, l)| l.contains("Unsupported schema node"))
                .map(|(i, _)| format!("{page}: {}", lines[i.saturating_sub(3)..=i].join(" | ")))
                .collect::<Vec<_>>()
        })
        .collect();
    assert!(undrawn.is_empty(), "{undrawn:#?}");
    let raw = report["raw"].as_str().unwrap();
    assert_clean("the raw editor", raw);
    assert!(raw.contains(crate::support::REDACTED_SENTINEL), "{raw}");
    assert_eq!(report["saved"]["ok"], true, "{report}");
    let on_disk = std::fs::read_to_string(gw.config_path()).unwrap();
    for s in secrets() {
        assert!(
            on_disk.contains(&s),
            "saving the page erased {s}: {on_disk}"
        );
    }
    assert!(
        on_disk.contains("\"allowlist\""),
        "the change was saved: {on_disk}"
    );
    // Pages for features ferroclaw lacks call methods it does not answer
    // (issue 29); the config methods themselves never fail.
    let failed: Vec<&str> = report["failedCalls"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f.as_str())
        .filter(|f| {
            [
                "config.get:",
                "config.set:",
                "config.schema:",
                "config.apply:",
            ]
            .iter()
            .any(|m| f.starts_with(m))
        })
        .collect();
    assert!(failed.is_empty(), "{failed:?}");
}
