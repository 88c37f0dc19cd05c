//! OpenClaw CLI commands that once failed only on ferroclaw, run as a user
//! runs them (OpenClaw's own CLI, its own HOME) against a gateway with
//! real data behind each answer.

use std::process::Output;

use serde_json::{json, Value};

use super::interop::{openclaw_command, openclaw_env_command};
use super::runtime::auth_headers;
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
    tokio::task::spawn_blocking(move || {
        crate::support::process::output_within(&mut cmd, super::interop::CLI_LIMIT)
    })
    .await
    .unwrap()
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

/// `openclaw message send|react|edit|delete` on Telegram: the message
/// lands through the outbox, the reaction, the edit and the deletion reach
/// the Bot API, and an action no ferroclaw channel has is refused in
/// OpenClaw's words. A repeated send (same idempotency key) lands once.
#[tokio::test]
async fn openclaw_message_commands_act_on_a_telegram_chat() {
    use crate::support::fake_telegram::FakeTelegram;
    let fake = FakeTelegram::start(super::telegram::BOT_TOKEN);
    let gw = TestGateway::with_config(super::telegram::telegram_config(&fake, json!({})));
    let home = tempfile::tempdir().unwrap();
    let chat = "4242";
    let out = openclaw_env(
        &gw,
        home.path(),
        &[
            "message",
            "send",
            "--channel",
            "telegram",
            "--target",
            chat,
            "--message",
            "hello from the CLI",
        ],
    )
    .await;
    assert!(out.status.success(), "{out:?}");
    let sent = fake.sent_to(4242);
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0].text, "hello from the CLI");
    let id = sent[0].message_id.to_string();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains(&format!("Message ID: {id}")), "{said}");

    let act = |args: &'static [&'static str]| {
        let mut all = vec!["message"];
        all.extend_from_slice(args);
        all
    };
    let with_id = |mut v: Vec<&'static str>| {
        v.extend_from_slice(&["--channel", "telegram", "--target", "4242", "--message-id"]);
        v
    };
    let mut react = with_id(act(&["react"]));
    react.extend_from_slice(&[&id, "--emoji", "👍"]);
    let out = openclaw_env(&gw, home.path(), &react).await;
    assert!(out.status.success(), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("Reaction added: 👍"),
        "{out:?}"
    );
    assert_eq!(fake.reaction(4242, sent[0].message_id), ["👍"]);

    let mut edit = with_id(act(&["edit"]));
    edit.extend_from_slice(&[&id, "--message", "edited from the CLI"]);
    let out = openclaw_env(&gw, home.path(), &edit).await;
    assert!(out.status.success(), "{out:?}");
    assert_eq!(fake.sent_to(4242)[0].text, "edited from the CLI");

    let mut delete = with_id(act(&["delete"]));
    delete.push(&id);
    let out = openclaw_env(&gw, home.path(), &delete).await;
    assert!(out.status.success(), "{out:?}");
    assert_eq!(fake.deleted(), [(4242, sent[0].message_id)]);
    // Deleting it again: Telegram's refusal comes back, not a success.
    let out = openclaw_env(&gw, home.path(), &delete).await;
    assert!(!out.status.success(), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("message to delete not found"),
        "{out:?}"
    );

    let out = openclaw_env(
        &gw,
        home.path(),
        &[
            "message",
            "pin",
            "--channel",
            "telegram",
            "--target",
            chat,
            "--message-id",
            &id,
        ],
    )
    .await;
    assert!(!out.status.success(), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("Channel telegram does not support action pin."),
        "{out:?}"
    );

    // The same request twice (a client's retry): one message.
    let mut c = admin(&gw).await;
    let req = json!({"channel": "telegram", "action": "send", "idempotencyKey": "retry-1",
        "params": {"target": "telegram:4242", "message": "once"}});
    let first = c.call("message.action", req.clone()).await;
    let again = c.call("message.action", req).await;
    assert_eq!(first["payload"], again["payload"], "{first} {again}");
    let once = fake
        .sent_to(4242)
        .iter()
        .filter(|s| s.text == "once")
        .count();
    assert_eq!(once, 1);
    // A reply names the message it answers; without one it is refused.
    let first_id = first["payload"]["messageId"].as_str().unwrap().to_string();
    let reply = json!({"channel": "telegram", "action": "reply", "idempotencyKey": "reply-1",
        "params": {"target": "4242", "message": "in reply", "messageId": first_id}});
    let r = c.call("message.action", reply).await;
    assert_eq!(r["ok"], true, "{r}");
    let replied = fake
        .sent_to(4242)
        .into_iter()
        .find(|s| s.text == "in reply")
        .unwrap();
    assert_eq!(replied.reply_to.map(|m| m.to_string()), Some(first_id));
    let bare = json!({"channel": "telegram", "action": "reply", "idempotencyKey": "reply-2",
        "params": {"target": "4242", "message": "to nothing"}});
    let r = c.call("message.action", bare).await;
    assert_eq!(r["error"]["message"], "reply requires messageId", "{r}");
}

/// One `message.action` call, each with a fresh idempotency key.
async fn act(
    c: &mut crate::support::client::Client,
    n: &mut u32,
    channel: &str,
    action: &str,
    params: Value,
) -> Value {
    *n += 1;
    let req = json!({"channel": channel, "action": action, "params": params,
        "idempotencyKey": format!("k{n}")});
    c.call("message.action", req).await
}

/// The same actions on Slack and Discord (through `message.action`), each
/// through the platform's own calls: reactions by name on Slack.
#[tokio::test]
async fn message_actions_reach_slack_and_discord() {
    use crate::support::fake_discord::FakeDiscord;
    use crate::support::fake_slack::FakeSlack;
    let slack = FakeSlack::start();
    let discord = FakeDiscord::start(1000);
    let mut cfg = super::slack::slack_config(&slack, json!({}));
    ferroclaw::config::merge_patch(
        &mut cfg,
        &super::discord::discord_config(&discord, json!({})),
    );
    let gw = TestGateway::with_config(cfg);
    assert!(super::slack::connected(&slack).await);
    assert!(super::discord::ready(&discord).await);
    let mut c = admin(&gw).await;
    let mut n = 0;

    let sent = act(
        &mut c,
        &mut n,
        "slack",
        "send",
        json!({"target": "channel:C7", "message": "hi slack"}),
    )
    .await;
    let ts = sent["payload"]["messageId"].as_str().unwrap().to_string();
    let r = act(
        &mut c,
        &mut n,
        "slack",
        "react",
        json!({"target": "C7", "messageId": ts, "emoji": ":eyes:"}),
    )
    .await;
    assert_eq!(r["payload"]["added"], ":eyes:", "{r}");
    assert_eq!(slack.reactions("C7", &ts), ["eyes"]);
    let r = act(
        &mut c,
        &mut n,
        "slack",
        "react",
        json!({"target": "C7", "messageId": ts, "emoji": "👀"}),
    )
    .await;
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("emoji name"),
        "{r}"
    );
    let r = act(
        &mut c,
        &mut n,
        "slack",
        "edit",
        json!({"target": "C7", "messageId": ts, "message": "hi again"}),
    )
    .await;
    assert_eq!(r["ok"], true, "{r}");
    assert_eq!(slack.posted_in("C7")[0].text, "hi again");
    let r = act(
        &mut c,
        &mut n,
        "slack",
        "delete",
        json!({"target": "C7", "messageId": ts}),
    )
    .await;
    assert_eq!(r["ok"], true, "{r}");
    assert_eq!(slack.deleted(), [("C7".to_string(), ts)]);

    let sent = act(
        &mut c,
        &mut n,
        "discord",
        "send",
        json!({"target": "channel:D9", "message": "hi discord"}),
    )
    .await;
    let id = sent["payload"]["messageId"].as_str().unwrap().to_string();
    let r = act(
        &mut c,
        &mut n,
        "discord",
        "react",
        json!({"target": "D9", "messageId": id, "emoji": "✅"}),
    )
    .await;
    assert_eq!(r["ok"], true, "{r}");
    assert_eq!(discord.reactions("D9", &id), ["✅"]);
    let r = act(
        &mut c,
        &mut n,
        "discord",
        "react",
        json!({"target": "D9", "messageId": id, "emoji": "✅", "remove": true}),
    )
    .await;
    assert_eq!(r["payload"]["removed"], "✅", "{r}");
    assert!(discord.reactions("D9", &id).is_empty());
    let r = act(
        &mut c,
        &mut n,
        "discord",
        "delete",
        json!({"target": "D9", "messageId": id}),
    )
    .await;
    assert_eq!(r["ok"], true, "{r}");
    assert_eq!(discord.deleted(), [("D9".to_string(), id)]);
    let r = act(
        &mut c,
        &mut n,
        "matrix",
        "send",
        json!({"target": "x", "message": "y"}),
    )
    .await;
    assert_eq!(r["ok"], false, "{r}");
}

/// `openclaw gateway stability`: the process's stability record in
/// OpenClaw's shape: the memory sample taken at start, and a frame refused
/// for its size (as it happened, payload-free).
#[tokio::test]
async fn openclaw_gateway_stability_shows_memory_and_refused_frames() {
    use crate::support::raw_ws::{header, RawWs};
    let gw = TestGateway::start();
    let mut raw = RawWs::connect(gw.addr).await;
    // A text frame declaring 2 MiB before the handshake (the limit is 64 KiB).
    raw.write(&header(true, 1, 2 * 1024 * 1024)).await.unwrap();
    let (code, _) = raw.until_close().await.unwrap();
    assert_eq!(code, 1009);
    let home = tempfile::tempdir().unwrap();
    let out = openclaw(&gw, home.path(), &["gateway", "stability", "--json"]).await;
    assert!(out.status.success(), "{out:?}");
    let snap: Value = serde_json::from_slice(&out.stdout).unwrap();
    let by_type = &snap["summary"]["byType"];
    assert_eq!(by_type["payload.large"], 1, "{snap}");
    assert!(
        by_type["diagnostic.memory.sample"].as_u64() >= Some(1),
        "{snap}"
    );
    assert!(
        snap["summary"]["memory"]["latest"]["rssBytes"].as_u64() > Some(1 << 20),
        "{snap}"
    );
    let refused = snap["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["type"] == "payload.large")
        .unwrap();
    assert_eq!(
        (refused["surface"].as_str(), refused["action"].as_str()),
        (Some("ws"), Some("rejected"))
    );
    let out = openclaw(
        &gw,
        home.path(),
        &["gateway", "stability", "--type", "payload.large"],
    )
    .await;
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains("Events: 1/1000") && said.contains("Large payloads: total=1"),
        "{said}"
    );
}

/// The cron job's run history once it has `n` finished runs.
async fn runs_of(c: &mut crate::support::client::Client, id: &str, n: usize) -> Vec<Value> {
    for _ in 0..1500 {
        let r = c
            .call("cron.runs", json!({"id": id, "sortDir": "asc"}))
            .await;
        let entries = r["payload"]["entries"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        if entries.len() >= n && entries.iter().all(|e| e["status"].is_string()) {
            return entries;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    panic!("job {id} never had {n} finished runs");
}

/// `openclaw approvals grants list|revoke`: `allow-always` on a cron job's
/// own exec mints a standing grant for that command (not an allowlist
/// entry); the job's next run uses it without asking; revoked, it asks
/// again.
#[tokio::test]
async fn openclaw_approvals_grants_list_and_revoke_a_cron_jobs_standing_grant() {
    let gw = TestGateway::with_config(
        json!({"tools": {"exec": {"security": "allowlist", "ask": "on-miss"}}}),
    );
    let home = tempfile::tempdir().unwrap();
    let mut c = admin(&gw).await;
    let line = format!("@tool exec {}", json!({"command": "echo granted"}));
    let add = c
        .call(
            "cron.add",
            json!({"name": "nightly", "schedule": {"kind": "every", "everyMs": 86_400_000},
                "sessionTarget": "isolated", "payload": {"kind": "agentTurn", "message": line}}),
        )
        .await;
    let id = add["payload"]["id"].as_str().unwrap().to_string();

    c.call("cron.run", json!({"id": id})).await;
    let asked = c.event("exec.approval.requested").await;
    assert_eq!(asked["payload"]["request"]["command"], "echo granted");
    let approval = asked["payload"]["id"].as_str().unwrap().to_string();
    let r = c
        .call(
            "exec.approval.resolve",
            json!({"id": approval, "decision": "allow-always"}),
        )
        .await;
    assert_eq!(r["ok"], true, "{r}");
    let runs = runs_of(&mut c, &id, 1).await;
    assert_eq!(runs[0]["status"], "ok", "{runs:?}");

    let out = openclaw(&gw, home.path(), &["approvals", "grants", "list", "--json"]).await;
    assert!(out.status.success(), "{out:?}");
    let listed: Value = serde_json::from_slice(&out.stdout).unwrap();
    let grants = listed["grants"].as_array().unwrap();
    assert_eq!(grants.len(), 1, "{listed}");
    let g = &grants[0];
    assert_eq!(
        (
            g["cronJobId"].as_str(),
            g["command"].as_str(),
            g["mintedByApprovalId"].as_str()
        ),
        (
            Some(id.as_str()),
            Some("echo granted"),
            Some(approval.as_str())
        )
    );
    // The agent's allowlist was not widened.
    let file = c.call("exec.approvals.get", json!({})).await;
    assert!(
        file["payload"]["file"]["agents"]["main"]["allowlist"]
            .as_array()
            .is_none_or(|l| l.is_empty()),
        "{file}"
    );

    // The next run uses the grant: nothing is asked.
    c.call("cron.run", json!({"id": id})).await;
    let runs = runs_of(&mut c, &id, 2).await;
    assert_eq!(runs[1]["status"], "ok", "{runs:?}");
    assert!(c.backlog_events("exec.approval.requested").is_empty());
    let grant_id = g["grantId"].as_str().unwrap().to_string();
    let listed = c.call("exec.approval.grants.list", json!({})).await;
    assert_eq!(listed["payload"]["grants"][0]["useCount"], 1, "{listed}");

    // Revoked: the next run asks again.
    let out = openclaw(
        &gw,
        home.path(),
        &["approvals", "grants", "revoke", &grant_id],
    )
    .await;
    assert!(out.status.success(), "{out:?}");
    let again = c
        .call("exec.approval.grants.revoke", json!({"grantId": grant_id}))
        .await;
    assert_eq!(again["payload"]["outcome"], "already-revoked", "{again}");
    c.call("cron.run", json!({"id": id})).await;
    let asked = c.event("exec.approval.requested").await;
    let approval = asked["payload"]["id"].as_str().unwrap().to_string();
    c.call(
        "exec.approval.resolve",
        json!({"id": approval, "decision": "deny"}),
    )
    .await;
    runs_of(&mut c, &id, 3).await;
}
