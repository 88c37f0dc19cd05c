//! The plugin host's inbox.

use std::sync::Arc;

use actix::prelude::*;

use super::PluginSet;
use crate::settings::Settings;

/// Reads the installed plugins again and applies them with `settings`
/// (config changed, or a plugin was installed, enabled or removed). Reply:
/// the set now applied.
#[derive(Message)]
#[rtype(result = "Arc<PluginSet>")]
pub struct ApplyPlugins {
    pub settings: Arc<Settings>,
}

/// The set applied last (`plugins.list`, `status`, `doctor`).
#[derive(Message)]
#[rtype(result = "Arc<PluginSet>")]
pub struct CurrentPlugins;
