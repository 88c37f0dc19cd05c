//! Installed plugins on the wire: `plugins.list` entries (OpenClaw's
//! `PluginCatalogEntry` with `runtime`), `plugins.inspect` (its
//! `declared`, `components`, `reviewToken`, and ferroclaw's `runs`: what
//! enabling it starts), and the hook and LSP rows `status` shows.

use ferroclaw_actors::hooks::HookStatus;
use ferroclaw_actors::lsp::LspServerStatus;
use ferroclaw_actors::plugins::{Installed, PluginSet};
use serde_json::{json, Value};

/// A plugin's `state`: enabled, disabled, or error (unreadable).
fn state(p: &Installed) -> &'static str {
    match (&p.bundle, p.enabled) {
        (Err(_), _) => "error",
        (Ok(_), true) => "enabled",
        (Ok(_), false) => "disabled",
    }
}

/// One `plugins.list` entry.
pub fn entry(p: &Installed) -> Value {
    let b = p.bundle();
    let mut v = json!({
        "id": p.id,
        "name": b.map_or(p.id.as_str(), |b| b.name.as_str()),
        "installed": true,
        "enabled": p.enabled,
        "state": state(p),
        "removable": true,
        "origin": "local",
        "kind": ["bundle"],
        "format": "bundle",
        "bundleFormat": p.record.format,
        "runtime": match (&p.bundle, p.enabled) {
            (Err(e), _) => json!({"state": "unloaded", "error": e.to_string()}),
            (Ok(_), true) => json!({"state": "active"}),
            (Ok(_), false) => json!({"state": "disabled"}),
        },
    });
    if let Some(d) = b.and_then(|b| b.description.clone()) {
        v["description"] = json!(d);
    }
    if let Some(ver) = b
        .and_then(|b| b.version.clone())
        .or(p.record.version.clone())
    {
        v["version"] = json!(ver);
    }
    if let Err(e) = &p.bundle {
        v["error"] = json!(e.to_string());
    }
    v
}

/// `plugins.list`'s answer.
pub fn list(set: &PluginSet) -> Value {
    let plugins: Vec<Value> = set.plugins.iter().map(entry).collect();
    let mut v = json!({ "plugins": plugins, "generation": set.generation });
    if let Some(e) = &set.error {
        v["error"] = json!(e);
    }
    v
}

/// `plugins.inspect`'s answer.
pub fn inspect(p: &Installed) -> Value {
    let c = p.components();
    let names = |f: &dyn Fn(&ferroclaw_actors::plugins::components::Components) -> Vec<String>| {
        c.map(f).unwrap_or_default()
    };
    let mcp = names(&|c| c.mcp.keys().cloned().collect());
    let lsp = names(&|c| c.lsp.keys().cloned().collect());
    let hooks = names(&|c| c.hooks.iter().map(|(f, _)| f.clone()).collect());
    let b = p.bundle();
    let mut plugin = json!({
        "id": p.id,
        "name": b.map_or(p.id.as_str(), |b| b.name.as_str()),
        "installed": true,
        "enabled": p.enabled,
        "origin": "local",
    });
    if let Some(v) = b.and_then(|b| b.version.clone()) {
        plugin["version"] = json!(v);
    }
    if let Some(d) = b.and_then(|b| b.description.clone()) {
        plugin["description"] = json!(d);
    }
    let skills = b.map(|b| b.skill_roots.clone()).unwrap_or_default();
    json!({
        "ok": true,
        "plugin": plugin,
        "source": {"kind": "local", "path": p.record.source, "installedAtMs": p.record.installed_at_ms},
        "format": "bundle",
        "bundleFormat": p.record.format,
        "bundleFormatLabel": b.map(|b| b.format.label()),
        "rootDir": p.env.root.display().to_string(),
        "dataDir": p.env.data.display().to_string(),
        "declared": {"capabilities": b.map(|b| b.capabilities.clone()).unwrap_or_default()},
        "components": {
            "skills": skills,
            "mcpServers": mcp,
            "lspServers": lsp,
            "hooks": hooks,
            "toolEnv": names(&|c| c.env.iter().map(|(k, _)| k.clone()).collect()),
            "unavailable": {
                "capabilities": b.map(|b| b.detect_only.clone()).unwrap_or_default(),
                "settings": names(&|c| c.settings_ignored.clone()),
            },
        },
        "runs": p.surface(),
        "diagnostics": names(&|c| c.diagnostics.clone()),
        "error": p.bundle.as_ref().err().map(ToString::to_string),
        "reviewToken": p.review_token(),
        "grants": {"hooks": {}},
    })
}

/// A command hook as `status` and `doctor` show it.
pub fn hook_row(h: &HookStatus) -> Value {
    json!({
        "id": h.id,
        "owner": h.owner,
        "point": h.point,
        "command": h.command,
        "timeoutMs": h.timeout_ms,
        "failClosed": h.fail_closed,
        "runs": h.runs,
        "failures": h.failures,
        "lastError": h.last_error,
        "lastMs": h.last_ms,
        "blocked": h.blocked,
    })
}

/// A language server as `status` and `doctor` show it.
pub fn lsp_row(s: &LspServerStatus) -> Value {
    json!({"name": s.name, "command": s.command, "running": s.running, "lastError": s.last_error})
}
