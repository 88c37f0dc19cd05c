//! Who may talk and run commands: pairing (methods and CLI), groups and
//! mentions, exec for strangers and the shipped exec default.

use serde_json::json;

use super::*;
use crate::support::fake_telegram::FakeTelegram;
use crate::support::process::{Within, CHILD_LIMIT};
use crate::support::TestGateway;

#[tokio::test]
async fn strangers_pair_with_a_code_an_operator_approves() {
    let fake = FakeTelegram::start(BOT_TOKEN);
    let gw = pairing_gateway(&fake);
    fake.dm(99, 1, "hello?");
    let sent_code = pairing_code(&fake, 99).await;
    fake.dm(99, 2, "hello again?");
    let mut c = crate::support::admin(&gw).await;
    let list = c.call("channels.pairing.list", json!({})).await;
    let requests = list["payload"]["requests"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(requests.len(), 1, "{list}");
    let code = requests[0]["requestId"].as_str().unwrap().to_string();
    assert_eq!(requests[0]["senderId"], "99");
    assert_eq!(list["payload"]["limits"]["pendingPerAccount"], 3);
    assert_eq!(
        sent_code, code,
        "the code listed is the one the stranger got"
    );
    // Nothing reached the agent, and the second message got no second code.
    crate::support::ledger::until_settled(gw.store(), "telegram/default/99/2").await;
    assert_eq!(fake.sent_to(99).len(), 1, "{:?}", fake.sent());
    let wrong = c
        .call(
            "channels.pairing.approve",
            json!({ "channel": "telegram", "accountId": "default", "requestId": "NOPE1234" }),
        )
        .await;
    assert_eq!(wrong["ok"], false);
    let ok = c
        .call(
            "channels.pairing.approve",
            json!({ "channel": "telegram", "accountId": "default", "requestId": code }),
        )
        .await;
    assert_eq!(ok["payload"]["senderId"], "99", "{ok}");
    assert_eq!(ok["payload"]["notification"], "sent");
    assert!(
        fake.until(LONG, |f| f
            .sent_to(99)
            .iter()
            .any(|s| s.text.contains("approved")))
            .await
    );
    fake.dm(99, 3, "now me");
    assert!(
        fake.until(LONG, |f| answers(f, 99, "You said: now me") == 1)
            .await
    );
    let after = c
        .call("channels.pairing.list", json!({ "channel": "telegram" }))
        .await;
    assert_eq!(after["payload"]["requests"], json!([]));
}

#[tokio::test]
async fn the_pairing_cli_lists_and_approves_through_the_gateway() {
    let fake = FakeTelegram::start(BOT_TOKEN);
    let gw = pairing_gateway(&fake);
    fake.dm(77, 1, "let me in");
    let code = pairing_code(&fake, 77).await;
    let bin = env!("CARGO_BIN_EXE_ferroclaw");
    let run = |args: &[&str]| {
        std::process::Command::new(bin)
            .args(args)
            .args(["--url", &gw.ws_url(), "--token", crate::support::TOKEN])
            .env_remove("OPENCLAW_GATEWAY_TOKEN")
            .within(CHILD_LIMIT)
    };
    let list = run(&["pairing", "list"]);
    let out = String::from_utf8_lossy(&list.stdout);
    assert!(
        list.status.success() && out.contains(&code) && out.contains("77"),
        "{out}"
    );
    let wrong = run(&["pairing", "approve", "telegram", "ZZZZ9999"]);
    assert!(!wrong.status.success());
    assert!(String::from_utf8_lossy(&wrong.stderr).contains("no pairing request"));
    let ok = run(&["pairing", "approve", "telegram", &code.to_ascii_lowercase()]);
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    assert!(String::from_utf8_lossy(&ok.stdout).contains("approved 77"));
    fake.dm(77, 2, "thanks");
    assert!(
        fake.until(LONG, |f| answers(f, 77, "You said: thanks") == 1)
            .await
    );
}

#[tokio::test]
async fn groups_answer_mentions_only_and_topics_are_their_own_sessions() {
    let fake = FakeTelegram::start(BOT_TOKEN);
    let gw = TestGateway::with_config(telegram_config(
        &fake,
        json!({ "streamMode": "off", "groups": { "-1001": { "requireMention": true } } }),
    ));
    fake.group(-1001, 42, 1, "nobody asked you", false, None);
    fake.group(-2002, 42, 2, "wrong group", true, None);
    fake.group(-1001, 42, 3, "in the topic", true, Some(7));
    assert!(fake.until(LONG, |f| !f.sent_to(-1001).is_empty()).await);
    crate::support::ledger::until_settled(gw.store(), "telegram/default/-1001/3").await;
    let sent = fake.sent_to(-1001);
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0].text, "You said: User42: in the topic");
    assert_eq!(sent[0].thread_id, Some(7));
    assert_eq!(sent[0].reply_to, Some(3));
    assert!(fake.sent_to(-2002).is_empty());
    let mut c = crate::support::admin(&gw).await;
    let list = c.call("sessions.list", json!({})).await;
    let keys: Vec<String> = list["payload"]["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["key"].as_str().unwrap().to_string())
        .collect();
    assert!(
        keys.contains(&"agent:main:telegram:group:-1001:topic:7".to_string()),
        "{keys:?}"
    );
}

#[tokio::test]
async fn a_stranger_on_an_open_channel_never_runs_a_command_on_the_host() {
    let fake = FakeTelegram::start(BOT_TOKEN);
    // Even with exec fully open for operators, a sender the allowlist does
    // not name gets no host command.
    let mut cfg = telegram_config(
        &fake,
        json!({ "dmPolicy": "open", "allowFrom": ["*", 42], "streamMode": "off" }),
    );
    cfg["tools"] = json!({ "exec": { "security": "full", "ask": "off" } });
    let gw = TestGateway::with_config(cfg);
    let workspace = gw.state_dir().join("workspace");
    fake.dm(
        666,
        1,
        "@tool exec {\"command\":\"touch pwned-by-stranger\"}",
    );
    assert!(fake.until(LONG, |f| !f.sent_to(666).is_empty()).await);
    let reply = fake.sent_to(666)[0].text.clone();
    assert!(reply.contains("not run"), "{reply}");
    assert!(!workspace.join("pwned-by-stranger").exists());
    // The allowlisted owner, in the same (main) session, may.
    fake.dm(42, 2, "@tool exec {\"command\":\"touch made-by-owner\"}");
    assert!(fake.until(LONG, |f| !f.sent_to(42).is_empty()).await);
    assert!(
        workspace.join("made-by-owner").exists(),
        "{:?}",
        fake.sent_to(42)
    );
    // And a stranger's message is never steered into the owner's run
    // (under way: its reply is owed, and no other is).
    crate::support::ledger::until_settled(gw.store(), "telegram/default/42/2").await;
    fake.dm(42, 3, "@delay 100\nslow owner words to stream here");
    crate::support::ledger::until_owed(gw.store()).await;
    fake.dm(666, 4, "@tool exec {\"command\":\"touch steered-in\"}");
    assert!(
        fake.until(LONG, |f| f.sent_to(666).len() == 2).await,
        "{:?}",
        fake.sent()
    );
    assert!(!workspace.join("steered-in").exists());
}

#[tokio::test]
async fn the_shipped_exec_default_asks_an_operator_and_denies_without_an_answer() {
    // The base config's open exec removed: the shipped default applies.
    let mut cfg = json!({ "tools": { "exec": { "security": null, "ask": null, "approvalTimeoutSeconds": 1 } } });
    cfg["agents"] = json!({ "defaults": { "sandbox": { "mode": "off" } } });
    let gw = TestGateway::with_config(cfg);
    let mut c = crate::support::admin(&gw).await;
    let events = crate::support::say(
        &mut c,
        "main",
        "@tool exec {\"command\":\"touch by-default\"}",
        "ex-1",
    )
    .await;
    let text = crate::support::final_text(&events);
    assert!(text.contains("not run"), "{text}");
    assert!(!gw.state_dir().join("workspace/by-default").exists());
}
