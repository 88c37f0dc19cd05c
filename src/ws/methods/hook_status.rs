//! `hooks.status` (`openclaw hooks list|check|info`): the hook points this
//! gateway has, in OpenClaw's report shape. ferroclaw runs no hook scripts;
//! what it has instead is listed with whether it is active:
//! - `message-received` (event `message:received`): every accepted channel
//!   message posted to `hooks.messageReceived.url`;
//! - the webhook endpoints (`<hooks.path>/wake`, `/agent`) and each
//!   `hooks.mappings[]` path: HTTP, so no internal event;
//! - hook folders an OpenClaw workspace brought along
//!   (`<workspace>/hooks/<name>/HOOK.md`, `<state dir>/hooks/<name>/`):
//!   listed as not loadable ("ferroclaw runs no hook scripts"), so a user
//!   who switched sees which of theirs no longer run; `hooks.messageReceived`
//!   or a webhook mapping can take their place;
//! - command hooks (`hooks.commands`, enabled bundles' Claude
//!   `hooks.json`): the event they run at, blocked when their plugin's
//!   policy keeps them out.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{json, Value};

use super::agents::workspace_of;
use super::{json, params, MethodResult};
use crate::protocol::errors::ErrorShape;
use crate::state::SharedState;

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct StatusParams {
    #[serde(default)]
    agent_id: Option<String>,
}

/// One hook in OpenClaw's `HookStatusEntry` shape.
struct Hook<'a> {
    name: String,
    description: String,
    source: &'a str,
    file: String,
    handler: String,
    events: Vec<String>,
    enabled: bool,
    blocked: Option<String>,
    config: Vec<(&'a str, bool)>,
}

/// OpenClaw's internal hook events (a hook naming another is flagged).
const KNOWN_EVENTS: &[&str] = &[
    "agent:bootstrap",
    "command:new",
    "command:reset",
    "command:stop",
    "gateway:pre-restart",
    "gateway:shutdown",
    "gateway:startup",
    "message:preprocessed",
    "message:received",
    "message:sent",
    "message:transcribed",
    "session:auto-reset",
    "session:compact:after",
    "session:compact:before",
    "session:patch",
    "command",
    "session",
    "agent",
    "gateway",
    "message",
];

impl Hook<'_> {
    fn wire(&self) -> Value {
        let unknown: Vec<&String> = self
            .events
            .iter()
            .filter(|e| !KNOWN_EVENTS.contains(&e.as_str()))
            .collect();
        let required: Vec<&str> = self.config.iter().map(|(p, _)| *p).collect();
        let missing: Vec<&str> = self
            .config
            .iter()
            .filter(|(_, ok)| !ok)
            .map(|(p, _)| *p)
            .collect();
        let empty: [&str; 0] = [];
        let checks: Vec<Value> = self
            .config
            .iter()
            .map(|(p, ok)| json!({"path": p, "satisfied": ok}))
            .collect();
        json!({
            "name": self.name, "description": self.description, "source": self.source,
            "filePath": self.file, "baseDir": Path::new(&self.file).parent().map(|p| p.display().to_string()).unwrap_or_default(),
            "handlerPath": self.handler, "hookKey": self.name,
            "events": self.events, "unknownEvents": unknown, "always": false,
            "enabledByConfig": self.enabled, "requirementsSatisfied": missing.is_empty(),
            "loadable": self.enabled && missing.is_empty() && self.blocked.is_none(),
            "blockedReason": self.blocked, "managedByPlugin": false,
            "requirements": {"bins": empty, "anyBins": empty, "env": empty, "config": required, "os": empty},
            "missing": {"bins": empty, "anyBins": empty, "env": empty, "config": missing, "os": empty},
            "configChecks": checks, "install": empty,
        })
    }
}

pub async fn status(state: &SharedState, p: &Value) -> MethodResult {
    let p: StatusParams = params("hooks.status", p)?;
    let settings = state.live.settings();
    let agent = match p.agent_id.as_deref().map(str::trim) {
        Some("") => {
            return Err(ErrorShape::invalid(
                "invalid hooks.status params: agentId must not be blank",
            ))
        }
        Some(a) => a.to_ascii_lowercase(),
        None => settings.default_agent_id().to_string(),
    };
    if !super::agents::is_known_agent(state, &agent) {
        return Err(ErrorShape::invalid(format!("unknown agent id \"{agent}\"")));
    }
    let workspace = workspace_of(state, &agent);
    let managed = state.state_dir.join("hooks");
    let config_file = state.live.get().sources.path.display().to_string();
    let mut hooks = points(&settings.hooks, &config_file);
    let dirs = [
        (workspace.join("hooks"), "openclaw-workspace"),
        (managed.clone(), "openclaw-managed"),
    ];
    let scripts = found_scripts(dirs).await;
    hooks.extend(scripts);
    hooks.extend(command_hooks(state).await);
    json(json!({
        "workspaceDir": workspace.display().to_string(),
        "managedHooksDir": managed.display().to_string(),
        "hooks": hooks,
    }))
}

/// The command hooks in force (`hooks.commands`, enabled bundles'), each
/// with its point; one its plugin's policy keeps out is listed blocked.
async fn command_hooks(state: &SharedState) -> Vec<Value> {
    let Some(hub) = state.gateway.hooks.hub() else {
        return Vec::new();
    };
    let rows = hub
        .send(ferroclaw_actors::hooks::HooksStatus)
        .await
        .unwrap_or_default();
    rows.into_iter()
        .map(|h| {
            let source = match h.owner.starts_with("plugin:") {
                true => "openclaw-plugin",
                false => "ferroclaw-command",
            };
            let event = match h.point {
                "" => Vec::new(),
                p => vec![p.to_string()],
            };
            Hook {
                name: h.id.clone(),
                description: format!("command hook ({})", h.owner),
                source,
                file: h.command.clone(),
                handler: h.command,
                events: event,
                enabled: h.blocked.is_none(),
                blocked: h.blocked,
                config: Vec::new(),
            }
            .wire()
        })
        .collect()
}

/// OpenClaw's hook scripts found in `dirs` (each with its source), listed
/// as OpenClaw lists them and as blocked: ferroclaw runs none.
async fn found_scripts(dirs: [(std::path::PathBuf, &'static str); 2]) -> Vec<Value> {
    let found = tokio::task::spawn_blocking(move || {
        dirs.iter()
            .flat_map(|(d, source)| scripts(d).into_iter().map(move |h| (h, *source)))
            .collect::<Vec<_>>()
    })
    .await
    .unwrap_or_default();
    found
        .into_iter()
        .map(|((name, description, file, events), source)| {
            Hook {
                handler: Path::new(&file)
                    .with_file_name("handler.ts")
                    .display()
                    .to_string(),
                name,
                description,
                source,
                file,
                events,
                enabled: true,
                blocked: Some("ferroclaw runs no hook scripts".into()),
                config: Vec::new(),
            }
            .wire()
        })
        .collect()
}

/// The webhook routes `hooks` serves: (name, what a POST to it does).
fn webhooks(h: &ferroclaw_actors::settings::HooksSettings) -> Vec<(String, String)> {
    let base = h.path.trim_end_matches('/');
    let mut web = vec![
        (
            "webhook-wake".to_string(),
            format!("POST {base}/wake {{text, mode}}: a system event for the main session"),
        ),
        (
            "webhook-agent".to_string(),
            format!("POST {base}/agent {{message}}: a turn with the untrusted tool profile"),
        ),
    ];
    for m in &h.mappings {
        let what = match m.action {
            ferroclaw_actors::settings::HookAction::Agent => {
                "a turn with the untrusted tool profile"
            }
            ferroclaw_actors::settings::HookAction::Wake => "a system event",
        };
        web.push((
            format!("webhook:{}", m.matches.path),
            format!("POST {base}/{}: {what}, from its template", m.matches.path),
        ));
    }
    web
}

/// The hook points ferroclaw itself has, from the `hooks` settings.
fn points(h: &ferroclaw_actors::settings::HooksSettings, file: &str) -> Vec<Value> {
    let observer = h
        .message_received
        .as_ref()
        .and_then(|m| m.get("url"))
        .and_then(Value::as_str)
        .is_some_and(|u| !u.trim().is_empty());
    let mut out = vec![Hook {
        name: "message-received".into(),
        description:
            "Posts every channel message the access rules accepted to hooks.messageReceived.url"
                .into(),
        source: "ferroclaw",
        file: file.to_string(),
        handler: "built in".into(),
        events: vec!["message:received".into()],
        enabled: observer,
        blocked: None,
        config: vec![("hooks.messageReceived.url", observer)],
    }
    .wire()];
    let token = h.token.as_deref().is_some_and(|t| !t.trim().is_empty());
    let blocked = match (h.enabled, token) {
        (false, _) => Some("hooks.enabled is false".to_string()),
        (true, false) => Some("hooks.token is not set".to_string()),
        _ => None,
    };
    let web = webhooks(h);
    for (name, description) in web {
        out.push(
            Hook {
                name,
                description,
                source: "ferroclaw-webhook",
                file: file.to_string(),
                handler: "built in".into(),
                events: Vec::new(),
                enabled: h.enabled,
                blocked: blocked.clone(),
                config: vec![("hooks.enabled", h.enabled), ("hooks.token", token)],
            }
            .wire(),
        );
    }
    out
}

/// OpenClaw hook folders under `dir`: (name, description, HOOK.md, events).
fn scripts(dir: &Path) -> Vec<(String, String, String, Vec<String>)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<_> = entries
        .flatten()
        .filter_map(|e| {
            let file: PathBuf = e.path().join("HOOK.md");
            let text = std::fs::read_to_string(&file).ok()?;
            let folder = e.file_name().to_string_lossy().into_owned();
            let (name, description, events) = front_matter(&text);
            Some((
                name.unwrap_or(folder),
                description,
                file.display().to_string(),
                events,
            ))
        })
        .collect();
    out.sort();
    out
}

/// `name`, `description` and `metadata.openclaw.events` of a HOOK.md's
/// front matter (`---` lines; `metadata` is one line of JSON).
fn front_matter(text: &str) -> (Option<String>, String, Vec<String>) {
    let mut lines = text.lines();
    if lines.next().map(str::trim) != Some("---") {
        return (None, String::new(), Vec::new());
    }
    let (mut name, mut description, mut events) = (None, String::new(), Vec::new());
    let unquote = |v: &str| v.trim().trim_matches('"').trim_matches('\'').to_string();
    for line in lines.take_while(|l| l.trim() != "---") {
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        match k.trim() {
            "name" => name = Some(unquote(v)).filter(|n| !n.is_empty()),
            "description" => description = unquote(v),
            "metadata" => {
                if let Ok(m) = serde_json::from_str::<Value>(v.trim()) {
                    events = m["openclaw"]["events"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(|e| e.as_str().map(String::from))
                        .collect();
                }
            }
            _ => {}
        }
    }
    (name, description, events)
}

#[cfg(test)]
mod tests {
    use super::front_matter;

    #[test]
    fn a_hook_md_front_matter_gives_name_description_and_events() {
        let md = "---\nname: session-memory\ndescription: \"Saves the session\"\nmetadata: {\"openclaw\": {\"emoji\": \"x\", \"events\": [\"command:new\", \"command:reset\"]}}\n---\n# body\nname: not this";
        let (name, description, events) = front_matter(md);
        assert_eq!(name.as_deref(), Some("session-memory"));
        assert_eq!(description, "Saves the session");
        assert_eq!(events, ["command:new", "command:reset"]);
        assert_eq!(front_matter("no front matter").0, None);
    }
}
