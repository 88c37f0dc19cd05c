//! Keyed references: a platform id as `hmac-sha256:v1:<key id>:<mac>`
//! (OpenClaw's form). The key is 32 random bytes made at the ledger's first
//! start; the key id (16 random bytes, hex) names it. Each kind of id is
//! its own domain (`account`, `chat`, `message`, `sender`, `target`), so the
//! same number as a chat and as a sender gives two unrelated references.
//! Without the key a reference cannot be reversed, even for small id spaces
//! such as phone numbers.

use hmac::{Hmac, Mac};
use sha2::Sha256;

pub struct Keyed {
    key: [u8; 32],
    id: String,
}

impl Keyed {
    pub fn new(key: [u8; 32], key_id: [u8; 16]) -> Keyed {
        Keyed {
            key,
            id: hex(&key_id),
        }
    }

    /// `value` in `domain` as its reference.
    pub fn reference(&self, domain: &str, value: &str) -> String {
        let mac = match <Hmac<Sha256> as Mac>::new_from_slice(&self.key) {
            Ok(mut m) => {
                m.update(domain.as_bytes());
                m.update(&[0]);
                m.update(value.as_bytes());
                hex(&m.finalize().into_bytes())
            }
            // HMAC takes keys of any length: never reached.
            Err(_) => String::new(),
        };
        format!("hmac-sha256:v1:{}:{mac}", self.id)
    }
}

pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// `sha256:<hex>` of a tool call id (OpenClaw's `toolCallId` in records).
pub fn call_id(id: &str) -> String {
    use sha2::Digest;
    format!("sha256:{}", hex(&Sha256::digest(id.as_bytes())))
}
