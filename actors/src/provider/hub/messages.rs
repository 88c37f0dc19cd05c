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
pub struct Reconfigure(pub HubConfig);
