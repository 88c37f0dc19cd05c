//! The Events API over HTTP: signed requests only, the challenge, retries
//! answered once.

use std::time::Duration;

use ferroclaw_actors::channels::slack::signature::sign;
use ferroclaw_actors::store::Tree;
use serde_json::{json, Value};

use super::*;
use crate::support::fake_slack::FakeSlack;
use crate::support::TestGateway;

pub const SECRET: &str = "8f742231b10e8888abcd99yyyzzz85a5";

pub fn http_config(fake: &FakeSlack) -> Value {
    slack_config(
        fake,
        json!({ "mode": "http", "appToken": null, "signingSecret": SECRET, "streamMode": "off" }),
    )
}

pub fn now_s() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

pub async fn post(
    gw: &TestGateway,
    body: &str,
    ts: u64,
    signature: Option<String>,
    retry: Option<&str>,
) -> (u16, String) {
    let mut req = reqwest::Client::new()
        .post(format!("http://{}/slack/events", gw.addr))
        .header("content-type", "application/json")
        .header("x-slack-request-timestamp", ts.to_string())
        .body(body.to_string());
    if let Some(s) = signature {
        req = req.header("x-slack-signature", s);
    }
    if let Some(r) = retry {
        req = req.header("x-slack-retry-num", r);
    }
    let res = req.send().await.unwrap();
    (res.status().as_u16(), res.text().await.unwrap())
}

pub fn event(text: &str, ts: &str) -> String {
    json!({ "type": "event_callback", "team_id": "T0TEAM", "event_id": format!("Ev{ts}"),
        "event": { "type": "message", "channel": "D9", "channel_type": "im",
            "user": USER, "text": text, "ts": ts } })
    .to_string()
}

/// Waits until the receiver knows the bot (it answers 503 until then).
pub async fn ready(gw: &TestGateway) {
    let body = json!({ "type": "url_verification", "challenge": "c" }).to_string();
    for _ in 0..200 {
        let ts = now_s();
        let (status, _) = post(gw, &body, ts, Some(sign(SECRET, ts, body.as_bytes())), None).await;
        if status == 200 {
            let probe = event("", "1.0");
            let (s, _) = post(
                gw,
                &probe,
                ts,
                Some(sign(SECRET, ts, probe.as_bytes())),
                None,
            )
            .await;
            if s == 200 {
                return;
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the events endpoint never got ready");
}

#[tokio::test]
async fn forged_stale_and_unsigned_requests_get_401_and_run_nothing() {
    let fake = FakeSlack::start();
    let gw = TestGateway::with_config(http_config(&fake));
    ready(&gw).await;
    let body = event("forged hello", "1700000001.000100");
    let ts = now_s();
    let forged = sign("not-the-secret", ts, body.as_bytes());
    assert_eq!(post(&gw, &body, ts, Some(forged), None).await.0, 401);
    let stale = now_s() - 6 * 60;
    let old = sign(SECRET, stale, body.as_bytes());
    assert_eq!(post(&gw, &body, stale, Some(old), None).await.0, 401);
    assert_eq!(post(&gw, &body, ts, None, None).await.0, 401);
    // A signature for another body.
    let other = sign(SECRET, ts, b"{}");
    assert_eq!(post(&gw, &body, ts, Some(other), None).await.0, 401);
    // Refused before it was taken: no Slack message is in the ledger.
    let taken = gw
        .store()
        .scan::<Value>(Tree::ChannelInbound, "slack/")
        .unwrap();
    assert!(taken.is_empty(), "{taken:?}");
    assert!(fake.posted().is_empty(), "{:?}", fake.posted());
    // Not JSON, signed: 400.
    let junk = "not json";
    let (s, _) = post(&gw, junk, ts, Some(sign(SECRET, ts, junk.as_bytes())), None).await;
    assert_eq!(s, 400);
}

#[tokio::test]
async fn the_challenge_is_answered_and_retries_are_answered_once() {
    let fake = FakeSlack::start();
    let gw = TestGateway::with_config(http_config(&fake));
    ready(&gw).await;
    let body = json!({ "type": "url_verification", "token": "t", "challenge": "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P" }).to_string();
    let ts = now_s();
    let (status, text) = post(
        &gw,
        &body,
        ts,
        Some(sign(SECRET, ts, body.as_bytes())),
        None,
    )
    .await;
    assert_eq!(status, 200);
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        v["challenge"],
        "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"
    );
    let sent = format!("{}.000100", crate::support::unix_s());
    let body = event("over http", &sent);
    for retry in [None, Some("1"), Some("2")] {
        let ts = now_s();
        let (status, _) = post(
            &gw,
            &body,
            ts,
            Some(sign(SECRET, ts, body.as_bytes())),
            retry,
        )
        .await;
        assert_eq!(status, 200);
    }
    assert!(
        fake.until(LONG, |f| answers(f, "D9", "You said: over http") == 1)
            .await,
        "{:?}",
        fake.posted()
    );
    crate::support::ledger::until_settled(gw.store(), &format!("slack/default/D9/{sent}")).await;
    assert_eq!(answers(&fake, "D9", "You said: over http"), 1);
    // Other paths are not the Events API.
    let (s, _, _) = crate::support::http(gw.addr, "GET", "/slack/events", &[]).await;
    assert_eq!(s, 405);
}
