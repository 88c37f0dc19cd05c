//! Meta's webhook signatures: `X-Hub-Signature-256: sha256=<hex>`, the
//! HMAC-SHA256 of the raw request body with the app secret. The bytes
//! checked are the bytes received (a body parsed and written again would
//! not match), and the comparison is constant-time (the `hmac` crate's
//! `verify_slice`). Meta signs no timestamp: a replayed body is caught by
//! the ledger's dedupe key, not here.

use hmac::{Hmac, Mac};
use sha2::Sha256;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    #[error("missing X-Hub-Signature-256")]
    Missing,
    #[error("X-Hub-Signature-256 is not sha256=<hex>")]
    Malformed,
    #[error("X-Hub-Signature-256 does not match the body")]
    Mismatch,
}

fn mac(secret: &str, body: &[u8]) -> Option<Hmac<Sha256>> {
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(secret.as_bytes()).ok()?;
    mac.update(body);
    Some(mac)
}

/// The header's value for a body (what the fake webhook sender sends).
pub fn sign(secret: &str, body: &[u8]) -> String {
    let tag = mac(secret, body)
        .map(|m| m.finalize().into_bytes().to_vec())
        .unwrap_or_default();
    let hex: String = tag.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256={hex}")
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if s.len() != 64 {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

/// Checks the header against the raw body.
pub fn verify(secret: &str, header: Option<&str>, body: &[u8]) -> Result<(), SignatureError> {
    let header = header.ok_or(SignatureError::Missing)?;
    let tag = header
        .trim()
        .strip_prefix("sha256=")
        .and_then(unhex)
        .ok_or(SignatureError::Malformed)?;
    let mac = mac(secret, body).ok_or(SignatureError::Mismatch)?;
    mac.verify_slice(&tag).map_err(|_| SignatureError::Mismatch)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_received_bytes_signed_with_the_secret_pass() {
        let body = br#"{"object":"whatsapp_business_account","entry":[]}"#;
        let sig = sign("s3cret", body);
        assert!(sig.starts_with("sha256=") && sig.len() == 71);
        assert_eq!(verify("s3cret", Some(&sig), body), Ok(()));
        // The same JSON written again (other spacing) is not what was signed.
        let again = br#"{"object": "whatsapp_business_account", "entry": []}"#;
        assert_eq!(
            verify("s3cret", Some(&sig), again),
            Err(SignatureError::Mismatch)
        );
        assert_eq!(
            verify("other", Some(&sig), body),
            Err(SignatureError::Mismatch)
        );
        assert_eq!(verify("s3cret", None, body), Err(SignatureError::Missing));
        for bad in [
            "",
            "sha256=",
            "sha1=abcd",
            "sha256=zz",
            &sig[..70],
            "sha256=é",
        ] {
            assert_eq!(
                verify("s3cret", Some(bad), body),
                Err(SignatureError::Malformed),
                "{bad}"
            );
        }
    }
}
