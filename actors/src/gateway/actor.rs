//! `GatewayActor`: the health cache, settings snapshot, shutdown, heap trim.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::prelude::*;
use serde_json::value::RawValue;

use super::messages::*;
use super::{AgentHealth, HealthSnapshot, HealthSummary, SessionsHealth};
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
    channel_health: Arc<crate::channels::health::HealthBoard>,
    heartbeat: Recipient<crate::cron::beat::SetHeartbeatConfig>,
    /// Provider keys from the environment (handed in by the edge).
    env: EnvReader,
    settings: Arc<Settings>,
    store: Store,
    /// The edge, which sends each refresh as the `health` event.
    edge: Recipient<HealthUpdated>,
    versions: Arc<StateVersions>,
    metrics: Arc<Metrics>,
    health: Option<HealthSnapshot>,
    health_dirty: bool,
    /// A coalesced `health` broadcast is pending (at most one per 250 ms,
    /// however many clients connect meanwhile).
    broadcast_scheduled: bool,
    trim: crate::gateway::heap::TrimPolicy,
}

/// How often the gateway looks whether sessions stopped (to trim the heap).
const TRIM_CHECK: Duration = Duration::from_secs(5);

/// What the root is started with (the rest of its state starts empty).
pub struct GatewayParts {
    pub hub: Addr<ProviderHub>,
    /// Told of config changes.
    pub channels: Addr<crate::channels::ChannelSupervisor>,
    /// Read for the health summary's `channels`.
    pub channel_health: Arc<crate::channels::health::HealthBoard>,
    /// Told of heartbeat settings changes.
    pub heartbeat: Recipient<crate::cron::beat::SetHeartbeatConfig>,
    pub env: EnvReader,
    pub settings: Arc<Settings>,
    pub store: Store,
    pub edge: Recipient<HealthUpdated>,
    pub versions: Arc<StateVersions>,
    pub metrics: Arc<Metrics>,
}

impl GatewayActor {
    pub fn new(p: GatewayParts) -> GatewayActor {
        GatewayActor {
            span: tracing::info_span!("gateway"),
            hub: p.hub,
            channels: p.channels,
            channel_health: p.channel_health,
            heartbeat: p.heartbeat,
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
        let (channels, channel_order, channel_labels) =
            crate::channels::health::summary(&self.channel_health.snapshot(crate::now_ms()));
        HealthSummary {
            ok: true,
            ts: crate::now_ms(),
            duration_ms: started.elapsed().as_millis() as u64,
            channels,
            channel_order,
            channel_labels,
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
        self.edge.do_send(HealthUpdated {
            snapshot: snap,
            version: self.versions.current(),
        });
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
            let free = || crate::gateway::heap::stats().map(|s| s.free).unwrap_or(0);
            if this.trim.should_trim(live, free()) {
                crate::gateway::heap::release_free_memory();
                this.trim.trimmed(free());
            }
        });
    }
}

impl Handler<GetHealth> for GatewayActor {
    type Result = MessageResult<GetHealth>;
    fn handle(&mut self, _: GetHealth, _: &mut Context<Self>) -> Self::Result {
        let _span = self.span.clone().entered();
        MessageResult(self.snapshot())
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
        let _span = self.span.clone().entered();
        self.settings = msg.settings;
        self.channels
            .do_send(crate::channels::ChannelsReconfigure(self.settings.clone()));
        match crate::cron::beat::HeartbeatConfig::from_value(
            &self.settings.agents.defaults.heartbeat,
        ) {
            Ok(c) => self
                .heartbeat
                .do_send(crate::cron::beat::SetHeartbeatConfig(c)),
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
            Ok(config) => act.hub.do_send(Reconfigure(config)),
            Err(e) => tracing::error!(error = %e, "cannot read the provider credentials"),
        }));
        self.handle(HealthChanged, ctx);
    }
}

impl Handler<Shutdown> for GatewayActor {
    type Result = ResponseFuture<()>;
    fn handle(&mut self, _: Shutdown, _: &mut Context<Self>) -> Self::Result {
        let _span = self.span.clone().entered();
        let store = self.store.clone();
        Box::pin(async move {
            if let Err(error) = store.flush().await {
                tracing::error!(%error, "final store flush failed");
            }
        })
    }
}
