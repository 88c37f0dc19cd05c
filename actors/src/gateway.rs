//! GatewayActor: the root of the actor tree. `Gateway::start` starts the
//! children in order (bus, presence, devices, idempotency) under actix
//! supervisors; `Shutdown` tells every client and stops them in reverse.
//! It also owns the health cache: a summary refreshed every
//! `healthRefreshIntervalMs` and after connects, broadcast as `health` with
//! a bumped `stateVersion.health`.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::prelude::*;
use serde::Serialize;
use serde_json::value::RawValue;

use crate::bus::{send_to_bus, BroadcastShutdown, BusEvent, EventBus, Publish};
use crate::devices::DeviceRegistry;
use crate::idempotency::IdempotencyActor;
use crate::lane::{LaneActor, Lanes};
use crate::metrics::Metrics;
use crate::presence::{PresenceActor, PresenceEntry, StateVersions};
use crate::provider::hub::{EnvReader, HubConfig, ProviderHub, Reconfigure};
use crate::provider::selection::{resolve_model, ModelChain, ModelRef};
use crate::queue::QueueSettings;
use crate::router::RouterActor;
use crate::session::{ModelPlan, RestartPolicy, SessionDeps, SessionEvent};
use crate::settings::Settings;
use crate::store::{Store, StoreError};
use crate::tool::{ToolExecutor, ToolLimits};

/// Addresses of the running tree, handed to the edge (`src/`).
#[derive(Clone)]
pub struct Gateway {
    pub root: Addr<GatewayActor>,
    pub bus: Addr<EventBus>,
    pub presence: Addr<PresenceActor>,
    pub devices: Addr<DeviceRegistry>,
    pub idempotency: Addr<IdempotencyActor>,
    pub router: Addr<RouterActor>,
    pub main_lane: Addr<LaneActor>,
    pub lanes: Lanes,
    pub hub: Addr<ProviderHub>,
    /// Prompt, workspace files and skills (`skills.status`).
    pub context: Arc<crate::agent_context::AgentContext>,
    /// Exec approvals and the approvals file.
    pub approvals: Addr<crate::approvals::ApprovalsActor>,
    /// The tool executor (`/tools/invoke`).
    pub executor: Recipient<crate::run::ExecuteTool>,
    /// Tool allowlists and exec defaults (`/tools/invoke`).
    pub tool_policy: Arc<crate::tool::policy::ToolPolicy>,
    /// The tools runs are offered (`tools.catalog`).
    pub tools: Arc<[crate::provider::ToolSpec]>,
    /// The default model the sessions use.
    pub model: ModelRef,
    pub versions: Arc<StateVersions>,
    pub metrics: Arc<Metrics>,
    pub store: Store,
}

impl Gateway {
    /// Starts the tree. Must run inside an actix system. `chat_events`
    /// makes the recipient of every session's run events (the edge turns
    /// them into `chat`/`agent` frames on the bus).
    pub fn start(
        settings: Arc<Settings>,
        store: Store,
        self_entry: PresenceEntry,
        metrics: Arc<Metrics>,
        env: EnvReader,
        chat_events: impl FnOnce(Addr<EventBus>, Arc<Metrics>) -> Recipient<SessionEvent>,
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
        } = plan(&settings, store.dir(), env.clone())?;
        let versions = Arc::new(StateVersions::default());
        let tick = Duration::from_millis(settings.gateway.tick_interval_ms.max(10));
        let m = metrics.clone();
        let bus = Supervisor::start(move |_| EventBus::new(tick, m.clone()));
        let presence =
            PresenceActor::new(self_entry, versions.clone(), bus.clone(), metrics.clone()).start();
        let (s, m) = (store.clone(), metrics.clone());
        let devices = Supervisor::start(move |_| DeviceRegistry::new(s.clone(), m.clone()));
        let idempotency = IdempotencyActor::load(store.clone(), metrics.clone())?.start();
        match crate::runs::prune(&store, crate::now_ms()) {
            Ok(n) if n > 0 => tracing::info!(removed = n, "old run records pruned"),
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "cannot prune old run records"),
        }
        let lanes = Lanes::start(&settings);
        let fresh_workspace = !workspace.exists();
        std::fs::create_dir_all(&workspace)
            .map_err(|e| StartError::Workspace(format!("{}: {e}", workspace.display())))?;
        if fresh_workspace && !defaults.skip_bootstrap {
            match crate::prompt::seed_new_workspace(&workspace) {
                Ok(p) => {
                    tracing::info!(path = %p.display(), "new workspace: first-run BOOTSTRAP.md written")
                }
                Err(e) => tracing::warn!(error = %e, "cannot seed the new workspace"),
            }
        }
        let context = Arc::new(context);
        let tools: Arc<[crate::provider::ToolSpec]> = ToolExecutor::specs().into();
        let models = Arc::new(model_plan(&settings));
        let hub = ProviderHub::new(hub_config).start();
        let approvals = crate::approvals::ApprovalsActor::load(
            bus.clone(),
            store.dir().join("exec-approvals.json"),
            Duration::from_secs(approval_timeout),
        )
        .map_err(StartError::Tools)?
        .start();
        let session_tools: Arc<std::sync::OnceLock<Addr<crate::tool::sessions::SessionTools>>> =
            Default::default();
        let executor = ToolExecutor::new(workspace.clone(), limits)
            .with_sessions(session_tools.clone())
            .with_approvals(approvals.clone())
            .start()
            .recipient();
        let subagent_done: Arc<
            std::sync::OnceLock<Recipient<crate::tool::sessions::SubagentDone>>,
        > = Default::default();
        let tool_policy = Arc::new(tool_policy);
        let deps = SessionDeps {
            store: store.clone(),
            hub: hub.clone(),
            executor: executor.clone(),
            lane: lanes.main.clone(),
            events: chat_events(bus.clone(), metrics.clone()),
            models,
            thinking_default: defaults.thinking_default.clone(),
            verbose_default: defaults.verbose_default.clone(),
            context: context.clone(),
            tools: tools.clone(),
            context_window: context_window(&settings),
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
        };
        let router = RouterActor::new(deps).with_lanes(lanes.clone()).start();
        let max_depth = defaults
            .subagents
            .get("maxSpawnDepth")
            .and_then(serde_json::Value::as_u64)
            .unwrap_or(1) as u32;
        let tools_actor = crate::tool::sessions::SessionTools::new(
            router.clone(),
            store.clone(),
            settings.default_agent_id(),
            max_depth,
        )
        .start();
        let _ = subagent_done.set(tools_actor.clone().recipient());
        let _ = session_tools.set(tools_actor);
        let root = GatewayActor {
            hub: hub.clone(),
            env,
            settings,
            store: store.clone(),
            bus: bus.clone(),
            versions: versions.clone(),
            metrics: metrics.clone(),
            health: None,
            health_dirty: true,
            broadcast_scheduled: false,
            trim: Default::default(),
        }
        .start();
        Ok(Gateway {
            root,
            bus,
            presence,
            devices,
            idempotency,
            router,
            main_lane: lanes.main.clone(),
            lanes,
            hub,
            context,
            approvals,
            executor,
            tool_policy,
            tools,
            model,
            versions,
            metrics,
            store,
        })
    }
}

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("agents.defaults.model: {0}")]
    Model(String),
    #[error("{0}")]
    Provider(String),
    #[error("agent workspace {0}")]
    Workspace(String),
    #[error("{0}")]
    Queue(String),
    #[error("{0}")]
    Tools(String),
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
    pub context: crate::agent_context::AgentContext,
    pub limits: ToolLimits,
    pub approval_timeout: u64,
    pub tool_policy: crate::tool::policy::ToolPolicy,
    pub queue: QueueSettings,
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
    let context = agent_context(settings, &workspace, state_dir).map_err(StartError::Tools)?;
    let hub_config =
        HubConfig::from_settings(settings, state_dir, settings.default_agent_id(), env);
    let (model, _) = resolve_model(
        &ModelChain {
            global: defaults.model.primary(),
            ..Default::default()
        },
        false,
    )
    .map_err(StartError::Model)?;
    if !hub_config.knows(&model.provider) {
        return Err(StartError::Provider(format!(
            "models.providers.{} is not configured (needed by the default model {model})",
            model.provider
        )));
    }
    let sandbox = crate::tool::sandbox::SandboxSettings::from_config(&defaults.sandbox, state_dir)
        .map_err(StartError::Tools)?;
    let limits = ToolLimits {
        fetch: crate::tool::web_fetch::FetchSettings::from_config(&settings.tools)
            .map_err(StartError::Tools)?,
        sandbox: sandbox.clone(),
        workspace_only: match settings.tools.pointer("/fs/workspaceOnly") {
            None | Some(serde_json::Value::Null) => true,
            Some(v) => v.as_bool().ok_or_else(|| {
                StartError::Tools("tools.fs.workspaceOnly must be true or false".into())
            })?,
        },
        ..ToolLimits::default()
    };
    let exec_cfg = settings.tools.get("exec");
    let approval_timeout = exec_cfg
        .and_then(|e| e.get("approvalTimeoutSeconds"))
        .map(|v| {
            v.as_u64()
                .filter(|n| *n >= 1)
                .ok_or("tools.exec.approvalTimeoutSeconds: a whole number of seconds, at least 1")
        })
        .transpose()
        .map_err(|e| StartError::Tools(e.to_string()))?
        .unwrap_or(120);
    let exec_defaults = crate::tool::policy::ExecDefaults::from_config(exec_cfg, sandbox)
        .map_err(StartError::Tools)?;
    let mut tool_policy = crate::tool::policy::ToolPolicy::from_config(
        &settings.tools,
        &settings
            .agents
            .list
            .iter()
            .map(|a| (a.id.clone(), a.tools.clone()))
            .collect::<Vec<_>>(),
        &settings.channels,
    )
    .map_err(StartError::Tools)?;
    tool_policy.exec = exec_defaults;
    Ok(StartPlan {
        workspace,
        model,
        hub_config,
        context,
        limits,
        approval_timeout,
        tool_policy,
        queue: queue_settings(&settings.messages).map_err(StartError::Queue)?,
    })
}

/// The prompt and skills context from config.
pub fn agent_context(
    settings: &Settings,
    workspace: &std::path::Path,
    state_dir: &std::path::Path,
) -> Result<crate::agent_context::AgentContext, String> {
    let d = &settings.agents.defaults;
    let mut cx = crate::agent_context::AgentContext::new(workspace.to_path_buf(), state_dir);
    cx.skills = crate::skills::SkillsConfig::from_config(&settings.skills)?;
    cx.limits = crate::prompt::BootstrapLimits {
        per_file: d.bootstrap_max_chars as usize,
        total: d.bootstrap_total_max_chars as usize,
    };
    cx.envelope = crate::msg_context::EnvelopeSettings::from_config(
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
    if let Some(channels) = settings.channels.as_object() {
        for (id, ch) in channels {
            if let Some(f) = ch.get("skillFilter") {
                let list: Vec<String> = serde_json::from_value(f.clone())
                    .map_err(|e| format!("channels.{id}.skillFilter: {e}"))?;
                cx.channel_skill_filters.insert(id.clone(), list);
            }
        }
    }
    Ok(cx)
}

/// The default model's context window (`models.providers.*.models[].contextWindow`), else 200,000.
fn context_window(settings: &Settings) -> u64 {
    let primary = settings.agents.defaults.model.primary();
    primary
        .split_once('/')
        .and_then(|(p, m)| {
            settings
                .models
                .providers
                .get(p)?
                .models
                .iter()
                .find(|e| e.id == m)?
                .context_window
        })
        .unwrap_or(200_000)
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
pub fn queue_settings(messages: &serde_json::Value) -> Result<QueueSettings, String> {
    let Some(q) = messages.get("queue").filter(|q| !q.is_null()) else {
        return Ok(QueueSettings::default());
    };
    let mut args = Vec::new();
    if let Some(m) = q.get("mode").and_then(serde_json::Value::as_str) {
        args.push(m.to_string());
    }
    if let Some(ms) = q.get("debounceMs").and_then(serde_json::Value::as_u64) {
        args.push(format!("debounce:{ms}ms"));
    }
    if let Some(c) = q.get("cap").and_then(serde_json::Value::as_u64) {
        args.push(format!("cap:{c}"));
    }
    if let Some(d) = q.get("drop").and_then(serde_json::Value::as_str) {
        args.push(format!("drop:{d}"));
    }
    crate::queue::parse_queue_directive(&args.join(" "), QueueSettings::default())
        .map_err(|e| format!("messages.queue: {e}"))
}

/// The health summary (OpenClaw's HealthSummary field names).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HealthSummary {
    pub ok: bool,
    pub ts: u64,
    pub duration_ms: u64,
    pub channels: serde_json::Map<String, serde_json::Value>,
    pub channel_order: Vec<String>,
    pub channel_labels: serde_json::Map<String, serde_json::Value>,
    pub heartbeat_seconds: u64,
    pub default_agent_id: String,
    pub agents: Vec<AgentHealth>,
    pub sessions: SessionsHealth,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentHealth {
    pub agent_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub is_default: bool,
    pub heartbeat: serde_json::Value,
    pub sessions: SessionsHealth,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionsHealth {
    pub path: String,
    pub count: u64,
    pub recent: Vec<serde_json::Value>,
}

/// The cached health summary, serialised once.
#[derive(Debug, Clone)]
pub struct HealthSnapshot {
    pub summary: Arc<RawValue>,
}

/// Current health (recomputed only when stale).
#[derive(Debug, Message)]
#[rtype(result = "HealthSnapshot")]
pub struct GetHealth;

/// Marks health stale and broadcasts a fresh summary soon (after connects).
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct HealthChanged;

/// New settings after a config change (hot apply).
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct SettingsChanged {
    pub settings: Arc<Settings>,
}

/// Sends `shutdown` to every client, closes them 1012, then stops the tree.
/// Reply: how many clients were told.
#[derive(Debug, Message)]
#[rtype(result = "usize")]
pub struct Shutdown {
    pub reason: String,
}

pub struct GatewayActor {
    hub: Addr<ProviderHub>,
    /// Provider keys from the environment (handed in by the edge).
    env: EnvReader,
    settings: Arc<Settings>,
    store: Store,
    bus: Addr<EventBus>,
    versions: Arc<StateVersions>,
    metrics: Arc<Metrics>,
    health: Option<HealthSnapshot>,
    health_dirty: bool,
    /// A coalesced `health` broadcast is pending (at most one per 250 ms,
    /// however many clients connect meanwhile).
    broadcast_scheduled: bool,
    trim: crate::heap::TrimPolicy,
}

/// How often the gateway looks whether sessions stopped (to trim the heap).
const TRIM_CHECK: Duration = Duration::from_secs(5);

impl GatewayActor {
    fn compute_health(&self) -> HealthSummary {
        let started = Instant::now();
        let sessions_path = self.store.dir().join("store").display().to_string();
        let sessions = SessionsHealth {
            path: sessions_path,
            count: 0,
            recent: Vec::new(),
        };
        let default_id = self.settings.default_agent_id().to_string();
        let heartbeat =
            serde_json::json!({ "enabled": false, "every": "disabled", "everyMs": null });
        let mut agents: Vec<AgentHealth> = self
            .settings
            .agents
            .list
            .iter()
            .map(|a| AgentHealth {
                agent_id: a.id.clone(),
                name: a.name.clone(),
                is_default: a.id == default_id,
                heartbeat: heartbeat.clone(),
                sessions: sessions.clone(),
            })
            .collect();
        if agents.is_empty() {
            agents.push(AgentHealth {
                agent_id: default_id.clone(),
                name: None,
                is_default: true,
                heartbeat,
                sessions: sessions.clone(),
            });
        }
        HealthSummary {
            ok: true,
            ts: crate::now_ms(),
            duration_ms: started.elapsed().as_millis() as u64,
            channels: serde_json::Map::new(),
            channel_order: Vec::new(),
            channel_labels: serde_json::Map::new(),
            heartbeat_seconds: 0,
            default_agent_id: default_id,
            agents,
            sessions,
        }
    }

    fn snapshot(&mut self) -> HealthSnapshot {
        match &self.health {
            Some(h) if !self.health_dirty => h.clone(),
            _ => self.refresh(),
        }
    }

    fn refresh(&mut self) -> HealthSnapshot {
        let summary = self.compute_health();
        let raw = serde_json::value::to_raw_value(&summary)
            .unwrap_or_else(|_| Box::<RawValue>::default());
        let snap = HealthSnapshot {
            summary: Arc::from(raw),
        };
        self.health = Some(snap.clone());
        self.health_dirty = false;
        self.versions.health.fetch_add(1, Ordering::Relaxed);
        snap
    }

    fn broadcast_health(&mut self) {
        let snap = self.refresh();
        let event = BusEvent {
            event: "health".to_string(),
            payload: snap.summary,
            drop_if_slow: false,
            state_version: Some(self.versions.current()),
        };
        send_to_bus(&self.bus, &self.metrics, Publish { event });
    }
}

impl Actor for GatewayActor {
    type Context = Context<Self>;
    fn started(&mut self, ctx: &mut Context<Self>) {
        let every =
            Duration::from_millis(self.settings.gateway.health_refresh_interval_ms.max(1000));
        ctx.run_interval(every, |this, _| this.broadcast_health());
        // Idle sessions stop, bursts end; their freed memory goes back to the OS.
        ctx.run_interval(TRIM_CHECK, |this, _| {
            let live = this.metrics.sessions_live.load(Ordering::Relaxed);
            let free = || crate::heap::stats().map(|s| s.free).unwrap_or(0);
            if this.trim.should_trim(live, free()) {
                crate::heap::release_free_memory();
                this.trim.trimmed(free());
            }
        });
    }
}

impl Handler<GetHealth> for GatewayActor {
    type Result = MessageResult<GetHealth>;
    fn handle(&mut self, _: GetHealth, _: &mut Context<Self>) -> Self::Result {
        MessageResult(self.snapshot())
    }
}

impl Handler<HealthChanged> for GatewayActor {
    type Result = ();
    fn handle(&mut self, _: HealthChanged, ctx: &mut Context<Self>) {
        // Coalesce bursts of connects into one broadcast per 250 ms.
        self.health_dirty = true;
        if !self.broadcast_scheduled {
            self.broadcast_scheduled = true;
            ctx.run_later(Duration::from_millis(250), |this, _| {
                this.broadcast_scheduled = false;
                this.broadcast_health();
            });
        }
    }
}

impl Handler<SettingsChanged> for GatewayActor {
    type Result = ();
    fn handle(&mut self, msg: SettingsChanged, ctx: &mut Context<Self>) {
        self.settings = msg.settings;
        // Providers and auth profiles apply live (cooldowns start afresh).
        self.hub.do_send(Reconfigure(HubConfig::from_settings(
            &self.settings,
            self.store.dir(),
            self.settings.default_agent_id(),
            self.env.clone(),
        )));
        self.handle(HealthChanged, ctx);
    }
}

impl Handler<Shutdown> for GatewayActor {
    type Result = ResponseFuture<usize>;
    fn handle(&mut self, msg: Shutdown, _: &mut Context<Self>) -> Self::Result {
        let bus = self.bus.clone();
        let store = self.store.clone();
        self.metrics.bus_mailbox.fetch_add(1, Ordering::Relaxed);
        Box::pin(async move {
            let told = bus
                .send(BroadcastShutdown {
                    reason: msg.reason,
                    restart_expected_ms: None,
                })
                .await
                .unwrap_or(0);
            if let Err(error) = store.flush().await {
                tracing::error!(%error, "final store flush failed");
            }
            told
        })
    }
}
