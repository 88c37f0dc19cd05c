//! The actor tree (not an actor): `Gateway::start` checks the config
//! (`plan`), then starts the children in order (bus, presence, devices,
//! idempotency, the audit ledger, run registry, lanes, provider hub, approvals, the memory
//! actors, tool executor, router,
//! session tools, the channel supervisor, the heartbeat, the cron scheduler,
//! the gateway root) and hands their addresses to the edge.

use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;

use crate::bus::EventBus;
use crate::channels::health::HealthBoard;
use crate::channels::ChannelSupervisor;
use crate::devices::DeviceRegistry;
use crate::gateway::{GatewayActor, GatewayParts};
use crate::idempotency::{IdempotencyActor, IdempotentReader};
use crate::lane::{LaneActor, Lanes};
use crate::metrics::Metrics;
use crate::plan::{model_plan, plan, windows, StartError, StartPlan};
use crate::presence::{PresenceActor, PresenceEntry, StateVersions};
use crate::provider::hub::{EnvReader, ProviderHub};
use crate::provider::selection::ModelRef;
use crate::router::RouterActor;
use crate::runs::{RunRegistry, SessionEvent};
use crate::session::{RestartPolicy, SessionDeps};
use crate::settings::Settings;
use crate::store::Store;
use crate::tool::ToolExecutor;

/// Where the tree's events go: the edge's encoders, which turn them into
/// wire events on the bus. Made by the edge once the bus runs.
pub struct EdgeSinks {
    /// Every session's run events, after the run registry.
    pub runs: Recipient<SessionEvent>,
    /// What sessions tell watching dashboards.
    pub sessions: Recipient<crate::session::SessionNews>,
    pub presence: Recipient<crate::presence::PresenceChanged>,
    pub health: Recipient<crate::gateway::HealthUpdated>,
    pub approvals: Recipient<crate::approvals::ApprovalEvent>,
    /// `node.pair.*` and `node.event` for operators.
    pub nodes: Recipient<crate::nodes::NodeNews>,
    /// `cron` events (jobs added, changed, removed; runs started, finished).
    pub cron: Recipient<crate::cron::CronEvent>,
    /// `heartbeat` events.
    pub heartbeat: Recipient<crate::cron::beat::HeartbeatEvent>,
    /// `question.requested` / `question.resolved`.
    pub questions: Recipient<crate::questions::QuestionEvent>,
}

/// Addresses of the running tree, handed to the edge (`src/`).
#[derive(Clone)]
pub struct Gateway {
    pub root: Addr<GatewayActor>,
    pub bus: Addr<EventBus>,
    pub presence: Addr<PresenceActor>,
    pub devices: Addr<DeviceRegistry>,
    /// Connected nodes, their approvals and the calls waiting for them.
    pub nodes: Addr<crate::nodes::NodeRegistry>,
    pub idempotency: Addr<IdempotencyActor>,
    /// The idempotency cache read in place (no mailbox round trip).
    pub idempotent: IdempotentReader,
    pub router: Addr<RouterActor>,
    pub main_lane: Addr<LaneActor>,
    pub lanes: Lanes,
    pub hub: Addr<ProviderHub>,
    /// Prompt, workspace files and skills (`skills.status`).
    pub context: Arc<crate::context::AgentContext>,
    /// Live runs, recent results and everyone waiting for a run.
    pub runs: Addr<RunRegistry>,
    /// Exec approvals and the approvals file.
    pub approvals: Addr<crate::approvals::ApprovalsActor>,
    /// Questions for the human (`ask_user`, `question.*`).
    pub questions: Addr<crate::questions::QuestionsActor>,
    /// The tool executor (`/tools/invoke`).
    pub executor: Recipient<crate::tool::ExecuteTool>,
    /// Tool allowlists and exec defaults (`/tools/invoke`).
    pub tool_policy: Arc<crate::tool::policy::ToolPolicy>,
    /// The tools runs are offered (`tools.catalog`): built-in and MCP.
    pub tools: crate::mcp::ToolBench,
    /// The MCP servers' supervisor (`mcp` status in `health`, `tools.catalog`).
    pub mcp: Addr<crate::mcp::McpHub>,
    /// The media store (`<state>/media`; its only writer).
    pub media: Addr<crate::media::MediaStore>,
    /// The default model the sessions use.
    pub model: ModelRef,
    pub versions: Arc<StateVersions>,
    pub metrics: Arc<Metrics>,
    /// Channel accounts: status, logout, pairing.
    pub channels: Addr<ChannelSupervisor>,
    /// Every channel account's measured health.
    pub channel_health: Arc<HealthBoard>,
    /// Every agent's memory index (`memory.search`, `doctor.memory.status`).
    pub memories: crate::memory::Memories,
    /// The environment as `main.rs` reads it (tests: a fixed map), for
    /// what the edge builds from settings (media's keys).
    pub env: EnvReader,
    /// The cron scheduler.
    pub cron: Addr<crate::cron::CronActor>,
    /// The heartbeat.
    pub heartbeat: Addr<crate::cron::beat::HeartbeatActor>,
    /// The audit ledger (None: it could not open; nothing is recorded).
    pub audit: Option<Addr<crate::audit::AuditLedger>>,
    /// Where the edge records control changes (off without a ledger).
    pub audit_log: crate::audit::AuditLog,
    /// Where the executor sends the gateway's own tools (`automations`,
    /// `message`, `gateway`): the edge sets it once its state exists.
    pub edge_tools: crate::tool::EdgeTools,
    /// Built-in tools not offered, and why (`tools.catalog`).
    pub unavailable_tools: Arc<[(String, String)]>,
}

impl Gateway {
    /// Starts the tree. Must run inside an actix system. `tick` is the
    /// edge's `tick` event; `edge` makes the edge's recipients of the
    /// tree's events once the bus runs (they become wire events on it).
    pub fn start(
        settings: Arc<Settings>,
        store: Store,
        self_entry: PresenceEntry,
        metrics: Arc<Metrics>,
        env: EnvReader,
        tick: crate::bus::TickEvent,
        edge: impl FnOnce(Addr<EventBus>, Arc<Metrics>) -> EdgeSinks,
    ) -> Result<Gateway, StartError> {
        // Everything the config decides is checked before anything starts.
        let defaults = &settings.agents.defaults;
        let StartPlan {
            workspace,
            model,
            hub_config,
            context,
            limits,
            approval_timeout,
            tool_policy,
            queue,
            channels,
            pruning,
            maintenance,
        } = plan(&settings, store.dir(), env.clone())?;
        let versions = Arc::new(StateVersions::default());
        let tick_every = Duration::from_millis(settings.gateway.tick_interval_ms.max(10));
        let m = metrics.clone();
        let bus = Supervisor::start(move |_| EventBus::new(tick_every, tick, m.clone()));
        let sinks = edge(bus.clone(), metrics.clone());
        let presence = PresenceActor::new(
            self_entry,
            versions.clone(),
            sinks.presence,
            metrics.clone(),
        )
        .start();
        let (s, m) = (store.clone(), metrics.clone());
        let devices = Supervisor::start(move |_| DeviceRegistry::new(s.clone(), m.clone()));
        let nodes = crate::nodes::NodeRegistry::new(
            store.clone(),
            sinks.nodes,
            crate::nodes::NodePolicy::from_settings(&settings),
        )
        .start();
        let idempotency = IdempotencyActor::load(store.clone(), metrics.clone())?;
        let idempotent = idempotency.reader();
        let idempotency = idempotency.start();
        match crate::runs::prune(&store, crate::now_ms()) {
            Ok(n) if n > 0 => tracing::info!(removed = n, "old run records pruned"),
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "cannot prune old run records"),
        }
        let main_key =
            crate::inbound::SessionKey::canonical("main", settings.default_agent_id(), "main")
                .map(|k| k.as_str().to_string())
                .unwrap_or_else(|_| "agent:main:main".into());
        match crate::session::system_events::adopt_legacy(&store, &main_key) {
            Ok(n) if n > 0 => {
                tracing::info!(moved = n, "queued system events given to the main session")
            }
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "cannot move the queued system events"),
        }
        let audit = match crate::audit::AuditLedger::start(
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
        };
        let (audit, audit_log) = audit;
        let runs = RunRegistry::new(
            store.clone(),
            metrics.clone(),
            sinks.runs,
            sinks.sessions.clone(),
        )
        .with_audit(audit_log.clone())
        .start();
        let lanes = Lanes::start(&settings);
        let fresh_workspace = !workspace.exists();
        std::fs::create_dir_all(&workspace)
            .map_err(|e| StartError::Workspace(format!("{}: {e}", workspace.display())))?;
        if fresh_workspace && !defaults.skip_bootstrap {
            match crate::context::prompt::seed_new_workspace(&workspace) {
                Ok(p) => {
                    tracing::info!(path = %p.display(), "new workspace: first-run BOOTSTRAP.md written")
                }
                Err(e) => tracing::warn!(error = %e, "cannot seed the new workspace"),
            }
        }
        let context = Arc::new(context);
        // A tool whose backing is not configured is not offered (and
        // `tools.catalog` says why).
        let unavailable_tools: Arc<[(String, String)]> = limits
            .search
            .unavailable
            .iter()
            .map(|why| ("web_search".to_string(), why.clone()))
            .collect();
        let builtin: Arc<[crate::provider::ToolSpec]> = ToolExecutor::specs()
            .into_iter()
            .filter(|t| !unavailable_tools.iter().any(|(n, _)| *n == t.name))
            .collect();
        let catalog = crate::mcp::McpCatalog::default();
        let media = crate::media::MediaStore::new(
            store.dir().join("media"),
            settings.attachments.ttl(),
            settings.attachments.max_total_bytes(),
        )
        .start();
        let approvals = crate::approvals::ApprovalsActor::load(
            sinks.approvals,
            store.dir().join("exec-approvals.json"),
            Duration::from_secs(approval_timeout),
        )
        .map_err(|e| StartError::Tools(e.to_string()))?
        .start();
        let questions = crate::questions::QuestionsActor::new(Some(sinks.questions)).start();
        let mcp = crate::mcp::McpHub::new(
            &settings.mcp,
            catalog.clone(),
            builtin.iter().map(|t| t.name.clone()).collect(),
            approvals.clone().recipient(),
            Some(store.dir().join("mcp")),
        )
        .start();
        let tools = crate::mcp::ToolBench::new(builtin, catalog);
        let models = Arc::new(model_plan(&settings));
        let hub = ProviderHub::new(hub_config).start();
        let session_tools: Arc<std::sync::OnceLock<Recipient<crate::tool::ExecuteTool>>> =
            Default::default();
        let memories = start_memories(&settings, store.dir(), &workspace, &env);
        let edge_tools: crate::tool::EdgeTools = Default::default();
        let executor = ToolExecutor::new(workspace.clone(), limits)
            .with_edge(edge_tools.clone())
            .with_memories(memories.clone())
            .with_sessions(session_tools.clone())
            .with_approvals(approvals.clone())
            .with_mcp(mcp.clone().recipient())
            .with_nodes(nodes.clone())
            .with_media(
                crate::media::tools::MediaTools {
                    store: media.clone(),
                    config: Arc::new(crate::media::MediaConfig::from_settings(&settings, &env)),
                    workspace: crate::tool::Workspace {
                        root: workspace.clone(),
                        only: settings.tools.fs.workspace_only,
                        untrusted: false,
                    },
                }
                .start()
                .recipient(),
            )
            .start()
            .recipient();
        let subagent_done: Arc<std::sync::OnceLock<Recipient<crate::session::SubagentDone>>> =
            Default::default();
        let tool_policy = Arc::new(tool_policy);
        let deps = SessionDeps {
            store: store.clone(),
            hub: hub.clone(),
            executor: executor.clone(),
            lane: lanes.main.clone(),
            events: runs.clone().recipient(),
            // Through the registry: one ordered road with the run events.
            news: runs.clone().recipient(),
            models,
            thinking_default: defaults.thinking_default.clone(),
            verbose_default: defaults.verbose_default.clone(),
            context: context.clone(),
            tools: tools.clone(),
            windows: Arc::new(windows(&settings)),
            compaction: crate::compaction::CompactionSettings::from_settings(&defaults.compaction),
            pruning: Arc::new(pruning),
            memory_writable: memory_writable(&settings),
            prices: Arc::new(crate::usage::Prices::from_settings(&settings)),
            subagent_done: subagent_done.clone(),
            tool_policy: tool_policy.clone(),
            timeout: std::time::Duration::from_secs(defaults.timeout_seconds.max(1)),
            max_model_calls: 32,
            queue,
            restart: RestartPolicy {
                max: defaults.run_restarts.max,
                backoff: Duration::from_millis(defaults.run_restarts.backoff_ms),
            },
            idle_stop: Duration::from_secs(defaults.session_idle_seconds.max(1)),
            workspace: workspace.display().to_string(),
            metrics: metrics.clone(),
            media: Some(media.clone()),
        };
        let router = RouterActor::new(deps)
            .with_lanes(lanes.clone())
            .with_maintenance(maintenance)
            .start();
        let max_depth = defaults.subagents.max_spawn_depth;
        let tools_actor = crate::subagents::SessionTools::new(
            router.clone(),
            runs.clone(),
            settings.default_agent_id(),
            max_depth,
            store.clone(),
            agent_rows(&settings, &model),
        )
        .start();
        let _ = subagent_done.set(tools_actor.clone().recipient());
        let _ = session_tools.set(tools_actor.recipient());
        let channel_health = Arc::new(HealthBoard::new(crate::channels::stale_ms(&settings)));
        let channels = ChannelSupervisor::new(
            channels,
            &settings,
            store.clone(),
            router.clone(),
            runs.clone(),
            channel_health.clone(),
            env.clone(),
        )
        .with_audit(audit_log.clone())
        .with_media(media.clone())
        .with_questions(questions.clone())
        .start();
        let (cron, heartbeat) = start_automation(
            &settings,
            Automation {
                store: store.clone(),
                router: router.clone(),
                channels: channels.clone(),
                runs: runs.clone(),
                workspace: workspace.clone(),
                cron_events: sinks.cron,
                heartbeat_events: sinks.heartbeat,
            },
        )?;
        let root = GatewayActor::new(GatewayParts {
            heartbeat: heartbeat.clone(),
            router: router.clone(),
            channels: channels.clone(),
            mcp: mcp.clone(),
            nodes: nodes.clone(),
            channel_health: channel_health.clone(),
            hub: hub.clone(),
            env: env.clone(),
            settings,
            store: store.clone(),
            edge: sinks.health,
            versions: versions.clone(),
            metrics: metrics.clone(),
            audit: audit.clone(),
        })
        .start();
        Ok(Gateway {
            env: env.clone(),
            root,
            bus,
            presence,
            devices,
            nodes,
            idempotency,
            idempotent,
            router,
            main_lane: lanes.main.clone(),
            lanes,
            hub,
            context,
            runs,
            approvals,
            questions,
            executor,
            tool_policy,
            tools,
            mcp,
            media,
            model,
            versions,
            metrics,
            channels,
            channel_health,
            memories,
            cron,
            heartbeat,
            audit,
            audit_log,
            edge_tools,
            unavailable_tools,
        })
    }
}

/// The configured agents as `agents_list` shows them (the default agent
/// first when the list does not name it).
fn agent_rows(settings: &Settings, model: &ModelRef) -> Arc<[crate::subagents::AgentRow]> {
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
fn memory_writable(settings: &Settings) -> bool {
    use crate::settings::{SandboxMode, WorkspaceAccess};
    let s = &settings.agents.defaults.sandbox;
    s.mode == SandboxMode::Off || s.workspace_access == WorkspaceAccess::ReadWrite
}

/// A memory actor per agent (`agents.defaults.memorySearch`), each on its
/// workspace (the agent's own, else the default).
fn start_memories(
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
struct Automation {
    store: Store,
    router: Addr<RouterActor>,
    channels: Addr<ChannelSupervisor>,
    runs: Addr<RunRegistry>,
    workspace: std::path::PathBuf,
    cron_events: Recipient<crate::cron::CronEvent>,
    heartbeat_events: Recipient<crate::cron::beat::HeartbeatEvent>,
}

/// The heartbeat (`agents.defaults.heartbeat`) and the cron scheduler
/// (`cron.enabled`, `cron.runMissedJobs`, `cron.retryInterrupted`).
fn start_automation(
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
    };
    let hb = beat::HeartbeatConfig::from_settings(&settings.agents.defaults.heartbeat)
        .map_err(|e| StartError::Automation(e.to_string()))?;
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
