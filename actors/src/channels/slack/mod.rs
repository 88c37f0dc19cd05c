//! Slack (issue 18, in progress; not started by the channel supervisor
//! yet). The parts so far, pure: `signature.rs` (Events API request
//! signatures: HMAC-SHA256 of `v0:{ts}:{body}` with the `hmac` crate,
//! constant-time, 5-minute window), `envelope.rs` (Socket Mode envelopes
//! and Events API bodies read into plain types; mention markup as plain
//! text), `dedupe.rs` (recently seen envelope ids and message keys, with a
//! TTL and a bound, so Slack's retries are answered once).

pub mod dedupe;
pub mod envelope;
pub mod signature;
