//! `status` and `health` answer from the actors: the stored sessions (count
//! and recent, per agent), the channel summary and the heartbeat's real
//! schedule; the heartbeat keeps its next due time across restarts.

use std::time::Duration;

use serde_json::{json, Value};

use super::telegram::{telegram_config, BOT_TOKEN};
use crate::support::fake_telegram::FakeTelegram;
use crate::support::{admin, say, TestGateway};

fn keys(rows: &Value) -> Vec<String> {
    let mut k: Vec<String> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["key"].as_str().unwrap().to_string())
        .collect();
    k.sort();
    k
}

#[tokio::test]
async fn status_and_health_count_the_stored_sessions_and_show_the_heartbeat() {
    let tg = FakeTelegram::start(BOT_TOKEN);
    let mut cfg = telegram_config(&tg, json!({ "streamMode": "off" }));
    ferroclaw::config::merge_patch(
        &mut cfg,
        &json!({"agents": {"defaults": {"heartbeat": {"every": "45m", "target": "last"}}}}),
    );
    let gw = TestGateway::with_config(cfg);
    let mut c = admin(&gw).await;
    say(&mut c, "main", "hello", "s1").await;
    say(&mut c, "web:notes", "hello", "s2").await;
    let want = ["agent:main:main", "agent:main:web:notes"];

    let s = c.call("status", json!({})).await["payload"].clone();
    assert_eq!(s["sessions"]["count"], 2, "{s}");
    assert_eq!(keys(&s["sessions"]["recent"]), want);
    let mine = &s["sessions"]["byAgent"][0];
    assert_eq!(
        (mine["agentId"].as_str(), mine["count"].as_u64()),
        (Some("main"), Some(2))
    );
    let row = &s["sessions"]["recent"][0];
    assert!(
        row["updatedAt"].as_u64().unwrap() > 0 && row["sessionId"].is_string(),
        "{row}"
    );
    let beat = &s["heartbeat"]["agents"][0];
    assert_eq!(
        (
            beat["enabled"].as_bool(),
            beat["every"].as_str(),
            beat["everyMs"].as_u64()
        ),
        (Some(true), Some("45m"), Some(2_700_000)),
        "{beat}"
    );
    let _ = &tg;
    assert_eq!(s["channelSummary"][0], "Telegram: configured", "{s}");
    assert!(
        s["channelSummary"][1]
            .as_str()
            .unwrap()
            .starts_with("  - default ("),
        "{s}"
    );

    // health (what `ferroclaw health` and `openclaw health` print).
    c.call("sessions.patch", json!({"key": "main", "label": "x"}))
        .await;
    let h = c.call("health", json!({})).await["payload"].clone();
    assert_eq!(h["sessions"]["count"], 2, "{h}");
    assert_eq!(keys(&h["sessions"]["recent"]), want);
    let agent = &h["agents"][0];
    assert_eq!(agent["sessions"]["count"], 2, "{h}");
    let hb = &agent["heartbeat"];
    assert_eq!(
        hb,
        &json!({"enabled": true, "every": "45m", "everyMs": 2_700_000,
            "prompt": hb["prompt"], "target": "last", "ackMaxChars": 300}),
    );
    assert!(hb["prompt"].as_str().unwrap().contains("HEARTBEAT_OK"));
    assert_eq!(h["heartbeatSeconds"], 2700);
}

/// The heartbeat's record in the store: `{nextDueAt, last}`.
fn stored(gw: &TestGateway) -> Value {
    gw.store()
        .get::<Value>(ferroclaw_actors::store::Tree::Meta, "heartbeat")
        .unwrap()
        .unwrap_or(Value::Null)
}

#[tokio::test]
async fn the_heartbeat_keeps_its_due_time_across_restarts_and_beats_when_it_passed() {
    let cfg = json!({"agents": {"defaults": {"heartbeat": {"every": "1h"}}}});
    let mut gw = TestGateway::with_config(cfg);
    admin(&gw).await; // the tree is up
    let due = stored(&gw)["nextDueAt"].as_u64().expect("stored at start");
    let now = ferroclaw_actors::now_ms();
    assert!(due > now + 3_500_000 && due <= now + 3_600_000, "{due}");
    // Time is what is tested: a second later, a restart that started the
    // hour over would store another due time.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    gw.restart();
    assert_eq!(
        stored(&gw)["nextDueAt"].as_u64(),
        Some(due),
        "a restart keeps the cadence instead of starting the hour over"
    );
    // A due time that passed while the gateway was down: it beats at once.
    // Written with the gateway stopped: a running heartbeat stores its own
    // schedule at start, and that write could land after this one.
    gw.stop();
    let past = json!({"nextDueAt": ferroclaw_actors::now_ms() - 60_000});
    {
        let store = ferroclaw_actors::store::Store::open(gw.state_dir()).unwrap();
        store
            .put(ferroclaw_actors::store::Tree::Meta, "heartbeat", &past)
            .unwrap();
        store.flush().await.unwrap();
    }
    gw.resume();
    let mut c = admin(&gw).await;
    let mut last = Value::Null;
    for _ in 0..400 {
        last = c.call("last-heartbeat", json!({})).await;
        if !last["payload"].is_null() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(last["payload"]["reason"], "empty-heartbeat-file", "{last}");
    let next = stored(&gw)["nextDueAt"].as_u64().unwrap();
    assert!(
        next > ferroclaw_actors::now_ms() + 3_500_000,
        "the next one an hour on"
    );
    drop(c);
    gw.restart();
    // The last outcome survives too.
    let mut c = admin(&gw).await;
    let last = c.call("last-heartbeat", json!({})).await;
    assert_eq!(last["payload"]["reason"], "empty-heartbeat-file", "{last}");
}
