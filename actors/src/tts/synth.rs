//! One synthesis: the cache, the providers in order, the conversion for
//! the target and the media store (run off the actor, one future per
//! request).

use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::prelude::*;
use bytes::Bytes;
use serde_json::json;
use sha2::{Digest, Sha256};

use super::actor::{Snapshot, Tried};
use super::messages::*;
use super::resolve::{self, Attempt};
use super::{plan, providers, transcode, AudioFormat, ProviderError, SpeechTarget, TtsError};
use crate::media::{GetMedia, MediaRef, PutMedia};
use crate::provider::hub::ProviderHub;
use crate::store::Tree;

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
pub(super) async fn synthesize(
    cfg: &Snapshot,
    eff: resolve::Effective,
    msg: Synthesize,
) -> (Result<Spoken, TtsError>, Vec<Tried>) {
    let text = msg.text.trim();
    if let Err(e) = admit(cfg, &eff, text, msg.fit) {
        return (Err(e), Vec::new());
    }
    let keys: Vec<String> = eff
        .attempts
        .iter()
        .map(|a| cache_key(a, text, msg.target, msg.fit, eff.max_length))
        .collect();
    for (a, key) in eff.attempts.iter().zip(&keys) {
        if let Some(media) = cached(cfg, key).await {
            return (Ok(spoken(media, &a.id, true)), Vec::new());
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
        let provider = a.id.clone();
        match made {
            Ok(media) => {
                if let Err(e) = cfg.store.put(Tree::Speech, key, &media.id) {
                    tracing::warn!(error = %e, "speech cache not recorded");
                }
                let outcome = Ok(());
                tried.push(Tried {
                    provider,
                    outcome,
                    ms,
                });
                return (Ok(spoken(media, &a.id, false)), tried);
            }
            Err(e) => {
                tracing::warn!(provider = %a.id, reason = e.reason(), error = %e, "speech provider failed");
                let outcome = Err(e);
                tried.push(Tried {
                    provider,
                    outcome,
                    ms,
                });
            }
        }
    }
    (Err(all_failed(&tried)), tried)
}

/// A request the providers may be asked for: some text, within the
/// strict limit, with a provider to try.
fn admit(cfg: &Snapshot, eff: &resolve::Effective, text: &str, fit: Fit) -> Result<(), TtsError> {
    if text.is_empty() {
        return Err(TtsError::Empty);
    }
    let len = text.chars().count();
    let max = cfg.tts.max_text_length;
    if fit == Fit::Strict && len > max {
        return Err(TtsError::TooLong { len, max });
    }
    match eff.attempts.is_empty() {
        true => Err(TtsError::NoProvider),
        false => Ok(()),
    }
}

fn all_failed(tried: &[Tried]) -> TtsError {
    let why: Vec<String> = tried
        .iter()
        .filter_map(|t| {
            t.outcome
                .as_ref()
                .err()
                .map(|e| format!("{}: {e}", t.provider))
        })
        .collect();
    TtsError::AllFailed(why.join("; "))
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
    // Off the actor's thread: file work goes to the blocking pool.
    tokio::fs::create_dir_all(&scratch)
        .await
        .map_err(|e| ProviderError::Command(e.to_string()))?;
    let made = async {
        let audio = providers::synthesize(&cfg.http, a, text, target, timeout, &scratch).await?;
        match target {
            SpeechTarget::VoiceNote => transcode::to_ogg_opus(audio, &scratch, timeout).await,
            SpeechTarget::AudioFile => Ok(audio),
        }
    }
    .await;
    let _ = tokio::fs::remove_dir_all(&scratch).await;
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

/// Why a long reply got no spoken summary (it is cut instead).
#[derive(Debug, thiserror::Error)]
enum SummaryError {
    #[error("the summary model: {0}")]
    Model(#[from] crate::provider::selection::ModelRefError),
    #[error("{0}")]
    Ask(crate::compaction::summary::AskError),
}

async fn summary(
    hub: Addr<ProviderHub>,
    model: &str,
    text: &str,
    max: usize,
) -> Result<String, SummaryError> {
    let model = crate::provider::selection::ModelRef::parse(model)?;
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
    .map_err(SummaryError::Ask)
}
