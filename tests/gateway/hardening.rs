//! Faults an adversarial run found (issue 12), each with the regression
//! test that failed before its fix: frame lengths checked at the header,
//! the per-connection in-flight bound, agent.wait that cannot leak or hang.

use std::time::Duration;

use serde_json::json;

use crate::support::raw_ws::{header, text_frame, RawWs, ServerFrame};
use crate::support::{admin, connect_params, Client, TestGateway, TOKEN};

/// Hang guard: far longer than any answer should take, far shorter than
/// the handshake timeout the tests configure.
const GUARD: Duration = Duration::from_secs(10);

async fn challenge(ws: &mut RawWs) {
    match tokio::time::timeout(GUARD, ws.frame()).await.unwrap() {
        Some(ServerFrame::Text(t)) => assert!(t.contains("connect.challenge"), "{t}"),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_preauth_frame_declaring_too_much_is_closed_1009_at_its_header() {
    // A long handshake timeout: only the header check can close these in time.
    let gw = TestGateway::with_config(json!({"gateway": {"handshakeTimeoutMs": 120000}}));
    for declared in [1u64 << 40, 24 << 20, 64 * 1024 + 1] {
        let mut ws = RawWs::connect(gw.addr).await;
        challenge(&mut ws).await;
        ws.write(&header(true, 1, declared)).await.unwrap();
        ws.write(&[b'x'; 1000]).await.unwrap();
        let closed = tokio::time::timeout(GUARD, ws.until_close()).await;
        assert_eq!(
            closed.expect("closed at the header, not after the payload"),
            Some((1009, "preauth payload too large".to_string())),
            "{declared}"
        );
    }
}

#[tokio::test]
async fn a_hundred_unauthenticated_floods_are_all_closed_and_others_are_served() {
    let gw = TestGateway::with_config(json!({"gateway": {"handshakeTimeoutMs": 120000}}));
    let mut tasks = Vec::new();
    for _ in 0..100 {
        let addr = gw.addr;
        tasks.push(tokio::spawn(async move {
            let mut ws = RawWs::connect(addr).await;
            challenge(&mut ws).await;
            ws.write(&header(true, 2, 1 << 40)).await.unwrap();
            // Stream into the declared frame until the gateway hangs up.
            let chunk = vec![0u8; 64 * 1024];
            let mut sent = 0usize;
            while sent < (8 << 20) && ws.write(&chunk).await.is_ok() {
                sent += chunk.len();
                if let Ok(Some(ServerFrame::Close(code, _))) =
                    tokio::time::timeout(Duration::from_millis(1), ws.frame()).await
                {
                    return (code, sent);
                }
            }
            let closed = tokio::time::timeout(GUARD, ws.until_close())
                .await
                .expect("closed");
            (closed.map_or(0, |c| c.0), sent)
        }));
    }
    let mut c = admin(&gw).await;
    let h = c.call("health", json!({})).await;
    assert_eq!(h["ok"], true, "{h}");
    for t in tasks {
        let (code, _sent) = tokio::time::timeout(GUARD * 3, t).await.unwrap().unwrap();
        assert_eq!(code, 1009);
    }
    let h = c.call("health", json!({})).await;
    assert_eq!(h["ok"], true, "{h}");
}

#[tokio::test]
async fn after_hello_a_frame_declaring_more_than_max_payload_is_closed_at_its_header() {
    let gw = TestGateway::with_config(json!({"gateway": {"maxPayload": 1048576}}));
    let mut ws = RawWs::connect(gw.addr).await;
    challenge(&mut ws).await;
    let connect = json!({"type": "req", "id": "c", "method": "connect",
        "params": connect_params("cli", "cli", &["operator.read"], Some(TOKEN))});
    ws.write(&text_frame(&connect.to_string())).await.unwrap();
    let hello = tokio::time::timeout(GUARD, ws.frame()).await.unwrap();
    assert!(
        matches!(&hello, Some(ServerFrame::Text(t)) if t.contains("hello-ok")),
        "{hello:?}"
    );
    // Up to maxPayload is fine after hello (a real request of 700 KB).
    let big = json!({"type": "req", "id": "b", "method": "health", "params": {"pad": "y".repeat(700_000)}});
    ws.write(&text_frame(&big.to_string())).await.unwrap();
    loop {
        match tokio::time::timeout(GUARD, ws.frame()).await.unwrap() {
            Some(ServerFrame::Text(t)) if t.contains("\"id\":\"b\"") => break,
            Some(ServerFrame::Text(_)) => {}
            other => panic!("{other:?}"),
        }
    }
    ws.write(&header(true, 1, 1048577)).await.unwrap();
    let closed = tokio::time::timeout(GUARD, ws.until_close()).await.unwrap();
    assert_eq!(closed, Some((1009, "payload too large".to_string())));
}

#[tokio::test]
async fn a_connection_at_its_in_flight_bound_is_not_read_until_an_answer_goes_out() {
    let gw = TestGateway::with_config(json!({"gateway": {"maxInFlightRequests": 4}}));
    let mut flooder = admin(&gw).await;
    let mut bystander = admin(&gw).await;
    let mut waits = Vec::new();
    for i in 0..4 {
        waits.push(
            flooder
                .send_req(
                    "agent.wait",
                    json!({"runId": format!("never-{i}"), "timeoutMs": 1500}),
                )
                .await,
        );
    }
    let h = flooder.send_req("health", json!({})).await;
    // Another client is served while the flooder's socket waits.
    let b = bystander.call("health", json!({})).await;
    assert_eq!(b["ok"], true);
    // The flooder's health is read only once a wait was answered.
    let first = tokio::time::timeout(GUARD, flooder.recv_res())
        .await
        .unwrap();
    assert!(
        waits.contains(&first["id"].as_str().unwrap().to_string()),
        "the request over the bound waited: {first}"
    );
    assert_eq!(first["payload"]["status"], "timeout", "{first}");
    let h = tokio::time::timeout(GUARD, flooder.res(&h)).await.unwrap();
    assert_eq!(h["ok"], true);
    for id in waits.iter().filter(|id| first["id"] != id.as_str()) {
        let r = tokio::time::timeout(GUARD, flooder.res(id)).await.unwrap();
        assert_eq!(r["payload"]["status"], "timeout");
    }
}

#[tokio::test]
async fn a_pipelining_flood_never_stops_another_client_or_the_admin_endpoints() {
    let gw = TestGateway::start();
    let mut flood = RawWs::connect(gw.addr).await;
    challenge(&mut flood).await;
    let connect = json!({"type": "req", "id": "c", "method": "connect",
        "params": connect_params("cli", "cli", &["operator.admin", "operator.write"], Some(TOKEN))});
    flood
        .write(&text_frame(&connect.to_string()))
        .await
        .unwrap();
    // 20,000 agent.wait then 20,000 health in one pipelined burst, and
    // the flooder never reads its answers.
    let mut burst = Vec::new();
    for i in 0..20_000 {
        let f = json!({"type": "req", "id": format!("w{i}"), "method": "agent.wait",
            "params": {"runId": format!("nope-{i}"), "timeoutMs": 1}});
        burst.extend(text_frame(&f.to_string()));
    }
    for i in 0..20_000 {
        let f = json!({"type": "req", "id": format!("h{i}"), "method": "health"});
        burst.extend(text_frame(&f.to_string()));
    }
    let writer = tokio::spawn(async move {
        let _ = flood.write(&burst).await;
        flood
    });
    let mut c = admin(&gw).await;
    for _ in 0..200 {
        let h = tokio::time::timeout(GUARD, c.call("health", json!({})))
            .await
            .expect("a bystander's health is answered during the flood");
        assert_eq!(h["ok"], true);
        let (status, _, _) =
            tokio::time::timeout(GUARD, crate::support::http(gw.addr, "GET", "/health", &[]))
                .await
                .expect("/health is answered during the flood");
        assert_eq!(status, 200);
    }
    let fresh = tokio::time::timeout(GUARD, Client::connect(&gw.ws_url()))
        .await
        .expect("new connections are accepted during the flood");
    drop(fresh);
    writer.abort();
}
