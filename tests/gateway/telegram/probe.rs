//! `channels.status` with `probe: true`: each account asks Telegram who it
//! is, now, with its own token: a good token names the bot, a revoked one
//! says Telegram refused it, a Bot API that does not answer says so within
//! the deadline; without `probe` nothing is asked.

use serde_json::{json, Value};

use super::{telegram_config, BOT_TOKEN};
use crate::support::fake_telegram::{FakeTelegram, BOT_ID, BOT_USERNAME};
use crate::support::{admin, TestGateway};

fn account<'a>(status: &'a Value, id: &str) -> &'a Value {
    status["payload"]["channelAccounts"]["telegram"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["accountId"] == id)
        .unwrap_or_else(|| panic!("no account {id}: {status}"))
}

#[tokio::test]
async fn a_probe_asks_each_account_s_platform_now_and_says_what_it_answered() {
    let fake = FakeTelegram::start(BOT_TOKEN);
    // A port nothing listens on: bound, then closed.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let cfg = telegram_config(
        &fake,
        json!({ "accounts": {
            "revoked": { "botToken": "999:REVOKED", "apiBaseUrl": fake.base },
            "gone": { "botToken": "998:GONE", "apiBaseUrl": dead },
        } }),
    );
    let gw = TestGateway::with_config(cfg);
    let mut c = admin(&gw).await;

    let plain = c.call("channels.status", json!({})).await;
    assert!(account(&plain, "default").get("probe").is_none(), "{plain}");

    let s = c
        .call("channels.status", json!({"probe": true, "timeoutMs": 5000}))
        .await;
    let ok = account(&s, "default");
    assert_eq!(ok["probe"]["ok"], true, "{s}");
    assert_eq!(
        ok["probe"]["bot"],
        json!({"id": BOT_ID, "username": BOT_USERNAME})
    );
    assert!(ok["lastProbeAt"].as_u64().unwrap() > 0);
    let revoked = account(&s, "revoked");
    assert_eq!(revoked["probe"]["ok"], false, "{s}");
    assert!(
        revoked["probe"]["error"].as_str().unwrap().contains("401"),
        "{revoked}"
    );
    let gone = account(&s, "gone");
    assert_eq!(gone["probe"]["ok"], false, "{s}");
    assert!(
        gone["probe"]["error"]
            .as_str()
            .unwrap()
            .contains("unreachable"),
        "{gone}"
    );

    // One channel only, as asked.
    let one = c
        .call(
            "channels.status",
            json!({"probe": true, "channel": "telegram"}),
        )
        .await;
    assert_eq!(account(&one, "default")["probe"]["ok"], true, "{one}");
}
