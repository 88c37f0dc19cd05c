//! `agents.list` and `agent.identity.get` (operator.read): the agents of the
//! config (or the implicit `main`), each with its identity as OpenClaw
//! resolves it (config, then the workspace's `IDENTITY.md`, then the
//! default), its workspace and its model.

use std::path::PathBuf;

use ferroclaw_actors::context::identity::{
    self, AssistantIdentity, IdentityFields, IDENTITY_FILE, MAX_IDENTITY_FILE_BYTES,
};
use ferroclaw_actors::settings::Settings;
use serde::Deserialize;
use serde_json::{json, Value};

use super::session_key;
use super::{empty_params, json, params, MethodResult};
use crate::protocol::errors::ErrorShape;
use crate::state::SharedState;

/// One configured agent: its id, config entry (if any) and workspace.
struct Agent {
    id: String,
    name: Option<String>,
    config: IdentityFields,
    workspace: PathBuf,
    /// The agent's model, else the defaults'.
    model: (String, Vec<String>),
}

fn agents(settings: &Settings, default_workspace: &std::path::Path) -> Vec<Agent> {
    // An agent without a model of its own answers with the defaults'.
    let d = &settings.agents.defaults.model;
    let default_model = (d.primary().to_string(), d.fallbacks().to_vec());
    let mut out: Vec<Agent> = settings
        .agents
        .list
        .iter()
        .map(|a| Agent {
            id: a.id.to_ascii_lowercase(),
            name: a.name.clone(),
            config: IdentityFields::from_config(a.identity.as_ref()),
            workspace: a
                .workspace
                .as_deref()
                .map(|w| ferroclaw_actors::fsutil::expand_home(w).unwrap_or_else(|| w.into()))
                .unwrap_or_else(|| default_workspace.to_path_buf()),
            model: a.model.as_ref().map_or_else(
                || default_model.clone(),
                |m| (m.primary().to_string(), m.fallbacks().to_vec()),
            ),
        })
        .collect();
    if out.is_empty() {
        out.push(Agent {
            id: settings.default_agent_id().to_ascii_lowercase(),
            name: None,
            config: IdentityFields::default(),
            workspace: default_workspace.to_path_buf(),
            model: default_model,
        });
    }
    out
}

/// `IDENTITY.md` of a workspace (None when missing, too large or unreadable).
fn read_identity_file(workspace: &std::path::Path) -> Option<IdentityFields> {
    let path = workspace.join(IDENTITY_FILE);
    let meta = std::fs::metadata(&path).ok()?;
    if !meta.is_file() || meta.len() > MAX_IDENTITY_FILE_BYTES {
        return None;
    }
    let text = std::fs::read_to_string(path).ok()?;
    Some(IdentityFields::from_markdown(&text))
}

/// The agents' identities (all, or `only` the one with that id), reading
/// their workspace files on the blocking pool.
async fn identities(
    state: &SharedState,
    only: Option<&str>,
) -> Result<Vec<(Agent, AssistantIdentity)>, ErrorShape> {
    let settings = state.live.settings();
    let mut list = agents(&settings, &state.gateway.context.workspace);
    if let Some(id) = only {
        list.retain(|a| a.id == id);
    }
    actix_web::rt::task::spawn_blocking(move || {
        list.into_iter()
            .map(|a| {
                let file = read_identity_file(&a.workspace);
                let id = identity::resolve(&a.id, &a.config, file.as_ref());
                (a, id)
            })
            .collect()
    })
    .await
    .map_err(|_| ErrorShape::unavailable("cannot read the agents' workspaces"))
}

fn identity_json(id: &AssistantIdentity) -> Value {
    let mut v = json!({
        "agentId": id.agent_id, "name": id.name, "nameSource": id.name_source.as_str(),
        "avatar": id.avatar,
    });
    if let Some(e) = &id.emoji {
        v["emoji"] = json!(e);
    }
    v
}

/// `agents.list`: `{defaultId, mainKey, scope, agents: [...]}`.
pub async fn list(state: &SharedState, p: &Value) -> MethodResult {
    empty_params("agents.list", p)?;
    let settings = state.live.settings();
    let default_id = settings.default_agent_id().to_ascii_lowercase();
    let main_key = settings.session.main_key.clone();
    let rows: Vec<Value> = identities(state, None)
        .await?
        .iter()
        .map(|(a, id)| {
            let mut row = json!({
                "id": a.id,
                "identity": { "name": id.name, "avatar": id.avatar },
                "workspace": a.workspace.display().to_string(),
            });
            if let Some(e) = &id.emoji {
                row["identity"]["emoji"] = json!(e);
            }
            if let Some(n) = &a.name {
                row["name"] = json!(n);
            }
            let (primary, fallbacks) = &a.model;
            row["model"] = json!({ "primary": primary, "fallbacks": fallbacks });
            row
        })
        .collect();
    json(
        json!({ "defaultId": default_id, "mainKey": main_key, "scope": "per-sender", "agents": rows }),
    )
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct IdentityParams {
    #[serde(default)]
    agent_id: Option<String>,
    #[serde(default)]
    session_key: Option<String>,
}

/// `agent.identity.get {agentId?, sessionKey?}`: one agent's identity (the
/// session's agent, else the named one, else the default).
pub async fn identity_get(state: &SharedState, p: &Value) -> MethodResult {
    let p: IdentityParams = if p.is_null() {
        IdentityParams {
            agent_id: None,
            session_key: None,
        }
    } else {
        params("agent.identity.get", p)?
    };
    let wanted = match (&p.session_key, &p.agent_id) {
        (Some(k), _) if !k.trim().is_empty() => session_key(state, k)?.agent_id().to_string(),
        (_, Some(a)) if !a.trim().is_empty() => a.trim().to_ascii_lowercase(),
        _ => state
            .live
            .settings()
            .default_agent_id()
            .to_ascii_lowercase(),
    };
    let found = identities(state, Some(&wanted))
        .await?
        .pop()
        .map(|(_, id)| id);
    // An agent the config does not list still gets the default identity.
    let id = found.unwrap_or_else(|| identity::resolve(&wanted, &IdentityFields::default(), None));
    json(identity_json(&id))
}

/// The default agent's identity (the Control UI's bootstrap config).
pub async fn default_identity(state: &SharedState) -> Option<AssistantIdentity> {
    let default_id = state
        .live
        .settings()
        .default_agent_id()
        .to_ascii_lowercase();
    identities(state, Some(&default_id))
        .await
        .ok()?
        .pop()
        .map(|(_, id)| id)
}

/// An agent's workspace and its avatar as its identity gives it (a path
/// inside the workspace, a URL, a data URI, or a letter or emoji).
pub async fn avatar_of(state: &SharedState, agent_id: &str) -> Option<(PathBuf, String)> {
    let id = agent_id.to_ascii_lowercase();
    identities(state, Some(&id))
        .await
        .ok()?
        .pop()
        .map(|(a, identity)| (a.workspace, identity.avatar))
}

/// The workspace of an agent (configured ones; else the default workspace).
/// An agent id as a path segment may carry it (OpenClaw's rule: letters,
/// digits, `-`, `_`; at most 64).
pub fn valid_agent_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 64
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// Whether the gateway runs `agent` (the default agent, or one listed).
pub fn is_known_agent(state: &SharedState, agent: &str) -> bool {
    let settings = state.live.settings();
    agent == settings.default_agent_id()
        || settings
            .agents
            .list
            .iter()
            .any(|a| a.id.eq_ignore_ascii_case(agent))
}

pub fn workspace_of(state: &SharedState, agent_id: &str) -> PathBuf {
    let settings = state.live.settings();
    let id = agent_id.to_ascii_lowercase();
    agents(&settings, &state.gateway.context.workspace)
        .into_iter()
        .find(|a| a.id == id)
        .map_or_else(|| state.gateway.context.workspace.clone(), |a| a.workspace)
}
