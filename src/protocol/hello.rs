//! The `hello-ok` payload, in the v4 shape or (for v3 clients) the v3 shape:
//! v3 omits `auth` unless a device token was issued and has no
//! `auth.method`/`features.capabilities`.

use ferroclaw_actors::bus::StateVersion;
use ferroclaw_actors::devices::DeviceToken;
use ferroclaw_actors::presence::PresenceEntry;
use serde_json::value::RawValue;
use serde_json::{json, Value};

use super::methods::{CAPABILITIES, EVENTS, METHODS};

pub struct Hello<'a> {
    pub protocol: u32,
    pub conn_id: &'a str,
    pub server_version: &'a str,
    pub presence: &'a [PresenceEntry],
    pub health: &'a RawValue,
    pub state_version: StateVersion,
    pub uptime_ms: u64,
    pub config_path: &'a str,
    pub state_dir: &'a str,
    pub default_agent_id: &'a str,
    /// `session.mainKey`: the main session's name.
    pub main_key: &'a str,
    pub auth_mode: &'a str,
    /// How the connection authenticated: `token`, `password`, `device-token`, `none`.
    pub auth_method: &'a str,
    pub role: &'a str,
    pub scopes: &'a [String],
    pub device_token: Option<&'a DeviceToken>,
    pub max_payload: usize,
    pub max_buffered_bytes: usize,
    pub tick_interval_ms: u64,
}

pub fn hello_ok(h: &Hello<'_>) -> Value {
    let mut features = json!({ "methods": METHODS, "events": EVENTS });
    if h.protocol >= 4 {
        features["capabilities"] = json!(CAPABILITIES);
    }
    let main_key = h.main_key;
    let mut out = json!({
        "type": "hello-ok",
        "protocol": h.protocol,
        "server": { "version": h.server_version, "connId": h.conn_id },
        "features": features,
        "snapshot": {
            "presence": h.presence,
            "health": h.health,
            "stateVersion": h.state_version,
            "uptimeMs": h.uptime_ms,
            "configPath": h.config_path,
            "stateDir": h.state_dir,
            "sessionDefaults": {
                "defaultAgentId": h.default_agent_id,
                "mainKey": main_key,
                "mainSessionKey": format!("agent:{}:{}", h.default_agent_id, main_key),
                // ferroclaw routes per sender only (no `global` scope).
                "scope": "per-sender",
            },
            "authMode": h.auth_mode,
        },
        "policy": {
            "maxPayload": h.max_payload,
            "maxBufferedBytes": h.max_buffered_bytes,
            "tickIntervalMs": h.tick_interval_ms,
        },
    });
    let auth = match (h.protocol, h.device_token) {
        (3, None) => None,
        (3, Some(t)) => Some(json!({
            "deviceToken": t.token, "role": t.role, "scopes": t.scopes, "issuedAtMs": t.issued_at_ms,
        })),
        (_, Some(t)) => Some(json!({
            "method": h.auth_method, "deviceToken": t.token, "role": t.role,
            "scopes": t.scopes, "issuedAtMs": t.issued_at_ms,
        })),
        (_, None) => Some(json!({ "method": h.auth_method, "role": h.role, "scopes": h.scopes })),
    };
    if let Some(a) = auth {
        out["auth"] = a;
    }
    out
}
