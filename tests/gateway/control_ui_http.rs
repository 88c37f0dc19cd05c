//! The Control UI's HTTP reads beyond its files: the bootstrap config
//! with the device token the UI got at hello-ok (as OpenClaw accepts it),
//! the workspace icon and the agent avatar: served from the workspace,
//! never from outside it, and never without the secret or a device token.

use serde_json::{json, Value};

use crate::support::device::{now_ms, Device};
use crate::support::{http, Client, TestGateway, TOKEN};

const PNG: &str = "\u{89}PNG-not-really";

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

fn gateway(files: &[(&str, &str)], identity: Value) -> TestGateway {
    let ui = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/control-ui");
    TestGateway::with_files(
        json!({
            "gateway": { "controlUi": { "root": ui.display().to_string() } },
            "agents": { "list": [{ "id": "main", "identity": identity }] },
        }),
        files,
    )
}

/// A paired operator device's token, as the Control UI holds it.
async fn device_token(gw: &TestGateway) -> String {
    let dev = Device::new(7);
    let mut c = Client::connect(&gw.ws_url()).await;
    let nonce = c.nonce();
    let res = c
        .handshake(dev.connect_params(
            "openclaw-control-ui",
            "webchat",
            "operator",
            &["operator.admin", "operator.read"],
            Some(TOKEN),
            &nonce,
            now_ms(),
            true,
        ))
        .await;
    assert_eq!(res["ok"], true, "{res}");
    res["payload"]["auth"]["deviceToken"]
        .as_str()
        .unwrap()
        .to_string()
}

#[tokio::test]
async fn the_bootstrap_config_takes_the_device_token_the_ui_got_at_hello() {
    let gw = gateway(&[], json!({"name": "Molty"}));
    let token = device_token(&gw).await;
    let bearer = format!("Bearer {token}");
    let (status, _, body) = http(
        gw.addr,
        "GET",
        "/control-ui-config.json",
        &[("authorization", &bearer)],
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert!(!body.contains(&token) && !body.contains(TOKEN));
    // Anything else is still refused.
    for bad in ["Bearer not-a-token", "Bearer ", "Basic abc"] {
        let (status, _, _) = http(
            gw.addr,
            "GET",
            "/control-ui-config.json",
            &[("authorization", bad)],
        )
        .await;
        assert_eq!(status, 401, "{bad}");
    }
}

#[tokio::test]
async fn the_workspace_icon_is_the_first_conventional_icon_file_of_the_sessions_workspace() {
    let gw = gateway(
        &[
            ("workspace/public/favicon.png", PNG),
            ("workspace/assets/logo.svg", "<svg>later in the list</svg>"),
        ],
        json!({"name": "Molty"}),
    );
    let bearer = format!("Bearer {TOKEN}");
    let auth = [("authorization", bearer.as_str())];
    let path = "/__openclaw__/workspace-icon/agent%3Amain%3Amain";
    let (status, _, _) = http(gw.addr, "GET", path, &[]).await;
    assert_eq!(status, 401, "behind the secret");
    let (status, headers, body) = http(gw.addr, "GET", path, &auth).await;
    assert_eq!((status, body.as_str()), (200, PNG));
    assert_eq!(header(&headers, "content-type"), Some("image/png"));
    assert!(header(&headers, "content-security-policy").is_some());
    let (status, headers, body) = http(gw.addr, "HEAD", path, &auth).await;
    assert_eq!((status, body.as_str()), (200, ""));
    assert_eq!(
        header(&headers, "content-length"),
        Some(PNG.len().to_string().as_str())
    );
    // A workspace without one: 404, not cached.
    std::fs::remove_file(gw.state_dir().join("workspace/public/favicon.png")).unwrap();
    std::fs::remove_file(gw.state_dir().join("workspace/assets/logo.svg")).unwrap();
    let (status, headers, _) = http(gw.addr, "GET", path, &auth).await;
    assert_eq!(status, 404);
    assert_eq!(header(&headers, "cache-control"), Some("no-store"));
    // A key is a name, never a path.
    for key in ["..%2F..%2Fsecret", "%2Fetc%2Fpasswd", ""] {
        let p = format!("/__openclaw__/workspace-icon/{key}");
        let (status, _, _) = http(gw.addr, "GET", &p, &auth).await;
        assert_eq!(status, 404, "{key}");
    }
}

#[tokio::test]
async fn the_avatar_is_the_image_the_identity_names_inside_the_workspace() {
    let gw = gateway(
        &[
            ("workspace/avatars/molty.png", PNG),
            ("secret.png", "outside the workspace"),
        ],
        json!({"name": "Molty", "avatar": "avatars/molty.png"}),
    );
    let bearer = format!("Bearer {TOKEN}");
    let auth = [("authorization", bearer.as_str())];
    let (status, _, _) = http(gw.addr, "GET", "/avatar/main", &[]).await;
    assert_eq!(status, 401);
    let (status, headers, body) = http(gw.addr, "GET", "/avatar/main", &auth).await;
    assert_eq!((status, body.as_str()), (200, PNG));
    assert_eq!(header(&headers, "content-type"), Some("image/png"));
    let (status, _, meta) = http(gw.addr, "GET", "/avatar/main?meta=1", &auth).await;
    assert_eq!(status, 200);
    let meta: Value = serde_json::from_str(&meta).unwrap();
    assert_eq!(
        meta,
        json!({"avatarUrl": "avatar/main", "avatarSource": "local", "avatarStatus": "ok", "avatarReason": null})
    );
    for agent in ["nobody", "..", "main%2F..", "a%20b"] {
        let (status, _, _) = http(gw.addr, "GET", &format!("/avatar/{agent}"), &auth).await;
        assert_eq!(status, 404, "{agent}");
    }
}

#[tokio::test]
async fn an_avatar_outside_the_workspace_or_not_an_image_is_never_served() {
    for avatar in [
        "../secret.png",
        "/etc/passwd",
        "M",
        "https://example.invalid/a.png",
    ] {
        let gw = gateway(
            &[("secret.png", "outside the workspace")],
            json!({"name": "Molty", "avatar": avatar}),
        );
        let bearer = format!("Bearer {TOKEN}");
        let auth = [("authorization", bearer.as_str())];
        let (status, _, body) = http(gw.addr, "GET", "/avatar/main", &auth).await;
        assert_eq!(status, 404, "{avatar}: {body}");
        assert!(!body.contains("outside"), "{avatar}");
        let (_, _, meta) = http(gw.addr, "GET", "/avatar/main?meta=1", &auth).await;
        let meta: Value = serde_json::from_str(&meta).unwrap();
        let want = if avatar.starts_with("https://") {
            json!(["remote", avatar])
        } else {
            json!(["text", null])
        };
        assert_eq!(
            json!([meta["avatarSource"], meta["avatarUrl"]]),
            want,
            "{avatar}"
        );
    }
}
