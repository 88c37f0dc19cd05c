//! A device identity for tests: Ed25519 key, id, base64url public key, and
//! signed connect params (v2 or v3 payloads, as real clients send them).

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use ed25519_dalek::{Signer, SigningKey};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

pub struct Device {
    pub key: SigningKey,
    pub id: String,
    pub public_key: String,
}

impl Device {
    pub fn new(seed: u8) -> Device {
        let key = SigningKey::from_bytes(&[seed; 32]);
        let raw = key.verifying_key().to_bytes();
        let id = Sha256::digest(raw)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        Device {
            key,
            id,
            public_key: URL_SAFE_NO_PAD.encode(raw),
        }
    }

    pub fn sign(&self, payload: &str) -> String {
        URL_SAFE_NO_PAD.encode(self.key.sign(payload.as_bytes()).to_bytes())
    }

    /// Connect params signed with the v3 payload (`v2` when `v2` is true).
    #[allow(clippy::too_many_arguments)]
    pub fn connect_params(
        &self,
        client_id: &str,
        mode: &str,
        role: &str,
        scopes: &[&str],
        token: Option<&str>,
        nonce: &str,
        signed_at: u64,
        v2: bool,
    ) -> Value {
        let scopes_csv = scopes.join(",");
        let tok = token.unwrap_or("");
        let payload = if v2 {
            format!(
                "v2|{}|{client_id}|{mode}|{role}|{scopes_csv}|{signed_at}|{tok}|{nonce}",
                self.id
            )
        } else {
            format!("v3|{}|{client_id}|{mode}|{role}|{scopes_csv}|{signed_at}|{tok}|{nonce}|linux|laptop", self.id)
        };
        let mut p = json!({
            "minProtocol": 4, "maxProtocol": 4,
            "client": { "id": client_id, "version": "2026.9.6", "platform": "Linux", "deviceFamily": "Laptop", "mode": mode },
            "caps": [], "role": role, "scopes": scopes,
            "device": { "id": self.id, "publicKey": self.public_key, "signature": self.sign(&payload), "signedAt": signed_at, "nonce": nonce },
        });
        if let Some(t) = token {
            p["auth"] = json!({ "token": t });
        }
        p
    }
}

pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}
