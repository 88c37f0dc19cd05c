//! OpenClaw CLI commands that once failed only on ferroclaw, run as a user
//! runs them (OpenClaw's own CLI, its own HOME) against a gateway with
//! real data behind each answer.

use std::process::Output;

use serde_json::{json, Value};

use super::interop::openclaw_command;
use crate::support::fake_provider::{FakeProvider, Script};
use crate::support::{admin, chat_until_done, final_text, TestGateway};

/// Runs `openclaw <args>` off the async runtime (the gateway answers on
/// its own thread; the fakes on this runtime keep serving).
async fn openclaw(gw: &TestGateway, home: &std::path::Path, args: &[&str]) -> Output {
    let mut cmd = openclaw_command(gw, home, args);
    tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap()
}

fn auth_headers(fake: &FakeProvider) -> Vec<String> {
    let requests = fake.requests.lock().unwrap();
    requests
        .iter()
        .map(|(_, h)| {
            h.iter()
                .find(|(k, _)| k == "authorization")
                .map(|(_, v)| v.clone())
                .unwrap_or_default()
        })
        .collect()
}

fn profiles(key: &str) -> String {
    json!({"version": 1, "profiles": {
        "fake:main": {"type": "api_key", "provider": "fake", "key": key},
    }})
    .to_string()
}

/// `openclaw secrets reload`: a key rotated in `auth-profiles.json` is used
/// by the next model call without a restart; what cannot be resolved is
/// counted as a warning, as OpenClaw counts it.
#[tokio::test]
async fn openclaw_secrets_reload_rotates_a_key_without_a_restart() {
    let fake = FakeProvider::start().await;
    let cfg = json!({
        "models": { "providers": {
            "fake": { "baseUrl": fake.base_url(), "api": "openai-completions" },
            // A key naming a variable the gateway's environment lacks.
            "spare": { "baseUrl": fake.base_url(), "apiKey": "${FERROCLAW_TEST_UNSET_KEY}" },
        }},
        "agents": { "defaults": { "model": { "primary": "fake/m1" } } },
    });
    let file = "agents/main/agent/auth-profiles.json";
    let gw = TestGateway::with_files(cfg, &[(file, &profiles("old-key"))]);
    let home = tempfile::tempdir().unwrap();
    let mut c = admin(&gw).await;
    fake.push(Script::text(&["one"]));
    c.send_req(
        "chat.send",
        json!({"sessionKey": "main", "message": "a", "idempotencyKey": "s1"}),
    )
    .await;
    assert_eq!(final_text(&chat_until_done(&mut c, "s1").await), "one");

    std::fs::write(gw.state_dir().join(file), profiles("new-key")).unwrap();
    let out = openclaw(&gw, home.path(), &["secrets", "reload"]).await;
    assert!(out.status.success(), "{out:?}");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains("Secrets reloaded with 1 warning(s)."),
        "{said}"
    );

    fake.push(Script::text(&["two"]));
    c.send_req(
        "chat.send",
        json!({"sessionKey": "main", "message": "b", "idempotencyKey": "s2"}),
    )
    .await;
    assert_eq!(final_text(&chat_until_done(&mut c, "s2").await), "two");
    assert_eq!(auth_headers(&fake), ["Bearer old-key", "Bearer new-key"]);

    // A profile file broken by hand is one more warning; the reload still
    // succeeds.
    std::fs::write(gw.state_dir().join(file), "{ not json").unwrap();
    let out = openclaw(&gw, home.path(), &["secrets", "reload", "--json"]).await;
    assert!(out.status.success(), "{out:?}");
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(answer, json!({"ok": true, "warningCount": 2}), "{answer}");
}

/// `openclaw devices join-code` is refused as OpenClaw refuses it on a
/// gateway only bound to loopback (no other machine could use the URL);
/// the other refusals are OpenClaw's words too, or say plainly what
/// ferroclaw does not issue.
#[tokio::test]
async fn openclaw_devices_join_code_is_refused_on_loopback_in_openclaws_words() {
    let gw = TestGateway::start();
    let home = tempfile::tempdir().unwrap();
    let out = openclaw(&gw, home.path(), &["devices", "join-code"]).await;
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("Gateway is only bound to loopback. Set gateway.bind=lan, enable tailscale serve, or configure plugins.entries.device-pair.config.publicUrl."),
        "{said}"
    );
    let mut c = admin(&gw).await;
    let r = c
        .call(
            "device.pair.setupCode",
            json!({"joinUrl": true, "bootstrapProfile": "limited"}),
        )
        .await;
    assert_eq!(
        r["error"]["message"], "Join URLs require bootstrapProfile=node.",
        "{r}"
    );
    let r = c
        .call(
            "device.pair.setupCode",
            json!({"publicUrl": "wss://gw.example"}),
        )
        .await;
    assert_eq!(r["error"]["code"], "INVALID_REQUEST", "{r}");
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("openclaw devices approve"),
        "{r}"
    );
    let r = c.call("device.pair.setupCode", json!({"qr": true})).await;
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("invalid device.pair.setupCode params"),
        "{r}"
    );
}
