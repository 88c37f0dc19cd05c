//! `GatewayActor`: the health cache, settings snapshot, shutdown, heap trim.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::prelude::*;
use serde_json::value::RawValue;

use super::messages::*;
use super::{AgentHealth, HealthSnapshot, HealthSummary, SessionsHealth};
use crate::ids::key::agent as agent_of;
use crate::metrics::Metrics;
use crate::presence::StateVersions;
use crate::provider::hub::{EnvReader, HubConfig, ProviderHub, Reconfigure};
use crate::settings::Settings;
use crate::store::Store;

pub struct GatewayActor {
    /// The actor's span, entered by its handlers.
    span: tracing::Span,
    hub: Addr<ProviderHub>,
    channels: Addr<crate::channels::ChannelSupervisor>,
    /// Told of every config change: it applies `mcp`, `hooks`, `plugins`
    /// and `tools.lsp` (enabled bundles merged in).
    plugins: Addr<crate::plugins::PluginHost>,
    /// `gateway_start` and `gateway_stop` hooks.
    hooks: crate::hooks::HookClient,
    /// Told of `browser` changes (None: the browser was not started).
    browser: Option<Addr<crate::browser::BrowserTools>>,
    nodes: Addr<crate::nodes::NodeRegistry>,
    speech: Addr<crate::tts::Speaker>,
    channel_health: Arc<crate::channels::health::HealthBoard>,
    heartbeat: Addr<crate::cron::beat::HeartbeatActor>,
    /// Asked for the stored sessions (health counts and recent rows).
    router: Addr<crate::router::RouterActor>,
    /// What the actors said at the last gathering (sessions, heartbeat).
    facts: Facts,
    /// Provider keys from the environment (handed in by the edge).
    env: EnvReader,
    settings: Arc<Settings>,
    store: Store,
    /// The edge, which sends each refresh as the `health` event.
    edge: Recipient<HealthUpdated>,
    versions: Arc<StateVersions>,
    metrics: Arc<Metrics>,
    audit: Option<Addr<crate::audit::AuditLedger>>,
    health: Option<HealthSnapshot>,
    health_dirty: bool,
    /// A coalesced `health` broadcast is pending (at most one per 250 ms,
    /// however many clients connect meanwhile).
    broadcast_scheduled: bool,
    trim: crate::gateway::heap::TrimPolicy,
}

/// Sessions listed as `recent` in the health summary (per agent and in all).
const RECENT: usize = 5;

/// What the health summary reports from other actors, as last gathered.
#[derive(Debug, Default)]
struct Facts {
    /// (session key, updated at), most recently updated first.
    sessions: Vec<(String, u64)>,
    /// The heartbeat's schedule, once asked.
    heartbeat: Option<crate::cron::beat::HeartbeatView>,
}

/// `{path, count, recent}` of the sessions `keep` picks.
fn sessions_health(
    path: &str,
    all: &[(String, u64)],
    keep: impl Fn(&str) -> bool,
) -> SessionsHealth {
    let now = crate::now_ms();
    let picked: Vec<&(String, u64)> = all.iter().filter(|(k, _)| keep(k)).collect();
    let recent = picked
        .iter()
        .take(RECENT)
        .map(|(key, at)| {
            let at = (*at > 0).then_some(*at);
            super::RecentSession {
                key: key.clone(),
                updated_at: at,
                age: at.map(|a| now.saturating_sub(a)),
            }
        })
        .collect();
    SessionsHealth {
        path: path.to_string(),
        count: picked.len() as u64,
        recent,
    }
}

/// How often the gateway looks whether sessions stopped (to trim the heap).
const TRIM_CHECK: Duration = Duration::from_secs(5);

/// What the root is started with (the rest of its state starts empty).
pub struct GatewayParts {
    pub hub: Addr<ProviderHub>,
    /// Told of config changes.
    pub channels: Addr<crate::channels::ChannelSupervisor>,
    /// Told of `mcp`, `hooks`, `plugins` and `tools.lsp` changes.
    pub plugins: Addr<crate::plugins::PluginHost>,
    pub hooks: crate::hooks::HookClient,
    /// Told of `browser` changes.
    pub browser: Option<Addr<crate::browser::BrowserTools>>,
    /// Told of `gateway.nodes` changes.
    pub nodes: Addr<crate::nodes::NodeRegistry>,
    /// Told of `tts` changes.
    pub speech: Addr<crate::tts::Speaker>,
    /// Read for the health summary's `channels`.
    pub channel_health: Arc<crate::channels::health::HealthBoard>,
    /// Told of heartbeat settings changes; asked for its schedule.
    pub heartbeat: Addr<crate::cron::beat::HeartbeatActor>,
    /// Asked for the stored sessions.
    pub router: Addr<crate::router::RouterActor>,
    pub env: EnvReader,
    pub settings: Arc<Settings>,
    pub store: Store,
    pub edge: Recipient<HealthUpdated>,
    pub versions: Arc<StateVersions>,
    pub metrics: Arc<Metrics>,
    /// Told of `logging.audit` changes.
    pub audit: Option<Addr<crate::audit::AuditLedger>>,
}

impl GatewayActor {
    pub fn new(p: GatewayParts) -> GatewayActor {
        GatewayActor {
            span: tracing::info_span!("gateway"),
            hub: p.hub,
            channels: p.channels,
            plugins: p.plugins,
            hooks: p.hooks,
            browser: p.browser,
            nodes: p.nodes,
            speech: p.speech,
            channel_health: p.channel_health,
            heartbeat: p.heartbeat,
            audit: p.audit,
            router: p.router,
            facts: Facts::default(),
            env: p.env,
            settings: p.settings,
            store: p.store,
            edge: p.edge,
            versions: p.versions,
            metrics: p.metrics,
            health: None,
            health_dirty: true,
            broadcast_scheduled: false,
            trim: Default::default(),
        }
    }

    fn compute_health(&self) -> HealthSummary {
        let started = Instant::now();
        let path = self.store.dir().join("store").display().to_string();
        let all = &self.facts.sessions;
        let default_id = self.settings.default_agent_id().to_string();
        // The heartbeat beats for the default agent only.
        let beat = self.facts.heartbeat.as_ref();
        let off = beat.map(|b| {
            let none = crate::cron::beat::HeartbeatView {
                every: None,
                ..b.clone()
            };
            none.health_row()
        });
        let beat_row = beat.map(|b| b.health_row());
        let every_ms = beat
            .and_then(|b| b.every)
            .map_or(0, |d| d.as_millis() as u64);
        let agent = |id: &str, name: Option<String>| AgentHealth {
            agent_id: id.to_string(),
            name,
            is_default: id == default_id,
            heartbeat: match id == default_id {
                true => beat_row.clone(),
                false => off.clone(),
            },
            sessions: sessions_health(&path, all, |k| agent_of(k) == id),
        };
        let mut agents: Vec<AgentHealth> = (self.settings.agents.list.iter())
            .map(|a| agent(&a.id, a.name.clone()))
            .collect();
        if agents.is_empty() {
            agents.push(agent(&default_id, None));
        }
        let (channels, channel_order, channel_labels) =
            crate::channels::health::summary(&self.channel_health.snapshot(crate::now_ms()));
        HealthSummary {
            ok: true,
            ts: crate::now_ms(),
            duration_ms: started.elapsed().as_millis() as u64,
            channels,
            channel_order,
            channel_labels,
            heartbeat_seconds: every_ms / 1000,
            default_agent_id: default_id,
            agents,
            sessions: sessions_health(&path, all, |_| true),
        }
    }

    /// Asks the router and the heartbeat for what the summary reports;
    /// then `then` (a refresh, a broadcast) runs with them in place.
    fn gather<R: 'static>(
        &mut self,
        then: impl FnOnce(&mut Self) -> R + 'static,
    ) -> impl ActorFuture<Self, Output = R> {
        let (router, heartbeat) = (self.router.clone(), self.heartbeat.clone());
        let asked = async move {
            let rows = router.send(crate::router::ListSessions).await;
            let beat = heartbeat.send(crate::cron::beat::HeartbeatStatus).await;
            (rows, beat)
        };
        asked.into_actor(self).map(move |(rows, beat), act, _| {
            match rows {
                Ok(Ok(rows)) => {
                    act.facts.sessions = (rows.into_iter())
                        .map(|r| (r.key, r.entry.updated_at))
                        .collect()
                }
                Ok(Err(e)) => tracing::warn!(error = %e, "health: cannot list the sessions"),
                Err(_) => {}
            }
            if let Ok(b) = beat {
                act.facts.heartbeat = Some(b);
            }
            then(act)
        })
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
        self.edge.do_send(HealthUpdated {
            snapshot: snap,
            version: self.versions.current(),
        });
    }
}

/// How often the stability record samples memory.
const MEMORY_SAMPLE: Duration = Duration::from_secs(60);

/// A `diagnostic.memory.sample`: memory, and the deepest singleton mailbox.
fn this_sample(act: &GatewayActor) {
    let m = &act.metrics;
    let depth = [
        &m.bus_mailbox,
        &m.presence_mailbox,
        &m.devices_mailbox,
        &m.idempotency_mailbox,
    ]
    .iter()
    .map(|g| g.load(Ordering::Relaxed).max(0))
    .max()
    .unwrap_or(0);
    let queued = m.sessions_live.load(Ordering::Relaxed).max(0);
    (m.stability).memory_sample(crate::gateway::heap::memory(), depth, queued);
}

impl Actor for GatewayActor {
    type Context = Context<Self>;
    fn started(&mut self, ctx: &mut Context<Self>) {
        let event = crate::hooks::HookEvent::Gateway {
            reason: "start".into(),
        };
        let hooks = &self.hooks;
        hooks.notify(
            crate::hooks::HookPoint::GatewayStart,
            event,
            Default::default(),
        );
        let every =
            Duration::from_millis(self.settings.gateway.health_refresh_interval_ms.max(1000));
        ctx.run_interval(every, |this, ctx| {
            ctx.spawn(this.gather(|act| act.broadcast_health()));
        });
        // The stability record's memory sample: at start, then each minute.
        this_sample(self);
        ctx.run_interval(MEMORY_SAMPLE, |this, _| this_sample(this));
        // Idle sessions stop, bursts end; their freed memory goes back to the OS.
        ctx.run_interval(TRIM_CHECK, |this, _| {
            let live = this.metrics.sessions_live.load(Ordering::Relaxed);
            let free = || crate::gateway::heap::stats().map(|s| s.free).unwrap_or(0);
            let rss = crate::gateway::heap::rss;
            if this.trim.should_trim(live, free(), rss()) {
                crate::gateway::heap::release_free_memory();
                this.trim.trimmed(free(), rss());
            }
        });
    }
}

impl Handler<GetHealth> for GatewayActor {
    type Result = ResponseActFuture<Self, HealthSnapshot>;
    fn handle(&mut self, _: GetHealth, _: &mut Context<Self>) -> Self::Result {
        let _span = self.span.clone().entered();
        match &self.health {
            Some(h) if !self.health_dirty => Box::pin(actix::fut::ready(h.clone())),
            _ => Box::pin(self.gather(|act| act.snapshot())),
        }
    }
}

impl Handler<HealthChanged> for GatewayActor {
    type Result = ();
    fn handle(&mut self, _: HealthChanged, ctx: &mut Context<Self>) {
        let _span = self.span.clone().entered();
        // Coalesce bursts of connects into one broadcast per 250 ms.
        self.health_dirty = true;
        if !self.broadcast_scheduled {
            self.broadcast_scheduled = true;
            ctx.run_later(Duration::from_millis(250), |this, ctx| {
                this.broadcast_scheduled = false;
                ctx.spawn(this.gather(|act| act.broadcast_health()));
            });
        }
    }
}

impl Handler<SettingsChanged> for GatewayActor {
    type Result = ();
    fn handle(&mut self, msg: SettingsChanged, ctx: &mut Context<Self>) {
        let _span = self.span.clone().entered();
        self.settings = msg.settings;
        self.channels.do_send(crate::channels::ChannelsReconfigure {
            settings: self.settings.clone(),
        });
        self.plugins.do_send(crate::plugins::ApplyPlugins {
            settings: self.settings.clone(),
        });
        if let Some(browser) = &self.browser {
            browser.do_send(crate::browser::BrowserReconfigure {
                settings: Arc::new(self.settings.browser.clone()),
            });
        }
        self.nodes
            .do_send(crate::nodes::NodePolicy::from_settings(&self.settings));
        self.speech
            .do_send(crate::tts::ConfigureSpeech::from_settings(&self.settings));
        if let Some(audit) = &self.audit {
            audit.do_send(crate::audit::SetAuditSettings {
                settings: crate::audit::AuditSettings::from_settings(&self.settings.logging.audit),
            });
        }
        match crate::cron::beat::HeartbeatConfig::from_settings(
            &self.settings.agents.defaults.heartbeat,
        ) {
            Ok(c) => self
                .heartbeat
                .do_send(crate::cron::beat::SetHeartbeatConfig { config: c }),
            Err(e) => tracing::error!(error = %e, "heartbeat settings refused; the old ones stay"),
        }
        // Providers and auth profiles apply live (cooldowns start afresh).
        // Their files are read on the blocking pool; the root takes no other
        // message meanwhile, so configs reach the hub in order.
        let (settings, dir, env) = (
            self.settings.clone(),
            self.store.dir().to_path_buf(),
            self.env.clone(),
        );
        let build = async move {
            tokio::task::spawn_blocking(move || {
                HubConfig::from_settings(&settings, &dir, settings.default_agent_id(), env)
            })
            .await
        };
        ctx.wait(build.into_actor(self).map(|config, act, _| match config {
            Ok(config) => act.hub.do_send(Reconfigure { config }),
            Err(e) => tracing::error!(error = %e, "cannot read the provider credentials"),
        }));
        self.handle(HealthChanged, ctx);
    }
}

impl Handler<ReloadSecrets> for GatewayActor {
    type Result = ResponseActFuture<Self, Result<Vec<String>, SecretsError>>;
    fn handle(&mut self, _: ReloadSecrets, _: &mut Context<Self>) -> Self::Result {
        let _span = self.span.clone().entered();
        let (settings, dir, env) = (
            self.settings.clone(),
            self.store.dir().to_path_buf(),
            self.env.clone(),
        );
        let build = tokio::task::spawn_blocking(move || {
            HubConfig::from_settings(&settings, &dir, settings.default_agent_id(), env)
        });
        Box::pin(build.into_actor(self).map(|config, act, _| {
            let config = config.map_err(|e| SecretsError::Read(e.to_string()))?;
            let warnings = config.warnings.clone();
            for w in &warnings {
                tracing::warn!(warning = %w, "secrets reload");
            }
            act.hub.do_send(Reconfigure { config });
            tracing::info!(warnings = warnings.len(), "secrets reloaded");
            Ok(warnings)
        }))
    }
}

impl Handler<UsageRows> for GatewayActor {
    type Result = ResponseFuture<Result<Vec<crate::usage::RunUsage>, crate::store::StoreError>>;
    fn handle(&mut self, msg: UsageRows, _: &mut Context<Self>) -> Self::Result {
        let _span = self.span.clone().entered();
        let store = self.store.clone();
        Box::pin(async move {
            let read = move || crate::usage::runs_between(&store, &msg.from, &msg.to);
            match tokio::task::spawn_blocking(read).await {
                Ok(rows) => rows,
                Err(_) => Ok(Vec::new()),
            }
        })
    }
}

impl Handler<SnapshotStore> for GatewayActor {
    type Result =
        ResponseFuture<Result<crate::store::snapshot::LogSummary, crate::store::StoreError>>;
    fn handle(&mut self, mut msg: SnapshotStore, _: &mut Context<Self>) -> Self::Result {
        let _span = self.span.clone().entered();
        let store = self.store.clone();
        Box::pin(async move {
            let copy = move || store.snapshot(&mut msg.out);
            tokio::task::spawn_blocking(copy).await.unwrap_or_else(|e| {
                Err(crate::store::StoreError::Io {
                    dir: Default::default(),
                    source: std::io::Error::other(e.to_string()),
                })
            })
        })
    }
}

impl Handler<Shutdown> for GatewayActor {
    type Result = ResponseFuture<()>;
    fn handle(&mut self, _: Shutdown, _: &mut Context<Self>) -> Self::Result {
        let _span = self.span.clone().entered();
        let store = self.store.clone();
        let hooks = self.hooks.clone();
        Box::pin(async move {
            // Waited for, each within its budget (5 s unless configured).
            let event = crate::hooks::HookEvent::Gateway {
                reason: "shutdown".into(),
            };
            let point = crate::hooks::HookPoint::GatewayStop;
            hooks.decide(point, event, Default::default()).await;
            if let Err(error) = store.flush().await {
                tracing::error!(%error, "final store flush failed");
            }
        })
    }
}
