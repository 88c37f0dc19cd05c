//! Socket Mode: the connection's life and the exactly-once contract.

use std::time::Duration;

use serde_json::json;

use super::*;
use crate::support::fake_slack::FakeSlack;
use crate::support::{admin, TestGateway};

#[tokio::test]
async fn a_dm_is_acknowledged_and_answered_once() {
    let fake = FakeSlack::start();
    let _gw = TestGateway::with_config(slack_config(&fake, json!({ "streamMode": "off" })));
    assert!(connected(&fake).await);
    let (env, _) = fake.message("D1", "im", USER, "hello slack", None);
    assert!(
        fake.until(LONG, |f| answers(f, "D1", "You said: hello slack") == 1)
            .await,
        "{:?}",
        fake.posted()
    );
    assert_eq!(fake.acks(&env), 1);
    assert_eq!(fake.unacked(), 0);
    let p = &fake.posted_in("D1")[0];
    assert!(p.markdown, "the final text goes as a markdown block");
    assert_eq!(p.thread_ts, None);
}

#[tokio::test]
async fn a_replayed_envelope_and_a_redelivered_event_are_answered_once() {
    let fake = FakeSlack::start();
    let gw = TestGateway::with_config(slack_config(&fake, json!({ "streamMode": "off" })));
    assert!(connected(&fake).await);
    let (env, ts) = fake.message("D1", "im", USER, "only once", None);
    assert!(
        fake.until(LONG, |f| answers(f, "D1", "You said: only once") == 1)
            .await
    );
    // The same envelope again, and the same event in a new envelope (a
    // retry after a lost acknowledgement), and its app_mention twin.
    fake.replay(&env);
    let body = |kind: &str| {
        json!({ "type": "event_callback", "team_id": "T0TEAM", "event_id": "EvX",
            "event": { "type": kind, "channel": "D1", "channel_type": "im", "user": USER,
                "text": "only once", "ts": ts } })
    };
    let again = fake.redeliver(body("message"));
    let twin = fake.redeliver(body("app_mention"));
    assert!(
        fake.until(LONG, |f| f.acks(&again) == 1 && f.acks(&twin) == 1)
            .await
    );
    crate::support::ledger::until_settled(gw.store(), &format!("slack/default/D1/{ts}")).await;
    assert_eq!(
        answers(&fake, "D1", "You said: only once"),
        1,
        "{:?}",
        fake.posted()
    );
    let (_, _, metrics) = crate::support::http(gw.addr, "GET", "/metrics", &[]).await;
    assert!(
        metrics
            .contains("ferroclaw_channel_replays_total{channel=\"slack\",account=\"default\"} 3"),
        "{metrics}"
    );
}

#[tokio::test]
async fn a_dropped_socket_reconnects_and_nothing_is_lost_or_doubled() {
    let fake = FakeSlack::start();
    let mut cfg = slack_config(&fake, json!({ "streamMode": "off" }));
    // Each message its own turn (not collected while the agent is busy).
    cfg["messages"] = json!({ "queue": { "mode": "followup", "debounceMs": 0 } });
    let gw = TestGateway::with_config(cfg);
    assert!(connected(&fake).await);
    for n in 0..3 {
        fake.message("D1", "im", USER, &format!("before {n}"), None);
    }
    fake.drop_sockets();
    // Sent while no socket is up: Slack keeps them for the next one.
    let mut last = String::new();
    for n in 0..3 {
        last = fake
            .message("D1", "im", USER, &format!("after {n}"), None)
            .1;
    }
    assert!(
        fake.until(LONG, |f| (0..3).all(|n| answers(
            f,
            "D1",
            &format!("You said: after {n}")
        ) == 1))
            .await,
        "{:?}",
        fake.posted()
    );
    crate::support::ledger::until_settled(gw.store(), &format!("slack/default/D1/{last}")).await;
    for n in 0..3 {
        for w in ["before", "after"] {
            assert_eq!(
                answers(&fake, "D1", &format!("You said: {w} {n}")),
                1,
                "{w} {n}: {:?}",
                fake.posted()
            );
        }
    }
    let (live, opened, _) = fake.sockets();
    assert_eq!(live, 1);
    assert_eq!(opened, 2);
    assert_eq!(fake.unacked(), 0);
}

#[tokio::test]
async fn a_disconnect_opens_the_next_socket_first_and_closes_the_old_one() {
    let fake = FakeSlack::start();
    let _gw = TestGateway::with_config(slack_config(&fake, json!({ "streamMode": "off" })));
    assert!(connected(&fake).await);
    fake.disconnect(Duration::from_secs(3));
    // The adapter opens a second socket and closes the first itself, long
    // before Slack's grace ends.
    assert!(
        fake.until(Duration::from_secs(2), |f| f.sockets().1 == 2
            && f.sockets().0 == 1)
            .await,
        "{:?}",
        fake.sockets()
    );
    fake.message("D1", "im", USER, "after the refresh", None);
    assert!(
        fake.until(LONG, |f| answers(f, "D1", "You said: after the refresh")
            == 1)
            .await
    );
    // Time is what is tested: nothing opens a third socket when Slack's
    // 3 s grace for the old one runs out.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let (live, opened, max) = fake.sockets();
    assert_eq!((live, opened), (1, 2), "one socket counts; no third one");
    assert!(max <= 2, "at most the old and the new at once: {max}");
}

#[tokio::test]
async fn a_silent_socket_is_a_zombie_degraded_and_replaced() {
    let fake = FakeSlack::start();
    let gw = TestGateway::with_config(slack_config(&fake, json!({ "streamMode": "off" })));
    assert!(connected(&fake).await);
    fake.freeze();
    // Two ping intervals (0.3 s each) without a frame: replaced.
    assert!(fake.until(LONG, |f| f.sockets().1 >= 2).await);
    let (_, _, metrics) = crate::support::http(gw.addr, "GET", "/metrics", &[]).await;
    assert!(
        metrics
            .contains("ferroclaw_channel_zombies_total{channel=\"slack\",account=\"default\"} 1"),
        "{metrics}"
    );
    fake.message("D1", "im", USER, "still there?", None);
    assert!(
        fake.until(LONG, |f| answers(f, "D1", "You said: still there?") == 1)
            .await,
        "{:?}",
        fake.posted()
    );
    let (_, _, metrics) = crate::support::http(gw.addr, "GET", "/metrics", &[]).await;
    assert!(
        metrics.contains("ferroclaw_channel_up{channel=\"slack\",account=\"default\"} 1"),
        "healthy again once the new socket answers: {metrics}"
    );
}

#[tokio::test]
async fn malformed_frames_are_ignored_and_the_socket_stays() {
    let fake = FakeSlack::start();
    let _gw = TestGateway::with_config(slack_config(&fake, json!({ "streamMode": "off" })));
    assert!(connected(&fake).await);
    for junk in [
        "not json",
        "{\"type\":\"events_api\"}",
        "{\"type\":\"events_api\",\"envelope_id\":\"e1\",\"payload\":{\"type\":\"event_callback\",\"event\":{\"type\":\"message\"}}}",
        "{\"type\":\"slash_commands\",\"envelope_id\":\"e2\",\"payload\":{}}",
        "[1,2,3]",
    ] {
        fake.raw(junk);
    }
    fake.message("D1", "im", USER, "after junk", None);
    assert!(
        fake.until(LONG, |f| answers(f, "D1", "You said: after junk") == 1)
            .await
    );
    assert_eq!(fake.sockets().1, 1, "no reconnect for bad frames");
    assert_eq!(
        fake.acks("e1"),
        1,
        "an event without a message is acknowledged"
    );
    assert_eq!(fake.acks("e2"), 1);
}

#[tokio::test]
async fn a_refused_app_token_fails_the_account_not_the_gateway() {
    let fake = FakeSlack::start();
    let gw = TestGateway::with_config(slack_config(&fake, json!({ "appToken": "xapp-wrong" })));
    let mut c = admin(&gw).await;
    let got = async {
        for _ in 0..200 {
            let s = c.call("channels.status", json!({})).await;
            let err = s["payload"]["channelAccounts"]["slack"][0]["lastError"].clone();
            if err.as_str().is_some_and(|e| e.contains("invalid_auth")) {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        false
    };
    assert!(got.await);
    assert_eq!(fake.sockets().1, 0);
    let s = c.call("channels.status", json!({})).await;
    let a = &s["payload"]["channelAccounts"]["slack"][0];
    assert_eq!(
        (&a["mode"], &a["tokenSource"]),
        (&json!("socket"), &json!("config")),
        "{s}"
    );
    let h = c.call("health", json!({})).await;
    assert_eq!(h["ok"], true, "{h}");
}

#[tokio::test]
async fn a_hanging_slack_leaves_one_socket_and_an_unanswered_post_is_not_resent() {
    let fake = FakeSlack::start();
    fake.fault(
        "apps.connections.open",
        crate::support::fake_slack::Fault::Hang(Duration::from_secs(3)),
    );
    let gw = TestGateway::with_config(slack_config(
        &fake,
        json!({ "streamMode": "off", "requestTimeoutSeconds": 1 }),
    ));
    // The hung open is given up and retried; one socket in the end.
    assert!(connected(&fake).await);
    // Time is what is tested: the hung open's late answer comes when its
    // 3 s are up, and opens nothing.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let (live, opened, max) = fake.sockets();
    assert_eq!(
        (live, opened, max),
        (1, 1, 1),
        "the late answer opened no second socket"
    );
    fake.fault(
        "chat.postMessage",
        crate::support::fake_slack::Fault::Hang(Duration::from_secs(3)),
    );
    // The hung post is given up after the 1 s timeout and its outcome is
    // left unknown: settled, never resent.
    let (_, void) = fake.message("D1", "im", USER, "into the void", None);
    crate::support::ledger::until_settled(gw.store(), &format!("slack/default/D1/{void}")).await;
    let (_, back) = fake.message("D1", "im", USER, "are you back?", None);
    assert!(
        fake.until(LONG, |f| answers(f, "D1", "You said: are you back?") == 1)
            .await
    );
    crate::support::ledger::until_settled(gw.store(), &format!("slack/default/D1/{back}")).await;
    assert!(answers(&fake, "D1", "You said: into the void") <= 1);
    assert_eq!(
        fake.calls("chat.postMessage").len(),
        2,
        "the hung post was not resent"
    );
}
