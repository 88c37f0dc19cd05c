//! `channels.status` with `probe: true` on Slack and Discord (Telegram's:
//! `telegram/probe.rs`): each account asks its platform who it is with
//! its own token (`auth.test`, `GET /users/@me`); a token the platform
//! refuses says so.

use serde_json::{json, Value};

use crate::support::fake_discord::{FakeDiscord, BOT_ID};
use crate::support::fake_slack::{FakeSlack, BOT_USER, TEAM};
use crate::support::{admin, TestGateway};

fn account<'a>(status: &'a Value, channel: &str, id: &str) -> &'a Value {
    status["payload"]["channelAccounts"][channel]
        .as_array()
        .unwrap_or_else(|| panic!("no {channel}: {status}"))
        .iter()
        .find(|a| a["accountId"] == id)
        .unwrap_or_else(|| panic!("no {channel} account {id}: {status}"))
}

#[tokio::test]
async fn slack_and_discord_accounts_are_probed_with_their_own_tokens() {
    let slack = FakeSlack::start();
    let discord = FakeDiscord::start(1000);
    let mut cfg = super::slack::slack_config(
        &slack,
        json!({ "accounts": { "revoked": {
            "botToken": "xoxb-revoked", "appToken": "xapp-revoked", "apiBaseUrl": slack.api,
        } } }),
    );
    ferroclaw::config::merge_patch(
        &mut cfg,
        &super::discord::discord_config(&discord, json!({})),
    );
    let gw = TestGateway::with_config(cfg);
    let mut c = admin(&gw).await;
    let s = c
        .call("channels.status", json!({"probe": true, "timeoutMs": 5000}))
        .await;
    let ok = account(&s, "slack", "default");
    assert_eq!(ok["probe"]["ok"], true, "{s}");
    assert_eq!(ok["probe"]["bot"], json!({"id": BOT_USER, "teamId": TEAM}));
    let revoked = account(&s, "slack", "revoked");
    assert_eq!(revoked["probe"]["ok"], false, "{s}");
    assert!(
        revoked["probe"]["error"]
            .as_str()
            .unwrap()
            .contains("invalid_auth"),
        "{revoked}"
    );
    let d = account(&s, "discord", "default");
    assert_eq!(d["probe"]["ok"], true, "{s}");
    assert_eq!(d["probe"]["bot"], json!({"id": BOT_ID}));
}
