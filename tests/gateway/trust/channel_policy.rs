//! Road 4: per-channel tool policy keyed by the session key. Under the
//! default `dmScope: "main"` a Telegram DM lands in `agent:main:main`, yet
//! `channels.telegram.tools.deny` applies to its turn because the message
//! came by Telegram; a sub-agent it spawns inherits the deny.

use serde_json::json;

use super::*;
use crate::support::fake_provider::{FakeProvider, Script};
use crate::support::{admin, final_text, say};

fn telegram_denies_exec() -> serde_json::Value {
    json!({ "channels": { "telegram": { "tools": { "deny": ["exec"] } } } })
}

#[tokio::test]
async fn a_channels_deny_applies_to_its_messages_in_the_main_session() {
    let (fake, gw) = start(telegram_denies_exec(), &[]);
    // The owner, an operator: only the channel layer stands in the way.
    let reply = ask(
        &fake,
        OWNER,
        1,
        &tool("exec", json!({"command": "touch via-telegram"})),
    )
    .await;
    assert!(
        reply.contains("Unknown tool") && reply.contains("exec"),
        "{reply}"
    );
    assert!(!workspace(&gw).join("via-telegram").exists());
    // The same session from the web chat: Telegram's deny does not apply.
    let mut c = admin(&gw).await;
    let events = say(
        &mut c,
        "main",
        &tool("exec", json!({"command": "touch via-webchat"})),
        "w1",
    )
    .await;
    assert!(
        final_text(&events).contains("Tool exec returned"),
        "{events:?}"
    );
    assert!(workspace(&gw).join("via-webchat").exists());
}

#[tokio::test]
async fn a_sub_agent_inherits_the_channel_policy_of_the_turn_that_spawned_it() {
    let (fake, gw) = start(telegram_denies_exec(), &[]);
    let task = tool("exec", json!({"command": "touch via-sub-agent"}));
    let reply = ask(
        &fake,
        OWNER,
        1,
        &tool("sessions_spawn", json!({"task": task})),
    )
    .await;
    assert!(reply.contains("accepted"), "{reply}");
    let mut c = admin(&gw).await;
    let child = child_session(&mut c).await;
    let h = history_until(&mut c, &child, |m| {
        m.iter().any(|x| {
            x["role"] == "assistant"
                && x["content"][0]["text"]
                    .as_str()
                    .is_some_and(|t| t.contains("Tool exec returned"))
        })
    })
    .await;
    let results = tool_results(&h);
    assert!(
        !results.is_empty() && results.iter().all(|r| r.contains("Unknown tool")),
        "{results:?}"
    );
    assert!(!workspace(&gw).join("via-sub-agent").exists());
}

#[tokio::test]
async fn the_strictest_channel_of_a_collected_turn_wins() {
    // Two messages collected into one turn: one from Telegram (exec denied),
    // one from the web chat. The turn is offered what both channels allow.
    let provider = FakeProvider::start().await;
    provider.push(Script::text(&["busy"]).with_delay(std::time::Duration::from_secs(30)));
    provider.respond_with(|_| Script::text(&["ok"]));
    let mut extra = telegram_denies_exec();
    ferroclaw::config::merge_patch(
        &mut extra,
        &json!({
            "models": { "providers": { "fake": { "baseUrl": provider.base_url(), "api": "openai-completions", "apiKey": "k0", "models": [{ "id": "m1" }] } } },
            "agents": { "defaults": { "model": { "primary": "fake/m1", "fallbacks": [] } } },
            "messages": { "queue": { "mode": "collect", "debounceMs": 100 } },
        }),
    );
    let (fake, _gw) = start(extra, &[]);
    let mut c = admin(&_gw).await;
    // A long run keeps the session busy until both messages wait in its queue.
    crate::support::chat_send(&mut c, "main", "keep busy", "busy").await;
    fake.dm(OWNER, 1, "from telegram");
    wait_stored(&mut c, "from telegram").await;
    crate::support::chat_send(&mut c, "main", "from the web chat", "web-2").await;
    wait_stored(&mut c, "from the web chat").await;
    let r = c
        .call("chat.abort", json!({"sessionKey": "main", "runId": "busy"}))
        .await;
    assert_eq!(r["ok"], true, "{r}");
    let deadline = tokio::time::Instant::now() + LONG;
    while provider.request_count() < 2 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the collected turn never ran"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let offered = |i: usize| -> Vec<String> {
        let b = provider.requests.lock().unwrap()[i].0.clone();
        b["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["function"]["name"].as_str().unwrap().to_string())
            .collect()
    };
    assert!(
        offered(0).contains(&"exec".to_string()),
        "the web chat's turn: {:?}",
        offered(0)
    );
    let collected = provider.requests.lock().unwrap()[1].0.clone();
    let last = collected["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .to_string();
    assert!(
        last.contains("from telegram") && last.contains("from the web chat"),
        "{last}"
    );
    assert!(
        !offered(1).contains(&"exec".to_string()),
        "{:?}",
        offered(1)
    );
    assert!(offered(1).contains(&"read".to_string()), "{:?}", offered(1));
}

/// Until the main session has stored a message containing `needle`.
async fn wait_stored(c: &mut crate::support::Client, needle: &str) {
    let deadline = tokio::time::Instant::now() + LONG;
    while !stored(c, "agent:main:main").await.iter().any(|e| {
        e["message"]["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.contains(needle))
    }) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{needle} never stored"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}
