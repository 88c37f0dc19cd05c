//! protocol.md scenarios 1 (signed), 2, 6 and 7: device signatures, device
//! tokens, remote pairing, and that pairing survives a restart.

use serde_json::json;

use crate::support::device::now_ms;
use crate::support::{admin, connect_params, device_connect, Client, Device, TestGateway, TOKEN};

const CLI_SCOPES: &[&str] = &["operator.admin", "operator.approvals", "operator.pairing"];

#[tokio::test]
async fn signed_loopback_device_is_paired_silently_and_gets_a_device_token() {
    let gw = TestGateway::start();
    let mut watcher = admin(&gw).await;
    let dev = Device::new(1);
    let mut c = Client::connect(&gw.ws_url()).await;
    let nonce = c.nonce();
    let signed_at = c.challenge["payload"]["ts"].as_u64().unwrap();
    let res = c
        .handshake(dev.connect_params(
            "cli",
            "cli",
            "operator",
            CLI_SCOPES,
            Some(TOKEN),
            &nonce,
            signed_at,
            false,
        ))
        .await;
    assert_eq!(res["ok"], true, "{res}");
    let auth = &res["payload"]["auth"];
    assert_eq!(auth["deviceToken"].as_str().unwrap().len(), 43);
    assert_eq!(auth["role"], "operator");
    assert_eq!(auth["scopes"], json!(CLI_SCOPES));
    assert!(auth["issuedAtMs"].as_u64().unwrap() > 0);
    let resolved = watcher.event("device.pair.resolved").await;
    assert_eq!(resolved["payload"]["deviceId"], dev.id.as_str());
    assert_eq!(resolved["payload"]["decision"], "approved");
}

#[tokio::test]
async fn stored_device_token_reconnects_and_a_tampered_one_is_refused() {
    let gw = TestGateway::start();
    let dev = Device::new(2);
    let scopes = &["operator.read", "operator.write"];
    let mut c = Client::connect(&gw.ws_url()).await;
    let n = c.nonce();
    let res = c
        .handshake(dev.connect_params(
            "gateway-client",
            "backend",
            "operator",
            scopes,
            Some(TOKEN),
            &n,
            now_ms(),
            true,
        ))
        .await;
    let token = res["payload"]["auth"]["deviceToken"]
        .as_str()
        .unwrap()
        .to_string();

    // v3 style: the device token in auth.token, no shared token.
    let mut c = Client::connect(&gw.ws_url()).await;
    let n = c.nonce();
    let res = c
        .handshake(dev.connect_params(
            "gateway-client",
            "backend",
            "operator",
            scopes,
            Some(&token),
            &n,
            now_ms(),
            false,
        ))
        .await;
    assert_eq!(res["ok"], true, "{res}");
    assert_eq!(res["payload"]["auth"]["method"], "device-token");
    assert_eq!(res["payload"]["auth"]["scopes"], json!(scopes));
    assert_eq!(
        res["payload"]["auth"]["deviceToken"],
        token.as_str(),
        "same token while scopes are covered"
    );

    // v4 style: auth.deviceToken.
    let mut c = Client::connect(&gw.ws_url()).await;
    let n = c.nonce();
    let mut p = dev.connect_params(
        "gateway-client",
        "backend",
        "operator",
        scopes,
        None,
        &n,
        now_ms(),
        false,
    );
    p["auth"] = json!({"deviceToken": token});
    let res = c.handshake(p).await;
    assert_eq!(res["ok"], true, "{res}");

    let mut c = Client::connect(&gw.ws_url()).await;
    let n = c.nonce();
    let tampered = format!("{}x", &token[..42]);
    let res = c
        .handshake(dev.connect_params(
            "gateway-client",
            "backend",
            "operator",
            scopes,
            Some(&tampered),
            &n,
            now_ms(),
            false,
        ))
        .await;
    assert_eq!(res["error"]["code"], "INVALID_REQUEST");
    assert_eq!(
        res["error"]["details"]["code"],
        "AUTH_DEVICE_TOKEN_MISMATCH"
    );
    assert_eq!(c.closed().await.code, 1008);
}

#[tokio::test]
async fn every_device_signature_failure_has_its_message_and_code() {
    let gw = TestGateway::start();
    let dev = Device::new(3);
    let other = Device::new(4);
    type Tamper = fn(&mut serde_json::Value, &str);
    let cases: [(&str, &str, Tamper); 6] = [
        (
            "device nonce mismatch",
            "DEVICE_AUTH_NONCE_MISMATCH",
            |p, _| p["device"]["nonce"] = json!("not-the-nonce"),
        ),
        (
            "device nonce required",
            "DEVICE_AUTH_NONCE_REQUIRED",
            |p, _| {
                p["device"].as_object_mut().unwrap().remove("nonce");
            },
        ),
        (
            "device signature expired",
            "DEVICE_AUTH_SIGNATURE_EXPIRED",
            |_, _| {},
        ),
        (
            "device identity mismatch",
            "DEVICE_AUTH_DEVICE_ID_MISMATCH",
            |p, other_id| p["device"]["id"] = json!(other_id),
        ),
        (
            "device signature invalid",
            "DEVICE_AUTH_SIGNATURE_INVALID",
            |p, _| {
                let s = p["device"]["signature"].as_str().unwrap().to_string();
                let first = if s.starts_with('A') { "B" } else { "A" };
                let flipped = format!("{first}{}", s.get(1..).unwrap());
                p["device"]["signature"] = json!(flipped);
            },
        ),
        (
            "device public key invalid",
            "DEVICE_AUTH_PUBLIC_KEY_INVALID",
            |p, _| p["device"]["publicKey"] = json!("AAAA"),
        ),
    ];
    for (message, code, tamper) in cases {
        let mut c = Client::connect(&gw.ws_url()).await;
        let n = c.nonce();
        let signed_at = if code == "DEVICE_AUTH_SIGNATURE_EXPIRED" {
            now_ms() - 3 * 60 * 1000
        } else {
            now_ms()
        };
        let mut p = dev.connect_params(
            "cli",
            "cli",
            "operator",
            &["operator.read"],
            Some(TOKEN),
            &n,
            signed_at,
            false,
        );
        tamper(&mut p, &other.id);
        let res = c.handshake(p).await;
        assert_eq!(res["error"]["message"], message, "{res}");
        assert_eq!(res["error"]["details"]["code"], code);
        let closed = c.closed().await;
        assert_eq!((closed.code, closed.reason.as_str()), (1008, message));
    }
}

#[tokio::test]
async fn remote_device_needs_pairing_approval_then_connects_and_scope_upgrades_ask_again() {
    let gw = TestGateway::start();
    let mut op = admin(&gw).await;
    let dev = Device::new(5);
    // A non-local Host header makes the loopback connection remote.
    let remote = [("host", "gateway.example:18789")];
    let mut c = Client::connect_with(&gw.ws_url(), &remote).await;
    let n = c.nonce();
    let res = c
        .handshake(dev.connect_params(
            "gateway-client",
            "backend",
            "operator",
            &["operator.read"],
            Some(TOKEN),
            &n,
            now_ms(),
            false,
        ))
        .await;
    assert_eq!(res["error"]["code"], "NOT_PAIRED", "{res}");
    assert_eq!(res["error"]["message"], "pairing required");
    let request_id = res["error"]["details"]["requestId"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(res["error"]["details"]["code"], "PAIRING_REQUIRED");
    assert_eq!(res["error"]["details"]["reason"], "not-paired");
    let closed = c.closed().await;
    assert_eq!(closed.code, 1008);
    assert_eq!(
        closed.reason,
        format!("pairing required: not-paired (requestId: {request_id})")
    );

    let requested = op.event("device.pair.requested").await;
    assert_eq!(requested["payload"]["requestId"], request_id.as_str());
    assert_eq!(requested["payload"]["deviceId"], dev.id.as_str());
    let list = op.call("device.pair.list", json!({})).await;
    assert_eq!(
        list["payload"]["pending"][0]["requestId"],
        request_id.as_str()
    );

    let approved = op
        .call("device.pair.approve", json!({"requestId": request_id}))
        .await;
    assert_eq!(approved["ok"], true, "{approved}");
    let resolved = op.event("device.pair.resolved").await;
    assert_eq!(resolved["payload"]["decision"], "approved");

    let mut c = Client::connect_with(&gw.ws_url(), &remote).await;
    let n = c.nonce();
    let res = c
        .handshake(dev.connect_params(
            "gateway-client",
            "backend",
            "operator",
            &["operator.read"],
            Some(TOKEN),
            &n,
            now_ms(),
            false,
        ))
        .await;
    assert_eq!(res["ok"], true, "{res}");
    assert!(res["payload"]["auth"]["deviceToken"].is_string());

    // Asking for more than was approved is a scope upgrade.
    let mut c = Client::connect_with(&gw.ws_url(), &remote).await;
    let n = c.nonce();
    let res = c
        .handshake(dev.connect_params(
            "gateway-client",
            "backend",
            "operator",
            &["operator.admin"],
            Some(TOKEN),
            &n,
            now_ms(),
            false,
        ))
        .await;
    assert_eq!(res["error"]["details"]["reason"], "scope-upgrade", "{res}");

    // Reject it; unknown ids are an error.
    let rid = res["error"]["details"]["requestId"].as_str().unwrap();
    let rej = op
        .call("device.pair.reject", json!({"requestId": rid}))
        .await;
    assert_eq!(rej["ok"], true);
    let again = op
        .call("device.pair.reject", json!({"requestId": rid}))
        .await;
    assert_eq!(again["error"]["code"], "INVALID_REQUEST");

    // The audit ledger's story of it, oldest first: who asked, who decided.
    let control = op
        .call("audit.activity.list", json!({"kind": "control"}))
        .await;
    let story: Vec<(String, String, String)> = control["payload"]["events"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .map(|e| {
            let s = |v: &serde_json::Value| v.as_str().unwrap_or_default().to_string();
            (s(&e["action"]), s(&e["actor"]["type"]), s(&e["subject"]))
        })
        .collect();
    let row = |a: &str, who: &str, id: &str| (a.to_string(), who.to_string(), id.to_string());
    assert_eq!(
        story,
        [
            row("device.pairing.requested", "system", &request_id),
            row("device.pairing.approved", "operator", &request_id),
            row("device.pairing.requested", "system", rid),
            row("device.pairing.rejected", "operator", rid),
        ],
        "{control}"
    );
}

#[tokio::test]
async fn restart_keeps_pairing_and_device_tokens_and_revocation_sticks() {
    let mut gw = TestGateway::start();
    let dev = Device::new(6);
    let scopes = &["operator.read"];
    let mut c = Client::connect(&gw.ws_url()).await;
    let n = c.nonce();
    let res = c
        .handshake(dev.connect_params(
            "cli",
            "cli",
            "operator",
            scopes,
            Some(TOKEN),
            &n,
            now_ms(),
            false,
        ))
        .await;
    let token = res["payload"]["auth"]["deviceToken"]
        .as_str()
        .unwrap()
        .to_string();
    drop(c);

    gw.restart();
    let mut c = Client::connect(&gw.ws_url()).await;
    let n = c.nonce();
    let res = c
        .handshake(dev.connect_params(
            "cli",
            "cli",
            "operator",
            scopes,
            Some(&token),
            &n,
            now_ms(),
            false,
        ))
        .await;
    assert_eq!(res["ok"], true, "device token survives a restart: {res}");

    let mut op = admin(&gw).await;
    let rot = op
        .call(
            "device.token.rotate",
            json!({"deviceId": dev.id, "role": "operator"}),
        )
        .await;
    let rotated = rot["payload"]["token"].as_str().unwrap().to_string();
    assert_ne!(rotated, token);
    let list = op.call("device.pair.list", json!({})).await;
    let paired = &list["payload"]["paired"][0];
    assert_eq!(paired["deviceId"], dev.id.as_str());
    assert!(
        !list.to_string().contains(&rotated),
        "token values are never listed"
    );

    gw.restart();
    let mut c = Client::connect(&gw.ws_url()).await;
    let n = c.nonce();
    let res = c
        .handshake(dev.connect_params(
            "cli",
            "cli",
            "operator",
            scopes,
            Some(&token),
            &n,
            now_ms(),
            false,
        ))
        .await;
    assert_eq!(
        res["error"]["details"]["code"], "AUTH_DEVICE_TOKEN_MISMATCH",
        "old token is dead after rotation"
    );
    let mut c = Client::connect(&gw.ws_url()).await;
    let n = c.nonce();
    let res = c
        .handshake(dev.connect_params(
            "cli",
            "cli",
            "operator",
            scopes,
            Some(&rotated),
            &n,
            now_ms(),
            false,
        ))
        .await;
    assert_eq!(res["ok"], true, "{res}");

    let mut op = admin(&gw).await;
    let rev = op
        .call(
            "device.token.revoke",
            json!({"deviceId": dev.id, "role": "operator"}),
        )
        .await;
    assert_eq!(rev["payload"]["revoked"], true);
    let mut c = Client::connect(&gw.ws_url()).await;
    let n = c.nonce();
    let res = c
        .handshake(dev.connect_params(
            "cli",
            "cli",
            "operator",
            scopes,
            Some(&rotated),
            &n,
            now_ms(),
            false,
        ))
        .await;
    assert_eq!(
        res["error"]["details"]["code"],
        "AUTH_DEVICE_TOKEN_MISMATCH"
    );

    let rm = op
        .call("device.pair.remove", json!({"deviceId": dev.id}))
        .await;
    assert_eq!(rm["payload"]["removed"], true);
}

#[tokio::test]
async fn nodes_need_a_device_identity() {
    let gw = TestGateway::start();
    let mut c = Client::connect(&gw.ws_url()).await;
    let mut p = crate::support::connect_params("node-host", "node", &[], Some(TOKEN));
    p["role"] = json!("node");
    let res = c.handshake(p).await;
    assert_eq!(res["error"]["code"], "NOT_PAIRED");
    assert_eq!(res["error"]["message"], "device identity required");
}

#[tokio::test]
async fn the_pairing_list_says_which_paired_devices_are_connected() {
    // The Control UI lists itself among the paired devices: connected while
    // its socket is open, not after.
    let gw = TestGateway::start();
    let mut op = admin(&gw).await;
    let dev = Device::new(7);
    let mut ui = Client::connect(&gw.ws_url()).await;
    let nonce = ui.nonce();
    let res = ui
        .handshake(dev.connect_params(
            "openclaw-control-ui",
            "webchat",
            "operator",
            CLI_SCOPES,
            Some(TOKEN),
            &nonce,
            now_ms(),
            false,
        ))
        .await;
    assert_eq!(res["ok"], true, "{res}");
    let connected = |list: &serde_json::Value| {
        list["payload"]["paired"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["deviceId"] == dev.id.as_str())
            .map(|d| d["connected"].clone())
    };
    let list = op.call("device.pair.list", json!({})).await;
    assert_eq!(connected(&list), Some(json!(true)), "{list}");
    drop(ui);
    let mut last = None;
    for _ in 0..100 {
        let list = op.call("device.pair.list", json!({})).await;
        last = connected(&list);
        if last == Some(json!(false)) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(last, Some(json!(false)), "offline once its socket is gone");
}

/// OpenClaw's device-management rules: `operator.pairing` may rotate and
/// revoke a device's operator token; a non-admin never touches another
/// role's token, another device's token from a device of its own, or mints
/// more than it holds.
#[tokio::test]
async fn a_pairing_operator_rotates_operator_tokens_within_its_own_scopes() {
    let gw = TestGateway::start();
    let dev = Device::new(41);
    let (_c, res) = device_connect(&gw, &dev, &["operator.read", "operator.write"], TOKEN).await;
    assert_eq!(res["ok"], true, "{res}");
    let mut p = Client::connect(&gw.ws_url()).await;
    p.handshake(connect_params(
        "cli",
        "cli",
        &["operator.pairing", "operator.read"],
        Some(TOKEN),
    ))
    .await;
    let rot = p
        .call(
            "device.token.rotate",
            json!({"deviceId": dev.id, "role": "operator", "scopes": ["operator.read"]}),
        )
        .await;
    assert_eq!(rot["ok"], true, "{rot}");
    assert_eq!(rot["payload"]["scopes"], json!(["operator.read"]));
    let more = p
        .call(
            "device.token.rotate",
            json!({"deviceId": dev.id, "role": "operator", "scopes": ["operator.write"]}),
        )
        .await;
    assert_eq!(
        more["ok"], false,
        "never more than the caller holds: {more}"
    );
    let node = p
        .call(
            "device.token.rotate",
            json!({"deviceId": dev.id, "role": "node"}),
        )
        .await;
    assert_eq!(node["error"]["message"], "device token rotation denied");
    // A device of its own manages only itself without admin.
    let other = Device::new(42);
    let (mut o, res) = device_connect(&gw, &other, &["operator.pairing"], TOKEN).await;
    assert_eq!(res["ok"], true, "{res}");
    let r = o
        .call(
            "device.token.revoke",
            json!({"deviceId": dev.id, "role": "operator"}),
        )
        .await;
    assert_eq!(r["error"]["message"], "device token revocation denied");
    let r = p
        .call(
            "device.token.revoke",
            json!({"deviceId": dev.id, "role": "operator"}),
        )
        .await;
    assert_eq!(r["payload"]["revoked"], true, "{r}");
}

/// On this machine, a paired device asking for more scopes with the shared
/// secret is upgraded at once (OpenClaw's silent local pairing); with only
/// its device token it must ask an operator.
#[tokio::test]
async fn a_local_scope_upgrade_with_the_shared_secret_is_approved_at_once() {
    let gw = TestGateway::start();
    let dev = Device::new(43);
    let (_, first) = device_connect(&gw, &dev, &["operator.read"], TOKEN).await;
    assert_eq!(first["ok"], true, "{first}");
    let device_token = first["payload"]["auth"]["deviceToken"]
        .as_str()
        .unwrap()
        .to_string();
    // Its device token alone never widens itself.
    let (_, r) = device_connect(
        &gw,
        &dev,
        &["operator.read", "operator.write"],
        &device_token,
    )
    .await;
    assert_eq!(r["ok"], false, "{r}");
    // The shared secret on loopback: approved, no request left waiting.
    let (_, r) = device_connect(&gw, &dev, &["operator.read", "operator.write"], TOKEN).await;
    assert_eq!(r["ok"], true, "{r}");
    assert_eq!(
        r["payload"]["auth"]["scopes"],
        json!(["operator.read", "operator.write"])
    );
    let mut op = admin(&gw).await;
    let list = op.call("device.pair.list", json!({})).await;
    assert_eq!(list["payload"]["pending"], json!([]), "{list}");
    let paired = &list["payload"]["paired"][0];
    assert_eq!(paired["deviceId"], dev.id.as_str());
}

/// `device.pair.rename` (OpenClaw's `openclaw devices rename`): a pairing
/// operator names a device; a caller with a device of its own names only
/// that one; the list shows the name.
#[tokio::test]
async fn a_pairing_operator_renames_a_device_and_the_list_shows_it() {
    let gw = TestGateway::start();
    let dev = Device::new(44);
    let (mut c, res) = device_connect(&gw, &dev, &["operator.pairing"], TOKEN).await;
    assert_eq!(res["ok"], true, "{res}");
    let mut p = Client::connect(&gw.ws_url()).await;
    p.handshake(connect_params(
        "cli",
        "cli",
        &["operator.pairing"],
        Some(TOKEN),
    ))
    .await;
    let r = p
        .call(
            "device.pair.rename",
            json!({"deviceId": dev.id, "label": " laptop "}),
        )
        .await;
    assert_eq!(
        r["payload"],
        json!({"deviceId": dev.id, "label": "laptop"}),
        "{r}"
    );
    let list = p.call("device.pair.list", json!({})).await;
    assert_eq!(
        list["payload"]["paired"][0]["operatorLabel"], "laptop",
        "{list}"
    );
    let r = p
        .call(
            "device.pair.rename",
            json!({"deviceId": dev.id, "label": "  "}),
        )
        .await;
    assert_eq!(r["error"]["message"], "label required");
    let r = p
        .call(
            "device.pair.rename",
            json!({"deviceId": "nope", "label": "x"}),
        )
        .await;
    assert_eq!(r["error"]["message"], "unknown deviceId");
    // The device itself may rename itself, not another.
    let r = c
        .call(
            "device.pair.rename",
            json!({"deviceId": dev.id, "label": "mine"}),
        )
        .await;
    assert_eq!(r["ok"], true, "{r}");
    let r = c
        .call(
            "device.pair.rename",
            json!({"deviceId": "other", "label": "x"}),
        )
        .await;
    assert_eq!(r["error"]["message"], "device pairing rename denied");
}
