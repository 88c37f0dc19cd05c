//! The provider hub's inbox: route a request, report its outcome, reconfigure.

use actix::prelude::*;

use super::*;
use crate::provider::ProviderError;

/// Where to send a model call. Reply: the actor, profile and key to use.
#[derive(Debug, Message)]
#[rtype(result = "Result<Route, RouteError>")]
pub struct RouteRequest {
    pub provider: String,
    /// The session's profile; kept unless it is cooling down.
    pub sticky: Option<String>,
    /// Profiles this request already tried.
    pub exclude: Vec<String>,
}

/// How a model call through a route went (drives cooldowns).
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct ReportOutcome {
    pub provider: String,
    pub profile: String,
    pub error: Option<ProviderError>,
}

/// New config (hot apply): providers are rebuilt on next use.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Reconfigure {
    pub config: HubConfig,
}

/// What `models.authStatus` shows: every provider the config names, a
/// stored profile uses or `also` lists (the models in use), with its
/// profiles and whether each has a key. Keys never leave the hub.
#[derive(Debug, Message)]
#[rtype(result = "Vec<ProviderAuth>")]
pub struct AuthStatus {
    pub also: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderAuth {
    pub provider: String,
    /// False for providers that take no key (`offline`).
    pub needs_key: bool,
    /// A provider unknown to the config and not built in.
    pub known: bool,
    pub profiles: Vec<ProfileAuth>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProfileAuth {
    pub id: String,
    pub has_key: bool,
    /// From `auth-profiles.json` (else config or the implicit default).
    pub stored: bool,
    /// Cooling down after failures until this time (ms).
    pub cooling_until: Option<u64>,
}

/// A provider's answer reported its rate-limit windows (from its client;
/// the last report per provider is kept).
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct RateLimitsSeen {
    pub provider: String,
    pub windows: Vec<crate::provider::limits::RateWindow>,
    pub at_ms: u64,
}

/// Reply: each provider's last reported windows and when, by provider.
#[derive(Debug, Message)]
#[rtype(result = "std::collections::BTreeMap<String, ReportedLimits>")]
pub struct GetRateLimits;

/// What a provider last reported.
#[derive(Debug, Clone, PartialEq)]
pub struct ReportedLimits {
    pub windows: Vec<crate::provider::limits::RateWindow>,
    pub at_ms: u64,
}
