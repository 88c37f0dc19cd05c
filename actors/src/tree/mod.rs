//! The actor tree (not an actor): `Gateway::start` checks the config
//! (`plan`), then starts the children in stages (`stages.rs`): the bus,
//! the registries (presence, devices, nodes, idempotency, the audit ledger,
//! runs, lanes), the tools (media, approvals, questions, MCP, memories, the
//! executor), the sessions (provider hub, router, session tools), the
//! surfaces (channels, the heartbeat, cron) and the gateway root, and hands
//! their addresses to the edge.

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
use crate::plan::{plan, StartError};
use crate::presence::{PresenceActor, PresenceEntry, StateVersions};
use crate::provider::hub::{EnvReader, ProviderHub};
use crate::provider::selection::ModelRef;
use crate::router::RouterActor;
use crate::runs::{RunRegistry, SessionEvent};
use crate::settings::Settings;
use crate::store::Store;

mod stages;
use stages::{prepare_workspace, tidy_store, Registries, Sessions, Surfaces, Tooling};

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
    /// The executor's background commands (listed and cancelled as tasks).
    pub processes: crate::tool::Processes,
    /// Tool allowlists and exec defaults (`/tools/invoke`).
    pub tool_policy: Arc<crate::tool::policy::ToolPolicy>,
    /// The tools runs are offered (`tools.catalog`): built-in and MCP.
    pub tools: crate::mcp::ToolBench,
    /// The MCP servers' supervisor (`mcp` status in `health`, `tools.catalog`).
    pub mcp: Addr<crate::mcp::McpHub>,
    /// Installed bundles, applied (`plugins.*`, `status`, `doctor`).
    pub plugins: Addr<crate::plugins::PluginHost>,
    /// The command hooks (`hooks` in `status`).
    pub hooks: crate::hooks::HookClient,
    /// The language servers (`status`).
    pub lsp: Addr<crate::lsp::LspHub>,
    /// The browser's executor (`browser.request`, the browser's state in
    /// `status`, `health` and `/metrics`); None when it is not available.
    pub browser: Option<Addr<crate::browser::BrowserTools>>,
    /// The media store (`<state>/media`; its only writer).
    pub media: Addr<crate::media::MediaStore>,
    /// Spoken replies (`tts.*`, `talk.catalog`, the `tts` tool).
    pub speech: Addr<crate::tts::Speaker>,
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
        let mut planned = plan(&settings, store.dir(), env.clone())?;
        let channel_plan = std::mem::take(&mut planned.channels);
        let versions = Arc::new(StateVersions::default());
        let tick_every = Duration::from_millis(settings.gateway.tick_interval_ms.max(10));
        let m = metrics.clone();
        let bus = Supervisor::start(move |_| EventBus::new(tick_every, tick, m.clone()));
        let sinks = edge(bus.clone(), metrics.clone());
        let base = Registries::start(&settings, &store, self_entry, &metrics, &versions, &sinks)?;
        tidy_store(&store, &settings);
        prepare_workspace(&planned.workspace, settings.agents.defaults.skip_bootstrap)?;
        let tooling = Tooling::start(&settings, &store, &env, &planned, &sinks, &base)?;
        let sessions = Sessions::start(
            &settings,
            &store,
            planned,
            (&base, &tooling),
            &metrics,
            &env,
        );
        let parts = Parts {
            store,
            env,
            bus,
            versions,
            metrics,
            base,
            tooling,
            sessions,
        };
        let surfaces =
            Surfaces::start(&settings, &parts, channel_plan, sinks.cron, sinks.heartbeat)?;
        let plugins = parts.plugin_host();
        let root = parts.root(settings, &surfaces, sinks.health, plugins.clone());
        Ok(Gateway::assemble(parts, surfaces, root, plugins))
    }

    /// The tree's addresses, as the edge gets them.
    fn assemble(
        p: Parts,
        surfaces: Surfaces,
        root: Addr<GatewayActor>,
        plugins: Addr<crate::plugins::PluginHost>,
    ) -> Gateway {
        let (base, tooling, sessions) = (p.base, p.tooling, p.sessions);
        Gateway {
            env: p.env,
            root,
            bus: p.bus,
            presence: base.presence,
            devices: base.devices,
            nodes: base.nodes,
            idempotency: base.idempotency,
            idempotent: base.idempotent,
            router: sessions.router,
            main_lane: base.lanes.main.clone(),
            lanes: base.lanes,
            hub: sessions.hub,
            context: sessions.context,
            runs: base.runs,
            approvals: tooling.approvals,
            questions: tooling.questions,
            executor: tooling.executor,
            processes: tooling.processes,
            tool_policy: sessions.tool_policy,
            tools: tooling.tools,
            mcp: tooling.mcp,
            plugins,
            hooks: tooling.hooks,
            lsp: tooling.lsp,
            media: tooling.media,
            speech: sessions.speech,
            browser: tooling.browser,
            model: sessions.model,
            versions: p.versions,
            metrics: p.metrics,
            channels: surfaces.channels,
            channel_health: surfaces.channel_health,
            memories: tooling.memories,
            cron: surfaces.cron,
            heartbeat: surfaces.heartbeat,
            audit: base.audit,
            audit_log: base.audit_log,
            edge_tools: tooling.edge_tools,
            unavailable_tools: tooling.unavailable_tools,
        }
    }
}

/// What the tree has started before its surfaces and its root.
struct Parts {
    store: Store,
    env: EnvReader,
    bus: Addr<EventBus>,
    versions: Arc<StateVersions>,
    metrics: Arc<Metrics>,
    base: Registries,
    tooling: Tooling,
    sessions: Sessions,
}

impl Parts {
    /// The plugin host, holding the set applied at start.
    fn plugin_host(&self) -> Addr<crate::plugins::PluginHost> {
        let targets = crate::plugins::PluginTargets {
            context: self.sessions.context.clone(),
            mcp: self.tooling.mcp.clone(),
            hooks: self.tooling.hooks.clone(),
            lsp: self.tooling.lsp.clone(),
        };
        let dir = self.store.dir().to_path_buf();
        crate::plugins::PluginHost::new(dir, self.tooling.plugins.clone(), targets).start()
    }

    /// The gateway root: health, config reloads, the shutdown order.
    fn root(
        &self,
        settings: Arc<Settings>,
        surfaces: &Surfaces,
        edge: Recipient<crate::gateway::HealthUpdated>,
        plugins: Addr<crate::plugins::PluginHost>,
    ) -> Addr<GatewayActor> {
        GatewayActor::new(GatewayParts {
            plugins,
            hooks: self.tooling.hooks.clone(),
            heartbeat: surfaces.heartbeat.clone(),
            router: self.sessions.router.clone(),
            channels: surfaces.channels.clone(),

            browser: self.tooling.browser.clone(),
            nodes: self.base.nodes.clone(),
            speech: self.sessions.speech.clone(),
            channel_health: surfaces.channel_health.clone(),
            hub: self.sessions.hub.clone(),
            env: self.env.clone(),
            settings,
            store: self.store.clone(),
            edge,
            versions: self.versions.clone(),
            metrics: self.metrics.clone(),
            audit: self.base.audit.clone(),
        })
        .start()
    }
}
