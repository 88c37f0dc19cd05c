//! `Speaker`: the speech side of the gateway (see `mod.rs`). Syntheses
//! run concurrently (each request's future is its own; the actor only
//! hands out a snapshot of the settings and records the last attempt).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::prelude::*;
use bytes::Bytes;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::messages::*;
use super::prefs::{self, TtsPrefs};
use super::resolve::{self, Attempt, PROVIDERS};
use super::{plan, providers, transcode, AudioFormat, ProviderError, SpeechTarget, TtsError};
use crate::media::{GetMedia, MediaRef, MediaStore, PutMedia};
use crate::provider::hub::{EnvReader, ProviderHub};
use crate::settings::{AgentTtsLayer, TtsAuto, TtsSettings};
use crate::store::{Store, Tree};

/// One provider's try, for `/tts status`.
#[derive(Debug, Clone)]
struct Tried {
    provider: String,
    outcome: Result<(), ProviderError>,
    ms: u64,
}

pub struct Speaker {
    pub(super) cfg: Arc<Snapshot>,
    pub(super) prefs: TtsPrefs,
    pub(super) prefs_path: PathBuf,
    last: Vec<Tried>,
    span: tracing::Span,
}

/// What a synthesis works with (shared by the futures in flight).
pub(super) struct Snapshot {
    pub(super) tts: TtsSettings,
    agents: BTreeMap<String, AgentTtsLayer>,
    models: SpeechModels,
    pub(super) store: Store,
    media: Option<Addr<MediaStore>>,
    hub: Option<Addr<ProviderHub>>,
    http: reqwest::Client,
    pub(super) env: EnvReader,
    scratch: PathBuf,
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
        let prefs_path = prefs::path(state_dir);
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

    /// The catalog of providers and personas.
    pub(super) fn catalog(&self) -> SpeechCatalog {
        let c = &self.cfg;
        let eff = resolve::effective(&c.tts, None, &self.prefs, &Default::default(), &c.env, true);
        let providers = PROVIDERS
            .iter()
            .filter_map(|(id, label)| {
                let (voice, model) = providers::defaults(resolve::ProviderKind::of(id)?);
                let conf = c.tts.providers.get(*id);
                let pick = |set: Option<&str>, d: &str| -> Vec<String> {
                    set.or((!d.is_empty()).then_some(d))
                        .map(str::to_string)
                        .into_iter()
                        .collect()
                };
                Some(ProviderEntry {
                    id: id.to_string(),
                    label: label.to_string(),
                    configured: resolve::configured(&c.tts, id, &c.env),
                    models: pick(conf.and_then(|p| p.voice.model_name()), model),
                    voices: pick(conf.and_then(|p| p.voice.voice_name()), voice),
                })
            })
            .collect();
        let personas = c
            .tts
            .personas
            .iter()
            .map(|(id, p)| {
                json!({
                    "id": id, "label": p.label.clone().unwrap_or_else(|| id.clone()),
                    "description": p.description, "provider": p.provider,
                    "fallbackPolicy": p.fallback_policy.clone().unwrap_or_else(|| "preserve-persona".into()),
                    "providers": p.providers.keys().collect::<Vec<_>>(),
                })
            })
            .collect();
        SpeechCatalog {
            providers,
            active: eff.attempts.first().map(|a| a.id.clone()),
            personas,
            persona: eff.persona,
        }
    }

    /// `tts.status`.
    pub(super) fn status(&self) -> Value {
        let cat = self.catalog();
        let auto = resolve::auto(&self.cfg.tts, None, &self.prefs, None);
        let fallbacks: Vec<&str> = cat
            .providers
            .iter()
            .filter(|p| p.configured && Some(&p.id) != cat.active.as_ref())
            .map(|p| p.id.as_str())
            .collect();
        let states: Vec<Value> = cat
            .providers
            .iter()
            .map(|p| json!({ "id": p.id, "label": p.label, "configured": p.configured }))
            .collect();
        json!({
            "enabled": auto != TtsAuto::Off,
            "auto": auto.as_str(),
            "provider": cat.active,
            "persona": cat.persona,
            "personas": cat.personas,
            "fallbackProvider": fallbacks.first(),
            "fallbackProviders": fallbacks,
            "prefsPath": self.prefs_path.display().to_string(),
            "providerStates": states,
            "lastAttempt": self.last_attempt(),
        })
    }

    fn last_attempt(&self) -> Value {
        if self.last.is_empty() {
            return Value::Null;
        }
        let used = self
            .last
            .iter()
            .find(|t| t.outcome.is_ok())
            .map(|t| &t.provider);
        let attempts: Vec<Value> = self
            .last
            .iter()
            .map(|t| {
                json!({
                    "provider": t.provider,
                    "outcome": if t.outcome.is_ok() { "ok" } else { "failed" },
                    "reasonCode": t.outcome.as_ref().err().map(|e| e.reason()),
                    "error": t.outcome.as_ref().err().map(|e| e.to_string()),
                    "latencyMs": t.ms,
                })
            })
            .collect();
        json!({ "primary": self.last[0].provider, "used": used, "attempts": attempts })
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
            async move { synthesize(&cfg, eff, msg).await }
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

/// The cache key of a request to one provider.
fn cache_key(a: &Attempt, text: &str, target: SpeechTarget, fit: Fit, max: usize) -> String {
    let v = &a.config.voice;
    let id = json!([
        a.id,
        text,
        target,
        fit,
        max,
        v.voice_name(),
        v.model_name(),
        v.speed,
        v.seed,
        v.voice_settings,
        v.instructions,
        a.config.response_format,
        a.config.output_format,
        a.config.command,
        a.config.args,
        a.config.base_url
    ]);
    format!("cache/{:x}", Sha256::digest(id.to_string().as_bytes()))
}

/// A request's audio: cached (any provider it may use), else made by the
/// first provider that succeeds, converted for the target, stored.
async fn synthesize(
    cfg: &Snapshot,
    eff: resolve::Effective,
    msg: Synthesize,
) -> (Result<Spoken, TtsError>, Vec<Tried>) {
    let text = msg.text.trim();
    if text.is_empty() {
        return (Err(TtsError::Empty), Vec::new());
    }
    let len = text.chars().count();
    if msg.fit == Fit::Strict && len > cfg.tts.max_text_length {
        let max = cfg.tts.max_text_length;
        return (Err(TtsError::TooLong { len, max }), Vec::new());
    }
    if eff.attempts.is_empty() {
        return (Err(TtsError::NoProvider), Vec::new());
    }
    let keys: Vec<String> = eff
        .attempts
        .iter()
        .map(|a| cache_key(a, text, msg.target, msg.fit, eff.max_length))
        .collect();
    for (a, key) in eff.attempts.iter().zip(&keys) {
        if let Some(media) = cached(cfg, key).await {
            let spoken = spoken(media, &a.id, true);
            return (Ok(spoken), Vec::new());
        }
    }
    let said = fitted(cfg, &eff, msg.agent.as_deref(), text, msg.fit).await;
    let timeout = Duration::from_millis(msg.timeout_ms.unwrap_or(cfg.tts.timeout_ms).max(1));
    let mut tried = Vec::new();
    for (a, key) in eff.attempts.iter().zip(&keys) {
        let started = Instant::now();
        let made = match &a.skip {
            Some(why) => Err(ProviderError::NotConfigured(why.clone())),
            None => make(cfg, a, &said, msg.target, timeout).await,
        };
        let ms = started.elapsed().as_millis() as u64;
        match made {
            Ok(media) => {
                tried.push(Tried {
                    provider: a.id.clone(),
                    outcome: Ok(()),
                    ms,
                });
                if let Err(e) = cfg.store.put(Tree::Speech, key, &media.id) {
                    tracing::warn!(error = %e, "speech cache not recorded");
                }
                return (Ok(spoken(media, &a.id, false)), tried);
            }
            Err(e) => {
                tracing::warn!(provider = %a.id, reason = e.reason(), error = %e, "speech provider failed");
                tried.push(Tried {
                    provider: a.id.clone(),
                    outcome: Err(e),
                    ms,
                });
            }
        }
    }
    let why: Vec<String> = tried
        .iter()
        .filter_map(|t| {
            t.outcome
                .as_ref()
                .err()
                .map(|e| format!("{}: {e}", t.provider))
        })
        .collect();
    (Err(TtsError::AllFailed(why.join("; "))), tried)
}

fn spoken(media: MediaRef, provider: &str, cached: bool) -> Spoken {
    let ogg = media.content_type == "audio/ogg";
    Spoken {
        format: match media.content_type.as_str() {
            "audio/ogg" => "opus",
            "audio/wav" | "audio/x-wav" => "wav",
            "audio/mpeg" => "mp3",
            _ => "bin",
        }
        .to_string(),
        media,
        provider: provider.to_string(),
        voice_compatible: ogg,
        cached,
    }
}

/// The stored audio a cache key names, if it is still in the media store.
async fn cached(cfg: &Snapshot, key: &str) -> Option<MediaRef> {
    let id: String = cfg.store.get(Tree::Speech, key).ok().flatten()?;
    let media = cfg.media.as_ref()?;
    media.send(GetMedia { id }).await.ok()?.ok()
}

/// One provider's audio, converted for the target and stored.
async fn make(
    cfg: &Snapshot,
    a: &Attempt,
    text: &str,
    target: SpeechTarget,
    timeout: Duration,
) -> Result<MediaRef, ProviderError> {
    let scratch = cfg.scratch.join(crate::store::time_ordered_id());
    std::fs::create_dir_all(&scratch).map_err(|e| ProviderError::Command(e.to_string()))?;
    let made = async {
        let audio = providers::synthesize(&cfg.http, a, text, target, timeout, &scratch).await?;
        match target {
            SpeechTarget::VoiceNote => transcode::to_ogg_opus(audio, &scratch, timeout).await,
            SpeechTarget::AudioFile => Ok(audio),
        }
    }
    .await;
    let _ = std::fs::remove_dir_all(&scratch);
    let audio = made?;
    let format = AudioFormat::of(&audio);
    let media = cfg
        .media
        .as_ref()
        .ok_or_else(|| ProviderError::Command("no media store".into()))?;
    let put = PutMedia {
        bytes: Bytes::from(audio),
        content_type: Some(format.content_type().to_string()),
        file_name: Some(format!("voice.{}", format.extension())),
    };
    match media.send(put).await {
        Ok(Ok(m)) => Ok(m),
        Ok(Err(e)) => Err(ProviderError::Command(format!("storing the audio: {e}"))),
        Err(_) => Err(ProviderError::Command("the media store stopped".into())),
    }
}

/// A reply over the host's `maxLength`: the model's spoken summary when
/// summaries are on and a model answers, else the reply cut.
async fn fitted(
    cfg: &Snapshot,
    eff: &resolve::Effective,
    agent: Option<&str>,
    text: &str,
    fit: Fit,
) -> String {
    let max = eff.max_length;
    if fit == Fit::Strict || text.chars().count() <= max {
        return text.to_string();
    }
    if eff.summarize {
        if let Some(hub) = cfg.hub.clone() {
            let model = cfg
                .tts
                .summary_model
                .clone()
                .or_else(|| agent.and_then(|a| cfg.models.agents.get(a).cloned()))
                .unwrap_or_else(|| cfg.models.default.clone());
            match summary(hub, &model, text, max).await {
                Ok(s) if !s.trim().is_empty() => return plan::cut(&plan::speakable(&s), max),
                Ok(_) => tracing::warn!("the spoken summary was empty: the reply is cut"),
                Err(e) => tracing::warn!(error = %e, "no spoken summary: the reply is cut"),
            }
        }
    }
    plan::cut(text, max)
}

const SUMMARY_SYSTEM: &str = "You turn a written reply into a short text read aloud to the user. Plain sentences only: no markdown, lists, code or links. Keep the answer's substance.";

/// The context a summary request is checked against (its input is one
/// reply; every model ferroclaw's users run takes this much).
const SUMMARY_WINDOW: u64 = 32_000;

async fn summary(
    hub: Addr<ProviderHub>,
    model: &str,
    text: &str,
    max: usize,
) -> Result<String, String> {
    let model = crate::provider::selection::ModelRef::parse(model).map_err(|e| e.to_string())?;
    let ask = format!("Rewrite this reply to be read aloud in at most {max} characters:\n\n{text}");
    let messages: crate::provider::Messages =
        vec![Arc::new(crate::provider::ChatMessage::user(&ask))];
    crate::compaction::summary::ask(
        hub,
        vec![model],
        None,
        SUMMARY_SYSTEM,
        messages,
        SUMMARY_WINDOW,
        Duration::from_secs(60),
    )
    .await
    .map_err(|e| e.to_string())
}
