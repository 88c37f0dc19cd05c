//! Admin HTTP on the gateway port.

use crate::support::{http, TestGateway, TOKEN};

#[tokio::test]
async fn liveness_and_readiness_answer_get_and_head_and_405_otherwise() {
    let gw = TestGateway::start();
    for path in ["/health", "/healthz"] {
        let (status, _, body) = http(gw.addr, "GET", path, &[]).await;
        assert_eq!(status, 200);
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&body).unwrap(),
            serde_json::json!({"ok": true, "status": "live"})
        );
        let (status, _, _) = http(gw.addr, "HEAD", path, &[]).await;
        assert_eq!(status, 200);
        let (status, headers, _) = http(gw.addr, "POST", path, &[("content-length", "0")]).await;
        assert_eq!(status, 405);
        assert!(
            headers
                .iter()
                .any(|(k, v)| k == "allow" && v == "GET, HEAD"),
            "{headers:?}"
        );
    }
    for path in ["/ready", "/readyz"] {
        let (status, _, body) = http(gw.addr, "GET", path, &[]).await;
        assert_eq!(status, 200);
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(v["ready"], true);
        assert!(v["uptimeMs"].is_u64(), "local callers get details");
    }
    let (status, _, _) = http(gw.addr, "GET", "/nope", &[]).await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn presence_requires_the_gateway_token() {
    let gw = TestGateway::start();
    let (status, _, _) = http(gw.addr, "GET", "/presence", &[]).await;
    assert_eq!(status, 401);
    let (status, _, _) = http(
        gw.addr,
        "GET",
        "/presence",
        &[("authorization", "Bearer wrong")],
    )
    .await;
    assert_eq!(status, 401);
    let auth = format!("Bearer {TOKEN}");
    let (status, _, body) = http(gw.addr, "GET", "/presence", &[("authorization", &auth)]).await;
    assert_eq!(status, 200);
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert!(v.as_array().unwrap().iter().any(|e| e["mode"] == "gateway"));
}

#[tokio::test]
async fn metrics_are_prometheus_text_with_the_core_series() {
    let gw = TestGateway::start();
    let mut c = crate::support::admin(&gw).await;
    c.call("health", serde_json::json!({})).await;
    let mut bad = crate::support::Client::connect(&gw.ws_url()).await;
    bad.handshake(crate::support::connect_params(
        "cli",
        "cli",
        &[],
        Some("wrong"),
    ))
    .await;
    let (status, headers, body) = http(gw.addr, "GET", "/metrics", &[]).await;
    assert_eq!(status, 200);
    assert!(headers
        .iter()
        .any(|(k, v)| k == "content-type" && v.starts_with("text/plain; version=0.0.4")));
    let value = |series: &str| -> i64 {
        body.lines()
            .find(|l| l.starts_with(series))
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("{series} missing in\n{body}"))
    };
    assert!(value("ferroclaw_connections ") >= 1);
    assert!(value("ferroclaw_frames_in_total{type=\"req\"}") >= 3);
    assert!(value("ferroclaw_frames_out_total{type=\"res\"}") >= 3);
    assert!(value("ferroclaw_frames_out_total{type=\"event\"}") >= 2);
    assert!(value("ferroclaw_auth_failures_total") >= 1);
    assert!(value("ferroclaw_mailbox_depth{actor=\"event_bus\"}") >= 0);
    assert!(value("ferroclaw_uptime_seconds") >= 0);
    assert!(value("ferroclaw_heap_bytes{state=\"in_use\"}") > 0);
    assert!(value("ferroclaw_heap_bytes{state=\"free\"}") >= 0);
    assert!(body.contains("# TYPE ferroclaw_connections gauge"));
}

#[tokio::test]
async fn metrics_count_live_sessions_until_they_idle_out_and_the_runs_started() {
    let gw = TestGateway::with_config(serde_json::json!({
        "agents": { "defaults": { "sessionIdleSeconds": 1 } }
    }));
    let mut c = crate::support::admin(&gw).await;
    let value = |body: &str, series: &str| -> i64 {
        body.lines()
            .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
            .unwrap_or_else(|| panic!("{series} missing in\n{body}"))
    };
    let (_, _, before) = http(gw.addr, "GET", "/metrics", &[]).await;
    assert_eq!(value(&before, "ferroclaw_sessions_live"), 0);
    c.call(
        "chat.send",
        serde_json::json!({"sessionKey": "main", "message": "hi", "idempotencyKey": "m1"}),
    )
    .await;
    loop {
        let ev = c.event("chat").await;
        if ev["payload"]["state"] == "final" {
            break;
        }
    }
    let (_, _, during) = http(gw.addr, "GET", "/metrics", &[]).await;
    assert_eq!(value(&during, "ferroclaw_sessions_live"), 1);
    assert_eq!(value(&during, "ferroclaw_runs_started_total"), 1);
    assert_eq!(
        value(&during, "ferroclaw_runs_restarted_total"),
        0,
        "it did not fail"
    );
    // The idle session stops (1 s) and its state is dropped.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
    loop {
        let (_, _, body) = http(gw.addr, "GET", "/metrics", &[]).await;
        if value(&body, "ferroclaw_sessions_live") == 0 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the idle session never stopped:\n{body}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn bearer_guessing_on_any_http_surface_locks_the_client_out_with_retry_after() {
    let gw = TestGateway::with_config(serde_json::json!({"gateway": {
        "auth": {"rateLimit": {"maxAttempts": 5, "windowMs": 60000, "lockoutMs": 60000}},
        "http": {"endpoints": {"chatCompletions": {"enabled": true}}},
    }}));
    let auth = format!("Bearer {TOKEN}");
    // Failures on several surfaces count toward one lockout per client.
    let wrong = [("authorization", "Bearer wrong")];
    for path in ["/presence", "/v1/models", "/presence", "/v1/models"] {
        let (status, _, _) = http(gw.addr, "GET", path, &wrong).await;
        assert_eq!(status, 401, "{path}");
    }
    let (status, _, _) = http(
        gw.addr,
        "POST",
        "/tools/invoke",
        &[("authorization", "Bearer wrong"), ("content-length", "0")],
    )
    .await;
    assert_eq!(status, 401);
    // Locked out now: even the right secret is refused until it ends.
    for path in ["/presence", "/v1/models"] {
        let (status, headers, body) = http(gw.addr, "GET", path, &[("authorization", &auth)]).await;
        assert_eq!(status, 429, "{path}: {body}");
        let retry: u64 = headers
            .iter()
            .find(|(k, _)| k == "retry-after")
            .map(|(_, v)| v.parse().unwrap())
            .unwrap_or_else(|| panic!("{headers:?}"));
        assert!((1..=60).contains(&retry), "{retry}");
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(v["error"]["type"], "rate_limited");
    }
    // The WebSocket handshake shares the lockout.
    let mut c = crate::support::Client::connect(&gw.ws_url()).await;
    let res = c
        .handshake(crate::support::connect_params(
            "cli",
            "cli",
            &["operator.read"],
            Some(TOKEN),
        ))
        .await;
    assert_eq!(
        res["error"]["details"]["code"], "AUTH_RATE_LIMITED",
        "{res}"
    );
}

#[tokio::test]
async fn a_right_bearer_clears_earlier_failures() {
    let gw = TestGateway::with_config(serde_json::json!({"gateway": {
        "auth": {"rateLimit": {"maxAttempts": 3, "windowMs": 60000, "lockoutMs": 60000}},
    }}));
    let auth = format!("Bearer {TOKEN}");
    for _ in 0..3 {
        for _ in 0..2 {
            let (status, _, _) = http(
                gw.addr,
                "GET",
                "/presence",
                &[("authorization", "Bearer no")],
            )
            .await;
            assert_eq!(status, 401);
        }
        let (status, _, _) = http(gw.addr, "GET", "/presence", &[("authorization", &auth)]).await;
        assert_eq!(status, 200);
    }
}
