//! The rate-limit windows a provider reports on each answer, as OpenClaw's
//! `usage.status` shows them (`{label, usedPercent, resetAt}`): OpenAI's
//! `x-ratelimit-{limit,remaining,reset}-{requests,tokens}` (reset as a
//! duration such as `6m0s`), Anthropic's
//! `anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-{limit,remaining,reset}`
//! (reset as an RFC 3339 time). What the provider said last is kept by the
//! hub; nothing is estimated.

use std::time::Duration;

use std::sync::Arc;

use reqwest::header::HeaderMap;
use serde::Serialize;

/// One window as the provider reported it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RateWindow {
    pub label: String,
    /// 0..=100.
    pub used_percent: f64,
    /// When it resets (ms since the epoch), if said.
    #[serde(rename = "resetAt", skip_serializing_if = "Option::is_none")]
    pub reset_at_ms: Option<u64>,
}

/// The header families: (prefix, suffix kinds, label) per window.
const OPENAI: &[(&str, &str)] = &[("requests", "Requests"), ("tokens", "Tokens")];
const ANTHROPIC: &[(&str, &str)] = &[
    ("requests", "Requests"),
    ("tokens", "Tokens"),
    ("input-tokens", "Input tokens"),
    ("output-tokens", "Output tokens"),
];

fn header<'a>(h: &'a HeaderMap, name: &str) -> Option<&'a str> {
    h.get(name)?.to_str().ok().map(str::trim)
}

fn number(h: &HeaderMap, name: &str) -> Option<f64> {
    header(h, name)?
        .parse::<f64>()
        .ok()
        .filter(|n| n.is_finite())
}

fn window(
    label: &str,
    limit: Option<f64>,
    remaining: Option<f64>,
    reset: Option<u64>,
) -> Option<RateWindow> {
    let (limit, remaining) = (limit?, remaining?);
    if limit <= 0.0 {
        return None;
    }
    let used = ((limit - remaining) / limit * 100.0).clamp(0.0, 100.0);
    Some(RateWindow {
        label: label.to_string(),
        used_percent: (used * 10.0).round() / 10.0,
        reset_at_ms: reset,
    })
}

/// The windows `h` reports, at `now_ms`.
pub fn windows(h: &HeaderMap, now_ms: u64) -> Vec<RateWindow> {
    let mut out = Vec::new();
    for (kind, label) in OPENAI {
        let n = |what: &str| number(h, &format!("x-ratelimit-{what}-{kind}"));
        let reset = header(h, &format!("x-ratelimit-reset-{kind}"))
            .and_then(go_duration)
            .map(|d| now_ms + d.as_millis() as u64);
        out.extend(window(label, n("limit"), n("remaining"), reset));
    }
    for (kind, label) in ANTHROPIC {
        let n = |what: &str| number(h, &format!("anthropic-ratelimit-{kind}-{what}"));
        let reset = header(h, &format!("anthropic-ratelimit-{kind}-reset"))
            .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
            .map(|t| t.timestamp_millis().max(0) as u64);
        out.extend(window(label, n("limit"), n("remaining"), reset));
    }
    out
}

/// A Go-style duration (`1s`, `6m0s`, `20ms`, `1h2m3.5s`).
fn go_duration(s: &str) -> Option<Duration> {
    let mut total = 0.0f64;
    let mut rest = s;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let value: f64 = rest[..digits].parse().ok()?;
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(rest.len());
        let scale = match &rest[..unit_len] {
            "ms" => 0.001,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return None,
        };
        total += value * scale;
        rest = &rest[unit_len..];
    }
    Some(Duration::from_secs_f64(total))
}

/// Called with what an answer reported and when (the hub keeps it).
pub type TellLimits = Arc<dyn Fn(Vec<RateWindow>, u64) + Send + Sync>;

/// Where a provider client tells the hub what an answer's headers said.
#[derive(Clone, Default)]
pub struct RateLimitSink(Option<TellLimits>);

impl std::fmt::Debug for RateLimitSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RateLimitSink")
    }
}

impl RateLimitSink {
    pub fn new(tell: TellLimits) -> RateLimitSink {
        RateLimitSink(Some(tell))
    }

    /// Tells the hub what `h` reports (nothing when it reports nothing).
    pub fn record(&self, h: &HeaderMap) {
        let Some(tell) = &self.0 else { return };
        let now = crate::now_ms();
        let windows = windows(h, now);
        if !windows.is_empty() {
            tell(windows, now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, v.parse().unwrap());
        }
        h
    }

    #[test]
    fn openai_headers_give_requests_and_tokens_windows() {
        let h = headers(&[
            ("x-ratelimit-limit-requests", "500"),
            ("x-ratelimit-remaining-requests", "499"),
            ("x-ratelimit-reset-requests", "120ms"),
            ("x-ratelimit-limit-tokens", "30000"),
            ("x-ratelimit-remaining-tokens", "22500"),
            ("x-ratelimit-reset-tokens", "1m30s"),
        ]);
        let w = windows(&h, 1_000);
        assert_eq!(w.len(), 2);
        assert_eq!(
            (w[0].label.as_str(), w[0].used_percent, w[0].reset_at_ms),
            ("Requests", 0.2, Some(1_120))
        );
        assert_eq!(
            (w[1].label.as_str(), w[1].used_percent, w[1].reset_at_ms),
            ("Tokens", 25.0, Some(91_000))
        );
    }

    #[test]
    fn anthropic_headers_give_their_windows_with_reset_times() {
        let h = headers(&[
            ("anthropic-ratelimit-requests-limit", "50"),
            ("anthropic-ratelimit-requests-remaining", "0"),
            ("anthropic-ratelimit-requests-reset", "2026-11-30T12:00:00Z"),
            ("anthropic-ratelimit-output-tokens-limit", "8000"),
            ("anthropic-ratelimit-output-tokens-remaining", "6000"),
        ]);
        let w = windows(&h, 0);
        assert_eq!(w.len(), 2);
        assert_eq!(w[0].used_percent, 100.0);
        assert_eq!(w[0].reset_at_ms, Some(1_796_040_000_000));
        assert_eq!(
            (w[1].label.as_str(), w[1].used_percent, w[1].reset_at_ms),
            ("Output tokens", 25.0, None)
        );
    }

    #[test]
    fn nothing_reported_is_no_window_and_bad_values_are_skipped() {
        assert!(windows(&HeaderMap::new(), 0).is_empty());
        let h = headers(&[
            ("x-ratelimit-limit-requests", "0"),
            ("x-ratelimit-remaining-requests", "0"),
            ("x-ratelimit-limit-tokens", "many"),
            ("x-ratelimit-remaining-tokens", "1"),
        ]);
        assert!(windows(&h, 0).is_empty());
        assert_eq!(go_duration("6m0s"), Some(Duration::from_secs(360)));
        assert_eq!(
            go_duration("1h2m3.5s"),
            Some(Duration::from_secs_f64(3723.5))
        );
        assert_eq!(go_duration("3 days"), None);
    }
}
