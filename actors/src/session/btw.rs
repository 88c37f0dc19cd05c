//! `/btw <question>`: a side question answered from the session's context
//! (OpenClaw's BTW): one model call without tools, with the recent
//! conversation as background and the instruction to answer only the side
//! question. It never enters the transcript, never interrupts or steers
//! the running run, and is not replayed by `chat.history`. The answer goes
//! out as `chat.side_result` (kind `btw`) and as the directive run's final
//! text, labelled, so a channel gets it as a one-off reply. `/tts ...` is
//! answered off the mailbox the same way (by the `Speaker`).

use std::future::Future;
use std::pin::Pin;
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

/// What a side command does: answer now (a refusal), or later, off the
/// mailbox, with the events to forward when its work is done.
pub(super) enum Aside {
    Now(String),
    Later(Pin<Box<dyn Future<Output = Vec<RunEvent>>>>),
}

impl SessionActor {
    /// Runs a side command (`/btw`, `/tts`) off the mailbox; the session
    /// goes on meanwhile and the answer is the directive run's final.
    pub(super) fn aside(
        &mut self,
        run_id: RunId,
        aside: Aside,
        ctx: &mut Context<Self>,
    ) -> ResponseFuture<Result<SendAck, TranscriptError>> {
        let work = match aside {
            Aside::Now(text) => return self.directive_reply(run_id, text),
            Aside::Later(work) => work,
        };
        self.forward(RunEvent::Started {
            run_id: run_id.clone(),
        });
        ctx.spawn(work.into_actor(self).map(|events, act, _| {
            for e in events {
                act.forward(e);
            }
        }));
        let store = Some(self.deps.store.clone());
        commands::acked(
            store,
            SendAck::of(&self.entry, run_id, SendStatus::Directive),
        )
    }
}

/// A side question's answer from the recent context, off the mailbox
/// (Err: no model to ask). A failed model call is its answer's text.
pub(super) fn side_answer(
    act: &SessionActor,
    question: &str,
) -> Result<Pin<Box<dyn Future<Output = String>>>, CompanionError> {
    let models = act.view().models(None)?;
    let window = act.view().window(&models);
    let mut messages: Messages = act.history.recent(CONTEXT_MESSAGES);
    messages.push(Arc::new(ChatMessage::user(question)));
    let (hub, sticky) = (
        act.deps.hub.clone(),
        act.entry.auth_profile_override.clone(),
    );
    let timeout = act.deps.compaction.timeout;
    let media = act.deps.media.clone();
    Ok(Box::pin(async move {
        crate::media::load_images(media.as_ref(), &mut messages).await;
        match ask(hub, models, sticky, SYSTEM, messages, window, timeout).await {
            Ok(t) if !t.trim().is_empty() => t,
            Ok(_) => "(no answer)".to_string(),
            Err(e) => format!("(could not answer: {e})"),
        }
    }))
}

/// `/btw <question>`, answered from the recent context.
pub(super) fn side_question(act: &SessionActor, run_id: RunId, question: String) -> Aside {
    let answer = match side_answer(act, &question) {
        Ok(a) => a,
        Err(CompanionError::NoModel(e)) => {
            return Aside::Now(format!("BTW: no model to ask ({e})."))
        }
    };
    Aside::Later(Box::pin(async move {
        let text = answer.await;
        let side = RunEvent::SideResult {
            run_id: run_id.clone(),
            question,
            text: text.clone(),
        };
        vec![side, commands::answer(run_id, format!("BTW: {text}"))]
    }))
}

/// `/tts ...`: the speaker answers (a `/tts audio` run's voice is
/// recorded for its delivery); its answer is the run's final.
pub(super) fn tts_command(act: &SessionActor, run_id: RunId, args: String) -> Aside {
    let Some(speaker) = act.deps.speech.clone() else {
        return Aside::Now("Text-to-speech is not available here.".into());
    };
    let latest = act
        .history
        .recent(CONTEXT_MESSAGES)
        .iter()
        .rev()
        .find(|m| m.role == MessageRole::Assistant && !m.text.trim().is_empty())
        .map(|m| m.text.clone());
    let ask = crate::tts::TtsCommand {
        args,
        session_key: act.key.as_str().to_string(),
        run_id: run_id.to_string(),
        agent: Some(act.key.agent_id().to_string()),
        latest,
    };
    Aside::Later(Box::pin(async move {
        let text = speaker
            .send(ask)
            .await
            .unwrap_or_else(|_| "TTS: the speaker stopped.".to_string());
        vec![commands::answer(run_id, text)]
    }))
}
