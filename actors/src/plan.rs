//! Config checks before start (not an actor): `plan` derives everything the
//! config decides (workspace, default model and its provider, prompt
//! context, sandbox, fetch, exec, tool policy, queue) and refuses what the
//! gateway would refuse. `ferroclaw config validate` and `import` run it
//! without starting anything; `tree::Gateway::start` runs it first.

use crate::provider::hub::{EnvReader, HubConfig};
use crate::provider::selection::{resolve_model, ModelChain, ModelRef};
use crate::session::queue::QueueSettings;
use crate::session::ModelPlan;
use crate::settings::{BadSetting, Settings};
use crate::store::StoreError;
use crate::tool::ToolLimits;

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("agents.defaults.model: {0}")]
    Model(crate::provider::selection::ModelRefError),
    #[error("{0}")]
    Provider(String),
    #[error("agent workspace {0}")]
    Workspace(String),
    #[error(transparent)]
    Setting(#[from] BadSetting),
    #[error("{0}")]
    Tools(String),
    #[error("{0}")]
    Policy(crate::tool::policy::PolicyError),
    #[error("{0}")]
    Channel(crate::channels::error::ConfigError),
}

/// What the gateway derives from its settings before any actor starts.
/// `plan` is also how a config is checked without starting anything
/// (`ferroclaw config validate`, `ferroclaw import`): what it refuses,
/// the gateway would refuse at start.
pub struct StartPlan {
    /// The agent workspace (`agents.defaults.workspace`, `~` expanded, else `<state dir>/workspace`).
    pub workspace: std::path::PathBuf,
    /// The default model; its provider is known.
    pub model: ModelRef,
    pub hub_config: HubConfig,
    pub context: crate::context::AgentContext,
    pub limits: ToolLimits,
    pub approval_timeout: u64,
    pub tool_policy: crate::tool::policy::ToolPolicy,
    pub queue: QueueSettings,
    /// The channel accounts to run.
    pub channels: crate::channels::ChannelPlan,
    /// `agents.defaults.contextPruning`, checked.
    pub pruning: crate::compaction::PruneSettings,
    /// `session.maintenance`.
    pub maintenance: crate::router::maintenance::Maintenance,
}

/// Every agent and its workspace: the default agent on `workspace` (the
/// plan's), each of `agents.list` on its own, else on that one.
pub fn agent_workspaces(
    settings: &Settings,
    workspace: &std::path::Path,
) -> Vec<(String, std::path::PathBuf)> {
    let mut agents = vec![(
        settings.default_agent_id().to_string(),
        workspace.to_path_buf(),
    )];
    for a in &settings.agents.list {
        let ws = a
            .workspace
            .as_deref()
            .map(|w| crate::fsutil::expand_home(w).unwrap_or_else(|| w.into()))
            .unwrap_or_else(|| workspace.to_path_buf());
        match agents.iter_mut().find(|(id, _)| *id == a.id) {
            Some(entry) => entry.1 = ws,
            None => agents.push((a.id.clone(), ws)),
        }
    }
    agents
}

/// Checks and derives everything `Gateway::start` needs from the settings;
/// reads nothing but the config (no files, no network).
pub fn plan(
    settings: &Settings,
    state_dir: &std::path::Path,
    env: EnvReader,
) -> Result<StartPlan, StartError> {
    let defaults = &settings.agents.defaults;
    let workspace = defaults
        .workspace
        .as_deref()
        // OpenClaw configs write `~/.openclaw/workspace`.
        .map(|w| crate::fsutil::expand_home(w).unwrap_or_else(|| w.into()))
        .unwrap_or_else(|| state_dir.join("workspace"));
    let context = agent_context(settings, &workspace, state_dir)?;
    crate::cron::beat::HeartbeatConfig::from_settings(&defaults.heartbeat)?;
    let pruning = crate::compaction::PruneSettings::from_settings(&defaults.context_pruning)?;
    let maintenance = crate::router::maintenance::Maintenance::from_settings(settings)?;
    let hub_config = HubConfig::from_settings(
        settings,
        state_dir,
        settings.default_agent_id(),
        env.clone(),
    );
    let model = default_model(settings, &hub_config)?;
    let limits = tool_limits(settings, state_dir, &env)?;
    let approval_timeout = settings.tools.exec.approval_timeout_seconds;
    if approval_timeout < 1 {
        return Err(StartError::Tools(
            "tools.exec.approvalTimeoutSeconds: a whole number of seconds, at least 1".into(),
        ));
    }
    let tool_policy = tool_policy(settings, limits.sandbox.clone())?;
    let channel_env = crate::channels::ChannelEnv {
        telegram: env("TELEGRAM_BOT_TOKEN"),
        slack_bot: env("SLACK_BOT_TOKEN"),
        slack_app: env("SLACK_APP_TOKEN"),
        discord: env("DISCORD_BOT_TOKEN"),
        whatsapp: env("WHATSAPP_ACCESS_TOKEN"),
    };
    let channels = crate::channels::plan(settings, channel_env).map_err(StartError::Channel)?;
    Ok(StartPlan {
        channels,
        pruning,
        maintenance,
        workspace,
        model,
        hub_config,
        context,
        limits,
        approval_timeout,
        tool_policy,
        queue: queue_settings(&settings.messages)?,
    })
}

/// The default model (`agents.defaults.model`), its provider configured.
fn default_model(settings: &Settings, hub_config: &HubConfig) -> Result<ModelRef, StartError> {
    let chain = ModelChain {
        global: settings.agents.defaults.model.primary(),
        ..Default::default()
    };
    let (model, _) = resolve_model(&chain, false).map_err(StartError::Model)?;
    if !hub_config.knows(&model.provider) {
        return Err(StartError::Provider(format!(
            "models.providers.{} is not configured (needed by the default model {model})",
            model.provider
        )));
    }
    Ok(model)
}

/// The built-in tools' limits: exec, read, web fetch and search, the
/// sandbox.
fn tool_limits(
    settings: &Settings,
    state_dir: &std::path::Path,
    env: &EnvReader,
) -> Result<ToolLimits, StartError> {
    let sandbox = crate::tool::sandbox::SandboxSettings::from_config(
        &settings.agents.defaults.sandbox,
        state_dir,
    );
    Ok(ToolLimits {
        exec_timeout: crate::tool::EXEC_TIMEOUT,
        exec_max_timeout: crate::tool::EXEC_MAX_TIMEOUT,
        output_cap: crate::tool::OUTPUT_CAP,
        read_cap: crate::tool::READ_CAP,
        fetch: crate::tool::web_fetch::FetchSettings::from_settings(&settings.tools.web.fetch)
            .map_err(|e| StartError::Tools(e.to_string()))?,
        sandbox,
        workspace_only: settings.tools.fs.workspace_only,
        search: crate::tool::web_search::SearchSettings::from_config(
            &settings.tools.web.search,
            &settings.plugins,
            &|k| env(k),
        )
        .map_err(|e| StartError::Tools(e.to_string()))?,
    })
}

/// Tool allowlists (global, per agent, per channel) and the exec defaults.
fn tool_policy(
    settings: &Settings,
    sandbox: crate::tool::sandbox::SandboxSettings,
) -> Result<crate::tool::policy::ToolPolicy, StartError> {
    let exec_defaults =
        crate::tool::policy::ExecDefaults::from_config(&settings.tools.exec, sandbox)
            .map_err(StartError::Policy)?;
    let agents: Vec<_> = settings
        .agents
        .list
        .iter()
        .map(|a| (a.id.clone(), a.tools.clone()))
        .collect();
    let channels: Vec<_> = settings
        .channels
        .iter()
        .map(|(id, c)| (id.clone(), c.tools.clone()))
        .collect();
    let mut policy =
        crate::tool::policy::ToolPolicy::from_config(&settings.tools, &agents, &channels)
            .map_err(StartError::Policy)?;
    policy.exec = exec_defaults;
    Ok(policy)
}

/// The prompt and skills context from config.
pub fn agent_context(
    settings: &Settings,
    workspace: &std::path::Path,
    state_dir: &std::path::Path,
) -> Result<crate::context::AgentContext, BadSetting> {
    let d = &settings.agents.defaults;
    let mut cx = crate::context::AgentContext::new(workspace.to_path_buf(), state_dir);
    cx.skills = settings.skills.clone();
    cx.limits = crate::context::prompt::BootstrapLimits {
        per_file: d.bootstrap_max_chars as usize,
        total: d.bootstrap_total_max_chars as usize,
    };
    cx.envelope = crate::inbound::msg_context::EnvelopeSettings::from_config(
        &d.envelope_timestamp,
        &d.envelope_timezone,
    )?;
    let mut agents = vec![settings.default_agent_id().to_ascii_lowercase()];
    for a in &settings.agents.list {
        let id = a.id.to_ascii_lowercase();
        if !agents.contains(&id) {
            agents.push(id.clone());
        }
        if let Some(f) = &a.skill_filter {
            cx.agent_skill_filters.insert(id, f.clone());
        }
    }
    if !agents.iter().any(|a| a == "main") {
        agents.push("main".into());
    }
    cx.agents = agents;
    for (id, ch) in settings.channels.iter() {
        if let Some(f) = &ch.skill_filter {
            cx.channel_skill_filters.insert(id.clone(), f.clone());
        }
    }
    Ok(cx)
}

/// Each model's context window: `models.providers.*.models[].contextWindow`,
/// then the known families, then `agents.defaults.contextTokens`.
pub(crate) fn windows(settings: &Settings) -> crate::compaction::tokens::Windows {
    let mut configured = std::collections::HashMap::new();
    for (p, spec) in &settings.models.providers {
        for m in &spec.models {
            if let Some(w) = m.context_window {
                configured.insert(format!("{p}/{}", m.id), w);
            }
        }
    }
    crate::compaction::tokens::Windows::new(configured, settings.agents.defaults.context_tokens)
}

/// Per-agent and global models with their fallbacks.
pub fn model_plan(settings: &Settings) -> ModelPlan {
    let d = &settings.agents.defaults.model;
    ModelPlan {
        global: d.primary().to_string(),
        fallbacks: d.fallbacks().to_vec(),
        agents: settings
            .agents
            .list
            .iter()
            .filter_map(|a| {
                let m = a.model.as_ref()?;
                Some((
                    a.id.to_ascii_lowercase(),
                    (m.primary().to_string(), m.fallbacks().to_vec()),
                ))
            })
            .collect(),
    }
}

/// `messages.queue` ({mode, debounceMs, cap, drop}) over the built-in defaults.
pub fn queue_settings(
    messages: &crate::settings::MessagesSettings,
) -> Result<QueueSettings, BadSetting> {
    let q = &messages.queue;
    let args = format!(
        "{} debounce:{}ms cap:{} drop:{}",
        q.mode, q.debounce_ms, q.cap, q.drop
    );
    crate::session::queue::parse_queue_directive(&args, QueueSettings::default())
        .map_err(|e| BadSetting::new("messages.queue", e))
}
