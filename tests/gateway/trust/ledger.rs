//! Road 9: ledger writes that fail still confirm. With the store failing
//! its writes (or its flushes) as a full disk would, a channel message is
//! never confirmed to its platform until it is stored: Telegram gets the
//! update again on the next poll (its offset never passes it), Discord
//! replays it on a resume from the stored sequence; once the store works
//! again it is answered exactly once.

use ferroclaw_actors::store::Tree;
use serde_json::{json, Value};

use super::*;
use crate::support::fake_discord::{FakeDiscord, Fault};
use crate::support::TestGateway;

/// Until `f` holds (every 20 ms; hang guard: 20 s).
async fn until(mut f: impl FnMut() -> bool) -> bool {
    let end = tokio::time::Instant::now() + LONG;
    while tokio::time::Instant::now() < end {
        if f() {
            return true;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    f()
}

fn telegram() -> (FakeTelegram, TestGateway) {
    let fake = FakeTelegram::start(BOT_TOKEN);
    let gw = TestGateway::with_config(super::super::telegram::telegram_config(
        &fake,
        json!({ "streamMode": "off" }),
    ));
    (fake, gw)
}

fn said(fake: &FakeTelegram, text: &str) -> usize {
    super::super::telegram::answers(fake, OWNER, &format!("You said: {text}"))
}

/// A later message answered proves the earlier one had its chance to be
/// answered twice: what is counted then is final.
async fn settle_telegram(fake: &FakeTelegram, id: i64) {
    fake.dm(OWNER, id, "later");
    assert!(
        fake.until(LONG, |f| said(f, "later") == 1).await,
        "{:?}",
        fake.sent()
    );
}

#[tokio::test]
async fn a_telegram_update_that_could_not_be_recorded_is_polled_again_and_answered_once() {
    let (fake, gw) = telegram();
    assert!(
        fake.until(LONG, |f| !f.calls("getUpdates").is_empty())
            .await
    );
    let faults = gw.store().faults();
    // One batch of two: the first record fails, the second would not.
    faults.fail_writes(1);
    let ids = fake.dms(&[(OWNER, 1, "remember me"), (OWNER, 2, "and me")]);
    assert!(
        fake.until(LONG, |f| said(f, "and me") == 1).await,
        "{:?}",
        fake.sent()
    );
    assert_eq!(faults.failed().0, 1);
    // The reply to the second does not wait for the first's next poll:
    // wait for that poll and its answer (once: checked after the settle).
    assert!(
        fake.until(LONG, |f| f.deliveries(ids[0]) >= 2
            && said(f, "remember me") == 1)
            .await,
        "the update came back {} times; sent: {:?}",
        fake.deliveries(ids[0]),
        fake.sent()
    );
    // While every record fails, nothing is confirmed.
    faults.fail_writes(u32::MAX);
    let update = fake.dm(OWNER, 3, "again");
    assert!(
        until(|| faults.failed().0 >= 3 && fake.deliveries(update) >= 2).await,
        "failed writes {:?}, deliveries {}",
        faults.failed(),
        fake.deliveries(update)
    );
    assert_eq!(
        fake.unconfirmed(),
        1,
        "never confirmed while it is not stored"
    );
    assert_eq!(said(&fake, "again"), 0);
    faults.clear();
    assert!(fake.until(LONG, |f| said(f, "again") == 1).await);
    settle_telegram(&fake, 4).await;
    for text in ["remember me", "and me", "again"] {
        assert_eq!(said(&fake, text), 1, "{text}: {:?}", fake.sent());
    }
}

#[tokio::test]
async fn a_telegram_batch_whose_flush_failed_is_not_confirmed_until_stored() {
    let (fake, gw) = telegram();
    assert!(
        fake.until(LONG, |f| !f.calls("getUpdates").is_empty())
            .await
    );
    let faults = gw.store().faults();
    faults.fail_flushes(u32::MAX);
    fake.dm(OWNER, 1, "keep me");
    // The flush is tried again and again; no poll confirms the batch meanwhile.
    assert!(
        until(|| faults.failed().1 >= 2).await,
        "{:?}",
        faults.failed()
    );
    assert_eq!(fake.unconfirmed(), 1);
    assert!(
        fake.sent_to(OWNER).is_empty(),
        "handed over before it was stored"
    );
    faults.clear();
    assert!(fake.until(LONG, |f| said(f, "keep me") == 1).await);
    settle_telegram(&fake, 2).await;
    assert_eq!(said(&fake, "keep me"), 1, "{:?}", fake.sent());
    assert_eq!(fake.unconfirmed(), 0);
}

#[tokio::test]
async fn a_discord_message_that_could_not_be_recorded_is_replayed_and_answered_once() {
    not_recorded_then_replayed(false).await;
}

/// The store failed before the shard could keep its new session: no
/// resume point was stored at all, and the message is replayed still.
#[tokio::test]
async fn a_discord_message_not_recorded_with_no_session_stored_is_replayed_and_answered_once() {
    not_recorded_then_replayed(true).await;
}

/// A message arrives while every write fails (from before the shard's
/// READY when `before_ready`, else once its session is stored): not
/// recorded, so the shard resumes from just before it, Discord replays it,
/// and it fails again until the store works; then it is answered once.
async fn not_recorded_then_replayed(before_ready: bool) {
    use super::super::discord::{answers, discord_config, ready, USER};
    let fake = FakeDiscord::start(45_000);
    if before_ready {
        // The shard waits at its first call (the bot's id) until the store
        // fails: its READY comes after, by construction.
        for _ in 0..1000 {
            fake.fault("GET /users/@me", Fault::Server(503));
        }
    }
    let gw = TestGateway::with_config(discord_config(&fake, json!({ "streamMode": "off" })));
    let faults = gw.store().faults();
    let stored = || {
        let key = "discord/default/session";
        gw.store()
            .get::<Value>(Tree::ChannelCursors, key)
            .unwrap()
            .is_some()
    };
    if before_ready {
        assert!(
            fake.until(LONG, |f| !f.calls("GET /users/@me").is_empty())
                .await
        );
        faults.fail_writes(u32::MAX);
        fake.clear_faults();
        assert!(ready(&fake).await);
    } else {
        assert!(ready(&fake).await);
        assert!(until(stored).await, "the session is stored");
        faults.fail_writes(u32::MAX);
    }
    fake.message("D1", None, USER, &[], "remember me");
    assert!(
        until(|| fake.gateway_stats().1 >= 1 && faults.failed().0 >= 2).await,
        "failed writes {:?}, stats {:?}",
        faults.failed(),
        fake.gateway_stats()
    );
    assert_eq!(stored(), !before_ready);
    assert_eq!(answers(&fake, "D1", "You said: remember me"), 0);
    faults.clear();
    // Each failed resume doubled the shard's backoff (at most 60 s): on a
    // loaded machine more of them happen before the clear, so the replay
    // comes within that cap, not within LONG.
    let replayed = std::time::Duration::from_secs(60) + LONG;
    assert!(
        fake.until(replayed, |f| answers(f, "D1", "You said: remember me") == 1)
            .await
    );
    // A later message answered: the count above is final.
    fake.message("D1", None, USER, &[], "later");
    assert!(
        fake.until(LONG, |f| answers(f, "D1", "You said: later") == 1)
            .await
    );
    assert_eq!(answers(&fake, "D1", "You said: remember me"), 1);
    let (identifies, ..) = fake.gateway_stats();
    assert_eq!(identifies, 1, "resumed, never identified again");
}

#[tokio::test]
async fn a_discord_message_whose_flush_failed_waits_and_is_answered_once_in_order() {
    use super::super::discord::{answers, discord_config, ready, USER};
    let fake = FakeDiscord::start(45_000);
    let gw = TestGateway::with_config(discord_config(&fake, json!({ "streamMode": "off" })));
    assert!(ready(&fake).await);
    let faults = gw.store().faults();
    faults.fail_flushes(u32::MAX);
    fake.message("D1", None, USER, &[], "first");
    assert!(until(|| faults.failed().1 >= 1).await);
    fake.message("D1", None, USER, &[], "second");
    assert!(
        until(|| faults.failed().1 >= 3).await,
        "{:?}",
        faults.failed()
    );
    assert!(
        fake.created_in("D1").is_empty(),
        "handed over before it was stored"
    );
    faults.clear();
    assert!(
        fake.until(LONG, |f| answers(f, "D1", "You said: second") == 1)
            .await
    );
    let texts: Vec<String> = fake
        .created_in("D1")
        .into_iter()
        .map(|c| c.content)
        .collect();
    assert_eq!(
        texts,
        ["You said: first", "You said: second"],
        "once each, in order"
    );
}

/// A fake Slack and a gateway connected to it over Socket Mode.
async fn slack() -> (crate::support::fake_slack::FakeSlack, TestGateway) {
    use super::super::slack::{connected, slack_config};
    let fake = crate::support::fake_slack::FakeSlack::start();
    let gw = TestGateway::with_config(slack_config(&fake, json!({ "streamMode": "off" })));
    assert!(connected(&fake).await);
    (fake, gw)
}

#[tokio::test]
async fn a_slack_envelope_that_could_not_be_recorded_is_never_acknowledged_until_it_is() {
    use super::super::slack::{answers, USER};
    let (fake, gw) = slack().await;
    let faults = gw.store().faults();
    faults.fail_writes(u32::MAX);
    let (env, _) = fake.message("D1", "im", USER, "remember me", None);
    assert!(until(|| faults.failed().0 >= 1).await);
    // Slack sends the same envelope again: still not stored, still not acknowledged.
    fake.replay(&env);
    assert!(
        until(|| faults.failed().0 >= 2).await,
        "{:?}",
        faults.failed()
    );
    assert_eq!(fake.acks(&env), 0, "acknowledged before it was stored");
    faults.clear();
    fake.replay(&env);
    assert!(
        fake.until(LONG, |f| answers(f, "D1", "You said: remember me") == 1)
            .await
    );
    assert!(fake.acks(&env) >= 1);
    fake.message("D1", "im", USER, "later", None);
    assert!(
        fake.until(LONG, |f| answers(f, "D1", "You said: later") == 1)
            .await
    );
    assert_eq!(answers(&fake, "D1", "You said: remember me"), 1);
}

#[tokio::test]
async fn a_slack_envelope_whose_flush_failed_is_acknowledged_once_stored() {
    use super::super::slack::{answers, USER};
    let (fake, gw) = slack().await;
    let faults = gw.store().faults();
    faults.fail_flushes(u32::MAX);
    let (env, _) = fake.message("D1", "im", USER, "keep me", None);
    assert!(until(|| faults.failed().1 >= 1).await);
    fake.replay(&env);
    assert!(
        until(|| faults.failed().1 >= 3).await,
        "{:?}",
        faults.failed()
    );
    assert_eq!(fake.acks(&env), 0, "acknowledged before it was stored");
    assert!(
        fake.posted_in("D1").is_empty(),
        "handed over before it was stored"
    );
    faults.clear();
    assert!(
        fake.until(LONG, |f| answers(f, "D1", "You said: keep me") == 1)
            .await
    );
    assert!(fake.until(LONG, |f| f.acks(&env) >= 1).await);
    fake.message("D1", "im", USER, "later", None);
    assert!(
        fake.until(LONG, |f| answers(f, "D1", "You said: later") == 1)
            .await
    );
    assert_eq!(answers(&fake, "D1", "You said: keep me"), 1);
}

#[tokio::test]
async fn a_slack_event_whose_flush_failed_gets_a_500_and_is_answered_once_stored() {
    use super::super::slack::answers;
    use super::super::slack::events::{event, http_config, now_s, post, ready, SECRET};
    use ferroclaw_actors::channels::slack::signature::sign;
    let fake = crate::support::fake_slack::FakeSlack::start();
    let gw = TestGateway::with_config(http_config(&fake));
    ready(&gw).await;
    let faults = gw.store().faults();
    faults.fail_flushes(u32::MAX);
    let body = event("keep me", &format!("{}.000100", crate::support::unix_s()));
    let ts = now_s();
    let (status, _) = post(
        &gw,
        &body,
        ts,
        Some(sign(SECRET, ts, body.as_bytes())),
        None,
    )
    .await;
    assert_eq!(status, 500, "not stored: Slack must try again");
    assert!(
        until(|| faults.failed().1 >= 2).await,
        "{:?}",
        faults.failed()
    );
    assert!(
        fake.posted_in("D9").is_empty(),
        "handed over before it was stored"
    );
    faults.clear();
    // Slack's retry finds the key; the message is answered once.
    let ts = now_s();
    let (status, _) = post(
        &gw,
        &body,
        ts,
        Some(sign(SECRET, ts, body.as_bytes())),
        Some("1"),
    )
    .await;
    assert_eq!(status, 200);
    assert!(
        fake.until(LONG, |f| answers(f, "D9", "You said: keep me") == 1)
            .await
    );
    let later = event("later", &format!("{}.000200", crate::support::unix_s()));
    let ts = now_s();
    let (status, _) = post(
        &gw,
        &later,
        ts,
        Some(sign(SECRET, ts, later.as_bytes())),
        None,
    )
    .await;
    assert_eq!(status, 200);
    assert!(
        fake.until(LONG, |f| answers(f, "D9", "You said: later") == 1)
            .await
    );
    assert_eq!(answers(&fake, "D9", "You said: keep me"), 1);
}
