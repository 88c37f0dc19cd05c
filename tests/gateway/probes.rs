//! `channels.status` with `probe: true` on Slack, Discord, WhatsApp,
//! Signal and Matrix (Telegram's: `telegram/probe.rs`): each account asks
//! its platform who it is with its own credential (`auth.test`,
//! `GET /users/@me`, the Graph API's business number, signal-cli's
//! `/api/v1/check`, the real homeserver's `whoami`); a credential the
//! platform refuses, or a platform that does not answer, says so.

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

#[tokio::test]
async fn whatsapp_accounts_are_probed_with_their_own_access_tokens() {
    use crate::support::fake_whatsapp::{config, FakeWhatsApp, PHONE_ID};
    let fake = FakeWhatsApp::start();
    let cfg = config(
        &fake,
        json!({ "accounts": { "revoked": { "phoneNumberId": "106540352249999",
            "accessToken": "EAAG-revoked", "webhookPath": "/whatsapp/revoked" } } }),
    );
    let gw = TestGateway::with_config(cfg);
    let mut c = admin(&gw).await;
    let s = c
        .call("channels.status", json!({"probe": true, "timeoutMs": 5000}))
        .await;
    let ok = account(&s, "whatsapp", "default");
    assert_eq!(ok["probe"]["ok"], true, "{s}");
    assert_eq!(
        ok["probe"]["bot"],
        json!({"id": PHONE_ID, "phoneNumber": "+1 555-000-1111"})
    );
    let revoked = account(&s, "whatsapp", "revoked");
    assert_eq!(revoked["probe"]["ok"], false, "{s}");
    let error = revoked["probe"]["error"].as_str().unwrap();
    assert!(error.contains("Error validating access token"), "{revoked}");
}

#[tokio::test]
async fn a_signal_daemon_that_answers_is_ok_and_one_that_is_gone_is_unreachable() {
    use crate::support::fake_signal::{config, free_port, FakeSignal, BOT};
    let fake = FakeSignal::start();
    let gone = format!("http://127.0.0.1:{}", free_port());
    let cfg = config(
        &fake.url,
        json!({ "accounts": { "gone": { "account": "+15550008888",
            "transport": { "kind": "external-native", "url": gone } } } }),
    );
    let gw = TestGateway::with_config(cfg);
    let mut c = admin(&gw).await;
    let s = c
        .call("channels.status", json!({"probe": true, "timeoutMs": 5000}))
        .await;
    let ok = account(&s, "signal", "default");
    assert_eq!(ok["probe"]["ok"], true, "{s}");
    assert_eq!(ok["probe"]["bot"], json!({"number": BOT}));
    let dead = account(&s, "signal", "gone");
    assert_eq!(dead["probe"]["ok"], false, "{s}");
    assert!(
        dead["probe"]["error"]
            .as_str()
            .is_some_and(|e| !e.is_empty()),
        "{dead}"
    );
}

#[tokio::test]
async fn matrix_accounts_are_probed_on_the_real_homeserver() {
    use crate::support::synapse::{login, synapse, unique};
    let name = unique("probe");
    let password = "probe-pass-0123456789";
    let id = synapse().register(&name, password);
    let token = login(&synapse().url, &id, password).await;
    let server = id.split_once(':').map(|(_, s)| s.to_string()).unwrap();
    let cfg = json!({ "channels": { "matrix": {
        "homeserver": synapse().url, "userId": id, "accessToken": token,
        "accounts": { "revoked": { "userId": format!("@{}:{}", unique("gone"), server),
            "accessToken": "syt_not_a_token" } },
    } } });
    let gw = TestGateway::with_config(cfg);
    let mut c = admin(&gw).await;
    let s = c
        .call(
            "channels.status",
            json!({"probe": true, "timeoutMs": 10000}),
        )
        .await;
    let ok = account(&s, "matrix", "default");
    assert_eq!(ok["probe"]["ok"], true, "{s}");
    assert_eq!(ok["probe"]["bot"], json!({"id": id}));
    let revoked = account(&s, "matrix", "revoked");
    assert_eq!(revoked["probe"]["ok"], false, "{s}");
    let error = revoked["probe"]["error"].as_str().unwrap();
    assert!(error.contains("M_UNKNOWN_TOKEN"), "{revoked}");
}
