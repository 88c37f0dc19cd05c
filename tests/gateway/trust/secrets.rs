//! Road 5: a read-only client reading secrets. A secret is planted in
//! every secret-bearing setting (the unusual keys of secret maps among
//! them); `config.get` (parsed, effective and raw), `config.schema`,
//! `logs.tail` and `status` show none of them to an `operator.read`
//! client, and sending the redacted config back (as the Control UI's save
//! does) keeps every stored secret.

use serde_json::{json, Value};

use super::*;
use crate::support::{admin, connect_params, TestGateway, TOKEN};

/// Every secret-bearing setting, each with a value found nowhere else.
pub fn planted() -> Value {
    json!({
        "gateway": {
            "auth": { "mode": "token", "token": TOKEN, "password": "pw-planted-0001-long" },
            "remote": { "url": "wss://gw.example", "token": "remote-planted-0002", "password": "remote-planted-0003" },
        },
        "models": { "providers": { "x": {
            "baseUrl": "https://user:url-planted-0004@llm.example/v1", "api": "openai-completions",
            "apiKey": "key-planted-0005",
            "headers": { "X-Odd-Auth": "hdr-planted-0006" },
            "models": [{ "id": "m", "contextWindow": 1000 }] } } },
        "channels": {
            "telegram": { "enabled": false, "botToken": "111:tg-planted-0007", "dmPolicy": "pairing",
                          "accounts": { "b": { "botToken": "222:tg-planted-0008" } } },
            "slack": { "enabled": false, "botToken": "xoxb-planted-0009", "appToken": "xapp-planted-0010", "signingSecret": "sig-planted-0011" },
            "discord": { "enabled": false, "token": "dc-planted-0012" },
            "matrix": { "enabled": false, "accessToken": "mx-planted-0013", "password": "mx-planted-0014" },
        },
        "skills": { "entries": { "weather": { "apiKey": "sk-planted-0015", "env": { "ODD_NAME": "env-planted-0016" } } } },
        "env": { "vars": { "ANYTHING": "envv-planted-0017" }, "DIRECT": "envd-planted-0018" },
        "hooks": { "enabled": true, "token": "hook-planted-0019-abcdef",
                   "messageReceived": { "url": "http://127.0.0.1:9/in", "token": "mr-planted-0020" } },
        "agents": { "defaults": { "memorySearch": { "remote": { "apiKey": "mem-planted-0021", "headers": { "X-Key": "mem-planted-0022" } } } } },
        "tools": { "web": { "search": { "apiKey": "brave-planted-0023" } } },
        "talk": { "apiKey": "talk-planted-0024" },
        "cron": { "webhookToken": "cron-planted-0025" },
    })
}

/// The planted values (the gateway token among them).
pub fn secrets() -> Vec<String> {
    let mut out: Vec<String> = (1..=25).map(|i| format!("planted-{i:04}")).collect();
    out.push(TOKEN.to_string());
    out
}

pub fn assert_clean(what: &str, text: &str) {
    for s in secrets() {
        assert!(!text.contains(&s), "{what} shows {s}: {text}");
    }
}

async fn reader(url: &str) -> crate::support::Client {
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
    c
}

#[tokio::test]
async fn a_read_only_client_sees_no_secret_anywhere() {
    // The real binary: its log file is what logs.tail reads.
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = planted();
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
        &tool("exec", json!({"command": "curl -H 'Authorization: Bearer key-planted-0005' https://llm.example"})),
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
        "fields": {"message": "retrying https://user:url-planted-0004@llm.example with key-planted-0005 and 111:tg-planted-0007"}});
    let mut f = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
    std::io::Write::write_all(&mut f, format!("{line}\n").as_bytes()).unwrap();

    let mut c = reader(&url).await;
    let got = c.call("config.get", json!({})).await;
    assert_eq!(got["ok"], true, "{got}");
    let p = &got["payload"];
    assert_clean("config.get", &p.to_string());
    let red = crate::support::REDACTED_SENTINEL;
    assert_eq!(
        p["parsed"]["models"]["providers"]["x"]["headers"]["X-Odd-Auth"],
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
    let patch = json!({ "models": { "providers": { "x": {
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
        on_disk.contains("https://user:url-planted-0004@llm2.example/v1"),
        "{on_disk}"
    );
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
