//! `tts` (OpenClaw's tool): the given text spoken with the configured
//! voice and sent to the conversation the turn came from, as the
//! channel's voice note (an audio file where there is none), through the
//! outbox like any send (keyed by the run and the call: a repeat after a
//! restart sends nothing twice). A turn outside a channel gets the audio
//! file's path. Never offered to a stranger's turn (checked here again).

use ferroclaw_actors::channels::SendText;
use ferroclaw_actors::tool::{ExecuteTool, ToolOutcome};
use ferroclaw_actors::tts::{Fit, SpeechTarget, Synthesize};
use serde_json::Value;

use super::{fail, refused};
use crate::state::SharedState;

/// Channels whose voice notes are Ogg/Opus.
const VOICE_NOTES: &[&str] = &["telegram", "whatsapp", "matrix", "signal"];

pub(super) async fn run(state: &SharedState, msg: &ExecuteTool) -> ToolOutcome {
    if msg.trust.untrusted {
        return refused("tts: not available on this turn");
    }
    let ask = match request(msg) {
        Ok(ask) => ask,
        Err(why) => return fail(why.to_string()),
    };
    let spoken = match state.gateway.speech.send(ask).await {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => return fail(format!("tts: {e}")),
        Err(_) => return fail("tts: the speaker is unavailable"),
    };
    let Some(o) = msg.origin.as_ref() else {
        return ToolOutcome::ok(format!(
            "Audio ({}, {}) saved: MEDIA:{}",
            spoken.provider,
            spoken.format,
            spoken.media.path.display()
        ));
    };
    let key = format!(
        "tts/{}/{}",
        msg.run_id.as_ref().map_or("-", |r| r.as_str()),
        msg.call.id
    );
    let send = SendText {
        channel: o.channel.clone(),
        account: Some(o.account_id.clone()),
        to: o.to.clone(),
        thread_id: o.thread_id.clone(),
        reply_to: None,
        text: String::new(),
        media: vec![format!("media:{}", spoken.media.id)],
        key,
        buttons: Vec::new(),
        voice: true,
    };
    match state.gateway.channels.send(send).await {
        Ok(Ok(_)) => ToolOutcome::ok(format!(
            "Audio sent to this conversation ({}, {}). Do not repeat it as text.",
            spoken.provider, spoken.format
        )),
        Ok(Err(e)) => fail(format!("tts: the audio was not sent: {e}")),
        Err(_) => fail("tts: the channels are unavailable"),
    }
}

/// Why a call's arguments are refused.
#[derive(Debug, thiserror::Error)]
enum ArgError {
    #[error("tts: `text` is required")]
    NoText,
    #[error("timeoutMs must be a positive integer in milliseconds.")]
    Timeout,
}

/// The synthesis a call asks for: a voice note where the conversation's
/// channel has them, else an audio file; never over `maxTextLength`.
fn request(msg: &ExecuteTool) -> Result<Synthesize, ArgError> {
    let args = &msg.call.arguments;
    let text = args
        .get("text")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .ok_or(ArgError::NoText)?;
    let timeout_ms = match args.get("timeoutMs") {
        None | Some(Value::Null) => None,
        Some(v) => Some(v.as_u64().filter(|n| *n > 0).ok_or(ArgError::Timeout)?),
    };
    let channel = args
        .get("channel")
        .and_then(Value::as_str)
        .map(str::to_string)
        .or_else(|| msg.origin.as_ref().map(|o| o.channel.clone()));
    let voice = channel.as_deref().is_some_and(|c| VOICE_NOTES.contains(&c));
    Ok(Synthesize {
        text: text.to_string(),
        target: match voice {
            true => SpeechTarget::VoiceNote,
            false => SpeechTarget::AudioFile,
        },
        agent: Some(msg.agent_id.clone()),
        overrides: Default::default(),
        fallback: true,
        timeout_ms,
        fit: Fit::Strict,
    })
}
