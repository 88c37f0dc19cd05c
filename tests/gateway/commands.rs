//! OpenClaw CLI commands that once failed only on ferroclaw, run as a user
//! runs them (OpenClaw's own CLI, its own HOME) against a gateway with
//! real data behind each answer.

use std::process::Output;

use serde_json::{json, Value};

use super::interop::{openclaw_command, openclaw_env_command};
use crate::support::fake_provider::{FakeProvider, Script};
use crate::support::{admin, chat_until_done, final_text, TestGateway};

/// Runs `openclaw <args>` off the async runtime (the gateway answers on
/// its own thread; the fakes on this runtime keep serving).
async fn openclaw(gw: &TestGateway, home: &std::path::Path, args: &[&str]) -> Output {
    run(openclaw_command(gw, home, args)).await
}

/// The same, for commands that take the gateway from the environment.
async fn openclaw_env(gw: &TestGateway, home: &std::path::Path, args: &[&str]) -> Output {
    run(openclaw_env_command(gw, home, args)).await
}

async fn run(mut cmd: std::process::Command) -> Output {
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

/// `openclaw hooks list|check|info`: the hook points ferroclaw has (the
/// message-received observer, the webhook endpoints and each mapping),
/// each ready only when configured, and the hook scripts an OpenClaw
/// workspace brought along, shown as not run.
#[tokio::test]
async fn openclaw_hooks_commands_list_ferroclaws_hook_points_and_the_scripts_it_does_not_run() {
    let hook_md = "---\nname: session-memory\ndescription: \"Save the session on /new\"\nmetadata: {\"openclaw\": {\"events\": [\"command:new\"]}}\n---\n";
    let gw = TestGateway::with_files(
        json!({"hooks": {
            "enabled": true, "token": "hook-token-0123456789",
            "mappings": [{"match": {"path": "github"}, "messageTemplate": "{{x}}"}],
            "messageReceived": {"url": "http://127.0.0.1:9/observer"},
        }}),
        &[("workspace/hooks/session-memory/HOOK.md", hook_md)],
    );
    let home = tempfile::tempdir().unwrap();
    let out = openclaw_env(&gw, home.path(), &["hooks", "list", "--json"]).await;
    assert!(out.status.success(), "{out:?}");
    let listed: Value = serde_json::from_slice(&out.stdout).unwrap();
    let hooks = listed["hooks"].as_array().unwrap();
    let ready = |name: &str| {
        hooks
            .iter()
            .find(|h| h["name"] == name)
            .unwrap_or_else(|| panic!("{name} not in {listed}"))["loadable"]
            .clone()
    };
    for name in [
        "message-received",
        "webhook-wake",
        "webhook-agent",
        "webhook:github",
    ] {
        assert_eq!(ready(name), true, "{name}: {listed}");
    }
    assert_eq!(ready("session-memory"), false, "{listed}");

    let out = openclaw_env(&gw, home.path(), &["hooks", "check"]).await;
    assert!(out.status.success(), "{out:?}");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains("Ready: 4") && said.contains("Not ready: 1"),
        "{said}"
    );
    assert!(
        said.contains("session-memory - ferroclaw runs no hook scripts"),
        "{said}"
    );

    let out = openclaw_env(&gw, home.path(), &["hooks", "info", "message-received"]).await;
    assert!(out.status.success(), "{out:?}");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("Events: message:received"), "{said}");

    // An agent that does not exist is refused, as OpenClaw refuses it.
    let mut c = admin(&gw).await;
    let off = c.call("hooks.status", json!({"agentId": "nobody"})).await;
    assert_eq!(off["error"]["code"], "INVALID_REQUEST", "{off}");
}
