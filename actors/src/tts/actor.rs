//! `Speaker`: the speech side of the gateway (see `mod.rs`). Syntheses
//! run concurrently (each request's future is its own; the actor only
//! hands out a snapshot of the settings and records the last attempt).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use actix::prelude::*;

use super::messages::*;
use super::prefs::{self, TtsPrefs};
use super::resolve::{self, PROVIDERS};
use super::{synth, ProviderError, TtsError};
use crate::media::MediaStore;
use crate::provider::hub::{EnvReader, ProviderHub};
use crate::settings::{AgentTtsLayer, TtsSettings};
use crate::store::Store;

/// One provider's try, for `/tts status`.
#[derive(Debug, Clone)]
pub(super) struct Tried {
    pub(super) provider: String,
    pub(super) outcome: Result<(), ProviderError>,
    pub(super) ms: u64,
}

pub struct Speaker {
    pub(super) cfg: Arc<Snapshot>,
    pub(super) prefs: TtsPrefs,
    pub(super) prefs_path: PathBuf,
    pub(super) last: Vec<Tried>,
    span: tracing::Span,
}

/// What a synthesis works with (shared by the futures in flight).
pub(super) struct Snapshot {
    pub(super) tts: TtsSettings,
    pub(super) agents: BTreeMap<String, AgentTtsLayer>,
    pub(super) models: SpeechModels,
    pub(super) store: Store,
    pub(super) media: Option<Addr<MediaStore>>,
    pub(super) hub: Option<Addr<ProviderHub>>,
    pub(super) http: reqwest::Client,
    pub(super) env: EnvReader,
    pub(super) scratch: PathBuf,
}

impl Speaker {
    pub fn new(
        state_dir: &std::path::Path,
        store: Store,
        media: Option<Addr<MediaStore>>,
        hub: Option<Addr<ProviderHub>>,
        env: EnvReader,
        settings: ConfigureSpeech,
    ) -> Speaker {
        let prefs_path = prefs::path(state_dir, settings.tts.prefs_path.as_deref());
        Speaker {
            cfg: Arc::new(Snapshot {
                tts: settings.tts,
                agents: settings.agents,
                models: settings.models,
                store,
                media,
                hub,
                http: reqwest::Client::new(),
                env,
                scratch: state_dir.join("tmp").join("tts"),
            }),
            prefs: prefs::load(&prefs_path),
            prefs_path,
            last: Vec::new(),
            span: tracing::info_span!("speaker"),
        }
    }

    pub(super) fn agent(&self, id: Option<&str>) -> Option<&AgentTtsLayer> {
        id.and_then(|a| self.cfg.agents.get(a))
    }

    pub(super) fn save(&self) -> Result<(), TtsError> {
        prefs::save(&self.prefs_path, &self.prefs).map_err(|e| TtsError::Prefs(e.to_string()))
    }

    /// A provider id named by a user, checked.
    pub(super) fn known(&self, id: &str) -> Result<String, TtsError> {
        let id = resolve::canonical(id);
        match PROVIDERS.iter().any(|(p, _)| *p == id) {
            true => Ok(id),
            false => Err(TtsError::UnknownProvider(id)),
        }
    }
}

impl Actor for Speaker {
    type Context = Context<Self>;
}

impl Handler<ConfigureSpeech> for Speaker {
    type Result = ();
    fn handle(&mut self, msg: ConfigureSpeech, _: &mut Context<Self>) {
        let c = &self.cfg;
        self.cfg = Arc::new(Snapshot {
            tts: msg.tts,
            agents: msg.agents,
            models: msg.models,
            store: c.store.clone(),
            media: c.media.clone(),
            hub: c.hub.clone(),
            http: c.http.clone(),
            env: c.env.clone(),
            scratch: c.scratch.clone(),
        });
    }
}

impl Handler<Synthesize> for Speaker {
    type Result = ResponseActFuture<Self, Result<Spoken, TtsError>>;
    fn handle(&mut self, msg: Synthesize, _: &mut Context<Self>) -> Self::Result {
        let cfg = self.cfg.clone();
        let eff = resolve::effective(
            &cfg.tts,
            self.agent(msg.agent.as_deref()),
            &self.prefs,
            &msg.overrides,
            &cfg.env,
            msg.fallback,
        );
        let span = self.span.clone();
        Box::pin(
            async move { synth::synthesize(&cfg, eff, msg).await }
                .into_actor(self)
                .map(move |(result, tried), act, _| {
                    if !tried.is_empty() {
                        act.last = tried;
                    }
                    if let Err(e) = &result {
                        tracing::warn!(parent: &span, error = %e, "no speech");
                    }
                    result
                }),
        )
    }
}
