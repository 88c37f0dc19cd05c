//! What a web page can make a browser send, refused while the gateway runs
//! with `gateway.auth.mode: "none"` (loopback only, so no secret stands
//! between a browser on this machine and the operator's tools). It runs in
//! front of every route (`lib.rs` wraps the App with [`guard`]); with token
//! or password auth the secret is the check and nothing here applies.
//!
//! With auth none a request is refused when
//! - its `Host` names neither a loopback name (`localhost`, `*.localhost`,
//!   127.0.0.0/8, `::1`) nor a configured host (`gateway.host`, the hosts of
//!   `gateway.controlUi.allowedOrigins`): DNS rebinding, 403;
//! - its `Origin` is not the gateway's own (the same host and port as an
//!   allowed `Host`) nor listed in `gateway.controlUi.allowedOrigins`
//!   (`"*"` lists every one; `ferroclaw security audit` says so): a
//!   cross-site request, 403;
//! - it posts to a JSON route (`/tools/invoke`, `/v1/*`, `/mcp`, the hooks)
//!   a body whose `Content-Type` is not JSON: a "simple" cross-site POST
//!   a browser sends without asking first, 415.
//!
//! Platform webhooks (Slack's Events API, WhatsApp's Cloud API) are signed
//! by the platform and arrive through the operator's tunnel; they are left
//! to their own checks.

use std::net::IpAddr;

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header;
use actix_web::middleware::Next;
use actix_web::{web, HttpResponse};
use ferroclaw_actors::settings::{AuthMode, Settings};
use serde_json::json;

use crate::state::SharedState;

/// The parts of a request the rules read.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Seen<'a> {
    pub method: &'a str,
    pub path: &'a str,
    pub host: Option<&'a str>,
    pub origin: Option<&'a str>,
    pub content_type: Option<&'a str>,
}

/// Why a request was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Refused {
    #[error("host not allowed: {0:?} is not a loopback name or a configured host (with gateway.auth.mode \"none\" the gateway answers only this machine; list the origin in gateway.controlUi.allowedOrigins or use token auth)")]
    Host(String),
    #[error("origin not allowed: {0:?} is not this gateway's own origin (list it in gateway.controlUi.allowedOrigins or use token auth)")]
    Origin(String),
    #[error("unsupported content type {0:?}: send the body as application/json")]
    ContentType(String),
}

impl Refused {
    fn response(&self) -> HttpResponse {
        let (mut res, kind) = match self {
            Refused::ContentType(_) => (
                HttpResponse::UnsupportedMediaType(),
                "unsupported_media_type",
            ),
            _ => (HttpResponse::Forbidden(), "forbidden"),
        };
        res.json(json!({ "error": { "message": self.to_string(), "type": kind } }))
    }
}

/// The hostname of a `Host` value or an origin's authority: lowercase,
/// without port or IPv6 brackets.
pub(crate) fn hostname(authority: &str) -> String {
    let a = authority.trim().to_ascii_lowercase();
    if let Some(rest) = a.strip_prefix('[') {
        return rest.split(']').next().unwrap_or("").to_string();
    }
    if a.parse::<IpAddr>().is_ok() {
        return a;
    }
    match a.rsplit_once(':') {
        Some((h, port)) if port.chars().all(|c| c.is_ascii_digit()) => h.to_string(),
        _ => a,
    }
}

/// `localhost`, a name under `.localhost` (RFC 6761: never leaves the
/// machine), or a loopback address.
pub(crate) fn is_loopback_name(host: &str) -> bool {
    let name = hostname(host);
    name == "localhost"
        || name.ends_with(".localhost")
        || name.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// An origin as browsers send it: `scheme://authority`, nothing more;
/// `None` for `null` and anything else.
fn parse_origin(origin: &str) -> Option<(String, String)> {
    let o = origin.trim().trim_end_matches('/').to_ascii_lowercase();
    let (scheme, authority) = o.split_once("://")?;
    let plain = |s: &str| !s.is_empty() && !s.contains(['/', '?', '#', '@', '\\', ' ']);
    (plain(scheme) && plain(authority)).then(|| (scheme.to_string(), authority.to_string()))
}

/// What the operator configured that widens the rules.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Policy<'a> {
    pub allowed_origins: &'a [String],
    /// `gateway.host` (bind "custom").
    pub custom_host: Option<&'a str>,
    /// `hooks.path` when hooks are on.
    pub hooks_path: Option<&'a str>,
}

impl<'a> Policy<'a> {
    pub fn of(settings: &'a Settings) -> Policy<'a> {
        Policy {
            allowed_origins: &settings.gateway.control_ui.allowed_origins,
            custom_host: settings.gateway.host.as_deref(),
            hooks_path: settings
                .hooks
                .enabled
                .then_some(settings.hooks.path.as_str()),
        }
    }

    fn configured_host(&self, name: &str) -> bool {
        self.custom_host.is_some_and(|h| hostname(h) == name)
            || self
                .allowed_origins
                .iter()
                .filter_map(|o| parse_origin(o))
                .any(|(_, authority)| hostname(&authority) == name)
    }

    fn host_allowed(&self, host: &str) -> bool {
        is_loopback_name(host) || self.configured_host(&hostname(host))
    }

    fn origin_listed(&self, origin: &str) -> bool {
        let wanted = origin.trim().trim_end_matches('/');
        self.allowed_origins.iter().any(|a| {
            let a = a.trim().trim_end_matches('/');
            a == "*" || a.eq_ignore_ascii_case(wanted)
        })
    }

    fn json_route(&self, path: &str) -> bool {
        let under = |base: &str| {
            let base = base.trim_end_matches('/');
            path == base || path.starts_with(&format!("{base}/"))
        };
        matches!(path, "/tools/invoke" | "/mcp")
            || under("/v1")
            || self.hooks_path.is_some_and(|h| h.len() > 1 && under(h))
    }

    /// The rules for auth none, in order: host, origin, body type.
    pub fn check(&self, r: &Seen<'_>) -> Result<(), Refused> {
        if let Some(host) = r.host {
            if !self.host_allowed(host) {
                return Err(Refused::Host(host.to_string()));
            }
        }
        if let Some(origin) = r.origin {
            let same = parse_origin(origin).is_some_and(|(_, authority)| {
                r.host
                    .is_some_and(|h| h.trim().eq_ignore_ascii_case(&authority))
            });
            if !same && !self.origin_listed(origin) {
                return Err(Refused::Origin(origin.to_string()));
            }
        }
        let body = matches!(r.method, "POST" | "PUT" | "PATCH");
        if body && self.json_route(r.path) && !is_json(r.content_type) {
            return Err(Refused::ContentType(
                r.content_type.unwrap_or("none").to_string(),
            ));
        }
        Ok(())
    }
}

/// The hosts besides this machine's that a gateway with auth none answers
/// (`gateway.host`, the hosts of `gateway.controlUi.allowedOrigins`), for
/// `ferroclaw security audit`.
pub fn foreign_hosts(settings: &Settings) -> Vec<String> {
    let origins = settings
        .gateway
        .control_ui
        .allowed_origins
        .iter()
        .filter_map(|o| parse_origin(o))
        .map(|(_, authority)| hostname(&authority));
    let mut out: Vec<String> = settings
        .gateway
        .host
        .iter()
        .map(|h| hostname(h))
        .chain(origins)
        .filter(|h| !is_loopback_name(h))
        .collect();
    out.sort();
    out.dedup();
    out
}

/// `application/json` or a `+json` type, parameters aside.
fn is_json(content_type: Option<&str>) -> bool {
    let Some(ct) = content_type else { return false };
    let media = ct
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    media == "application/json" || (media.starts_with("application/") && media.ends_with("+json"))
}

fn header_str(req: &ServiceRequest, name: header::HeaderName) -> Option<&str> {
    req.headers().get(name).and_then(|v| v.to_str().ok())
}

/// The middleware: the rules above when auth is none, nothing otherwise.
pub async fn guard(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    let refused = req.app_data::<web::Data<SharedState>>().and_then(|state| {
        let settings = state.live.settings();
        if settings.gateway.auth.mode != AuthMode::None {
            return None;
        }
        let path = req.path();
        if super::slack::answers_on(state, path) || super::whatsapp::answers_on(state, path) {
            return None;
        }
        let seen = Seen {
            method: req.method().as_str(),
            path,
            host: header_str(&req, header::HOST),
            origin: header_str(&req, header::ORIGIN),
            content_type: header_str(&req, header::CONTENT_TYPE),
        };
        Policy::of(&settings).check(&seen).err()
    });
    match refused {
        Some(why) => {
            tracing::warn!(path = %req.path(), method = %req.method(), error = %why, "request refused (auth none)");
            let res = why.response();
            Ok(req.into_response(res).map_into_right_body())
        }
        None => next.call(req).await.map(|r| r.map_into_left_body()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen<'a>(
        method: &'a str,
        path: &'a str,
        host: Option<&'a str>,
        origin: Option<&'a str>,
        ct: Option<&'a str>,
    ) -> Seen<'a> {
        Seen {
            method,
            path,
            host,
            origin,
            content_type: ct,
        }
    }

    #[test]
    fn hostnames_lose_ports_and_brackets() {
        for (given, want) in [
            ("127.0.0.1:18789", "127.0.0.1"),
            ("LOCALHOST:80", "localhost"),
            ("[::1]:18789", "::1"),
            ("::1", "::1"),
            ("evil.example", "evil.example"),
        ] {
            assert_eq!(hostname(given), want, "{given}");
        }
        for ok in [
            "localhost",
            "app.localhost:9",
            "127.0.0.1",
            "127.8.9.1:1",
            "[::1]:5",
        ] {
            assert!(is_loopback_name(ok), "{ok}");
        }
        for bad in [
            "evil.example",
            "localhost.evil.example",
            "10.0.0.1",
            "0.0.0.0",
            "[::2]",
        ] {
            assert!(!is_loopback_name(bad), "{bad}");
        }
    }

    #[test]
    fn with_auth_none_only_this_machine_and_its_own_pages_get_through() {
        let origins = vec!["https://gw.tailnet.ts.net".to_string()];
        let p = Policy {
            allowed_origins: &origins,
            custom_host: None,
            hooks_path: Some("/hooks"),
        };
        let json = Some("application/json; charset=utf-8");
        let h = Some("127.0.0.1:18789");
        let check = |r: Seen<'_>| p.check(&r);
        // Allowed: a CLI (no Origin), the gateway's own page, a listed origin.
        assert_eq!(check(seen("POST", "/tools/invoke", h, None, json)), Ok(()));
        assert_eq!(
            check(seen(
                "POST",
                "/tools/invoke",
                h,
                Some("http://127.0.0.1:18789"),
                json
            )),
            Ok(())
        );
        assert_eq!(
            check(seen(
                "GET",
                "/chat",
                Some("gw.tailnet.ts.net"),
                Some("https://gw.tailnet.ts.net"),
                None
            )),
            Ok(())
        );
        assert_eq!(check(seen("GET", "/health", None, None, None)), Ok(()));
        assert_eq!(
            check(seen(
                "POST",
                "/hooks/wake",
                h,
                None,
                Some("application/cloudevents+json")
            )),
            Ok(())
        );
        // Refused: rebinding, cross-site, simple bodies.
        assert!(matches!(
            check(seen(
                "POST",
                "/tools/invoke",
                Some("evil.example:18789"),
                Some("http://evil.example:18789"),
                json
            )),
            Err(Refused::Host(_))
        ));
        assert!(matches!(
            check(seen(
                "GET",
                "/backup/store",
                Some("evil.example:18789"),
                None,
                None
            )),
            Err(Refused::Host(_))
        ));
        for origin in [
            "http://evil.example",
            "http://localhost:3000",
            "null",
            "http://127.0.0.1:18789/x",
        ] {
            assert!(
                matches!(
                    check(seen("POST", "/tools/invoke", h, Some(origin), json)),
                    Err(Refused::Origin(_))
                ),
                "{origin}"
            );
        }
        for (path, ct) in [
            ("/tools/invoke", Some("text/plain")),
            (
                "/v1/chat/completions",
                Some("application/x-www-form-urlencoded"),
            ),
            ("/hooks/agent", Some("multipart/form-data; boundary=x")),
            ("/mcp", None),
        ] {
            assert!(
                matches!(
                    check(seen("POST", path, h, None, ct)),
                    Err(Refused::ContentType(_))
                ),
                "{path}"
            );
        }
        // A GET has no body to check; a path outside the JSON routes neither.
        assert_eq!(check(seen("GET", "/v1/models", h, None, None)), Ok(()));
        assert_eq!(
            check(seen("POST", "/elsewhere", h, None, Some("text/plain"))),
            Ok(())
        );
    }

    #[test]
    fn a_wildcard_or_a_configured_host_widens_only_what_it_names() {
        let star = vec!["*".to_string()];
        let p = Policy {
            allowed_origins: &star,
            custom_host: Some("127.0.0.2"),
            hooks_path: None,
        };
        let json = Some("application/json");
        assert_eq!(
            p.check(&seen(
                "POST",
                "/tools/invoke",
                Some("127.0.0.1"),
                Some("http://evil.example"),
                json
            )),
            Ok(()),
            "\"*\" lists every origin (the audit reports it)"
        );
        assert!(matches!(
            p.check(&seen(
                "POST",
                "/tools/invoke",
                Some("evil.example"),
                None,
                json
            )),
            Err(Refused::Host(_))
        ));
        assert_eq!(
            p.check(&seen("GET", "/chat", Some("127.0.0.2:18789"), None, None)),
            Ok(())
        );
        assert_eq!(
            p.check(&seen(
                "POST",
                "/hooks/wake",
                Some("127.0.0.1"),
                None,
                Some("text/plain")
            )),
            Ok(()),
            "hooks off: not a JSON route of this gateway"
        );
    }
}
