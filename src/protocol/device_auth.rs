//! Device identity: Ed25519 keys (ed25519-dalek), device id = lowercase hex
//! sha256 of the raw 32-byte public key, base64url keys and signatures, and
//! the v2/v3 signed payload strings.

use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
use base64::Engine;
use ed25519_dalek::{Signature, VerifyingKey};
use sha2::{Digest, Sha256};

/// SPKI DER prefix of an Ed25519 public key.
const SPKI_PREFIX: [u8; 12] = [
    0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00,
];

fn b64_any(s: &str) -> Option<Vec<u8>> {
    let s = s.trim();
    URL_SAFE_NO_PAD
        .decode(s)
        .or_else(|_| URL_SAFE.decode(s))
        .or_else(|_| STANDARD.decode(s))
        .or_else(|_| STANDARD_NO_PAD.decode(s))
        .ok()
}

/// The raw 32-byte key from base64url (or base64) raw bytes or an SPKI PEM.
pub fn normalize_public_key(s: &str) -> Option<[u8; 32]> {
    let bytes = if s.contains("BEGIN") {
        let body: String = s
            .lines()
            .filter(|l| !l.starts_with("-----"))
            .collect::<Vec<_>>()
            .concat();
        let der = STANDARD.decode(body.trim()).ok()?;
        if der.len() != 44 || der[..12] != SPKI_PREFIX {
            return None;
        }
        der[12..].to_vec()
    } else {
        b64_any(s)?
    };
    let key: [u8; 32] = bytes.try_into().ok()?;
    VerifyingKey::from_bytes(&key).ok()?;
    Some(key)
}

pub fn encode_public_key(key: &[u8; 32]) -> String {
    URL_SAFE_NO_PAD.encode(key)
}

/// Lowercase hex sha256 of the raw key.
pub fn device_id_for(key: &[u8; 32]) -> String {
    Sha256::digest(key)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The fields of a signed connect.
#[derive(Debug, Clone, Default)]
pub struct SignedFields<'a> {
    pub device_id: &'a str,
    pub client_id: &'a str,
    pub client_mode: &'a str,
    pub role: &'a str,
    pub scopes: &'a [String],
    pub signed_at_ms: u64,
    pub token: &'a str,
    pub nonce: &'a str,
    pub platform: &'a str,
    pub device_family: &'a str,
}

/// `v2|deviceId|clientId|clientMode|role|scopes|signedAtMs|token|nonce`.
pub fn payload_v2(f: &SignedFields<'_>) -> String {
    format!(
        "v2|{}|{}|{}|{}|{}|{}|{}|{}",
        f.device_id,
        f.client_id,
        f.client_mode,
        f.role,
        f.scopes.join(","),
        f.signed_at_ms,
        f.token,
        f.nonce
    )
}

fn norm_meta(s: &str) -> String {
    s.trim().to_ascii_lowercase()
}

/// v2 plus `|platform|deviceFamily`, trimmed and ASCII-lowercased.
pub fn payload_v3(f: &SignedFields<'_>) -> String {
    format!(
        "v3|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}",
        f.device_id,
        f.client_id,
        f.client_mode,
        f.role,
        f.scopes.join(","),
        f.signed_at_ms,
        f.token,
        f.nonce,
        norm_meta(f.platform),
        norm_meta(f.device_family)
    )
}

/// True when the signature verifies over the v3 or (legacy) v2 payload.
pub fn verify(key: &[u8; 32], signature: &str, f: &SignedFields<'_>) -> bool {
    let Ok(vk) = VerifyingKey::from_bytes(key) else {
        return false;
    };
    let Some(sig) = b64_any(signature).and_then(|b| Signature::from_slice(&b).ok()) else {
        return false;
    };
    [payload_v3(f), payload_v2(f)]
        .iter()
        .any(|p| vk.verify_strict(p.as_bytes(), &sig).is_ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ed25519_dalek::{Signer, SigningKey};

    fn fields<'a>(scopes: &'a [String], token: &'a str) -> SignedFields<'a> {
        SignedFields {
            device_id: "dev-1",
            client_id: "openclaw-macos",
            client_mode: "ui",
            role: "operator",
            scopes,
            signed_at_ms: 1_700_000_000_000,
            token,
            nonce: "nonce-abc",
            platform: "  IOS  ",
            device_family: "  iPhone  ",
        }
    }

    #[test]
    fn payloads_match_the_upstream_vectors() {
        let scopes = vec!["operator.admin".to_string(), "operator.read".to_string()];
        assert_eq!(
            payload_v3(&fields(&scopes, "tok-123")),
            "v3|dev-1|openclaw-macos|ui|operator|operator.admin,operator.read|1700000000000|tok-123|nonce-abc|ios|iphone"
        );
        assert_eq!(
            payload_v2(&fields(&scopes, "")),
            "v2|dev-1|openclaw-macos|ui|operator|operator.admin,operator.read|1700000000000||nonce-abc"
        );
    }

    #[test]
    fn signatures_verify_for_v2_and_v3_and_fail_when_tampered() {
        let sk = SigningKey::from_bytes(&[7u8; 32]);
        let pk = sk.verifying_key().to_bytes();
        let scopes = vec!["operator.read".to_string()];
        let f = fields(&scopes, "t");
        for payload in [payload_v2(&f), payload_v3(&f)] {
            let sig = URL_SAFE_NO_PAD.encode(sk.sign(payload.as_bytes()).to_bytes());
            assert!(verify(&pk, &sig, &f));
            let other = SignedFields {
                nonce: "other",
                ..f.clone()
            };
            assert!(!verify(&pk, &sig, &other));
        }
        assert!(!verify(&pk, "not-base64!!", &f));
    }

    #[test]
    fn keys_normalise_from_base64url_and_pem() {
        let sk = SigningKey::from_bytes(&[9u8; 32]);
        let raw = sk.verifying_key().to_bytes();
        assert_eq!(normalize_public_key(&encode_public_key(&raw)), Some(raw));
        let mut der = SPKI_PREFIX.to_vec();
        der.extend_from_slice(&raw);
        let pem = format!(
            "-----BEGIN PUBLIC KEY-----\n{}\n-----END PUBLIC KEY-----\n",
            STANDARD.encode(&der)
        );
        assert_eq!(normalize_public_key(&pem), Some(raw));
        assert_eq!(normalize_public_key("short"), None);
        assert_eq!(device_id_for(&raw).len(), 64);
    }
}
