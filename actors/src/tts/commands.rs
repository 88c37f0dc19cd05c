//! The `Speaker`'s answers besides synthesis: a reply's voice plan, the
//! `/tts` commands (OpenClaw's), the methods' reads and preference
//! changes.

use actix::prelude::*;
use serde::{Deserialize, Serialize};

use super::actor::Speaker;
use super::messages::*;
use super::{directives, plan, resolve, TtsError};
use crate::settings::TtsAuto;
use crate::store::Tree;

/// The voice a `/tts audio` or `/tts latest` run owes its chat.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Forced {
    job: SpeechJob,
}

fn run_key(run_id: &str) -> String {
    format!("run/{run_id}")
}

const HELP: &str = "Usage: /tts on | off | status | chat on|off|default | latest | provider <id> | persona <id>|off | limit <100-4096> | summary on|off | audio <text>";

impl Handler<PlanReply> for Speaker {
    type Result = MessageResult<PlanReply>;
    fn handle(&mut self, msg: PlanReply, _: &mut Context<Self>) -> Self::Result {
        let forced: Option<Forced> = self
            .cfg
            .store
            .get(Tree::Speech, &run_key(&msg.run_id))
            .ok()
            .flatten();
        if let Some(f) = forced {
            // `/tts audio`: the audio is the answer (the text was shown
            // to a client that asked over the socket).
            return MessageResult(ReplyPlan {
                visible: None,
                speech: Some(f.job),
            });
        }
        let Some(text) = msg.text else {
            return MessageResult(ReplyPlan::default());
        };
        let tts = &self.cfg.tts;
        let mut d = directives::parse(&text, &tts.model_overrides);
        if msg.untrusted {
            d = d.inert();
        }
        let agent = self.agent(msg.agent.as_deref());
        let auto = resolve::auto(tts, agent, &self.prefs, Some(&msg.session_key));
        let has_media = d
            .visible
            .lines()
            .any(|l| l.trim_start().starts_with("MEDIA:"));
        let speech = match plan::spoken(&d, auto, msg.voice_in, has_media) {
            Ok(text) => Some(SpeechJob {
                text,
                agent: msg.agent.clone(),
                overrides: d.overrides.clone(),
                fit: Fit::Reply,
            }),
            Err(why) => {
                tracing::debug!(run_id = %msg.run_id, ?why, "reply not spoken");
                None
            }
        };
        let visible = Some(d.visible).filter(|v| !v.trim().is_empty());
        MessageResult(ReplyPlan { visible, speech })
    }
}

impl Handler<ForgetRun> for Speaker {
    type Result = ();
    fn handle(&mut self, msg: ForgetRun, _: &mut Context<Self>) {
        let _ = self.cfg.store.remove(Tree::Speech, &run_key(&msg.run_id));
    }
}

impl Handler<TtsStatusQuery> for Speaker {
    type Result = MessageResult<TtsStatusQuery>;
    fn handle(&mut self, _: TtsStatusQuery, _: &mut Context<Self>) -> Self::Result {
        MessageResult(self.status())
    }
}

impl Handler<ListSpeech> for Speaker {
    type Result = MessageResult<ListSpeech>;
    fn handle(&mut self, _: ListSpeech, _: &mut Context<Self>) -> Self::Result {
        MessageResult(self.catalog())
    }
}

impl Handler<SetTtsPref> for Speaker {
    type Result = Result<PrefChange, TtsError>;
    fn handle(&mut self, msg: SetTtsPref, _: &mut Context<Self>) -> Self::Result {
        let applied = match msg.change {
            PrefChange::Auto(a) => {
                self.prefs.auto = Some(a);
                PrefChange::Auto(a)
            }
            PrefChange::Provider(p) => {
                let id = self.known(&p)?;
                self.prefs.provider = Some(id.clone());
                PrefChange::Provider(id)
            }
            PrefChange::Persona(None) => {
                self.prefs.persona = None;
                PrefChange::Persona(None)
            }
            PrefChange::Persona(Some(p)) => {
                let id = p.trim().to_ascii_lowercase();
                if !self.cfg.tts.personas.contains_key(&id) {
                    return Err(TtsError::UnknownPersona(id));
                }
                self.prefs.persona = Some(id.clone());
                PrefChange::Persona(Some(id))
            }
        };
        self.save()?;
        Ok(applied)
    }
}

impl Handler<TtsCommand> for Speaker {
    type Result = String;
    fn handle(&mut self, msg: TtsCommand, _: &mut Context<Self>) -> String {
        let args = msg.args.trim().to_string();
        let (verb, rest) = args.split_once(char::is_whitespace).unwrap_or((&args, ""));
        let rest = rest.trim();
        let said = match verb.to_ascii_lowercase().as_str() {
            "" | "status" => Ok(self.status_text(&msg.session_key)),
            "on" => self.set(
                |p| p.auto = Some(TtsAuto::Always),
                "Auto-TTS is on: replies are spoken.",
            ),
            "off" => self.set(|p| p.auto = Some(TtsAuto::Off), "Auto-TTS is off."),
            "chat" => self.chat(&msg.session_key, rest),
            "provider" => self.provider(rest),
            "persona" => self.persona(rest),
            "limit" => self.limit(rest),
            "summary" => self.summary(rest),
            "audio" => self.audio(&msg, rest.to_string(), "Speaking it."),
            "latest" => match msg.latest.clone() {
                Some(t) => self.audio(&msg, plan::speakable(&t), "Speaking the latest reply."),
                None => Ok("There is no reply to speak yet.".into()),
            },
            _ => Ok(HELP.to_string()),
        };
        said.unwrap_or_else(|e| format!("TTS: {e}"))
    }
}

impl Speaker {
    fn set(
        &mut self,
        change: impl FnOnce(&mut super::TtsPrefs),
        said: &str,
    ) -> Result<String, TtsError> {
        change(&mut self.prefs);
        self.save()?;
        Ok(said.to_string())
    }

    fn chat(&mut self, session: &str, arg: &str) -> Result<String, TtsError> {
        let session = session.to_string();
        match arg.to_ascii_lowercase().as_str() {
            "on" => self.set(
                |p| {
                    p.chats.insert(session, TtsAuto::Always);
                },
                "This chat's replies are spoken.",
            ),
            "off" => self.set(
                |p| {
                    p.chats.insert(session, TtsAuto::Off);
                },
                "This chat's replies are not spoken.",
            ),
            "default" => self.set(
                |p| {
                    p.chats.remove(&session);
                },
                "This chat follows the TTS setting again.",
            ),
            _ => Ok("Usage: /tts chat on | off | default".into()),
        }
    }

    fn provider(&mut self, arg: &str) -> Result<String, TtsError> {
        if arg.is_empty() {
            return Ok("Usage: /tts provider <openai | elevenlabs | tts-local-cli>".into());
        }
        let id = self.known(arg)?;
        let said = format!("TTS provider: {id}.");
        self.set(|p| p.provider = Some(id), &said)
    }

    fn persona(&mut self, arg: &str) -> Result<String, TtsError> {
        let id = arg.trim().to_ascii_lowercase();
        if matches!(id.as_str(), "off" | "none" | "default") {
            return self.set(|p| p.persona = None, "No TTS persona.");
        }
        if !self.cfg.tts.personas.contains_key(&id) {
            return Err(TtsError::UnknownPersona(id));
        }
        let said = format!("TTS persona: {id}.");
        self.set(|p| p.persona = Some(id), &said)
    }

    fn limit(&mut self, arg: &str) -> Result<String, TtsError> {
        match arg.parse::<usize>() {
            Ok(n) if (100..=4096).contains(&n) => self.set(
                |p| p.max_length = Some(n),
                &format!("Spoken replies are at most {n} characters."),
            ),
            _ => Ok("Usage: /tts limit <100-4096>".into()),
        }
    }

    fn summary(&mut self, arg: &str) -> Result<String, TtsError> {
        match arg.to_ascii_lowercase().as_str() {
            "off" => self.set(
                |p| p.summarize = Some(false),
                "Long replies are cut, not summarised.",
            ),
            "on" => self.set(
                |p| p.summarize = Some(true),
                "Long replies are summarised before they are spoken.",
            ),
            _ => Ok("Usage: /tts summary on | off".into()),
        }
    }

    /// A run that answers with audio only: recorded for its delivery.
    fn audio(&mut self, msg: &TtsCommand, text: String, said: &str) -> Result<String, TtsError> {
        let len = text.chars().count();
        let max = self.cfg.tts.max_text_length;
        if text.trim().is_empty() {
            return Ok("Usage: /tts audio <text>".into());
        }
        if len > max {
            return Err(TtsError::TooLong { len, max });
        }
        let job = SpeechJob {
            text,
            agent: msg.agent.clone(),
            overrides: Default::default(),
            fit: Fit::Strict,
        };
        self.cfg
            .store
            .put(Tree::Speech, &run_key(&msg.run_id), &Forced { job })
            .map_err(|e| TtsError::Prefs(e.to_string()))?;
        Ok(said.to_string())
    }

    fn status_text(&self, session: &str) -> String {
        let cat = self.catalog();
        let auto = resolve::auto(&self.cfg.tts, None, &self.prefs, Some(session));
        let configured: Vec<&str> = cat
            .providers
            .iter()
            .filter(|p| p.configured)
            .map(|p| p.id.as_str())
            .collect();
        let mut lines = vec![
            format!(
                "TTS: {} (auto: {})",
                if auto == TtsAuto::Off { "off" } else { "on" },
                auto.as_str()
            ),
            format!(
                "Provider: {}",
                cat.active.as_deref().unwrap_or("none configured")
            ),
            format!(
                "Configured: {}",
                if configured.is_empty() {
                    "none".to_string()
                } else {
                    configured.join(", ")
                }
            ),
        ];
        if let Some(p) = &cat.persona {
            lines.push(format!("Persona: {p}"));
        }
        let last = self.status()["lastAttempt"].clone();
        if let Some(tries) = last["attempts"].as_array() {
            let used = last["used"].as_str().unwrap_or("none");
            lines.push(format!(
                "Fallback: {} -> {used}",
                last["primary"].as_str().unwrap_or("?")
            ));
            let each: Vec<String> = tries
                .iter()
                .map(|t| {
                    let reason = t["reasonCode"]
                        .as_str()
                        .map(|r| format!("({r})"))
                        .unwrap_or_default();
                    format!(
                        "{}:{}{reason} {}ms",
                        t["provider"].as_str().unwrap_or("?"),
                        t["outcome"].as_str().unwrap_or("?"),
                        t["latencyMs"]
                    )
                })
                .collect();
            lines.push(format!("Attempts: {}", each.join(", ")));
        }
        lines.join("\n")
    }
}
