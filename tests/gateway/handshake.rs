//! protocol.md scenarios 1, 3, 4 and 5: the handshake, v3 clients,
//! handshake violations and bad credentials.

use serde_json::json;
use tokio_tungstenite::tungstenite::Message;

use crate::support::{admin, connect_params, Client, TestGateway, TOKEN};

#[tokio::test]
async fn challenge_comes_first_and_cli_with_token_gets_hello_ok_v4() {
    let gw = TestGateway::start();
    let mut c = Client::connect(&gw.ws_url()).await;
    let ch = &c.challenge;
    assert_eq!(ch["type"], "event");
    assert!(ch.get("seq").is_none(), "challenge has no seq: {ch}");
    assert_eq!(ch["payload"]["nonce"].as_str().unwrap().len(), 36);
    assert!(ch["payload"]["ts"].as_u64().unwrap() > 0);
    // Appendix A: the CLI's own connect, verbatim.
    let res = c
        .handshake(json!({"minProtocol":4,"maxProtocol":4,
            "client":{"id":"cli","version":"2026.9.6","platform":"linux","deviceFamily":"Linux","mode":"cli","instanceId":"8d5b3f1e-0000-4000-8000-000000000001"},
            "caps":[],"auth":{"token":TOKEN},"role":"operator","scopes":["operator.read"]}))
        .await;
    assert_eq!(res["ok"], true, "{res}");
    let p = &res["payload"];
    assert_eq!(p["type"], "hello-ok");
    assert_eq!(p["protocol"], 4);
    assert!(p["server"]["connId"].is_string() && p["server"]["version"].is_string());
    assert!(p["features"]["methods"]
        .as_array()
        .unwrap()
        .iter()
        .any(|m| m == "health"));
    assert!(p["features"]["events"]
        .as_array()
        .unwrap()
        .iter()
        .any(|m| m == "tick"));
    assert_eq!(
        p["features"]["capabilities"],
        serde_json::json!(["published-model-catalog"]),
        "only what ferroclaw honours"
    );
    assert_eq!(
        p["policy"],
        json!({"maxPayload":26214400,"maxBufferedBytes":52428800,"tickIntervalMs":30000})
    );
    assert_eq!(
        p["auth"],
        json!({"method":"token","role":"operator","scopes":["operator.read"]})
    );
    let snap = &p["snapshot"];
    assert!(snap["presence"].is_array());
    assert_eq!(snap["health"]["ok"], true);
    assert!(snap["stateVersion"]["presence"].is_u64() && snap["stateVersion"]["health"].is_u64());
    assert!(snap["uptimeMs"].is_u64());
    assert_eq!(snap["sessionDefaults"]["mainSessionKey"], "agent:main:main");
    assert_eq!(snap["authMode"], "token");
    // The frame has exactly the res keys.
    let mut keys: Vec<_> = res.as_object().unwrap().keys().cloned().collect();
    keys.sort();
    assert_eq!(keys, ["id", "ok", "payload", "type"]);
    // And it can call methods at once.
    let h = c.call("health", json!({})).await;
    assert_eq!(h["ok"], true);
}

#[tokio::test]
async fn v3_clients_are_served_with_the_v3_hello_shape() {
    let gw = TestGateway::start();
    let mut c = Client::connect(&gw.ws_url()).await;
    let mut p = connect_params(
        "gateway-client",
        "backend",
        &["operator.read", "operator.write"],
        Some(TOKEN),
    );
    p["minProtocol"] = json!(3);
    p["maxProtocol"] = json!(3);
    let res = c.handshake(p).await;
    assert_eq!(res["ok"], true, "{res}");
    assert_eq!(res["payload"]["protocol"], 3);
    assert!(
        res["payload"].get("auth").is_none(),
        "v3 hello has auth only with a device token"
    );
    assert!(res["payload"]["features"].get("capabilities").is_none());
    let s = c.call("status", json!({})).await;
    assert_eq!(s["ok"], true, "{s}");
}

#[tokio::test]
async fn protocol_mismatch_gets_expected_protocol_and_close_1002() {
    let gw = TestGateway::start();
    let mut c = Client::connect(&gw.ws_url()).await;
    let mut p = connect_params("cli", "cli", &[], Some(TOKEN));
    p["minProtocol"] = json!(5);
    p["maxProtocol"] = json!(6);
    let res = c.handshake(p).await;
    assert_eq!(res["ok"], false);
    assert_eq!(
        res["error"],
        json!({"code":"INVALID_REQUEST","message":"protocol mismatch","details":{"expectedProtocol":4}})
    );
    let closed = c.closed().await;
    assert_eq!(
        (closed.code, closed.reason.as_str()),
        (1002, "protocol mismatch")
    );
}

#[tokio::test]
async fn first_request_must_be_connect() {
    let gw = TestGateway::start();
    let mut c = Client::connect(&gw.ws_url()).await;
    let res = c.call("health", json!({})).await;
    assert_eq!(res["error"]["code"], "INVALID_REQUEST");
    assert_eq!(
        res["error"]["message"],
        "invalid handshake: first request must be connect"
    );
    let closed = c.closed().await;
    assert_eq!(
        (closed.code, closed.reason.as_str()),
        (1008, "invalid handshake: first request must be connect")
    );
}

#[tokio::test]
async fn an_invalid_first_frame_closes_1008_without_a_res() {
    let gw = TestGateway::start();
    let mut c = Client::connect(&gw.ws_url()).await;
    c.send_text(r#"{"type":"req","id":7,"method":"connect"}"#)
        .await;
    let closed = c.closed().await;
    assert_eq!(
        (closed.code, closed.reason.as_str()),
        (1008, "invalid request frame")
    );
    assert!(
        c.backlog.is_empty(),
        "no res before the close: {:?}",
        c.backlog
    );
}

#[tokio::test]
async fn a_non_json_first_frame_closes_1000_like_openclaw() {
    let gw = TestGateway::start();
    let mut c = Client::connect(&gw.ws_url()).await;
    c.send_text("hello?").await;
    let closed = c.closed().await;
    assert_eq!(closed.code, 1000);
    assert!(c.backlog.is_empty());
}

#[tokio::test]
async fn unknown_connect_params_are_rejected_with_the_error_text() {
    let gw = TestGateway::start();
    let mut c = Client::connect(&gw.ws_url()).await;
    let mut p = connect_params("cli", "cli", &[], Some(TOKEN));
    p["surprise"] = json!(true);
    let res = c.handshake(p).await;
    let msg = res["error"]["message"].as_str().unwrap();
    assert!(msg.starts_with("invalid connect params: "), "{msg}");
    assert!(msg.contains("surprise"), "{msg}");
    assert_eq!(c.closed().await.code, 1008);
}

#[tokio::test]
async fn invalid_role_closes_1008() {
    let gw = TestGateway::start();
    let mut c = Client::connect(&gw.ws_url()).await;
    let mut p = connect_params("cli", "cli", &[], Some(TOKEN));
    p["role"] = json!("superuser");
    let res = c.handshake(p).await;
    assert_eq!(res["error"]["message"], "invalid role");
    assert_eq!(
        c.closed().await,
        crate::support::client::Closed {
            code: 1008,
            reason: "invalid role".into()
        }
    );
}

#[tokio::test]
async fn preauth_frames_over_64_kib_close_1009() {
    let gw = TestGateway::start();
    let mut c = Client::connect(&gw.ws_url()).await;
    let mut p = connect_params("cli", "cli", &[], Some(TOKEN));
    p["client"]["displayName"] = json!("x".repeat(70 * 1024));
    c.send_text(&json!({"type":"req","id":"1","method":"connect","params":p}).to_string())
        .await;
    let closed = c.closed().await;
    assert_eq!(
        (closed.code, closed.reason.as_str()),
        (1009, "preauth payload too large")
    );
}

#[tokio::test]
async fn silence_is_closed_after_the_handshake_timeout() {
    let gw = TestGateway::with_config(json!({"gateway": {"handshakeTimeoutMs": 1000}}));
    // Before the connect: the gateway's timer starts after it, so the
    // close can come no sooner than the timeout, however slow the connect.
    let started = std::time::Instant::now();
    let mut c = Client::connect(&gw.ws_url()).await;
    let closed = c.closed().await;
    assert_eq!(closed.code, 1000);
    assert!(started.elapsed() >= std::time::Duration::from_millis(1000));
}

#[tokio::test]
async fn wrong_and_missing_tokens_get_the_exact_unauthorized_messages() {
    let gw = TestGateway::start();
    let cases = [
        (Some("wrong"), "cli", "unauthorized: gateway token mismatch (set gateway.remote.token to match gateway.auth.token)", "AUTH_TOKEN_MISMATCH"),
        (None, "cli", "unauthorized: gateway token missing (set gateway.remote.token to match gateway.auth.token)", "AUTH_TOKEN_MISSING"),
        (Some("wrong"), "gateway-client", "unauthorized: gateway token mismatch (provide gateway auth token)", "AUTH_TOKEN_MISMATCH"),
    ];
    for (token, client, message, code) in cases {
        let mut c = Client::connect(&gw.ws_url()).await;
        let res = c.handshake(connect_params(client, "cli", &[], token)).await;
        assert_eq!(res["error"]["code"], "INVALID_REQUEST");
        assert_eq!(res["error"]["message"], message);
        assert_eq!(res["error"]["details"]["code"], code);
        let closed = c.closed().await;
        assert_eq!((closed.code, closed.reason.as_str()), (1008, message));
    }
}

#[tokio::test]
async fn token_not_configured_and_password_mode_messages() {
    let gw = TestGateway::with_config(
        json!({"gateway": {"auth": {"mode": "password", "token": null, "password": "correct-horse-battery"}}}),
    );
    let mut c = Client::connect(&gw.ws_url()).await;
    let mut p = connect_params("cli", "cli", &["operator.read"], None);
    p["auth"] = json!({"password": "nope"});
    let res = c.handshake(p.clone()).await;
    assert_eq!(res["error"]["message"], "unauthorized: gateway password mismatch (set gateway.remote.password to match gateway.auth.password)");
    let mut c = Client::connect(&gw.ws_url()).await;
    p["auth"] = json!({"password": "correct-horse-battery"});
    let res = c.handshake(p).await;
    assert_eq!(res["payload"]["auth"]["method"], "password", "{res}");

    let gw = TestGateway::with_config(json!({"gateway": {"auth": {"token": null}}}));
    let mut c = Client::connect(&gw.ws_url()).await;
    let res = c
        .handshake(connect_params("cli", "cli", &[], Some("x")))
        .await;
    assert_eq!(
        res["error"]["message"],
        "unauthorized: gateway token not configured on gateway (set gateway.auth.token)"
    );
}

#[tokio::test]
async fn auth_failures_are_rate_limited_per_ip() {
    let gw = TestGateway::with_config(
        json!({"gateway": {"auth": {"rateLimit": {"maxAttempts": 3, "windowMs": 60000, "lockoutMs": 60000}}}}),
    );
    for _ in 0..3 {
        let mut c = Client::connect(&gw.ws_url()).await;
        let res = c
            .handshake(connect_params("cli", "cli", &[], Some("bad")))
            .await;
        assert_eq!(res["error"]["details"]["code"], "AUTH_TOKEN_MISMATCH");
    }
    // Locked out now, even with the right token.
    let mut c = Client::connect(&gw.ws_url()).await;
    let res = c
        .handshake(connect_params("cli", "cli", &[], Some(TOKEN)))
        .await;
    assert_eq!(
        res["error"]["details"]["code"], "AUTH_RATE_LIMITED",
        "{res}"
    );
    assert!(res["error"]["retryAfterMs"].as_u64().unwrap() > 0);
    assert_eq!(c.closed().await.code, 1008);
}

#[tokio::test]
async fn device_less_clients_off_the_trust_path_lose_their_scopes() {
    let gw = TestGateway::start();
    // Appendix A: id "test" gets its scopes cleared.
    let mut c = Client::connect(&gw.ws_url()).await;
    let res = c
        .handshake(connect_params(
            "test",
            "test",
            &["operator.admin"],
            Some(TOKEN),
        ))
        .await;
    assert_eq!(res["payload"]["auth"]["scopes"], json!([]));
    let r = c.call("status", json!({})).await;
    assert_eq!(r["error"]["message"], "missing scope: operator.read");
    assert_eq!(
        c.call("health", json!({})).await["ok"],
        true,
        "health needs no scope"
    );
    // A cli client reaching loopback through a proxy header is not local: no scopes.
    let mut c = Client::connect_with(&gw.ws_url(), &[("x-forwarded-for", "203.0.113.9")]).await;
    let res = c
        .handshake(connect_params(
            "cli",
            "cli",
            &["operator.read"],
            Some(TOKEN),
        ))
        .await;
    assert_eq!(res["payload"]["auth"]["scopes"], json!([]));
}

#[tokio::test]
async fn binary_frames_are_decoded_as_utf8_text() {
    let gw = TestGateway::start();
    let mut c = admin(&gw).await;
    let frame = json!({"type":"req","id":"b1","method":"health"}).to_string();
    c.send_raw(Message::binary(frame.into_bytes())).await;
    let res = c.res("b1").await;
    assert_eq!(res["ok"], true);
}

#[tokio::test]
async fn control_ui_without_device_identity_is_refused() {
    let gw = TestGateway::start();
    let mut c = Client::connect(&gw.ws_url()).await;
    let res = c
        .handshake(connect_params(
            "openclaw-control-ui",
            "webchat",
            &["operator.admin"],
            Some(TOKEN),
        ))
        .await;
    assert_eq!(
        res["error"]["message"],
        "control ui requires device identity (use HTTPS or localhost secure context)"
    );
    assert_eq!(
        res["error"]["details"]["code"],
        "CONTROL_UI_DEVICE_IDENTITY_REQUIRED"
    );
    // A browser origin that does not match the host is refused first.
    let mut c = Client::connect_with(&gw.ws_url(), &[("origin", "http://evil.example")]).await;
    let res = c
        .handshake(connect_params("cli", "cli", &[], Some(TOKEN)))
        .await;
    assert_eq!(
        res["error"]["details"]["code"],
        "CONTROL_UI_ORIGIN_NOT_ALLOWED"
    );
}

#[tokio::test]
async fn too_many_unauthenticated_sockets_get_503_at_upgrade() {
    let gw = TestGateway::with_config(json!({"gateway": {"maxUnauthenticatedSockets": 2}}));
    let _a = Client::connect(&gw.ws_url()).await;
    let _b = Client::connect(&gw.ws_url()).await;
    let err = tokio_tungstenite::connect_async(gw.ws_url())
        .await
        .unwrap_err();
    match err {
        tokio_tungstenite::tungstenite::Error::Http(res) => {
            assert_eq!(res.status(), 503);
            let body =
                String::from_utf8_lossy(res.body().as_deref().unwrap_or_default()).into_owned();
            assert_eq!(body, "Too many unauthenticated sockets");
        }
        other => panic!("expected HTTP 503, got {other:?}"),
    }
    // Completing a handshake frees a place.
    drop(_a);
    let mut c = loop {
        if let Ok((ws, _)) = tokio_tungstenite::connect_async(gw.ws_url()).await {
            break ws;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    use futures_util::StreamExt;
    assert!(c.next().await.unwrap().unwrap().is_text());
}

#[tokio::test]
async fn fragmented_messages_are_reassembled() {
    use tokio_tungstenite::tungstenite::protocol::frame::coding::{Data, OpCode};
    use tokio_tungstenite::tungstenite::protocol::frame::Frame;
    let gw = TestGateway::start();
    let mut c = admin(&gw).await;
    let text = json!({"type":"req","id":"frag","method":"health"}).to_string();
    let (a, b) = text.split_at(10);
    c.send_raw(Message::Frame(Frame::message(
        a.as_bytes().to_vec(),
        OpCode::Data(Data::Text),
        false,
    )))
    .await;
    c.send_raw(Message::Frame(Frame::message(
        b.as_bytes().to_vec(),
        OpCode::Data(Data::Continue),
        true,
    )))
    .await;
    let res = c.res("frag").await;
    assert_eq!(res["ok"], true, "{res}");
}

#[tokio::test]
async fn the_control_uis_connect_with_build_id_time_zone_and_both_secrets_gets_hello_ok() {
    // What OpenClaw 2026.9.6's Control UI sends: `client.buildId`,
    // `client.timeZone`, its secret as both token and password, and (from a
    // later version, say) a field ferroclaw does not know in `client`.
    let gw = TestGateway::start();
    let mut c = Client::connect(&gw.ws_url()).await;
    let nonce = c.challenge["payload"]["nonce"]
        .as_str()
        .unwrap()
        .to_string();
    let device = crate::support::device::Device::new(41);
    let scopes = ["operator.admin", "operator.read", "operator.write"];
    let mut p = device.connect_params(
        "openclaw-control-ui",
        "webchat",
        "operator",
        &scopes,
        Some(TOKEN),
        &nonce,
        crate::support::device::now_ms(),
        false,
    );
    p["minProtocol"] = json!(3);
    p["client"]["buildId"] = json!("9f1c2a7");
    p["client"]["timeZone"] = json!("Europe/Berlin");
    p["client"]["addedLater"] = json!({"any": "shape"});
    p["auth"]["password"] = json!(TOKEN);
    p["locale"] = json!("en-US");
    p["userAgent"] = json!("Mozilla/5.0 (X11; Linux x86_64)");
    let res = c.handshake(p).await;
    assert_eq!(res["ok"], true, "{res}");
    assert_eq!(res["payload"]["auth"]["method"], "token");
    let h = c.call("health", json!({})).await;
    assert_eq!(h["ok"], true, "{h}");
}
