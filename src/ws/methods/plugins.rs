//! `plugins.list`, `plugins.inspect`, `plugins.install`,
//! `plugins.setEnabled`, `plugins.uninstall`: bundles (Agent Plugins,
//! Codex, Claude, Cursor) from a local folder or archive on the gateway's
//! host, applied to the running gateway before the answer (its
//! `runtime.generation`). Enabling a bundle that runs anything (MCP or
//! LSP servers, hooks) needs `acknowledgeCapabilities.reviewToken` from
//! `plugins.inspect`: the operator saw what it runs. An install enables a
//! bundle that runs nothing (skills, commands); one that runs something
//! stays disabled until then. Other sources (npm, ClawHub, git,
//! marketplaces) are refused: ferroclaw runs no package manager.

use std::sync::Arc;

use ferroclaw_actors::hooks::HooksStatus;
use ferroclaw_actors::lsp::LspStatus;
use ferroclaw_actors::plugins::{
    store, ApplyPlugins, CurrentPlugins, Installed, PluginDirs, PluginError, PluginSet,
};
use serde::Deserialize;
use serde_json::{json, Value};

use super::{json, params, MethodResult};
use crate::protocol::errors::ErrorShape;
use crate::protocol::plugins as wire;
use crate::state::SharedState;
use crate::ws::caller::Caller;

async fn current(state: &SharedState) -> Result<Arc<PluginSet>, ErrorShape> {
    state
        .gateway
        .plugins
        .send(CurrentPlugins)
        .await
        .map_err(|_| ErrorShape::unavailable("plugins are unavailable"))
}

async fn applied(
    state: &SharedState,
    settings: Arc<ferroclaw_actors::settings::Settings>,
) -> Result<Arc<PluginSet>, ErrorShape> {
    state
        .gateway
        .plugins
        .send(ApplyPlugins { settings })
        .await
        .map_err(|_| ErrorShape::unavailable("plugins are unavailable"))
}

fn runtime(set: &PluginSet, ids: &[&str]) -> Value {
    json!({
        "operationId": format!("op-{}", set.generation),
        "generation": set.generation,
        "pluginIds": ids,
    })
}

fn found<'a>(set: &'a PluginSet, id: &str) -> Result<&'a Installed, ErrorShape> {
    set.get(id)
        .ok_or_else(|| ErrorShape::invalid(format!("Installed plugin not found: {id}")))
}

fn failed(e: PluginError) -> ErrorShape {
    match e {
        PluginError::Write(_) | PluginError::Read { .. } => ErrorShape::unavailable(e.to_string()),
        other => ErrorShape::invalid(other.to_string()),
    }
}

pub async fn list(state: &SharedState, p: &Value) -> MethodResult {
    super::empty_params("plugins.list", p)?;
    json(wire::list(&*current(state).await?))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct IdParams {
    plugin_id: String,
}

pub async fn inspect(state: &SharedState, p: &Value) -> MethodResult {
    let p: IdParams = params("plugins.inspect", p)?;
    let set = current(state).await?;
    json(wire::inspect(found(&set, &p.plugin_id)?))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Ack {
    review_token: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct InstallParams {
    source: String,
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    archive_path: Option<String>,
    #[serde(default)]
    mode: Option<String>,
    #[serde(default)]
    acknowledge_install_policy_warning: Option<bool>,
    #[serde(default)]
    acknowledge_capabilities: Option<Ack>,
    #[serde(default)]
    link: Option<bool>,
}

/// Enables `id` when nothing stands in the way: it runs nothing, or the
/// operator acknowledged what it runs (the token of its surface now).
fn may_enable(p: &Installed, ack: Option<&Ack>) -> Result<(), ErrorShape> {
    if !p.runs_commands() || ack.is_some_and(|a| a.review_token == p.review_token()) {
        return Ok(());
    }
    Err(ErrorShape::invalid(format!(
        "plugin {} runs commands ({}); review them with plugins.inspect and pass acknowledgeCapabilities.reviewToken",
        p.id,
        p.surface().join("; ")
    ))
    .with_details(json!({"code": "CAPABILITY_CONSENT_REQUIRED", "reviewToken": p.review_token(), "runs": p.surface()})))
}

pub async fn install(state: &SharedState, caller: &Caller, p: &Value) -> MethodResult {
    let p: InstallParams = params("plugins.install", p)?;
    let path = match (p.source.as_str(), &p.path, &p.archive_path) {
        ("local", Some(path), _) | ("npm-pack", _, Some(path)) => path.clone(),
        (other, _, _) => {
            return Err(ErrorShape::invalid(format!(
                "unsupported plugin source {other}: ferroclaw installs bundles from a local folder or archive (source \"local\", path)"
            )))
        }
    };
    if p.link == Some(true) {
        return Err(ErrorShape::invalid(
            "unsupported: --link (ferroclaw installs a copy)",
        ));
    }
    let force =
        p.mode.as_deref() == Some("update") || p.acknowledge_install_policy_warning == Some(true);
    let dirs = PluginDirs::of(&state.state_dir);
    let source = std::path::PathBuf::from(&path);
    let bundle = tokio::task::spawn_blocking(move || store::install(&dirs, &source, force))
        .await
        .map_err(|_| ErrorShape::unavailable("install failed"))?
        .map_err(failed)?;
    let id = bundle.id.clone();
    let mut set = applied(state, state.live.settings()).await?;
    let p_ack = p.acknowledge_capabilities;
    let mut warnings = Vec::new();
    let plugin = found(&set, &id)?;
    match may_enable(plugin, p_ack.as_ref()) {
        Ok(()) if !plugin.enabled => {
            let patch = json!({"plugins": {"entries": {id.clone(): {"enabled": true}}}});
            let settings =
                super::config::apply_patch(state, caller, "plugins.install", &patch).await?;
            set = applied(state, settings).await?;
        }
        Ok(()) => {}
        Err(e) => warnings.push(format!("installed disabled: {}", e.message)),
    }
    let plugin = found(&set, &id)?;
    json(json!({
        "ok": true,
        "plugin": wire::entry(plugin),
        "restartRequired": false,
        "runtime": runtime(&set, &[id.as_str()]),
        "warnings": warnings,
    }))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct EnableParams {
    plugin_id: String,
    enabled: bool,
    #[serde(default)]
    allowlist_policy: Option<String>,
    #[serde(default)]
    acknowledge_capabilities: Option<Ack>,
}

pub async fn set_enabled(state: &SharedState, caller: &Caller, p: &Value) -> MethodResult {
    let p: EnableParams = params("plugins.setEnabled", p)?;
    let _ = p.allowlist_policy;
    let set = current(state).await?;
    let plugin = found(&set, &p.plugin_id)?;
    if p.enabled {
        may_enable(plugin, p.acknowledge_capabilities.as_ref())?;
    }
    let patch = json!({"plugins": {"entries": {p.plugin_id.clone(): {"enabled": p.enabled}}}});
    let settings = super::config::apply_patch(state, caller, "plugins.setEnabled", &patch).await?;
    let set = applied(state, settings).await?;
    let plugin = found(&set, &p.plugin_id)?;
    if p.enabled && !plugin.enabled {
        return Err(ErrorShape::invalid(format!(
            "plugin {} stays off: plugins.enabled, plugins.allow or plugins.deny keeps it out",
            p.plugin_id
        )));
    }
    json(json!({
        "ok": true,
        "plugin": wire::entry(plugin),
        "restartRequired": false,
        "runtime": runtime(&set, &[p.plugin_id.as_str()]),
    }))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct UninstallParams {
    plugin_id: String,
    #[serde(default)]
    keep_files: Option<bool>,
}

pub async fn uninstall(state: &SharedState, caller: &Caller, p: &Value) -> MethodResult {
    let p: UninstallParams = params("plugins.uninstall", p)?;
    let dirs = PluginDirs::of(&state.state_dir);
    let (id, keep) = (p.plugin_id.clone(), p.keep_files == Some(true));
    let removed = dirs.root_of(&id).display().to_string();
    tokio::task::spawn_blocking(move || store::uninstall(&dirs, &id, keep))
        .await
        .map_err(|_| ErrorShape::unavailable("uninstall failed"))?
        .map_err(failed)?;
    // OpenClaw leaves an exact `enabled: false` entry (the uninstall choice).
    let patch = json!({"plugins": {"entries": {p.plugin_id.clone(): {"enabled": false}}}});
    let settings = super::config::apply_patch(state, caller, "plugins.uninstall", &patch).await?;
    let set = applied(state, settings).await?;
    json(json!({
        "ok": true,
        "pluginId": p.plugin_id,
        "restartRequired": false,
        "runtime": runtime(&set, &[p.plugin_id.as_str()]),
        "removed": [removed],
    }))
}

/// What `status` shows of plugins, hooks and language servers: each
/// plugin's state, every hook with its counters and last error, every
/// language server with whether it runs.
pub async fn extensions(state: &SharedState) -> Value {
    let g = &state.gateway;
    let set = current(state).await.unwrap_or_default();
    let hooks = match g.hooks.hub() {
        Some(hub) => hub.send(HooksStatus).await.unwrap_or_default(),
        None => Vec::new(),
    };
    let lsp = g.lsp.send(LspStatus).await.unwrap_or_default();
    json!({
        "plugins": wire::list(&set)["plugins"],
        "hooks": hooks.iter().map(wire::hook_row).collect::<Vec<_>>(),
        "lsp": lsp.iter().map(wire::lsp_row).collect::<Vec<_>>(),
    })
}
