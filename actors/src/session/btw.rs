//! `/btw <question>`: a side question answered from the session's context
//! (OpenClaw's BTW): one model call without tools, with the recent
//! conversation as background and the instruction to answer only the side
//! question. It never enters the transcript, never interrupts or steers
//! the running run, and is not replayed by `chat.history`. The answer goes
//! out as `chat.side_result` (kind `btw`) and as the directive run's final
//! text, labelled, so a channel gets it as a one-off reply. `/tts ...` is
//! answered off the mailbox the same way (by the `Speaker`).

use std::sync::Arc;

use actix::prelude::*;

use super::*;
use crate::compaction::summary::ask;
use crate::ids::RunId;
use crate::provider::{ChatMessage, MessageRole, Messages};

/// The recent context a side question sees (messages).
const CONTEXT_MESSAGES: usize = 40;

const SYSTEM: &str = "You answer a quick side question (\"by the way\") from the user about \
    the conversation below. Answer only the side question, briefly. Do not continue, resume \
    or finish any unfinished task from the conversation, and do not call or pretend to call \
    tools.";

impl SessionActor {
    /// Answers `question` off the mailbox; the session goes on meanwhile.
    pub(super) fn side_question(
        &mut self,
        run_id: RunId,
        question: String,
        ctx: &mut Context<Self>,
    ) -> ResponseFuture<Result<SendAck, TranscriptError>> {
        let models = match self.view().models(None) {
            Ok(m) => m,
            Err(e) => return self.directive_reply(run_id, format!("BTW: no model to ask ({e}).")),
        };
        let window = self.view().window(&models);
        let mut messages: Messages = self.history.recent(CONTEXT_MESSAGES);
        messages.push(Arc::new(ChatMessage::user(&question)));
        let (hub, sticky) = (
            self.deps.hub.clone(),
            self.entry.auth_profile_override.clone(),
        );
        let timeout = self.deps.compaction.timeout;
        let media = self.deps.media.clone();
        self.forward(RunEvent::Started {
            run_id: run_id.clone(),
        });
        let id = run_id.clone();
        let asked = async move {
            crate::media::load_images(media.as_ref(), &mut messages).await;
            ask(hub, models, sticky, SYSTEM, messages, window, timeout).await
        };
        ctx.spawn(asked.into_actor(self).map(move |answer, act, _| {
            let text = match answer {
                Ok(t) if !t.trim().is_empty() => t,
                Ok(_) => "(no answer)".to_string(),
                Err(e) => format!("(could not answer: {e})"),
            };
            act.forward(RunEvent::SideResult {
                run_id: id.clone(),
                question,
                text: text.clone(),
            });
            act.forward(commands::answer(id, format!("BTW: {text}")));
        }));
        let store = Some(self.deps.store.clone());
        commands::acked(
            store,
            SendAck::of(&self.entry, run_id, SendStatus::Directive),
        )
    }

    /// `/tts ...`: the speaker answers (a `/tts audio` run's voice is
    /// recorded for its delivery); its answer is the run's final.
    pub(super) fn tts_command(
        &mut self,
        run_id: RunId,
        args: String,
        ctx: &mut Context<Self>,
    ) -> ResponseFuture<Result<SendAck, TranscriptError>> {
        let Some(speaker) = self.deps.speech.clone() else {
            return self.directive_reply(run_id, "Text-to-speech is not available here.".into());
        };
        let latest = self
            .history
            .recent(CONTEXT_MESSAGES)
            .iter()
            .rev()
            .find(|m| m.role == MessageRole::Assistant && !m.text.trim().is_empty())
            .map(|m| m.text.clone());
        let ask = crate::tts::TtsCommand {
            args,
            session_key: self.key.as_str().to_string(),
            run_id: run_id.to_string(),
            agent: Some(self.key.agent_id().to_string()),
            latest,
        };
        self.forward(RunEvent::Started {
            run_id: run_id.clone(),
        });
        let id = run_id.clone();
        ctx.spawn(
            speaker
                .send(ask)
                .into_actor(self)
                .map(move |answer, act, _| {
                    let text = answer.unwrap_or_else(|_| "TTS: the speaker stopped.".to_string());
                    act.forward(commands::answer(id, text));
                }),
        );
        let store = Some(self.deps.store.clone());
        commands::acked(
            store,
            SendAck::of(&self.entry, run_id, SendStatus::Directive),
        )
    }
}
