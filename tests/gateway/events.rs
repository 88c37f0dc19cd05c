//! Events through the bus: tick, presence with stateVersion, per-connection
//! seq, scope filtering, shutdown (scenario 10) and the slow-consumer rule.

use serde_json::json;

use crate::support::{admin, connect_params, Client, TestGateway, TOKEN};

#[tokio::test]
async fn ticks_arrive_every_interval_with_increasing_seq() {
    let gw = TestGateway::with_config(json!({"gateway": {"tickIntervalMs": 100}}));
    let mut c = admin(&gw).await;
    let mut last_seq = 0;
    let mut last_ts = 0;
    for _ in 0..3 {
        let t = c.event("tick").await;
        let seq = t["seq"].as_u64().unwrap();
        assert!(seq > last_seq, "seq increases: {t}");
        let ts = t["payload"]["ts"].as_u64().unwrap();
        assert!(ts >= last_ts);
        last_seq = seq;
        last_ts = ts;
    }
}

#[tokio::test]
async fn presence_changes_are_broadcast_with_state_version_to_every_client() {
    let gw = TestGateway::start();
    let mut a = admin(&gw).await;
    let mut ro = Client::connect(&gw.ws_url()).await;
    ro.handshake(connect_params("test", "test", &[], Some(TOKEN)))
        .await;
    let r = a
        .call(
            "system-event",
            json!({"text": "", "instanceId": "Mac-Studio", "host": "studio", "mode": "ui"}),
        )
        .await;
    assert_eq!(r["ok"], true);
    for c in [&mut a, &mut ro] {
        let ev = loop {
            let ev = c.event("presence").await;
            let list = ev["payload"]["presence"].as_array().unwrap().clone();
            if list.iter().any(|e| e["instanceId"] == "Mac-Studio") {
                break ev;
            }
        };
        assert!(
            ev["stateVersion"]["presence"].as_u64().unwrap() >= 1,
            "{ev}"
        );
        assert!(ev["seq"].as_u64().unwrap() >= 1);
    }
    // Case-insensitive keys: a beacon from MAC-STUDIO replaces the row.
    a.call(
        "system-event",
        json!({"text": "", "instanceId": "MAC-STUDIO", "host": "studio2"}),
    )
    .await;
    let p = a.call("system-presence", json!({})).await["payload"].clone();
    let rows: Vec<_> = p
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| {
            e["instanceId"]
                .as_str()
                .is_some_and(|i| i.eq_ignore_ascii_case("mac-studio"))
        })
        .collect();
    assert_eq!(rows.len(), 1, "{p}");
    assert_eq!(rows[0]["host"], "studio2");
}

#[tokio::test]
async fn pairing_events_only_reach_pairing_scoped_clients() {
    let gw = TestGateway::start();
    let mut reader = Client::connect(&gw.ws_url()).await;
    reader
        .handshake(connect_params(
            "cli",
            "cli",
            &["operator.read"],
            Some(TOKEN),
        ))
        .await;
    let mut pairer = admin(&gw).await;
    let dev = crate::support::Device::new(30);
    let mut c = Client::connect_with(&gw.ws_url(), &[("host", "remote.example")]).await;
    let n = c.nonce();
    c.handshake(dev.connect_params(
        "gateway-client",
        "backend",
        "operator",
        &["operator.read"],
        Some(TOKEN),
        &n,
        crate::support::device::now_ms(),
        false,
    ))
    .await;
    pairer.event("device.pair.requested").await;
    // The reader sees the next broadcast (a presence change) but never the pairing event.
    pairer
        .call("system-event", json!({"text": "", "instanceId": "marker"}))
        .await;
    reader.event("presence").await;
    assert!(
        reader
            .backlog
            .iter()
            .all(|f| f["event"] != "device.pair.requested"),
        "{:?}",
        reader.backlog
    );
}

#[tokio::test]
async fn shutdown_sends_the_event_then_closes_1012() {
    let mut gw = TestGateway::start();
    let mut c = admin(&gw).await;
    let stopper = std::thread::spawn(move || gw.stop());
    let ev = c.event("shutdown").await;
    assert_eq!(ev["payload"], json!({"reason": "gateway stopping"}));
    assert!(ev["seq"].is_u64());
    let closed = c.closed().await;
    assert_eq!(
        (closed.code, closed.reason.as_str()),
        (1012, "service restart")
    );
    stopper.join().unwrap();
}

#[tokio::test]
async fn a_client_that_stops_reading_is_closed_as_a_slow_consumer_and_others_are_served() {
    let gw = TestGateway::with_config(
        json!({"gateway": {"maxBufferedBytes": 1048576, "tickIntervalMs": 200}}),
    );
    let mut slow = Client::connect_small_rcvbuf(&gw.ws_url()).await;
    let res = slow
        .handshake(connect_params(
            "cli",
            "cli",
            &["operator.read"],
            Some(TOKEN),
        ))
        .await;
    assert_eq!(res["ok"], true);
    let mut fast = admin(&gw).await;
    // ~16 KiB presence broadcasts fill the slow client's socket and then its
    // backlog in the gateway; a tick (not droppable) then closes it. The fast
    // client reads every broadcast, so it stays far below the 1 MiB limit.
    let text = "x".repeat(16 * 1024);
    let mut i = 0;
    loop {
        i += 1;
        assert!(i < 20_000, "the slow client was never closed");
        if i % 20 == 0 {
            let (_, _, m) = crate::support::http(gw.addr, "GET", "/metrics", &[]).await;
            if metric(&m, "ferroclaw_slow_consumer_closes_total ") >= 1 {
                break;
            }
        }
        let r = fast
            .call(
                "system-event",
                json!({"text": "", "instanceId": "big", "tags": [text.clone(), i.to_string()]}),
            )
            .await;
        assert_eq!(r["ok"], true);
        let want = i.to_string();
        loop {
            let ev = fast.event("presence").await;
            let rows = ev["payload"]["presence"].as_array().unwrap();
            if rows.iter().any(|e| e["tags"][1] == want) {
                break;
            }
        }
        fast.backlog.clear();
    }
    let closed = slow.closed().await;
    assert_eq!(
        (closed.code, closed.reason.as_str()),
        (1008, "slow consumer")
    );
    let seqs: Vec<u64> = slow
        .backlog
        .iter()
        .filter_map(|f| f["seq"].as_u64())
        .collect();
    assert!(seqs.windows(2).all(|w| w[1] > w[0]), "{seqs:?}");
    // Everyone else is still served.
    assert_eq!(fast.call("health", json!({})).await["ok"], true);
}

fn metric(metrics: &str, name: &str) -> u64 {
    metrics
        .lines()
        .find(|l| l.starts_with(name))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("{name} missing"))
}

#[tokio::test]
async fn connects_refresh_health_which_is_broadcast_with_a_newer_state_version() {
    let gw = TestGateway::start();
    let mut a = admin(&gw).await;
    let _b = admin(&gw).await;
    let ev = a.event("health").await;
    assert_eq!(ev["payload"]["ok"], true);
    assert!(ev["seq"].is_u64());
    let v1 = ev["stateVersion"]["health"].as_u64().unwrap();
    let _c = admin(&gw).await;
    let ev = a.event("health").await;
    assert!(ev["stateVersion"]["health"].as_u64().unwrap() > v1, "{ev}");
}

#[tokio::test]
async fn a_connect_storm_causes_at_most_one_health_broadcast_per_250_ms() {
    let gw = TestGateway::start();
    let mut watcher = admin(&gw).await;
    let started = std::time::Instant::now();
    let mut others = Vec::new();
    for _ in 0..40 {
        others.push(admin(&gw).await);
    }
    // Time is what is tested (a rate): the last coalesced broadcast goes
    // out within 250 ms; then count what arrived.
    tokio::time::sleep(std::time::Duration::from_millis(600)).await;
    let elapsed = started.elapsed().as_millis() as usize;
    watcher.call("health", json!({})).await;
    let broadcasts = watcher
        .backlog
        .iter()
        .filter(|f| f["event"] == "health")
        .count();
    assert!(broadcasts >= 1, "connects refresh health");
    assert!(
        broadcasts <= elapsed / 250 + 2,
        "{broadcasts} health broadcasts in {elapsed} ms for 40 connects"
    );
}
