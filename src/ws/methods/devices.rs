//! device.pair.list|approve|reject|remove and device.token.rotate|revoke.

use ferroclaw_actors::devices::{
    ask_devices, ApprovePairing, DeviceRecord, ListPairing, RejectPairing, RemoveDevice,
    RenameDevice, Renamed, RevokeDeviceToken, RotateDeviceToken,
};
use ferroclaw_actors::scopes::{self, scope_allows};
use serde::Deserialize;
use serde_json::{json, Value};

use super::store_err;
use super::{json, params, Caller, MethodResult};
use crate::protocol::errors::ErrorShape;
use crate::state::SharedState;

fn down<E>(_: E) -> ErrorShape {
    ErrorShape::unavailable("device registry unavailable").retry_after(1000)
}

/// A paired device as listed: tokens summarised, never their values;
/// `connected` (in the list) says whether a socket signed in as it is open.
fn public(rec: &DeviceRecord, connected: Option<bool>) -> Value {
    let mut v = serde_json::to_value(rec).unwrap_or(Value::Null);
    let tokens: Vec<Value> = rec
        .tokens
        .values()
        .map(|t| json!({ "role": t.role, "scopes": t.scopes, "issuedAtMs": t.issued_at_ms }))
        .collect();
    v["tokens"] = json!(tokens);
    if let Some(c) = connected {
        v["connected"] = json!(c);
    }
    v
}

pub async fn list(state: &SharedState) -> MethodResult {
    let gw = &state.gateway;
    let (pending, paired) = ask_devices(&gw.devices, &gw.metrics, ListPairing)
        .await
        .map_err(down)?
        .map_err(store_err)?;
    // Open sockets signed in as a device have a presence row naming it.
    let rows = gw
        .presence
        .send(ferroclaw_actors::presence::ListPresence)
        .await
        .unwrap_or_default();
    let online: std::collections::HashSet<String> = rows
        .into_iter()
        .filter(|r| r.reason.as_deref() == Some("connect"))
        .filter_map(|r| r.device_id)
        .collect();
    let paired: Vec<Value> = paired
        .iter()
        .map(|d| public(d, Some(online.contains(&d.device_id))))
        .collect();
    json(json!({ "pending": pending, "paired": paired }))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RequestRef {
    request_id: String,
    #[serde(default)]
    display_name: Option<String>,
}

pub async fn approve(state: &SharedState, p: &Value) -> MethodResult {
    let p: RequestRef = params("device.pair.approve", p)?;
    let gw = &state.gateway;
    let msg = ApprovePairing {
        request_id: p.request_id.clone(),
        display_name: p.display_name,
    };
    let Some((req, rec)) = ask_devices(&gw.devices, &gw.metrics, msg)
        .await
        .map_err(down)?
        .map_err(store_err)?
    else {
        return Err(ErrorShape::invalid(format!(
            "unknown requestId: {}",
            p.request_id
        )));
    };
    state.publish(
        "device.pair.resolved",
        json!({
            "requestId": req.request_id, "deviceId": req.device_id, "decision": "approved", "ts": ferroclaw_actors::now_ms(),
        }),
    );
    json(json!({ "requestId": req.request_id, "device": public(&rec, None) }))
}

pub async fn reject(state: &SharedState, p: &Value) -> MethodResult {
    let p: RequestRef = params("device.pair.reject", p)?;
    let gw = &state.gateway;
    let msg = RejectPairing {
        request_id: p.request_id.clone(),
    };
    let Some(req) = ask_devices(&gw.devices, &gw.metrics, msg)
        .await
        .map_err(down)?
        .map_err(store_err)?
    else {
        return Err(ErrorShape::invalid(format!(
            "unknown requestId: {}",
            p.request_id
        )));
    };
    state.publish(
        "device.pair.resolved",
        json!({
            "requestId": req.request_id, "deviceId": req.device_id, "decision": "rejected", "ts": ferroclaw_actors::now_ms(),
        }),
    );
    json(json!({ "requestId": req.request_id, "deviceId": req.device_id }))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct DeviceRef {
    device_id: String,
}

pub async fn remove(state: &SharedState, p: &Value) -> MethodResult {
    let p: DeviceRef = params("device.pair.remove", p)?;
    let gw = &state.gateway;
    let removed = ask_devices(
        &gw.devices,
        &gw.metrics,
        RemoveDevice {
            device_id: p.device_id.clone(),
        },
    )
    .await
    .map_err(down)?
    .map_err(store_err)?;
    json(json!({ "deviceId": p.device_id, "removed": removed }))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct TokenRef {
    device_id: String,
    role: String,
    #[serde(default)]
    scopes: Option<Vec<String>>,
}

/// OpenClaw's device-management rules: a caller with a device identity
/// manages only its own device unless it is an admin, and a non-admin
/// manages operator tokens only. Refused with OpenClaw's `denied` text.
fn may_manage(
    caller: &Caller,
    device_id: &str,
    role: &str,
    denied: &str,
) -> Result<(), ErrorShape> {
    let admin = scope_allows(&caller.scopes, scopes::ADMIN);
    let other = caller
        .device_id
        .as_deref()
        .is_some_and(|d| d != device_id.trim());
    let role = role.trim();
    if !admin && (other || (!role.is_empty() && role != "operator")) {
        tracing::warn!(conn_id = %caller.conn_id, device = device_id, role, other, "{denied}");
        return Err(ErrorShape::invalid(denied));
    }
    Ok(())
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RenameParams {
    device_id: String,
    label: String,
}

/// `device.pair.rename`: an operator's name for a paired device, by
/// OpenClaw's rules (a caller with a device of its own renames only that
/// one, and no device holding another role, unless it is an admin).
pub async fn rename(state: &SharedState, caller: &Caller, p: &Value) -> MethodResult {
    let p: RenameParams = params("device.pair.rename", p)?;
    let label = p.label.trim().to_string();
    if label.is_empty() {
        return Err(ErrorShape::invalid("label required"));
    }
    const DENIED: &str = "device pairing rename denied";
    // Another device's, never without admin; the device's own roles are
    // checked where they are stored (`operators_only`).
    may_manage(caller, &p.device_id, "operator", DENIED)?;
    let admin = scope_allows(&caller.scopes, scopes::ADMIN);
    let gw = &state.gateway;
    let msg = RenameDevice {
        device_id: p.device_id.clone(),
        label: label.clone(),
        operators_only: !admin && caller.device_id.is_some(),
    };
    match ask_devices(&gw.devices, &gw.metrics, msg)
        .await
        .map_err(down)?
        .map_err(store_err)?
    {
        Renamed::Done => {
            state.publish("device.pair.changed", json!({}));
            json(json!({ "deviceId": p.device_id, "label": label }))
        }
        Renamed::UnknownDevice => Err(ErrorShape::invalid("unknown deviceId")),
        Renamed::Denied => Err(ErrorShape::invalid(DENIED)),
    }
}

pub async fn rotate(state: &SharedState, caller: &Caller, p: &Value) -> MethodResult {
    let p: TokenRef = params("device.token.rotate", p)?;
    may_manage(
        caller,
        &p.device_id,
        &p.role,
        "device token rotation denied",
    )?;
    let gw = &state.gateway;
    let msg = RotateDeviceToken {
        device_id: p.device_id.clone(),
        role: p.role.clone(),
        scopes: p.scopes,
        caller_scopes: (!scope_allows(&caller.scopes, scopes::ADMIN))
            .then(|| caller.scopes.clone()),
    };
    let Some(t) = ask_devices(&gw.devices, &gw.metrics, msg)
        .await
        .map_err(down)?
        .map_err(store_err)?
    else {
        return Err(ErrorShape::invalid(format!(
            "device {} is not paired for role {} with those scopes",
            p.device_id, p.role
        )));
    };
    json(
        json!({ "deviceId": p.device_id, "role": t.role, "token": t.token, "scopes": t.scopes, "issuedAtMs": t.issued_at_ms }),
    )
}

pub async fn revoke(state: &SharedState, caller: &Caller, p: &Value) -> MethodResult {
    let p: TokenRef = params("device.token.revoke", p)?;
    may_manage(
        caller,
        &p.device_id,
        &p.role,
        "device token revocation denied",
    )?;
    let gw = &state.gateway;
    let msg = RevokeDeviceToken {
        device_id: p.device_id.clone(),
        role: p.role.clone(),
    };
    let revoked = ask_devices(&gw.devices, &gw.metrics, msg)
        .await
        .map_err(down)?
        .map_err(store_err)?;
    json(json!({ "deviceId": p.device_id, "role": p.role, "revoked": revoked }))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct SetupCodeParams {
    #[serde(default)]
    public_url: Option<String>,
    #[serde(default)]
    prefer_remote_url: Option<bool>,
    #[serde(default)]
    include_qr: Option<bool>,
    #[serde(default)]
    bootstrap_profile: Option<String>,
    #[serde(default)]
    join_url: Option<bool>,
}

/// `device.pair.setupCode` (`openclaw devices join-code`): OpenClaw's
/// refusals, in its words: a join URL only for the node profile, and no
/// code for a gateway only bound to loopback (no other machine could reach
/// the URL it would carry). Where a code could carry a reachable URL it is
/// refused too: a code holds a bootstrap token that pairs whoever presents
/// it, and ferroclaw issues no bootstrap tokens by design: devices and
/// nodes pair by an operator's approval (`device.pair.approve`, `node.pair.approve`).
pub fn setup_code(state: &SharedState, p: &Value) -> MethodResult {
    let p: SetupCodeParams = params("device.pair.setupCode", p)?;
    let _ = (p.prefer_remote_url, p.include_qr);
    let profile = p.bootstrap_profile.as_deref();
    if let Some(bad) = profile.filter(|b| !matches!(*b, "limited" | "node" | "voice-node")) {
        return Err(ErrorShape::invalid(format!(
            "invalid device.pair.setupCode params: at /bootstrapProfile: must be limited, node or voice-node (got {bad:?})"
        )));
    }
    if p.join_url == Some(true) && profile.is_some_and(|b| b != "node") {
        return Err(ErrorShape::invalid(
            "Join URLs require bootstrapProfile=node.",
        ));
    }
    let settings = state.live.settings();
    if p.public_url.is_none() && crate::config::binds_loopback(&settings) {
        return Err(ErrorShape::invalid(
            "Gateway is only bound to loopback. Set gateway.bind=lan, enable tailscale serve, or configure plugins.entries.device-pair.config.publicUrl.",
        ));
    }
    Err(ErrorShape::invalid(
        "setup codes carry a bootstrap token that pairs whoever presents it, and this gateway issues none: connect the new device or node and approve it (openclaw devices approve <requestId>, openclaw nodes approve <requestId>)",
    ))
}
