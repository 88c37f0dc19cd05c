//! A reply's voice (issue 54), beside its text: the `Speaker` decides
//! from the finished reply whether it is spoken (Auto-TTS, directives,
//! `/tts audio`) and takes the directives out of what is shown; the
//! voice is one more outbox item after the text, synthesised when it is
//! sent (the cache makes a synthesis after a restart the same file) and
//! sent by the outlet's `send_voice`. Speech that cannot be had fails the
//! voice item alone: the text went as usual.

use actix::Addr;

use super::ledger::{self, Delivery, OutState, OutboxItem};
use super::sender::SendFailure;
use crate::store::{Store, StoreError};
use crate::tts::{ForgetRun, PlanReply, ReplyPlan, Speaker, SpeechJob, SpeechTarget, Synthesize};

/// What of `text` is shown, and the voice to add (None without a speaker:
/// the text as it is).
pub async fn plan(
    speech: Option<&Addr<Speaker>>,
    d: &Delivery,
    text: Option<String>,
) -> (Option<String>, Option<SpeechJob>) {
    let (Some(speaker), Some(key)) = (speech, d.session_key.session()) else {
        return (text, None);
    };
    let ask = PlanReply {
        agent: Some(key.agent_id().to_string()),
        session_key: key.as_str().to_string(),
        run_id: d.run_id.to_string(),
        text: text.clone(),
        voice_in: d.voice_in,
        untrusted: d.untrusted,
    };
    match speaker.send(ask).await {
        Ok(ReplyPlan { visible, speech }) => (visible, speech),
        Err(_) => (text, None),
    }
}

/// The run's `/tts audio` record is no longer needed (its voice is queued).
pub fn forget(speech: Option<&Addr<Speaker>>, d: &Delivery) {
    if let Some(s) = speech {
        s.do_send(ForgetRun {
            run_id: d.run_id.to_string(),
        });
    }
}

/// The voice's audio, as an item's media (`media:<id>`), or why there is
/// none (for good: the item is not tried again).
pub async fn synthesize(
    speech: Option<&Addr<Speaker>>,
    voice_notes: bool,
    job: SpeechJob,
) -> Result<String, SendFailure> {
    let refuse = |error: String| SendFailure {
        unknown: false,
        error,
        retry_after_ms: None,
    };
    let speaker = speech.ok_or_else(|| refuse("no speech here".into()))?;
    let ask = Synthesize {
        text: job.text,
        target: match voice_notes {
            true => SpeechTarget::VoiceNote,
            false => SpeechTarget::AudioFile,
        },
        agent: job.agent,
        overrides: job.overrides,
        fallback: true,
        timeout_ms: None,
        fit: job.fit,
    };
    match speaker.send(ask).await {
        Ok(Ok(spoken)) => Ok(format!("{}{}", super::media_out::STORED, spoken.media.id)),
        Ok(Err(e)) => Err(refuse(e.to_string())),
        Err(_) => Err(refuse("the speaker stopped".into())),
    }
}

/// An item's voice, made before its send: true when the item is to be
/// sent (its media set, recorded), false when there is no speech for it
/// (the item settled failed, for good; the text reply went as usual).
pub async fn ready(
    store: &Store,
    speech: Option<&Addr<Speaker>>,
    voice_notes: bool,
    d: &Delivery,
    item: &mut OutboxItem,
) -> Result<bool, StoreError> {
    let Some(job) = item.speech.take() else {
        return Ok(true);
    };
    match synthesize(speech, voice_notes, job).await {
        Ok(media) => {
            ledger::synthesized(store, &d.account, &item.key, media.clone())?;
            item.media = Some(media);
            Ok(true)
        }
        Err(f) => {
            tracing::warn!(account = %d.account, key = %item.key, error = %f.error,
                "voice reply not sent (the text reply went as usual)");
            let state = OutState::Failed {
                error: f.error,
                at_ms: crate::now_ms(),
            };
            ledger::settle(store, &d.account, &item.key, state)?;
            store.flush().await?;
            Ok(false)
        }
    }
}
