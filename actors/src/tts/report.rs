//! What the `Speaker` reports: its catalog of providers and personas,
//! `tts.status` and the last synthesis's attempts (OpenClaw's shapes).

use serde_json::{json, Value};

use super::actor::Speaker;
use super::messages::*;
use super::resolve::PROVIDERS;
use super::{providers, resolve};
use crate::settings::TtsAuto;

impl Speaker {
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
