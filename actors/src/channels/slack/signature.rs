//! Slack's request signatures (Events API over HTTP): the signature is
//! `v0=` + hex(HMAC-SHA256(signing secret, `v0:{timestamp}:{body}`)), sent in
//! `X-Slack-Signature` with the timestamp in `X-Slack-Request-Timestamp`.
//! A request older or newer than five minutes is refused (a replay), and
//! the comparison is constant-time (the `hmac` crate's `verify_slice`).

use hmac::{Hmac, Mac};
use sha2::Sha256;

/// How far a request's timestamp may be from now.
pub const WINDOW_SECS: u64 = 5 * 60;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    #[error("missing X-Slack-Request-Timestamp or X-Slack-Signature")]
    Missing,
    #[error("unreadable X-Slack-Request-Timestamp")]
    BadTimestamp,
    #[error("request timestamp outside the 5-minute window (a replay?)")]
    Stale,
    #[error("signature is not v0=<hex>")]
    Malformed,
    #[error("signature does not match")]
    Mismatch,
}

/// The `X-Slack-Signature` value for a body (what the fake Slack sends).
pub fn sign(secret: &str, timestamp: u64, body: &[u8]) -> String {
    let tag = mac(secret, &timestamp.to_string(), body)
        .map(|m| m.finalize().into_bytes().to_vec())
        .unwrap_or_default();
    let hex: String = tag.iter().map(|b| format!("{b:02x}")).collect();
    format!("v0={hex}")
}

/// HMAC-SHA256 over `v0:{timestamp}:{body}`, the timestamp as the header
/// carried it (HMAC takes a key of any length; None only if that ever
/// changed).
fn mac(secret: &str, timestamp: &str, body: &[u8]) -> Option<Hmac<Sha256>> {
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(secret.as_bytes()).ok()?;
    mac.update(format!("v0:{timestamp}:").as_bytes());
    mac.update(body);
    Some(mac)
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

/// Checks a request: its timestamp header, its signature header, its raw
/// body, at `now_secs`.
pub fn verify(
    secret: &str,
    timestamp: Option<&str>,
    signature: Option<&str>,
    body: &[u8],
    now_secs: u64,
) -> Result<(), SignatureError> {
    let (Some(ts), Some(sig)) = (timestamp, signature) else {
        return Err(SignatureError::Missing);
    };
    let ts = ts.trim();
    if ts.is_empty() || !ts.bytes().all(|b| b.is_ascii_digit()) {
        return Err(SignatureError::BadTimestamp);
    }
    let secs: u64 = ts.parse().map_err(|_| SignatureError::BadTimestamp)?;
    if secs.abs_diff(now_secs) > WINDOW_SECS {
        return Err(SignatureError::Stale);
    }
    let tag = sig
        .trim()
        .strip_prefix("v0=")
        .and_then(unhex)
        .ok_or(SignatureError::Malformed)?;
    mac(secret, ts, body)
        .ok_or(SignatureError::Mismatch)?
        .verify_slice(&tag)
        .map_err(|_| SignatureError::Mismatch)
}

#[cfg(test)]
mod tests {
    use super::*;

    // Slack's documented example request.
    const SECRET: &str = "8f742231b10e8888abcd99yyyzzz85a5";
    const BODY: &str = "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c";
    const TS: u64 = 1_531_420_618;
    const SIG: &str = "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503";

    #[test]
    fn slacks_documented_example_verifies() {
        assert_eq!(sign(SECRET, TS, BODY.as_bytes()), SIG);
        assert_eq!(
            verify(
                SECRET,
                Some("1531420618"),
                Some(SIG),
                BODY.as_bytes(),
                TS + 10
            ),
            Ok(())
        );
    }

    #[test]
    fn forged_stale_and_malformed_requests_are_refused() {
        let body = BODY.as_bytes();
        let ts = Some("1531420618");
        assert_eq!(
            verify("other-secret", ts, Some(SIG), body, TS),
            Err(SignatureError::Mismatch)
        );
        assert_eq!(
            verify(SECRET, ts, Some(SIG), b"token=changed", TS),
            Err(SignatureError::Mismatch)
        );
        assert_eq!(
            verify(SECRET, ts, Some(SIG), body, TS + WINDOW_SECS + 1),
            Err(SignatureError::Stale)
        );
        assert_eq!(
            verify(SECRET, ts, Some(SIG), body, TS - WINDOW_SECS - 1),
            Err(SignatureError::Stale)
        );
        assert_eq!(
            verify(SECRET, None, Some(SIG), body, TS),
            Err(SignatureError::Missing)
        );
        assert_eq!(
            verify(SECRET, Some("soon"), Some(SIG), body, TS),
            Err(SignatureError::BadTimestamp)
        );
        // The signed text is the header as sent: the same second written
        // another way is another text, and a sign or a huge number is no
        // timestamp at all.
        assert_eq!(
            verify(SECRET, Some("01531420618"), Some(SIG), body, TS),
            Err(SignatureError::Mismatch)
        );
        for odd in ["+1531420618", "-1", "99999999999999999999999", ""] {
            assert_eq!(
                verify(SECRET, Some(odd), Some(SIG), body, TS),
                Err(SignatureError::BadTimestamp),
                "{odd}"
            );
        }
        assert_eq!(
            verify(SECRET, ts, Some("v1=abcd"), body, TS),
            Err(SignatureError::Malformed)
        );
        assert_eq!(
            verify(SECRET, ts, Some("v0=zz"), body, TS),
            Err(SignatureError::Malformed)
        );
        assert_eq!(
            verify(SECRET, ts, Some("v0=abc"), body, TS),
            Err(SignatureError::Malformed)
        );
        let short = &SIG[..SIG.len() - 2];
        assert_eq!(
            verify(SECRET, ts, Some(short), body, TS),
            Err(SignatureError::Mismatch)
        );
    }
}
