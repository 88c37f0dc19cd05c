//! `connect` params (ConnectParamsSchema of OpenClaw 2026.9.6): closed
//! objects where a field carries authority (the top level, `auth`, `device`),
//! known client ids and modes, and protocol negotiation. The `client` object
//! only describes the client: fields a newer client adds there are ignored
//! (logged once at debug), so it keeps connecting.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

use super::{LEGACY_PROTOCOL_VERSION, PROTOCOL_VERSION};

pub const CLIENT_IDS: &[&str] = &[
    "webchat-ui",
    "openclaw-control-ui",
    "webchat",
    "cli",
    "gateway-client",
    "openclaw-macos",
    "openclaw-ios",
    "openclaw-android",
    "node-host",
    "test",
    "fingerprint",
    "openclaw-probe",
    "openclaw-tui",
    "openclaw-browser-copilot",
    "openclaw-linux",
    "openclaw-watchos",
    "openclaw-worker",
    "ferroclaw-cli",
    "ferroclaw-webchat",
];

pub const CLIENT_MODES: &[&str] = &[
    "webchat", "cli", "ui", "backend", "node", "probe", "test", "worker",
];

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ConnectParams {
    pub min_protocol: u32,
    pub max_protocol: u32,
    pub client: ClientInfo,
    #[serde(default)]
    pub caps: Vec<String>,
    #[serde(default)]
    pub commands: Option<Vec<String>>,
    #[serde(default)]
    pub permissions: Option<BTreeMap<String, bool>>,
    #[serde(default)]
    pub path_env: Option<String>,
    #[serde(default)]
    pub role: Option<String>,
    #[serde(default)]
    pub scopes: Option<Vec<String>>,
    #[serde(default)]
    pub device: Option<DeviceParams>,
    #[serde(default)]
    pub auth: Option<AuthParams>,
    #[serde(default)]
    pub locale: Option<String>,
    #[serde(default)]
    pub user_agent: Option<String>,
    #[serde(default)]
    pub transports: Option<Vec<String>>,
    /// A node's Computer Use declaration (accepted; nodes come later).
    #[serde(default)]
    pub computer_use: Option<Value>,
    /// The v1 node-host worker envelope (accepted; nodes come later).
    #[serde(default)]
    pub worker_runs: Option<Value>,
    /// The model catalog's initial read scope (accepted, not used).
    #[serde(default)]
    pub model_catalog: Option<Value>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClientInfo {
    pub id: String,
    #[serde(default)]
    pub display_name: Option<String>,
    pub version: String,
    /// The client's build (the Control UI sends its bundle's id).
    #[serde(default)]
    pub build_id: Option<String>,
    pub platform: String,
    /// The client's IANA time zone, as it reports it.
    #[serde(default)]
    pub time_zone: Option<String>,
    #[serde(default)]
    pub device_family: Option<String>,
    #[serde(default)]
    pub model_identifier: Option<String>,
    pub mode: String,
    #[serde(default)]
    pub instance_id: Option<String>,
    /// Fields this build does not know (ignored).
    #[serde(flatten)]
    pub unknown: BTreeMap<String, Value>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DeviceParams {
    pub id: String,
    pub public_key: String,
    pub signature: String,
    pub signed_at: u64,
    #[serde(default)]
    pub nonce: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AuthParams {
    #[serde(default)]
    pub token: Option<String>,
    #[serde(default)]
    pub bootstrap_token: Option<String>,
    #[serde(default)]
    pub device_token: Option<String>,
    #[serde(default)]
    pub password: Option<String>,
    #[serde(default)]
    pub approval_runtime_token: Option<String>,
    #[serde(default)]
    pub agent_runtime_identity_token: Option<String>,
}

ferroclaw_actors::reason_error! {
    /// What is wrong with a `connect`'s params, each problem at its path
    /// (the wire error says `invalid connect params: <this>`).
    pub struct ConnectParamsError;
}

/// Validates params; the error text follows `invalid connect params: <errors>`.
pub fn parse_connect_params(params: &Value) -> Result<ConnectParams, ConnectParamsError> {
    let p: ConnectParams = serde_path_to_error::deserialize(params).map_err(|e| {
        let path = e.path().to_string();
        let at = if path == "." {
            "root".to_string()
        } else {
            format!("/{}", path.replace('.', "/"))
        };
        format!("at {at}: {}", e.inner())
    })?;
    let mut errors = Vec::new();
    if p.min_protocol < 1 {
        errors.push("at /minProtocol: must be >= 1".to_string());
    }
    if p.max_protocol < 1 {
        errors.push("at /maxProtocol: must be >= 1".to_string());
    }
    client_errors(&p.client, &mut errors);
    if let Some(a) = &p.auth {
        auth_errors(a, &mut errors);
    }
    if errors.is_empty() {
        Ok(p)
    } else {
        Err(errors.join("; ").into())
    }
}

/// `client`: a known id and mode, no empty string, bounded lengths (new
/// fields a newer client sends are ignored).
fn client_errors(c: &ClientInfo, errors: &mut Vec<String>) {
    if !CLIENT_IDS.contains(&c.id.as_str()) {
        errors.push("at /client/id: must be equal to one of the allowed values".to_string());
    }
    if !CLIENT_MODES.contains(&c.mode.as_str()) {
        errors.push("at /client/mode: must be equal to one of the allowed values".to_string());
    }
    for (field, value) in [
        ("version", Some(&c.version)),
        ("platform", Some(&c.platform)),
        ("displayName", c.display_name.as_ref()),
        ("deviceFamily", c.device_family.as_ref()),
        ("modelIdentifier", c.model_identifier.as_ref()),
        ("instanceId", c.instance_id.as_ref()),
        ("buildId", c.build_id.as_ref()),
        ("timeZone", c.time_zone.as_ref()),
    ] {
        if value.is_some_and(|v| v.is_empty()) {
            errors.push(format!(
                "at /client/{field}: must NOT have fewer than 1 characters"
            ));
        }
    }
    for (field, value, max) in [("buildId", &c.build_id, 96), ("timeZone", &c.time_zone, 64)] {
        if value.as_ref().is_some_and(|v| v.chars().count() > max) {
            errors.push(format!(
                "at /client/{field}: must NOT have more than {max} characters"
            ));
        }
    }
    if !c.unknown.is_empty() {
        let fields: Vec<&str> = c.unknown.keys().map(String::as_str).collect();
        tracing::debug!(client = %c.id, ?fields, "connect: unknown client fields ignored");
    }
}

/// `auth`: each secret within its length.
fn auth_errors(a: &AuthParams, errors: &mut Vec<String>) {
    let bounded = [
        ("token", &a.token, 4096),
        ("password", &a.password, 4096),
        ("bootstrapToken", &a.bootstrap_token, 256),
        ("deviceToken", &a.device_token, 256),
        ("approvalRuntimeToken", &a.approval_runtime_token, 2048),
        (
            "agentRuntimeIdentityToken",
            &a.agent_runtime_identity_token,
            2048,
        ),
    ];
    for (field, value, max) in bounded {
        if value.as_ref().is_some_and(|v| v.len() > max) {
            errors.push(format!(
                "at /auth/{field}: must NOT have more than {max} characters"
            ));
        }
    }
}

/// The protocol to answer with, or None for a mismatch. v4 when offered;
/// else v3 (served with the v3 hello shape).
pub fn negotiate(min: u32, max: u32) -> Option<u32> {
    [PROTOCOL_VERSION, LEGACY_PROTOCOL_VERSION]
        .into_iter()
        .find(|v| min <= *v && *v <= max)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn base() -> Value {
        json!({"minProtocol":4,"maxProtocol":4,
               "client":{"id":"cli","version":"2026.9.6","platform":"linux","mode":"cli"}})
    }

    #[test]
    fn appendix_a_cli_connect_parses() {
        let p = json!({"minProtocol":4,"maxProtocol":4,
            "client":{"id":"cli","version":"2026.9.6","platform":"linux","deviceFamily":"Linux","mode":"cli","instanceId":"u"},
            "caps":[],"auth":{"token":"t"},"role":"operator","scopes":["operator.read"]});
        let c = parse_connect_params(&p).unwrap();
        assert_eq!(c.auth.unwrap().token.as_deref(), Some("t"));
    }

    #[test]
    fn bad_params_are_reported_with_paths() {
        let check = |patch: &dyn Fn(&mut Value), want: &str| {
            let mut p = base();
            patch(&mut p);
            let err = parse_connect_params(&p).unwrap_err().to_string();
            assert!(err.contains(want), "{err}");
        };
        check(&|p| p["bogus"] = json!(1), "unknown field `bogus`");
        check(&|p| p["client"]["id"] = json!("nope"), "/client/id");
        check(&|p| p["client"]["mode"] = json!("nope"), "/client/mode");
        check(&|p| p["client"]["platform"] = json!(""), "/client/platform");
        check(
            &|p| {
                p["client"].as_object_mut().unwrap().remove("version");
            },
            "missing field `version`",
        );
        check(&|p| p["minProtocol"] = json!("4"), "minProtocol");
        check(&|p| p["auth"]["bogus"] = json!(1), "unknown field `bogus`");
        check(
            &|p| p["client"]["buildId"] = json!("b".repeat(97)),
            "/client/buildId",
        );
        check(&|p| p["client"]["timeZone"] = json!(""), "/client/timeZone");
        check(
            &|p| p["auth"] = json!({"deviceToken": "x".repeat(300)}),
            "/auth/deviceToken",
        );
    }

    #[test]
    fn the_control_uis_connect_parses_and_new_client_fields_are_ignored() {
        let p = json!({"minProtocol":3,"maxProtocol":4,
            "client":{"id":"openclaw-control-ui","version":"2026.9.6","buildId":"abc123",
                      "platform":"Linux x86_64","timeZone":"Europe/Berlin","mode":"webchat",
                      "instanceId":"i","somethingNewer":{"x":1}},
            "role":"operator","scopes":["operator.admin"],"caps":["tool-events"],
            "auth":{"token":"t","password":"t"},"locale":"en-US","userAgent":"Mozilla/5.0",
            "modelCatalog":{"agentId":"main"},"computerUse":{"v":1}});
        let c = parse_connect_params(&p).unwrap();
        assert_eq!(c.client.build_id.as_deref(), Some("abc123"));
        assert_eq!(c.client.time_zone.as_deref(), Some("Europe/Berlin"));
        assert!(c.client.unknown.contains_key("somethingNewer"));
        let mut strict = p.clone();
        strict["device"] =
            json!({"id":"d","publicKey":"k","signature":"s","signedAt":1,"nonce":"n","extra":1});
        assert!(parse_connect_params(&strict)
            .unwrap_err()
            .to_string()
            .contains("unknown field `extra`"));
    }

    #[test]
    fn negotiation_prefers_v4_and_serves_v3() {
        assert_eq!(negotiate(4, 4), Some(4));
        assert_eq!(negotiate(3, 5), Some(4));
        assert_eq!(negotiate(3, 3), Some(3));
        assert_eq!(negotiate(5, 6), None);
        assert_eq!(negotiate(1, 2), None);
    }
}
