//! The gateway connection: resume with no lost and no doubled event.

use std::time::Duration;

use serde_json::json;

use super::*;
use crate::support::fake_discord::FakeDiscord;
use crate::support::{admin, TestGateway};

fn followup(mut cfg: serde_json::Value) -> serde_json::Value {
    cfg["messages"] = json!({ "queue": { "mode": "followup", "debounceMs": 0 } });
    cfg
}

#[tokio::test]
async fn a_dropped_socket_resumes_and_events_of_the_gap_are_answered_once() {
    let fake = FakeDiscord::start(1000);
    let gw = TestGateway::with_config(followup(discord_config(
        &fake,
        json!({ "streamMode": "off" }),
    )));
    assert!(ready(&fake).await);
    for n in 0..3 {
        fake.message("D1", None, USER, &[], &format!("before {n}"));
    }
    fake.drop_socket();
    // Sent while the socket is down: Discord replays them on resume.
    let mut last = String::new();
    for n in 0..3 {
        last = fake.message("D1", None, USER, &[], &format!("after {n}"));
    }
    assert!(
        fake.until(LONG, |f| (0..3).all(|n| answers(
            f,
            "D1",
            &format!("You said: after {n}")
        ) == 1))
            .await,
        "{:?}",
        fake.created()
    );
    crate::support::ledger::until_settled(gw.store(), &format!("discord/default/D1/{last}")).await;
    for n in 0..3 {
        for w in ["before", "after"] {
            assert_eq!(
                answers(&fake, "D1", &format!("You said: {w} {n}")),
                1,
                "{w} {n}"
            );
        }
    }
    let (identifies, resumes, opened, max, up) = fake.gateway_stats();
    assert_eq!(identifies, 1, "resumed, not identified again");
    assert_eq!(resumes, 1);
    assert_eq!(opened, 2);
    assert_eq!(max, 1, "never two sockets at once");
    assert!(up);
}

#[tokio::test]
async fn a_replayed_event_is_answered_once() {
    let fake = FakeDiscord::start(1000);
    let gw = TestGateway::with_config(discord_config(&fake, json!({ "streamMode": "off" })));
    assert!(ready(&fake).await);
    let id = fake.message("D1", None, USER, &[], "only once");
    assert!(
        fake.until(LONG, |f| answers(f, "D1", "You said: only once") == 1)
            .await
    );
    let seq = fake.last_seq();
    fake.replay(seq);
    fake.replay(seq);
    // Both replays were taken and known for what they are: counted, not run.
    let replays = "ferroclaw_channel_replays_total{channel=\"discord\",account=\"default\"} 2";
    let counted = crate::support::wait_for(LONG, || async {
        let (_, _, metrics) = crate::support::http(gw.addr, "GET", "/metrics", &[]).await;
        metrics.contains(replays)
    })
    .await;
    assert!(counted, "the replays were never counted");
    crate::support::ledger::until_settled(gw.store(), &format!("discord/default/D1/{id}")).await;
    assert_eq!(answers(&fake, "D1", "You said: only once"), 1);
    let (_, _, metrics) = crate::support::http(gw.addr, "GET", "/metrics", &[]).await;
    assert!(metrics.contains(replays), "{metrics}");
}

#[tokio::test]
async fn unacknowledged_heartbeats_are_a_zombie_replaced_by_a_resume() {
    let fake = FakeDiscord::start(250);
    let gw = TestGateway::with_config(discord_config(&fake, json!({ "streamMode": "off" })));
    assert!(ready(&fake).await);
    assert!(fake.until(LONG, |f| f.heartbeats() >= 2).await);
    fake.stop_acking();
    assert!(
        fake.until(LONG, |f| f.gateway_stats().1 >= 1).await,
        "{:?}",
        fake.gateway_stats()
    );
    let (_, _, metrics) = crate::support::http(gw.addr, "GET", "/metrics", &[]).await;
    assert!(
        metrics
            .contains("ferroclaw_channel_zombies_total{channel=\"discord\",account=\"default\"} 1"),
        "{metrics}"
    );
    assert!(
        metrics.contains("ferroclaw_channel_degraded{channel=\"discord\",account=\"default\"} 1"),
        "degraded while no ack comes: {metrics}"
    );
    fake.ack_again();
    fake.message("D1", None, USER, &[], "still there?");
    assert!(
        fake.until(LONG, |f| answers(f, "D1", "You said: still there?") == 1)
            .await
    );
    let up = async {
        for _ in 0..100 {
            let (_, _, m) = crate::support::http(gw.addr, "GET", "/metrics", &[]).await;
            if m.contains("ferroclaw_channel_up{channel=\"discord\",account=\"default\"} 1") {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        false
    };
    assert!(up.await, "healthy again once acks come");
    assert_eq!(fake.gateway_stats().0, 1, "resumed, never identified twice");
}

#[tokio::test]
async fn reconnect_and_invalid_session_are_followed() {
    let fake = FakeDiscord::start(1000);
    let _gw = TestGateway::with_config(discord_config(&fake, json!({ "streamMode": "off" })));
    assert!(ready(&fake).await);
    fake.frame(json!({ "op": 7, "d": null }));
    assert!(
        fake.until(LONG, |f| f.gateway_stats().1 == 1).await,
        "op 7 resumes"
    );
    fake.frame(json!({ "op": 9, "d": false }));
    // Identified again after Discord's 1-5 s.
    assert!(
        fake.until(LONG, |f| f.gateway_stats().0 == 2).await,
        "{:?}",
        fake.gateway_stats()
    );
    let t = fake.identify_times();
    assert!(
        t[1] - t[0] >= Duration::from_secs(1),
        "identify spacing: {:?}",
        t[1] - t[0]
    );
    fake.message("D1", None, USER, &[], "after the new session");
    assert!(
        fake.until(LONG, |f| answers(
            f,
            "D1",
            "You said: after the new session"
        ) == 1)
            .await
    );
    assert_eq!(fake.gateway_stats().3, 1, "one socket at a time");
}

#[tokio::test]
async fn malformed_payloads_are_ignored_and_the_socket_stays() {
    let fake = FakeDiscord::start(1000);
    let _gw = TestGateway::with_config(discord_config(&fake, json!({ "streamMode": "off" })));
    assert!(ready(&fake).await);
    for junk in [
        json!("just a string"),
        json!({ "op": "ten" }),
        json!({ "op": 0, "t": "MESSAGE_CREATE", "d": { "content": "no ids" } }),
        json!({ "op": 0, "s": 99999, "t": "MESSAGE_CREATE", "d": null }),
        json!({ "op": 10, "d": { "heartbeat_interval": "soon" } }),
        json!({ "op": 42 }),
    ] {
        fake.frame(junk);
    }
    fake.event(
        "MESSAGE_CREATE",
        json!({ "id": "77", "channel_id": "G9", "guild_id": "UNKNOWN",
        "content": "an unknown guild", "author": { "id": USER } }),
    );
    fake.message("D1", None, USER, &[], "after junk");
    assert!(
        fake.until(LONG, |f| answers(f, "D1", "You said: after junk") == 1)
            .await
    );
    assert!(
        fake.created_in("G9").is_empty(),
        "an unknown guild is not answered"
    );
    assert_eq!(fake.gateway_stats().2, 1, "no reconnect for bad payloads");
}

#[tokio::test]
async fn a_refused_token_fails_the_account_not_the_gateway() {
    let fake = FakeDiscord::start(1000);
    let gw = TestGateway::with_config(discord_config(&fake, json!({ "token": "wrong" })));
    let mut c = admin(&gw).await;
    let got = async {
        for _ in 0..200 {
            let s = c.call("channels.status", json!({})).await;
            let err = s["payload"]["channelAccounts"]["discord"][0]["lastError"].clone();
            if err.as_str().is_some_and(|e| e.contains("refused")) {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        false
    };
    assert!(got.await);
    assert_eq!(fake.gateway_stats().2, 0, "no socket with a refused token");
    let s = c.call("channels.status", json!({})).await;
    assert_eq!(
        s["payload"]["channelAccounts"]["discord"][0]["mode"], "gateway",
        "{s}"
    );
    let h = c.call("health", json!({})).await;
    assert_eq!(h["ok"], true, "{h}");
}

#[tokio::test]
async fn close_4004_is_fatal_for_the_account_only() {
    let fake = FakeDiscord::start(1000);
    let gw = TestGateway::with_config(discord_config(&fake, json!({})));
    assert!(ready(&fake).await);
    fake.close(4004);
    let mut c = admin(&gw).await;
    let got = async {
        for _ in 0..200 {
            let s = c.call("channels.status", json!({})).await;
            let err = s["payload"]["channelAccounts"]["discord"][0]["lastError"].clone();
            if err.as_str().is_some_and(|e| e.contains("4004")) {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        false
    };
    assert!(got.await);
    let h = c.call("health", json!({})).await;
    assert_eq!(h["ok"], true, "{h}");
}

#[tokio::test]
async fn a_gateway_that_says_nothing_is_replaced_and_hanging_rest_is_not_resent() {
    let fake = FakeDiscord::start(1000);
    fake.mute_next(1);
    let gw = TestGateway::with_config(discord_config(
        &fake,
        json!({ "streamMode": "off", "requestTimeoutSeconds": 1 }),
    ));
    // The first socket hears no hello: given up after the request timeout.
    assert!(ready(&fake).await, "{:?}", fake.gateway_stats());
    assert_eq!(fake.gateway_stats().2, 2);
    // A create that hangs past the timeout has an unknown outcome: it is
    // not sent again, and the next message is answered.
    fake.fault(
        "POST /channels/D1/messages",
        crate::support::fake_discord::Fault::Hang(Duration::from_secs(3)),
    );
    let void = fake.message("D1", None, USER, &[], "into the void");
    crate::support::ledger::until_settled(gw.store(), &format!("discord/default/D1/{void}")).await;
    let back = fake.message("D1", None, USER, &[], "are you back?");
    assert!(
        fake.until(LONG, |f| answers(f, "D1", "You said: are you back?") == 1)
            .await
    );
    crate::support::ledger::until_settled(gw.store(), &format!("discord/default/D1/{back}")).await;
    assert!(
        answers(&fake, "D1", "You said: into the void") <= 1,
        "{:?}",
        fake.created()
    );
    assert_eq!(
        fake.calls("POST /channels/D1/messages").len(),
        2,
        "the hung one was not resent"
    );
}
