//! The tree's stages, in the order `Gateway::start` runs them: the
//! registries, the store's tidying, the workspace, the tools, the sessions,
//! the surfaces (channels, cron, the heartbeat).

use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;

use super::{EdgeSinks, Parts};
use crate::channels::health::HealthBoard;
use crate::channels::ChannelSupervisor;
use crate::devices::DeviceRegistry;
use crate::idempotency::{IdempotencyActor, IdempotentReader};
use crate::lane::Lanes;
use crate::metrics::Metrics;
use crate::plan::{model_plan, windows, StartError, StartPlan};
use crate::presence::{PresenceActor, PresenceEntry, StateVersions};
use crate::provider::hub::{EnvReader, ProviderHub};
use crate::provider::selection::ModelRef;
use crate::router::RouterActor;
use crate::runs::RunRegistry;
use crate::session::{RestartPolicy, SessionDeps};
use crate::settings::Settings;
use crate::store::Store;
use crate::tool::ToolExecutor;

/// The tree's bookkeeping: presence, devices, nodes, idempotency, the
/// audit ledger, the run registry and the lanes.
pub(super) struct Registries {
    pub(super) presence: Addr<PresenceActor>,
    pub(super) devices: Addr<DeviceRegistry>,
    pub(super) nodes: Addr<crate::nodes::NodeRegistry>,
    pub(super) idempotency: Addr<IdempotencyActor>,
    pub(super) idempotent: IdempotentReader,
    pub(super) audit: Option<Addr<crate::audit::AuditLedger>>,
    pub(super) audit_log: crate::audit::AuditLog,
    pub(super) runs: Addr<RunRegistry>,
    pub(super) lanes: Lanes,
}

impl Registries {
    pub(super) fn start(
        settings: &Settings,
        store: &Store,
        self_entry: PresenceEntry,
        metrics: &Arc<Metrics>,
        versions: &Arc<StateVersions>,
        sinks: &EdgeSinks,
    ) -> Result<Registries, StartError> {
        let presence = PresenceActor::new(
            self_entry,
            versions.clone(),
            sinks.presence.clone(),
            metrics.clone(),
        )
        .start();
        let (s, m) = (store.clone(), metrics.clone());
        let devices = Supervisor::start(move |_| DeviceRegistry::new(s.clone(), m.clone()));
        let nodes = crate::nodes::NodeRegistry::new(
            store.clone(),
            sinks.nodes.clone(),
            crate::nodes::NodePolicy::from_settings(settings),
        )
        .start();
        let idempotency = IdempotencyActor::load(store.clone(), metrics.clone())?;
        let idempotent = idempotency.reader();
        let (audit, audit_log) = open_audit(settings, store, metrics);
        let runs = RunRegistry::new(
            store.clone(),
            metrics.clone(),
            sinks.runs.clone(),
            sinks.sessions.clone(),
        )
        .with_audit(audit_log.clone())
        .start();
        Ok(Registries {
            presence,
            devices,
            nodes,
            idempotency: idempotency.start(),
            idempotent,
            audit,
            audit_log,
            runs,
            lanes: Lanes::start(settings),
        })
    }
}

/// The audit ledger; when it cannot open, nothing is recorded (and the
/// gateway still starts).
pub(super) fn open_audit(
    settings: &Settings,
    store: &Store,
    metrics: &Arc<Metrics>,
) -> (
    Option<Addr<crate::audit::AuditLedger>>,
    crate::audit::AuditLog,
) {
    match crate::audit::AuditLedger::start(
        store.dir(),
        crate::audit::Limits::default(),
        crate::audit::AuditSettings::from_settings(&settings.logging.audit),
        metrics.clone(),
    ) {
        Ok((addr, log)) => (Some(addr), log),
        Err(e) => {
            tracing::error!(error = %e, "the audit ledger cannot open: nothing is recorded");
            (None, crate::audit::AuditLog::off())
        }
    }
}

/// Old run records pruned; system events queued under the old global key
/// given to the main session.
pub(super) fn tidy_store(store: &Store, settings: &Settings) {
    match crate::runs::prune(store, crate::now_ms()) {
        Ok(n) if n > 0 => tracing::info!(removed = n, "old run records pruned"),
        Ok(_) => {}
        Err(e) => tracing::warn!(error = %e, "cannot prune old run records"),
    }
    let (agent, key) = (settings.default_agent_id(), &settings.session.main_key);
    let main_key = crate::inbound::SessionKey::canonical("main", agent, key)
        .map(|k| k.as_str().to_string())
        .unwrap_or_else(|_| "agent:main:main".into());
    match crate::session::system_events::adopt_legacy(store, &main_key) {
        Ok(n) if n > 0 => {
            tracing::info!(moved = n, "queued system events given to the main session")
        }
        Ok(_) => {}
        Err(e) => tracing::warn!(error = %e, "cannot move the queued system events"),
    }
}

/// The workspace exists; a new one gets the first-run `BOOTSTRAP.md`
/// unless `agents.defaults.skipBootstrap`.
pub(super) fn prepare_workspace(
    workspace: &std::path::Path,
    skip_bootstrap: bool,
) -> Result<(), StartError> {
    let fresh = !workspace.exists();
    std::fs::create_dir_all(workspace)
        .map_err(|e| StartError::Workspace(format!("{}: {e}", workspace.display())))?;
    if fresh && !skip_bootstrap {
        match crate::context::prompt::seed_new_workspace(workspace) {
            Ok(p) => {
                tracing::info!(path = %p.display(), "new workspace: first-run BOOTSTRAP.md written")
            }
            Err(e) => tracing::warn!(error = %e, "cannot seed the new workspace"),
        }
    }
    Ok(())
}

pub(super) type Late<T> = Arc<std::sync::OnceLock<Recipient<T>>>;
/// Built-in tools not offered, and why.
type Unavailable = Arc<[(String, String)]>;

/// The tools and what backs them: media, approvals, questions, MCP, the
/// memories and the executor. Session tools are set once their actor runs.
pub(super) struct Tooling {
    pub(super) executor: Recipient<crate::tool::ExecuteTool>,
    pub(super) approvals: Addr<crate::approvals::ApprovalsActor>,
    pub(super) questions: Addr<crate::questions::QuestionsActor>,
    pub(super) mcp: Addr<crate::mcp::McpHub>,
    pub(super) tools: crate::mcp::ToolBench,
    pub(super) media: Addr<crate::media::MediaStore>,
    /// The browser's executor, when the browser is available.
    pub(super) browser: Option<Addr<crate::browser::BrowserTools>>,
    pub(super) memories: crate::memory::Memories,
    pub(super) edge_tools: crate::tool::EdgeTools,
    pub(super) unavailable_tools: Unavailable,
    pub(super) session_tools: Late<crate::tool::ExecuteTool>,
    /// The executor's background commands (`tasks.list`).
    pub(super) processes: crate::tool::Processes,
    pub(super) subagent_done: Late<crate::session::SubagentDone>,
    /// The installed plugins as applied at start.
    pub(super) plugins: Arc<crate::plugins::PluginSet>,
    pub(super) hooks: crate::hooks::HookClient,
    pub(super) lsp: Addr<crate::lsp::LspHub>,
}

/// Installed bundles, read once here (`PluginHost` applies changes), the
/// command hooks and the language servers.
fn start_plugins(
    settings: &Settings,
    store: &Store,
    planned: &StartPlan,
    base: &Registries,
    catalog: &crate::mcp::McpCatalog,
) -> (
    Arc<crate::plugins::PluginSet>,
    crate::hooks::HookClient,
    Addr<crate::lsp::LspHub>,
) {
    let plugins = crate::plugins::PluginSet::load(store.dir(), &settings.plugins);
    let hooks = crate::hooks::HookClient::start(
        plugins.hook_table(&settings.hooks, &settings.plugins),
        planned.workspace.clone(),
        base.audit_log.clone(),
    );
    let mut lsp_settings = settings.tools.lsp.clone();
    lsp_settings.servers = plugins.lsp_servers(&settings.tools.lsp.servers);
    let workspace = planned.workspace.clone();
    let lsp = crate::lsp::LspHub::new(&lsp_settings, workspace, catalog.clone()).start();
    (Arc::new(plugins), hooks, lsp)
}

/// The built-in tools offered and those that are not, with why: a tool
/// whose backing is not configured is not offered (`tools.catalog` says why).
pub(super) fn offered_builtins(
    limits: &crate::tool::ToolLimits,
    browser: &crate::settings::BrowserSettings,
) -> (Unavailable, Arc<[crate::provider::ToolSpec]>) {
    let mut unavailable: Vec<(String, String)> = limits
        .search
        .unavailable
        .iter()
        .map(|why| ("web_search".to_string(), why.clone()))
        .collect();
    if let Some(why) = crate::browser::tools::unavailable(browser) {
        unavailable.push(("browser".to_string(), why));
    }
    let unavailable: Unavailable = unavailable.into();
    let builtin = ToolExecutor::specs()
        .into_iter()
        .filter(|t| !unavailable.iter().any(|(n, _)| *n == t.name))
        .map(|t| match t.name.as_str() {
            "browser" => crate::tool::browser_spec::spec(browser.evaluate_enabled),
            _ => t,
        })
        .collect();
    (unavailable, builtin)
}

/// The media tools (`view_image`, the media understanding) on the store.
pub(super) fn media_tools(
    settings: &Settings,
    env: &EnvReader,
    media: &Addr<crate::media::MediaStore>,
    workspace: &std::path::Path,
) -> Recipient<crate::tool::ExecuteTool> {
    crate::media::tools::MediaTools {
        store: media.clone(),
        config: Arc::new(crate::media::MediaConfig::from_settings(settings, env)),
        workspace: crate::tool::Workspace {
            root: workspace.to_path_buf(),
            only: settings.tools.fs.workspace_only,
            untrusted: false,
        },
    }
    .start()
    .recipient()
}

/// The media store (`<state>/media`, its only writer).
fn start_media(settings: &Settings, store: &Store) -> Addr<crate::media::MediaStore> {
    crate::media::MediaStore::new(
        store.dir().join("media"),
        settings.attachments.ttl(),
        settings.attachments.max_total_bytes(),
    )
    .start()
}

/// The `browser` tool's executor, when the browser is available.
fn browser_tools(
    settings: &Settings,
    env: &EnvReader,
    store: &Store,
    workspace: &std::path::Path,
    media: &Addr<crate::media::MediaStore>,
) -> Option<Addr<crate::browser::BrowserTools>> {
    if crate::browser::tools::unavailable(&settings.browser).is_some() {
        return None;
    }
    let tools = crate::browser::BrowserTools::new(
        &settings.browser,
        store.dir(),
        workspace,
        media.clone(),
        Arc::new(crate::media::MediaConfig::from_settings(settings, env)),
    );
    Some(tools.start())
}

/// The exec approvals actor, with its stored allowlist.
fn start_approvals(
    store: &Store,
    planned: &StartPlan,
    sinks: &EdgeSinks,
    hooks: &crate::hooks::HookClient,
) -> Result<Addr<crate::approvals::ApprovalsActor>, StartError> {
    let approvals = crate::approvals::ApprovalsActor::load(
        sinks.approvals.clone(),
        store.dir().join("exec-approvals.json"),
        Duration::from_secs(planned.approval_timeout),
    )
    .map_err(|e| StartError::Tools(e.to_string()))?;
    Ok(approvals.with_hooks(hooks.clone()).start())
}

impl Tooling {
    pub(super) fn start(
        settings: &Settings,
        store: &Store,
        env: &EnvReader,
        planned: &StartPlan,
        sinks: &EdgeSinks,
        base: &Registries,
    ) -> Result<Tooling, StartError> {
        let (unavailable_tools, builtin) = offered_builtins(&planned.limits, &settings.browser);
        let catalog = crate::mcp::McpCatalog::default();
        let (plugins, hooks, lsp) = start_plugins(settings, store, planned, base, &catalog);
        let media = start_media(settings, store);
        let approvals = start_approvals(store, planned, sinks, &hooks)?;
        let reserved = builtin.iter().map(|t| t.name.clone()).collect();
        let (servers, cache) = (plugins.merged_mcp(&settings.mcp), store.dir().join("mcp"));
        let gate = approvals.clone().recipient();
        let mcp =
            crate::mcp::McpHub::new(&servers, catalog.clone(), reserved, gate, Some(cache)).start();
        let workspace = &planned.workspace;
        let memories = start_memories(settings, store.dir(), workspace, env);
        let browser = browser_tools(settings, env, store, workspace, &media);
        let (edge_tools, session_tools) = (crate::tool::EdgeTools::default(), Late::default());
        let processes = crate::tool::Processes::default();
        let executor = ToolExecutor::new(workspace.clone(), planned.limits.clone())
            .with_processes(processes.clone())
            .with_edge(edge_tools.clone())
            .with_memories(memories.clone())
            .with_sessions(session_tools.clone())
            .with_approvals(approvals.clone())
            .with_mcp(mcp.clone().recipient())
            .with_nodes(base.nodes.clone())
            .with_media(media_tools(settings, env, &media, workspace))
            .with_browser(browser.clone().map(Addr::recipient))
            .with_lsp(lsp.clone().recipient())
            .start()
            .recipient();
        Ok(Tooling {
            executor,
            processes,
            approvals,
            questions: crate::questions::QuestionsActor::new(Some(sinks.questions.clone())).start(),
            mcp,
            tools: crate::mcp::ToolBench::new(builtin, catalog),
            media,
            browser,
            memories,
            edge_tools,
            unavailable_tools,
            session_tools,
            subagent_done: Late::default(),
            plugins,
            hooks,
            lsp,
        })
    }
}

/// The sessions and what they run on: the provider hub, the router over
/// the session actors, and the session tools (`sessions_*`, sub-agents).
pub(super) struct Sessions {
    pub(super) router: Addr<RouterActor>,
    pub(super) hub: Addr<ProviderHub>,
    pub(super) context: Arc<crate::context::AgentContext>,
    pub(super) tool_policy: Arc<crate::tool::policy::ToolPolicy>,
    pub(super) model: ModelRef,
    pub(super) workspace: std::path::PathBuf,
    pub(super) speech: Addr<crate::tts::Speaker>,
}

impl Sessions {
    pub(super) fn start(
        settings: &Settings,
        store: &Store,
        planned: StartPlan,
        (base, tooling): (&Registries, &Tooling),
        metrics: &Arc<Metrics>,
        env: &EnvReader,
    ) -> Sessions {
        let defaults = &settings.agents.defaults;
        let hub = ProviderHub::new(planned.hub_config).start();
        let speech = start_speaker(settings, store, tooling, &hub, env);
        let context = Arc::new(planned.context);
        context.set_plugin_skills(tooling.plugins.skill_roots(), tooling.plugins.tool_env());
        let mut tool_policy = planned.tool_policy;
        tool_policy.lifecycle = tooling.hooks.clone();
        let tool_policy = Arc::new(tool_policy);
        let deps = session_deps(
            settings,
            Wiring {
                store,
                hub: &hub,
                speech: &speech,
                base,
                tooling,
                metrics,
                context: &context,
                tool_policy: &tool_policy,
                pruning: planned.pruning,
                queue: planned.queue,
                workspace: &planned.workspace,
            },
        );
        let router = RouterActor::new(deps)
            .with_lanes(base.lanes.clone())
            .with_maintenance(planned.maintenance)
            .start();
        let tools_actor = crate::subagents::SessionTools::new(
            router.clone(),
            base.runs.clone(),
            (settings.default_agent_id(), &settings.session.main_key),
            defaults.subagents.max_spawn_depth,
            store.clone(),
            agent_rows(settings, &planned.model),
        )
        .start();
        let _ = tooling.subagent_done.set(tools_actor.clone().recipient());
        let _ = tooling.session_tools.set(tools_actor.recipient());
        Sessions {
            speech,
            router,
            hub,
            context,
            tool_policy,
            model: planned.model,
            workspace: planned.workspace,
        }
    }
}

/// The speaker (voice out): beside the hub, for its spoken summaries.
fn start_speaker(
    settings: &Settings,
    store: &Store,
    tooling: &Tooling,
    hub: &Addr<ProviderHub>,
    env: &EnvReader,
) -> Addr<crate::tts::Speaker> {
    crate::tts::Speaker::new(
        store.dir(),
        store.clone(),
        Some(tooling.media.clone()),
        Some(hub.clone()),
        env.clone(),
        crate::tts::ConfigureSpeech::from_settings(settings),
    )
    .start()
}

/// What the sessions are wired to (beside the settings).
pub(super) struct Wiring<'a> {
    pub(super) store: &'a Store,
    pub(super) hub: &'a Addr<ProviderHub>,
    pub(super) speech: &'a Addr<crate::tts::Speaker>,
    pub(super) base: &'a Registries,
    pub(super) tooling: &'a Tooling,
    pub(super) metrics: &'a Arc<Metrics>,
    pub(super) context: &'a Arc<crate::context::AgentContext>,
    pub(super) tool_policy: &'a Arc<crate::tool::policy::ToolPolicy>,
    pub(super) pruning: crate::compaction::PruneSettings,
    pub(super) queue: crate::session::queue::QueueSettings,
    pub(super) workspace: &'a std::path::Path,
}

/// What every session runs with.
pub(super) fn session_deps(settings: &Settings, w: Wiring<'_>) -> SessionDeps {
    let defaults = &settings.agents.defaults;
    SessionDeps {
        store: w.store.clone(),
        hub: w.hub.clone(),
        executor: w.tooling.executor.clone(),
        lane: w.base.lanes.main.clone(),
        events: w.base.runs.clone().recipient(),
        // Through the registry: one ordered road with the run events.
        news: w.base.runs.clone().recipient(),
        models: Arc::new(model_plan(settings)),
        thinking_default: defaults.thinking_default.clone(),
        verbose_default: defaults.verbose_default.clone(),
        context: w.context.clone(),
        tools: w.tooling.tools.clone(),
        windows: Arc::new(windows(settings)),
        compaction: crate::compaction::CompactionSettings::from_settings(&defaults.compaction),
        pruning: Arc::new(w.pruning),
        memory_writable: memory_writable(settings),
        prices: Arc::new(crate::usage::Prices::from_settings(settings)),
        subagent_done: w.tooling.subagent_done.clone(),
        tool_policy: w.tool_policy.clone(),
        timeout: std::time::Duration::from_secs(defaults.timeout_seconds.max(1)),
        max_model_calls: 32,
        queue: w.queue,
        restart: RestartPolicy {
            max: defaults.run_restarts.max,
            backoff: Duration::from_millis(defaults.run_restarts.backoff_ms),
        },
        idle_stop: Duration::from_secs(defaults.session_idle_seconds.max(1)),
        workspace: w.workspace.display().to_string(),
        metrics: w.metrics.clone(),
        media: Some(w.tooling.media.clone()),
        speech: Some(w.speech.clone()),
    }
}

/// The surfaces that start turns on their own: channels and automation.
pub(super) struct Surfaces {
    pub(super) channels: Addr<ChannelSupervisor>,
    pub(super) channel_health: Arc<HealthBoard>,
    pub(super) cron: Addr<crate::cron::CronActor>,
    pub(super) heartbeat: Addr<crate::cron::beat::HeartbeatActor>,
}

impl Surfaces {
    pub(super) fn start(
        settings: &Settings,
        p: &Parts,
        channel_plan: crate::channels::ChannelPlan,
        cron_events: Recipient<crate::cron::CronEvent>,
        heartbeat_events: Recipient<crate::cron::beat::HeartbeatEvent>,
    ) -> Result<Surfaces, StartError> {
        let channel_health = Arc::new(HealthBoard::new(crate::channels::stale_ms(settings)));
        let channels = ChannelSupervisor::new(
            channel_plan,
            settings,
            p.store.clone(),
            p.sessions.router.clone(),
            p.base.runs.clone(),
            channel_health.clone(),
            p.env.clone(),
        )
        .with_audit(p.base.audit_log.clone())
        .with_media(p.tooling.media.clone())
        .with_questions(p.tooling.questions.clone())
        .with_hooks(p.tooling.hooks.clone())
        .with_speech(p.sessions.speech.clone())
        .start();
        let (cron, heartbeat) = start_automation(
            settings,
            Automation {
                store: p.store.clone(),
                router: p.sessions.router.clone(),
                channels: channels.clone(),
                runs: p.base.runs.clone(),
                workspace: p.sessions.workspace.clone(),
                cron_events,
                heartbeat_events,
            },
        )?;
        Ok(Surfaces {
            channels,
            channel_health,
            cron,
            heartbeat,
        })
    }
}

/// The configured agents as `agents_list` shows them (the default agent
/// first when the list does not name it).
pub(super) fn agent_rows(
    settings: &Settings,
    model: &ModelRef,
) -> Arc<[crate::subagents::AgentRow]> {
    let default = settings.default_agent_id();
    let mut rows: Vec<crate::subagents::AgentRow> = settings
        .agents
        .list
        .iter()
        .map(|a| crate::subagents::AgentRow {
            id: a.id.clone(),
            name: a.name.clone(),
            model: a
                .model
                .as_ref()
                .map_or_else(|| model.to_string(), |m| m.primary().to_string()),
            default: a.id == default,
        })
        .collect();
    if !rows.iter().any(|r| r.id == default) {
        rows.insert(
            0,
            crate::subagents::AgentRow {
                id: default.to_string(),
                name: None,
                model: model.to_string(),
                default: true,
            },
        );
    }
    rows.into()
}

/// Whether the memory flush may write the workspace: not when commands run
/// sandboxed with a read-only (or no) view of it.
pub(super) fn memory_writable(settings: &Settings) -> bool {
    use crate::settings::{SandboxMode, WorkspaceAccess};
    let s = &settings.agents.defaults.sandbox;
    s.mode == SandboxMode::Off || s.workspace_access == WorkspaceAccess::ReadWrite
}

/// A memory actor per agent (`agents.defaults.memorySearch`), each on its
/// workspace (the agent's own, else the default).
pub(super) fn start_memories(
    settings: &Settings,
    state_dir: &std::path::Path,
    workspace: &std::path::Path,
    env: &EnvReader,
) -> crate::memory::Memories {
    let providers = serde_json::to_value(&settings.models.providers).unwrap_or_default();
    let memory = crate::memory::provider::MemorySettings::from_settings(
        &settings.agents.defaults.memory_search,
        &providers,
        env,
    );
    let agents = crate::plan::agent_workspaces(settings, workspace);
    crate::memory::Memories::start(&memory, state_dir, &agents, settings.default_agent_id())
}

/// What the scheduler and the heartbeat are started with.
pub(super) struct Automation {
    pub(super) store: Store,
    pub(super) router: Addr<RouterActor>,
    pub(super) channels: Addr<ChannelSupervisor>,
    pub(super) runs: Addr<RunRegistry>,
    pub(super) workspace: std::path::PathBuf,
    pub(super) cron_events: Recipient<crate::cron::CronEvent>,
    pub(super) heartbeat_events: Recipient<crate::cron::beat::HeartbeatEvent>,
}

/// The heartbeat (`agents.defaults.heartbeat`) and the cron scheduler
/// (`cron.enabled`, `cron.runMissedJobs`, `cron.retryInterrupted`).
pub(super) fn start_automation(
    settings: &Settings,
    a: Automation,
) -> Result<
    (
        Addr<crate::cron::CronActor>,
        Addr<crate::cron::beat::HeartbeatActor>,
    ),
    StartError,
> {
    use crate::cron::{beat, clock, exec};
    let clock: Arc<dyn clock::Clock> = Arc::new(clock::SystemClock);
    let announcer = exec::Announcer {
        store: a.store.clone(),
        router: a.router,
        channels: a.channels,
        default_agent: settings.default_agent_id().to_string(),
        main_key: settings.session.main_key.clone(),
    };
    let hb = beat::HeartbeatConfig::from_settings(&settings.agents.defaults.heartbeat)?;
    let heartbeat = beat::HeartbeatActor::new(
        hb,
        a.workspace,
        clock.clone(),
        announcer.clone(),
        a.runs.clone(),
    )
    .with_events(a.heartbeat_events)
    .start();
    let flag = |k: &str, default: bool| {
        settings
            .cron
            .other
            .get(k)
            .and_then(serde_json::Value::as_bool)
            .unwrap_or(default)
    };
    let config = crate::cron::CronConfig {
        enabled: flag("enabled", true),
        run_missed: flag("runMissedJobs", true),
        retry_interrupted: flag("retryInterrupted", false),
        default_agent: settings.default_agent_id().to_string(),
    };
    let runner = exec::runner(exec::GatewayRunner {
        announcer,
        runs: a.runs,
        wake: Some(heartbeat.clone().recipient()),
    });
    let cron = crate::cron::CronActor::new(a.store, clock, runner, config)
        .with_events(a.cron_events)
        .start();
    Ok((cron, heartbeat))
}
