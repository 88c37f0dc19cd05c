//! Paired devices, pending pairing requests and device tokens: the records and
//! the pure rules (what a connect needs: nothing, a role upgrade, a scope
//! upgrade). `actor.rs` is the single writer that persists them;
//! `messages.rs` its inbox.

mod actor;
mod messages;

pub use actor::*;
pub use messages::*;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::scopes::scopes_cover;

/// A token issued to a device for one role.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeviceToken {
    pub token: String,
    pub role: String,
    pub scopes: Vec<String>,
    pub issued_at_ms: u64,
}

/// A paired device.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeviceRecord {
    pub device_id: String,
    pub public_key: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub platform: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_family: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_mode: Option<String>,
    pub roles: Vec<String>,
    pub scopes: Vec<String>,
    pub created_at_ms: u64,
    pub approved_at_ms: u64,
    /// role -> token
    #[serde(default)]
    pub tokens: BTreeMap<String, DeviceToken>,
    /// The name an operator gave it (`device.pair.rename`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operator_label: Option<String>,
}

/// Why a device must (re-)pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PairingReason {
    NotPaired,
    RoleUpgrade,
    ScopeUpgrade,
}

impl PairingReason {
    pub fn as_str(self) -> &'static str {
        match self {
            PairingReason::NotPaired => "not-paired",
            PairingReason::RoleUpgrade => "role-upgrade",
            PairingReason::ScopeUpgrade => "scope-upgrade",
        }
    }
}

/// What a connecting device claims about itself.
#[derive(Debug, Clone, Default)]
pub struct DeviceClaim {
    pub device_id: String,
    pub public_key: String,
    pub display_name: Option<String>,
    pub platform: Option<String>,
    pub device_family: Option<String>,
    pub client_id: Option<String>,
    pub client_mode: Option<String>,
    pub role: String,
    pub scopes: Vec<String>,
    pub remote_ip: Option<String>,
}

/// A pending request to pair (or to widen an existing pairing).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PairingRequest {
    pub request_id: String,
    pub device_id: String,
    pub public_key: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub platform: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_family: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_mode: Option<String>,
    pub role: String,
    pub roles: Vec<String>,
    pub scopes: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_ip: Option<String>,
    pub silent: bool,
    pub is_repair: bool,
    pub reason: PairingReason,
    pub ts: u64,
}

/// Pending requests older than this are forgotten.
pub const PAIRING_REQUEST_TTL_MS: u64 = 10 * 60 * 1000;

/// Does this paired device need a new approval for what it asks now?
pub fn upgrade_needed(record: &DeviceRecord, claim: &DeviceClaim) -> Option<PairingReason> {
    if record.public_key != claim.public_key {
        return Some(PairingReason::NotPaired);
    }
    if !record.roles.iter().any(|r| r == &claim.role) {
        return Some(PairingReason::RoleUpgrade);
    }
    if claim.role == "operator" && !scopes_cover(&record.scopes, &claim.scopes) {
        return Some(PairingReason::ScopeUpgrade);
    }
    None
}

/// Merges an approved request into a (possibly new) device record.
pub fn apply_approval(
    existing: Option<DeviceRecord>,
    req: &PairingRequest,
    display_name: Option<String>,
    now: u64,
) -> DeviceRecord {
    let mut rec = match existing {
        Some(r) if r.public_key == req.public_key => r,
        _ => DeviceRecord {
            device_id: req.device_id.clone(),
            public_key: req.public_key.clone(),
            display_name: None,
            platform: None,
            device_family: None,
            client_id: None,
            client_mode: None,
            roles: Vec::new(),
            scopes: Vec::new(),
            created_at_ms: now,
            approved_at_ms: now,
            tokens: BTreeMap::new(),
            operator_label: None,
        },
    };
    rec.display_name = display_name
        .or_else(|| req.display_name.clone())
        .or(rec.display_name);
    rec.platform = req.platform.clone().or(rec.platform);
    rec.device_family = req.device_family.clone().or(rec.device_family);
    rec.client_id = req.client_id.clone().or(rec.client_id);
    rec.client_mode = req.client_mode.clone().or(rec.client_mode);
    if !rec.roles.contains(&req.role) {
        rec.roles.push(req.role.clone());
    }
    for s in &req.scopes {
        if !rec.scopes.contains(s) {
            rec.scopes.push(s.clone());
        }
    }
    rec.approved_at_ms = now;
    rec
}

/// Constant-time string comparison for secrets.
pub fn secret_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// 32 random bytes, base64url without padding (43 chars), as OpenClaw issues.
pub fn random_token() -> String {
    use base64::Engine;
    let mut bytes = [0u8; 32];
    if getrandom::fill(&mut bytes).is_err() {
        // The OS RNG failing is not recoverable in a meaningful way; fall back
        // to a ULID-derived value so we never hand out a constant token.
        let u = ulid::Ulid::generate().to_bytes();
        bytes[..16].copy_from_slice(&u);
        bytes[16..].copy_from_slice(&ulid::Ulid::generate().to_bytes());
    }
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record() -> DeviceRecord {
        apply_approval(None, &request(&["operator.read"]), None, 1)
    }

    fn request(scopes: &[&str]) -> PairingRequest {
        PairingRequest {
            request_id: "r".into(),
            device_id: "d".into(),
            public_key: "pk".into(),
            display_name: None,
            platform: Some("linux".into()),
            device_family: None,
            client_id: Some("cli".into()),
            client_mode: Some("cli".into()),
            role: "operator".into(),
            roles: vec!["operator".into()],
            scopes: scopes.iter().map(|s| s.to_string()).collect(),
            remote_ip: None,
            silent: false,
            is_repair: false,
            reason: PairingReason::NotPaired,
            ts: 1,
        }
    }

    fn claim(role: &str, scopes: &[&str], pk: &str) -> DeviceClaim {
        DeviceClaim {
            device_id: "d".into(),
            public_key: pk.into(),
            role: role.into(),
            scopes: scopes.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        }
    }

    #[test]
    fn upgrades_are_detected_by_kind() {
        let rec = record();
        let check = |c: DeviceClaim, want: Option<PairingReason>| {
            assert_eq!(upgrade_needed(&rec, &c), want, "{c:?}");
        };
        check(claim("operator", &["operator.read"], "pk"), None);
        check(claim("operator", &[], "pk"), None);
        check(
            claim("operator", &["operator.write"], "pk"),
            Some(PairingReason::ScopeUpgrade),
        );
        check(claim("node", &[], "pk"), Some(PairingReason::RoleUpgrade));
        check(
            claim("operator", &["operator.read"], "other"),
            Some(PairingReason::NotPaired),
        );
    }

    #[test]
    fn approval_merges_roles_and_scopes() {
        let rec = apply_approval(
            Some(record()),
            &request(&["operator.write"]),
            Some("laptop".into()),
            5,
        );
        assert_eq!(rec.scopes, ["operator.read", "operator.write"]);
        assert_eq!(rec.roles, ["operator"]);
        assert_eq!(rec.display_name.as_deref(), Some("laptop"));
        assert_eq!(rec.approved_at_ms, 5);
    }

    #[test]
    fn tokens_are_43_char_base64url_and_distinct() {
        let a = random_token();
        let b = random_token();
        assert_eq!(a.len(), 43);
        assert_ne!(a, b);
        assert!(a
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'));
        assert!(secret_eq(&a, &a.clone()));
        assert!(!secret_eq(&a, &b));
    }
}
