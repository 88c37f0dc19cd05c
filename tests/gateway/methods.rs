//! The methods of the core: health, status, presence, system-event,
//! models.list, config.*, logs.tail; scope denial (scenario 10) and
//! idempotent replay, including across a restart.

use serde_json::{json, Value};

use crate::support::device::now_ms;
use crate::support::{admin, connect_params, Client, Device, TestGateway, TOKEN};

#[tokio::test]
async fn health_status_presence_and_models_answer_with_their_shapes() {
    let gw = TestGateway::with_config(json!({"models": {"providers": {"local": {
        "baseUrl": "http://127.0.0.1:9/v1", "api": "openai-completions",
        "models": [{"id": "qwen", "name": "Qwen", "contextWindow": 32768}]}}}}));
    let mut c = admin(&gw).await;
    let h = c.call("health", json!({})).await["payload"].clone();
    assert_eq!(h["ok"], true);
    assert_eq!(h["defaultAgentId"], "main");
    for k in [
        "ts",
        "durationMs",
        "channels",
        "channelOrder",
        "channelLabels",
        "heartbeatSeconds",
        "agents",
        "sessions",
    ] {
        assert!(h.get(k).is_some(), "health.{k} missing: {h}");
    }
    let s = c.call("status", json!({})).await["payload"].clone();
    assert_eq!(s["heartbeat"]["defaultAgentId"], "main");
    assert!(s["sessions"]["defaults"]["model"].is_string());
    assert!(s["queuedSystemEvents"].is_array());
    let p = c.call("system-presence", json!({})).await["payload"].clone();
    assert!(
        p.as_array().unwrap().iter().any(|e| e["mode"] == "gateway"),
        "{p}"
    );
    let m = c.call("models.list", json!({})).await["payload"].clone();
    let models = m["models"].as_array().unwrap();
    assert!(models.iter().any(|x| x["provider"] == "offline"));
    assert!(models
        .iter()
        .any(|x| x["id"] == "qwen" && x["provider"] == "local" && x["contextWindow"] == 32768));
    // OpenClaw's params: a provider filter, and its other keys accepted.
    let m = c
        .call(
            "models.list",
            json!({"provider": "local", "view": "all", "includeDetails": true}),
        )
        .await;
    let rows = m["payload"]["models"].as_array().unwrap();
    assert_eq!(rows.len(), 1, "{m}");
    assert_eq!(rows[0]["local"], true, "127.0.0.1 is this machine");
    let bad = c.call("models.list", json!({"bogus": 1})).await;
    assert!(
        bad["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("invalid models.list params"),
        "{bad}"
    );
}

#[tokio::test]
async fn unknown_methods_and_connect_after_hello_are_errors_and_the_socket_stays_open() {
    let gw = TestGateway::start();
    let mut c = admin(&gw).await;
    let r = c.call("no.such.method", json!({})).await;
    assert_eq!(
        r["error"],
        json!({"code":"INVALID_REQUEST","message":"unknown method: no.such.method"})
    );
    let r = c.call("connect", json!({})).await;
    assert_eq!(
        r["error"]["message"],
        "connect is only valid as the first request"
    );
    assert_eq!(c.call("health", json!({})).await["ok"], true);
    // A method ferroclaw lacks is unknown whatever the caller's scopes,
    // never a permission error (OpenClaw's CLI then blames permissions).
    let mut ro = Client::connect(&gw.ws_url()).await;
    ro.handshake(connect_params(
        "cli",
        "cli",
        &["operator.read"],
        Some(TOKEN),
    ))
    .await;
    for m in ["no.such.method", "wizard.start", "sessions.preview"] {
        let r = ro.call(m, json!({})).await;
        assert_eq!(
            r["error"]["message"],
            format!("unknown method: {m}"),
            "{m}: {r}"
        );
    }
    let r = ro.call("config.set", json!({"raw": "{}"})).await;
    assert_eq!(
        r["error"]["message"], "missing scope: operator.admin",
        "a method that answers still checks scopes"
    );
}

/// OpenClaw's params-aware rule: a writer may patch a session's label,
/// model or thinking level; its exec settings stay the admin's.
#[tokio::test]
async fn a_writer_patches_writer_fields_of_a_session_and_nothing_else() {
    let gw = TestGateway::start();
    let mut w = Client::connect(&gw.ws_url()).await;
    w.handshake(connect_params(
        "cli",
        "cli",
        &["operator.write"],
        Some(TOKEN),
    ))
    .await;
    let r = w
        .call("sessions.patch", json!({"key": "main", "label": "notes"}))
        .await;
    assert_eq!(r["ok"], true, "{r}");
    let r = w
        .call(
            "sessions.patch",
            json!({"key": "main", "execSecurity": "full"}),
        )
        .await;
    assert_eq!(
        r["error"]["message"], "missing scope: operator.admin",
        "{r}"
    );
    let r = w
        .call(
            "sessions.patch",
            json!({"key": "main", "label": "x", "sandboxMode": "all"}),
        )
        .await;
    assert_eq!(
        r["error"]["message"], "missing scope: operator.admin",
        "{r}"
    );
}

#[tokio::test]
async fn scopes_are_enforced_read_only_cannot_write_and_nodes_cannot_call_operator_methods() {
    let gw = TestGateway::start();
    let mut ro = Client::connect(&gw.ws_url()).await;
    ro.handshake(connect_params(
        "cli",
        "cli",
        &["operator.read"],
        Some(TOKEN),
    ))
    .await;
    let r = ro
        .call(
            "chat.send",
            json!({"sessionKey":"main","message":"hi","idempotencyKey":"k"}),
        )
        .await;
    assert_eq!(r["error"]["code"], "FORBIDDEN");
    assert_eq!(r["error"]["message"], "missing scope: operator.write");
    assert_eq!(r["error"]["details"]["missingScope"], "operator.write");
    let r = ro.call("config.set", json!({"raw":"{}"})).await;
    assert_eq!(r["error"]["message"], "missing scope: operator.admin");
    let r = ro.call("device.pair.list", json!({})).await;
    assert_eq!(r["error"]["message"], "missing scope: operator.pairing");
    assert_eq!(ro.call("status", json!({})).await["ok"], true);

    let dev = Device::new(40);
    let mut node = Client::connect(&gw.ws_url()).await;
    let n = node.nonce();
    let mut p = dev.connect_params(
        "node-host",
        "node",
        "node",
        &[],
        Some(TOKEN),
        &n,
        now_ms(),
        false,
    );
    p["caps"] = json!(["canvas"]);
    let res = node.handshake(p).await;
    assert_eq!(res["ok"], true, "{res}");
    let r = node
        .call(
            "chat.send",
            json!({"sessionKey":"main","message":"hi","idempotencyKey":"k"}),
        )
        .await;
    assert_eq!(r["error"]["message"], "unauthorized role: node");
    assert_eq!(node.call("health", json!({})).await["ok"], true);
}

#[tokio::test]
async fn idempotent_calls_replay_the_cached_response_even_after_a_restart() {
    let mut gw = TestGateway::start();
    let mut c = admin(&gw).await;
    let params =
        json!({"text": "build finished", "idempotencyKey": "evt-1", "instanceId": "ci-runner"});
    let first = c.call("system-event", params.clone()).await;
    assert_eq!(first["ok"], true, "{first}");
    let second = c.call("system-event", params.clone()).await;
    assert_eq!(second["payload"], first["payload"]);
    let status = c.call("status", json!({})).await;
    assert_eq!(
        status["payload"]["queuedSystemEvents"],
        json!(["build finished"]),
        "the side effect ran once"
    );
    drop(c);

    gw.restart();
    let mut c = admin(&gw).await;
    let third = c.call("system-event", params).await;
    assert_eq!(third["payload"], first["payload"]);
    let status = c.call("status", json!({})).await;
    assert_eq!(
        status["payload"]["queuedSystemEvents"],
        json!(["build finished"]),
        "no repeat after restart"
    );
    // A new key is a new call.
    c.call(
        "system-event",
        json!({"text": "deploy done", "idempotencyKey": "evt-2"}),
    )
    .await;
    let status = c.call("status", json!({})).await;
    assert_eq!(
        status["payload"]["queuedSystemEvents"],
        json!(["build finished", "deploy done"])
    );
}

#[tokio::test]
async fn config_get_redacts_and_set_requires_the_base_hash() {
    let gw = TestGateway::start();
    let mut c = admin(&gw).await;
    let snap = c.call("config.get", json!({})).await["payload"].clone();
    assert_eq!(snap["exists"], true);
    assert_eq!(
        snap["config"]["gateway"]["auth"]["token"],
        "__OPENCLAW_REDACTED__"
    );
    assert!(!snap.to_string().contains(TOKEN), "no secret in config.get");
    let hash = snap["hash"].as_str().unwrap().to_string();
    assert_eq!(hash.len(), 64);

    let r = c.call("config.set", json!({"raw": "{}"})).await;
    assert_eq!(
        r["error"]["message"],
        "config base hash required; re-run config.get and retry"
    );
    let r = c
        .call(
            "config.set",
            json!({"raw": "{}", "baseHash": "0".repeat(64)}),
        )
        .await;
    assert_eq!(
        r["error"]["message"],
        "config changed since last load; re-run config.get and retry"
    );

    // Invalid config is refused before the file is touched.
    let before = std::fs::read_to_string(gw.config_path()).unwrap();
    let r = c
        .call(
            "config.set",
            json!({"raw": "{gateway:{port:'nope'}}", "baseHash": hash}),
        )
        .await;
    assert_eq!(r["error"]["code"], "INVALID_REQUEST");
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("gateway.port"),
        "{r}"
    );
    assert_eq!(std::fs::read_to_string(gw.config_path()).unwrap(), before);

    // The AcaClaw form {key, value}; the redacted token round-trips.
    let r = c.call("config.set", json!({"key": "agents.defaults.model", "value": "openrouter/anthropic/claude-3.5-sonnet", "baseHash": hash})).await;
    assert_eq!(r["ok"], true, "{r}");
    let written: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(gw.config_path()).unwrap()).unwrap();
    assert_eq!(
        written["agents"]["defaults"]["model"],
        "openrouter/anthropic/claude-3.5-sonnet"
    );
    assert_eq!(written["gateway"]["auth"]["token"], TOKEN);
    let snap = c.call("config.get", json!({})).await["payload"].clone();
    let status = c.call("status", json!({})).await;
    assert_eq!(
        status["payload"]["sessions"]["defaults"]["model"],
        "openrouter/anthropic/claude-3.5-sonnet",
        "hot applied"
    );

    // A full raw round trip of the redacted snapshot keeps the secret.
    let raw = snap["raw"].as_str().unwrap().to_string();
    let r = c
        .call("config.set", json!({"raw": raw, "baseHash": snap["hash"]}))
        .await;
    assert_eq!(r["ok"], true, "{r}");
    let written: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(gw.config_path()).unwrap()).unwrap();
    assert_eq!(written["gateway"]["auth"]["token"], TOKEN);
}

#[tokio::test]
async fn config_patch_merges_and_hot_applies_a_new_token_and_reports_restart_keys() {
    let gw = TestGateway::start();
    let mut c = admin(&gw).await;
    let hash = c.call("config.get", json!({})).await["payload"]["hash"].clone();
    let r = c
        .call(
            "config.patch",
            json!({"raw": "{gateway:{auth:{token:'rotated-token-0123456789'}, port: 1}}", "baseHash": hash}),
        )
        .await;
    assert_eq!(r["ok"], true, "{r}");
    assert_eq!(r["payload"]["restartRequired"], json!(["gateway.port"]));
    let mut old = Client::connect(&gw.ws_url()).await;
    let res = old
        .handshake(connect_params("cli", "cli", &[], Some(TOKEN)))
        .await;
    assert_eq!(res["error"]["details"]["code"], "AUTH_TOKEN_MISMATCH");
    let mut new = Client::connect(&gw.ws_url()).await;
    let res = new
        .handshake(connect_params(
            "cli",
            "cli",
            &[],
            Some("rotated-token-0123456789"),
        ))
        .await;
    assert_eq!(
        res["ok"], true,
        "the new token works without a restart: {res}"
    );
}

#[tokio::test]
async fn logs_tail_reads_the_gateway_log_file_with_a_cursor() {
    let gw = TestGateway::start();
    let log = gw.state_dir().join("logs").join("ferroclaw.log");
    std::fs::create_dir_all(log.parent().unwrap()).unwrap();
    std::fs::write(&log, "{\"msg\":\"one\"}\n{\"msg\":\"two\"}\n").unwrap();
    let mut c = admin(&gw).await;
    let r = c.call("logs.tail", json!({"limit": 1})).await["payload"].clone();
    assert_eq!(r["lines"], json!(["{\"msg\":\"two\"}"]));
    assert_eq!(r["file"], log.display().to_string());
    let cursor = r["cursor"].as_u64().unwrap();
    std::fs::OpenOptions::new()
        .append(true)
        .open(&log)
        .map(|mut f| {
            use std::io::Write;
            writeln!(f, "{{\"msg\":\"three\"}}").unwrap();
        })
        .unwrap();
    let r = c.call("logs.tail", json!({"cursor": cursor})).await["payload"].clone();
    assert_eq!(r["lines"], json!(["{\"msg\":\"three\"}"]));
    let bad = c.call("logs.tail", json!({"limit": 0})).await;
    assert_eq!(bad["error"]["code"], "INVALID_REQUEST");
}

/// Without user profiles ferroclaw answers as OpenClaw does for a gateway
/// without them: `users.list` lists none, `users.self` is refused.
#[tokio::test]
async fn users_are_answered_as_a_gateway_without_profiles() {
    let gw = TestGateway::start();
    let mut c = admin(&gw).await;
    let r = c.call("users.list", json!({})).await;
    assert_eq!(r["payload"], json!({"profiles": []}), "{r}");
    let r = c.call("users.self", json!({})).await;
    assert_eq!(
        r["error"],
        json!({"code": "FORBIDDEN", "message": "users.self requires an authenticated user"})
    );
    let r = c.call("users.list", json!({"limit": 5})).await;
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("must NOT have additional properties"),
        "{r}"
    );
}

/// `config.get` says whether the file is valid by the checks `config
/// validate` runs: an edit the gateway would refuse is reported with its
/// path, and the original text is valid again.
#[tokio::test]
async fn config_get_reports_a_file_edited_into_something_the_gateway_would_refuse() {
    let gw = TestGateway::start();
    let mut c = admin(&gw).await;
    let snap = c.call("config.get", json!({})).await["payload"].clone();
    assert_eq!(
        (&snap["valid"], &snap["issues"]),
        (&json!(true), &json!([])),
        "{snap}"
    );
    let path = gw.config_path();
    let original = std::fs::read_to_string(&path).unwrap();
    let mut typed: Value = json5::from_str(&original).unwrap();
    typed["gateway"]["tickIntervalMs"] = json!("often");
    std::fs::write(&path, typed.to_string()).unwrap();
    let snap = c.call("config.get", json!({})).await["payload"].clone();
    assert_eq!(snap["valid"], false, "{snap}");
    assert!(
        snap["issues"][0]["path"]
            .as_str()
            .unwrap()
            .contains("tickIntervalMs"),
        "{snap}"
    );
    // Well typed, but a start would refuse it (no such provider).
    let mut refused: Value = json5::from_str(&original).unwrap();
    refused["agents"] = json!({"defaults": {"model": {"primary": "nosuchprovider/model"}}});
    std::fs::write(&path, refused.to_string()).unwrap();
    let snap = c.call("config.get", json!({})).await["payload"].clone();
    assert_eq!(snap["valid"], false, "{snap}");
    assert!(
        snap["issues"][0]["message"]
            .as_str()
            .unwrap()
            .contains("nosuchprovider"),
        "{snap}"
    );
    std::fs::write(&path, &original).unwrap();
    let snap = c.call("config.get", json!({})).await["payload"].clone();
    assert_eq!(
        (&snap["valid"], &snap["issues"]),
        (&json!(true), &json!([])),
        "{snap}"
    );
}
