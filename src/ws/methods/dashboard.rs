//! Methods OpenClaw's Control UI calls on every page for kinds of things
//! ferroclaw never makes, answered as OpenClaw answers when there are
//! none: pending plugin and system-agent approvals (every approval
//! ferroclaw raises, MCP tools' included, is an exec approval in
//! `exec.approval.list`; the UI merges the three lists), the observer
//! HUD's visibility (the schema's literal
//! acknowledgement), the plugin catalog (no registry, said in
//! `remoteError`), memory import providers (OpenClaw's come from migration
//! plugins; ferroclaw installs none: its import is `ferroclaw import`),
//! update status (no check: nothing known), and the built-in themes with
//! the one in force. Params must be an object (or absent).

use serde_json::{json, Value};

use super::{json, MethodResult};
use crate::protocol::errors::ErrorShape;
use crate::state::SharedState;

/// Why `plugins.catalog.browse` lists nothing.
const NO_PLUGIN_CATALOG: &str = "no remote plugin catalog is configured: ferroclaw reaches no registry; install a bundle from a folder or archive (plugins.install), and see what is installed under Installed";

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
        // ferroclaw checks for no updates and never restarts for one: no
        // update known, no sentinel, automatic updates off, and an install
        // kind it does not know (never "up to date").
        "update.status" => json!({ "sentinel": null, "updateAvailable": null,
            "schedule": { "channel": "none", "autoEnabled": false, "install": { "kind": "unknown" } } }),
        "sessions.observer.visibility" => json!({ "ok": true }),
        "plugin.approval.list" | "openclaw.approval.list" => json!([]),
        // ferroclaw reaches no registry: nothing to browse, and it says why.
        "plugins.catalog.browse" => json!({ "items": [], "remoteError": NO_PLUGIN_CATALOG }),
        "themes.list" => themes(state),
        _ => return None,
    };
    Some(json(v))
}
