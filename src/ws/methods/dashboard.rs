//! Methods OpenClaw's Control UI calls for features ferroclaw does not
//! have (yet): each answers the valid empty result in OpenClaw's shape, so
//! the page shows "nothing here" instead of an error. Plugins, talk,
//! tasks, questions, progress cards, the side chat, branches, artifacts,
//! the plugin catalog, themes, ClawHub search, memory import, update
//! status.
//! Params must be an object (or absent); what it holds is not used.

use serde_json::{json, Value};

use super::{json, MethodResult};
use crate::protocol::errors::ErrorShape;
use crate::state::SharedState;

/// The Control UI's built-in themes (their palettes ship with the UI).
const THEMES: &[(&str, &str, &str)] = &[
    ("claw", "Claw", "Coral and teal; the default."),
    ("knot", "Knot", "Crimson on black or white, high contrast."),
    ("dash", "Dash", "Caramel and cream, with a serif chat."),
    (
        "absolutely",
        "Absolutely",
        "Terracotta on graphite or cream.",
    ),
    ("tide", "Tide", "Steel cyan on slate, calm and technical."),
    (
        "beacon",
        "Beacon",
        "Amber on black or white, for readability.",
    ),
    ("phosphor", "Phosphor", "Green terminal."),
    ("crt", "CRT", "Phosphor and amber on tube black."),
    ("manuscript", "Manuscript", "Lapis and gold on paper."),
    ("rose", "Rosé", "Dried rose and gold, muted and warm."),
    ("miami", "Miami", "Magenta and cyan neon."),
];

/// `themes.list`: the built-in themes and the one in force
/// (`ui.prefs.theme` / `ui.prefs.themeMode`; an id it does not know: claw).
fn themes(state: &SharedState) -> Value {
    let settings = state.live.settings();
    let prefs = &settings.ui.prefs;
    let wanted = prefs.theme.as_str();
    let id = THEMES
        .iter()
        .find(|(t, _, _)| *t == wanted)
        .map_or("claw", |(t, _, _)| *t);
    let mode = match prefs.theme_mode.as_str() {
        m @ ("light" | "dark") => m,
        _ => "system",
    };
    let describe = |(id, name, description): &(&str, &str, &str)| {
        json!({ "id": id, "name": name, "description": description, "source": "builtin",
                "modes": ["light", "dark"] })
    };
    let list: Vec<Value> = THEMES.iter().map(describe).collect();
    let theme = THEMES.iter().find(|(t, _, _)| *t == id).map(describe);
    let mut current = json!({ "id": id, "mode": mode, "scope": "gateway", "overrides": {} });
    if mode != "system" {
        current["effectiveMode"] = json!(mode);
    }
    if id != wanted {
        current["requestedId"] = json!(wanted);
    }
    json!({ "current": current, "theme": theme, "themes": list })
}

/// The answer for `method`, or None when it is not one of these.
pub fn answer(state: &SharedState, method: &str, p: &Value) -> Option<MethodResult> {
    if !(p.is_null() || p.is_object()) {
        return Some(Err(ErrorShape::invalid(format!(
            "invalid {method} params: must be object"
        ))));
    }
    let v = match method {
        "update.status" => json!({ "sentinel": null, "updateAvailable": null }),
        "sessions.observer.visibility" => json!({ "ok": true }),
        "plugin.approval.list" | "openclaw.approval.list" => json!([]),
        "sessions.companion.state" => json!({ "exchanges": [] }),
        "plugins.catalog.browse" => json!({ "items": [] }),
        "artifacts.list" => json!({ "artifacts": [] }),
        "themes.list" => themes(state),
        "skills.search" => json!({ "results": [] }),
        "migrations.memory.plan" => {
            let agent = state
                .live
                .settings()
                .default_agent_id()
                .to_ascii_lowercase();
            let workspace = state.gateway.context.workspace.display().to_string();
            json!({ "agentId": agent, "workspace": workspace, "providers": [] })
        }
        _ => return None,
    };
    Some(json(v))
}
