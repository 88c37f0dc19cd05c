//! `models.authStatus`: each provider the gateway can use, whether it has
//! a key, and its auth profiles (OpenClaw's shape; no key ever leaves the
//! hub). A profile cooling down after failures says until when.

use ferroclaw_actors::provider::hub::{AuthStatus, ProviderAuth};
use ferroclaw_actors::provider::selection::ModelRef;
use serde::Deserialize;
use serde_json::{json, Value};

use super::down;
use super::{json, params, MethodResult};
use crate::state::SharedState;

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct AuthStatusParams {
    #[serde(default)]
    agent_id: Option<String>,
    #[serde(default)]
    refresh: Option<bool>,
}

/// A provider's row: `static` (a key is set), `missing` (none), `ok`
/// (needs none), `unknown` (no such provider).
fn provider_row(p: &ProviderAuth, now: u64) -> Value {
    let has_key = p.profiles.iter().any(|x| x.has_key);
    let status = match (p.known, p.needs_key, has_key) {
        (false, _, _) => "unknown",
        (true, false, _) => "ok",
        (true, true, true) => "static",
        (true, true, false) => "missing",
    };
    let profiles: Vec<Value> = p
        .profiles
        .iter()
        .map(|x| {
            let status = match (x.cooling_until, x.has_key || !p.needs_key) {
                (Some(_), _) => "cooldown",
                (None, true) => "ok",
                (None, false) => "missing",
            };
            let mut row = json!({
                "profileId": x.id, "type": "api_key", "status": status,
                "source": if x.stored { "saved" } else { "config" },
            });
            if let Some(until) = x.cooling_until {
                row["cooldownUntil"] = json!(until);
                row["cooldownRemainingMs"] = json!(until.saturating_sub(now));
            }
            row
        })
        .collect();
    let mut row = json!({
        "provider": p.provider, "authProvider": p.provider, "displayName": p.provider,
        "status": status, "profiles": profiles,
    });
    if has_key {
        row["apiKey"] = json!({ "source": "config" });
    }
    row
}

/// OpenClaw's provider capabilities, per known provider that takes a key,
/// by name: ferroclaw reads keys from config, the environment and
/// `auth-profiles.json` and takes none from the Control UI (it has no
/// `models.authSetApiKey`), so the UI offers no key form that would fail.
fn capabilities(rows: &[ProviderAuth]) -> Vec<Value> {
    let mut v: Vec<Value> = rows
        .iter()
        .filter(|r| r.known && r.needs_key)
        .map(|r| json!({ "provider": r.provider, "apiKeySupported": false, "quickApiKeySetup": false }))
        .collect();
    v.sort_by(|a, b| a["provider"].as_str().cmp(&b["provider"].as_str()));
    v
}

pub async fn auth_status(state: &SharedState, p: &Value) -> MethodResult {
    let p: AuthStatusParams = if p.is_null() {
        AuthStatusParams::default()
    } else {
        params("models.authStatus", p)?
    };
    let _ = (p.agent_id, p.refresh);
    let settings = state.live.settings();
    // The providers of the models in use, configured or not.
    let d = &settings.agents.defaults.model;
    let agent_models = settings.agents.list.iter().filter_map(|a| a.model.as_ref());
    let also: Vec<String> = std::iter::once(d)
        .chain(agent_models)
        .flat_map(|m| std::iter::once(m.primary().to_string()).chain(m.fallbacks().to_vec()))
        .filter_map(|m| ModelRef::parse(&m).ok().map(|r| r.provider))
        .collect();
    let rows = state
        .gateway
        .hub
        .send(AuthStatus { also })
        .await
        .map_err(down)?;
    let now = ferroclaw_actors::now_ms();
    let providers: Vec<Value> = rows.iter().map(|r| provider_row(r, now)).collect();
    json(json!({ "ts": now, "providers": providers, "providerCapabilities": capabilities(&rows) }))
}
