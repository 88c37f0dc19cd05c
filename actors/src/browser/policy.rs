//! Where the managed browser may go (`browser.ssrfPolicy`, OpenClaw's
//! keys). Only `http:` and `https:` pages (and `about:blank`) are opened;
//! a host is resolved once and refused when any of its addresses is
//! internal (loopback, private, link-local with the metadata address,
//! carrier-grade NAT ...: `tool::ssrf::internal_kind`) unless the policy
//! opens it, and the caller connects to exactly the addresses checked.
//! The browser's proxy (`proxy.rs`) asks this for every request Chromium
//! makes, so redirects, new tabs, `window.open`, frames and subresources
//! obey it as much as a navigation the tool asks for.

use std::net::{IpAddr, SocketAddr};

use crate::settings::BrowserSsrfPolicy;
use crate::tool::ssrf::internal_kind;

/// Why the browser may not go somewhere.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    #[error("{url}: only http, https and about:blank pages are opened (not {scheme}:)")]
    Scheme { url: String, scheme: String },
    #[error("{url} is not a URL the browser opens")]
    NotAUrl { url: String },
    #[error("{host} is blocked by browser.ssrfPolicy.blockedHostnames")]
    BlockedHost { host: String },
    #[error("{host} resolves to {ip}, a {kind} address: browser.ssrfPolicy does not allow it (allowedHostnames opens one host)")]
    Internal {
        host: String,
        ip: IpAddr,
        kind: &'static str,
    },
    /// The lookup failed (its error names the host).
    #[error(transparent)]
    Lookup(crate::tool::ssrf::SsrfError),
}

/// `browser.ssrfPolicy`, ready to check.
#[derive(Debug, Clone, Default)]
pub struct Policy {
    private_network: bool,
    rfc2544: bool,
    ula: bool,
    allowed: Vec<String>,
    blocked: Vec<String>,
}

/// Whether `host` matches a pattern: exact, or `*.domain` for the domain
/// and every name under it.
fn matches(pattern: &str, host: &str) -> bool {
    match pattern.strip_prefix("*.") {
        Some(domain) => host == domain || host.ends_with(&format!(".{domain}")),
        None => host == pattern,
    }
}

fn lower(list: &[String]) -> Vec<String> {
    list.iter()
        .map(|h| h.trim().trim_end_matches('.').to_ascii_lowercase())
        .filter(|h| !h.is_empty())
        .collect()
}

impl Policy {
    pub fn from_settings(p: &BrowserSsrfPolicy) -> Policy {
        Policy {
            private_network: p.dangerously_allow_private_network
                || p.allow_private_network == Some(true),
            rfc2544: p.allow_rfc2544_benchmark_range,
            ula: p.allow_ipv6_unique_local_range,
            allowed: lower(&p.allowed_hostnames),
            blocked: lower(&p.blocked_hostnames),
        }
    }

    /// A URL the tool is asked to open: its scheme, then its host's name
    /// (its addresses are checked by the proxy as the browser connects).
    pub fn check_url(&self, url: &str) -> Result<(), Refused> {
        if url == "about:blank" {
            return Ok(());
        }
        let not_a_url = || Refused::NotAUrl {
            url: url.to_string(),
        };
        let parsed = reqwest::Url::parse(url).map_err(|_| not_a_url())?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(Refused::Scheme {
                url: url.to_string(),
                scheme: parsed.scheme().to_string(),
            });
        }
        let host = parsed.host_str().ok_or_else(not_a_url)?;
        self.check_name(host)
    }

    /// The host's name against the blocked list.
    pub fn check_name(&self, host: &str) -> Result<(), Refused> {
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        if self.blocked.iter().any(|p| matches(p, &host)) {
            return Err(Refused::BlockedHost { host });
        }
        Ok(())
    }

    fn allows_ip(&self, ip: IpAddr) -> Result<(), &'static str> {
        let Some(kind) = internal_kind(ip) else {
            return Ok(());
        };
        let opened = self.private_network
            || (kind == "benchmarking" && self.rfc2544)
            || (kind == "unique local" && self.ula);
        if opened {
            Ok(())
        } else {
            Err(kind)
        }
    }

    /// Resolves `host` and checks every address (an allow-listed host is
    /// reached whatever it resolves to). Returns the addresses to connect
    /// to: pin them, a second lookup could answer differently.
    pub async fn resolve(&self, host: &str, port: u16) -> Result<Vec<SocketAddr>, Refused> {
        self.check_name(host)?;
        let name = host.trim_start_matches('[').trim_end_matches(']');
        let addrs = crate::tool::ssrf::lookup(host, port)
            .await
            .map_err(Refused::Lookup)?;
        let lowered = name.trim_end_matches('.').to_ascii_lowercase();
        if self.allowed.iter().any(|p| matches(p, &lowered)) {
            return Ok(addrs);
        }
        for a in &addrs {
            self.allows_ip(a.ip()).map_err(|kind| Refused::Internal {
                host: host.to_string(),
                ip: a.ip(),
                kind,
            })?;
        }
        Ok(addrs)
    }
}

#[cfg(test)]
#[path = "policy_tests.rs"]
mod tests;
