//! The example configs in `config/examples/` work as they are: each is
//! loaded as a user would copy it, with only what points it at this
//! machine's fakes changed (the platform's URL; the token where the fake
//! insists on its own), and then used: the operator it names is answered,
//! a stranger is not, a webhook mapping renders its template into a turn.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{json, Value};

use crate::support::fake_discord::{self, FakeDiscord};
use crate::support::fake_signal::{self, Drive};
use crate::support::fake_slack::{self, FakeSlack};
use crate::support::fake_telegram::FakeTelegram;
use crate::support::fake_whatsapp::{self, FakeWhatsApp};
use crate::support::{admin, TestGateway};

const LONG: Duration = Duration::from_secs(20);

/// `config/examples/<name>.json5`, parsed as the gateway parses a config.
fn example(name: &str) -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("config/examples")
        .join(format!("{name}.json5"));
    let raw = std::fs::read_to_string(&path).unwrap();
    let file = path.display().to_string();
    let v = ferroclaw::config::parse_json5(&raw, &file).unwrap();
    // It passes the gateway's own check as a user file (defaults under it),
    // with no warning (an unknown or misspelt key would be one).
    let (_, _, warnings) =
        ferroclaw::config::check_user_raw(&raw, &file).unwrap_or_else(|e| panic!("{file}: {e}"));
    assert!(warnings.is_empty(), "{file}: {warnings:?}");
    v
}

fn with(mut v: Value, patch: Value) -> Value {
    ferroclaw::config::merge_patch(&mut v, &patch);
    v
}

#[tokio::test]
async fn the_telegram_example_answers_its_operator_and_pairs_a_stranger() {
    let cfg = example("telegram");
    let t = &cfg["channels"]["telegram"];
    let fake = FakeTelegram::start(t["botToken"].as_str().unwrap());
    let me: i64 = t["allowFrom"][0].as_str().unwrap().parse().unwrap();
    let cfg = with(
        cfg,
        json!({"channels": {"telegram": {"apiBaseUrl": fake.base}}}),
    );
    let _gw = TestGateway::with_config(cfg);
    fake.dm(me, 1, "hello from the example");
    fake.dm(31337, 2, "hello from a stranger");
    let reply = "You said: hello from the example";
    assert!(
        fake.until(LONG, |f| f.sent_to(me).iter().any(|s| s.text == reply)
            && f.sent_to(31337).len() == 1)
            .await,
        "{:?}",
        fake.sent()
    );
    assert_eq!(fake.sent_to(me).len(), 1, "{:?}", fake.sent());
    let to_stranger = &fake.sent_to(31337)[0].text;
    assert!(
        !to_stranger.starts_with("You said") && to_stranger.contains("pairing"),
        "{to_stranger}"
    );
}

#[tokio::test]
async fn the_whatsapp_example_answers_its_operator_and_pairs_a_stranger() {
    let cfg = example("whatsapp");
    let me = cfg["channels"]["whatsapp"]["allowFrom"][0]
        .as_str()
        .unwrap()
        .trim_start_matches('+')
        .to_string();
    let fake = FakeWhatsApp::start();
    // The fake's number, token and secret (its wire checks insist on them).
    let cfg = with(
        cfg,
        json!({"channels": {"whatsapp": {"apiBaseUrl": fake.base,
            "phoneNumberId": fake_whatsapp::PHONE_ID, "accessToken": fake_whatsapp::ACCESS_TOKEN,
            "appSecret": fake_whatsapp::APP_SECRET}}}),
    );
    let gw = TestGateway::with_config(cfg);
    let url = format!("http://{}", gw.addr);
    for (from, id, text) in [
        (me.as_str(), "E1", "hello from the example"),
        ("4477009", "E2", "hi"),
    ] {
        let body = fake_whatsapp::text_body(from, id, text);
        assert_eq!(
            fake_whatsapp::deliver(&url, &body, 50).await.last(),
            Some(&200)
        );
    }
    let reply = "You said: hello from the example";
    assert!(
        fake.until(LONG, |f| f
            .sent_to(&me, "text")
            .iter()
            .any(|s| s.text == reply)
            && f.sent_to("4477009", "text").len() == 1)
            .await,
        "{:?}",
        fake.sent()
    );
    let to_stranger = &fake.sent_to("4477009", "text")[0].text;
    assert!(
        !to_stranger.starts_with("You said") && to_stranger.contains("airing"),
        "{to_stranger}"
    );
}

#[tokio::test]
async fn the_signal_example_starts_its_daemon_answers_its_operator_and_pairs_a_stranger() {
    let cfg = example("signal");
    let s = &cfg["channels"]["signal"];
    let me = s["allowFrom"][0].as_str().unwrap().to_string();
    assert_eq!(s["account"], fake_signal::BOT);
    // The example's managed daemon, with the fake signal-cli as the binary
    // (on a free port, with a data directory of its own).
    let data = tempfile::tempdir().unwrap();
    let port = fake_signal::free_port();
    let cfg = with(
        cfg,
        json!({"channels": {"signal": {"transport": {"cliPath": fake_signal::script(),
            "configPath": data.path(), "httpPort": port}}}}),
    );
    let _gw = TestGateway::with_config(cfg);
    let url = format!("http://127.0.0.1:{port}");
    for _ in 0..400 {
        if url.stats().await.is_some_and(|s| s["streams"] == 1) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    url.inject(fake_signal::text(&me, 1, "hello from the example"))
        .await;
    url.inject(fake_signal::text("+4477009", 2, "hi")).await;
    assert!(
        url.until_sent(LONG, &me, "You said: hello from the example", 1)
            .await
    );
    assert!(url.until_sent(LONG, "+4477009", "", 1).await);
    let to_stranger = url.sent_to("+4477009").await[0]["params"]["message"].to_string();
    assert!(
        !to_stranger.contains("You said") && to_stranger.contains("airing"),
        "{to_stranger}"
    );
}

#[tokio::test]
async fn the_matrix_example_answers_its_operator_and_pairs_a_stranger() {
    use super::matrix::{bot_said, until};
    use crate::support::synapse::{synapse, unique};
    let cfg = example("matrix");
    let m = &cfg["channels"]["matrix"];
    assert_eq!(m["dm"]["allowFrom"][0], "@you:example.org");
    // The example on the test homeserver: its bot and owner made there.
    let me = synapse().human(&unique("you")).await;
    let stranger = synapse().human(&unique("stranger")).await;
    let bot = unique("examplebot");
    let bot_id = synapse().register(&bot, "example-pass-0123");
    let cfg = with(
        cfg,
        json!({"channels": {"matrix": {"homeserver": synapse().url, "userId": bot_id,
            "password": "example-pass-0123", "dm": { "allowFrom": [me.user_id] },
            "autoJoin": "always"}}}),
    );
    let dm = me.dm(&bot_id).await;
    let theirs = stranger.dm(&bot_id).await;
    let _gw = TestGateway::with_config(cfg);
    assert!(
        until(LONG, async || me.joined(&dm, &bot_id).await
            && stranger.joined(&theirs, &bot_id).await)
        .await
    );
    me.say(&dm, "e1", "hello from the example").await;
    stranger.say(&theirs, "e2", "hi").await;
    assert!(
        until(LONG, async || bot_said(&me, &dm, &bot_id).await
            == ["You said: hello from the example"])
        .await
    );
    assert!(
        until(LONG, async || bot_said(&stranger, &theirs, &bot_id)
            .await
            .len()
            == 1)
        .await
    );
    let to_stranger = &bot_said(&stranger, &theirs, &bot_id).await[0];
    assert!(
        !to_stranger.contains("You said") && to_stranger.contains("airing"),
        "{to_stranger}"
    );
}

#[tokio::test]
async fn the_slack_example_answers_its_operator_in_socket_mode() {
    let cfg = example("slack");
    let me = cfg["channels"]["slack"]["allowFrom"][0]
        .as_str()
        .unwrap()
        .to_string();
    let fake = FakeSlack::start();
    let cfg = with(
        cfg,
        json!({"channels": {"slack": {"apiBaseUrl": fake.api,
            "botToken": fake_slack::BOT_TOKEN, "appToken": fake_slack::APP_TOKEN}}}),
    );
    let _gw = TestGateway::with_config(cfg);
    assert!(fake.until(LONG, |f| f.sockets().0 == 1).await, "connected");
    fake.message("D1", "im", &me, "hello from the example", None);
    assert!(
        fake.until(LONG, |f| f
            .posted_in("D1")
            .iter()
            .any(|p| p.text == "You said: hello from the example"))
            .await,
        "{:?}",
        fake.posted()
    );
}

#[tokio::test]
async fn the_discord_example_answers_its_operator_and_ignores_unlisted_servers() {
    let cfg = example("discord");
    let me = cfg["channels"]["discord"]["allowFrom"][0]
        .as_str()
        .unwrap()
        .to_string();
    let fake = FakeDiscord::start(1000);
    let cfg = with(
        cfg,
        json!({"channels": {"discord": {"apiBaseUrl": fake.api, "gatewayUrl": fake.gateway,
            "token": fake_discord::TOKEN}}}),
    );
    let _gw = TestGateway::with_config(cfg);
    assert!(
        fake.until(LONG, |f| f.gateway_stats().0 >= 1).await,
        "identified"
    );
    fake.message("G9", Some("999"), &me, &[], "<@1> in a server not listed");
    fake.message("D1", None, &me, &[], "hello from the example");
    assert!(
        fake.until(LONG, |f| f
            .created_in("D1")
            .iter()
            .any(|c| c.content == "You said: hello from the example"))
            .await,
        "{:?}",
        fake.created()
    );
    assert!(fake.created_in("G9").is_empty(), "{:?}", fake.created());
}

#[tokio::test]
async fn the_webhooks_example_turns_a_github_push_into_a_turn() {
    let cfg = example("webhooks");
    let token = cfg["hooks"]["token"].as_str().unwrap().to_string();
    let gw = TestGateway::with_config(cfg);
    let push = json!({
        "repository": {"full_name": "me/ferroclaw"},
        "pusher": {"name": "alice"},
        "head_commit": {"message": "fix the build"},
    });
    let http = reqwest::Client::new();
    let url = format!("http://{}/hooks/github", gw.addr);
    let refused = http.post(&url).json(&push).send().await.unwrap();
    assert_eq!(refused.status().as_u16(), 401);
    let ok = http
        .post(&url)
        .bearer_auth(&token)
        .json(&push)
        .send()
        .await
        .unwrap();
    assert_eq!(ok.status().as_u16(), 200, "{:?}", ok.text().await);
    let mut c = admin(&gw).await;
    let want = "New push to me/ferroclaw by alice: fix the build";
    for _ in 0..500 {
        let h = c
            .call("chat.history", json!({"sessionKey": "hook:github"}))
            .await;
        let texts: Vec<String> = h["payload"]["messages"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|m| m["content"][0]["text"].as_str().map(String::from))
            .collect();
        if texts.iter().any(|t| t.contains(want)) && texts.len() >= 2 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the mapping's turn never reached hook:github");
}
