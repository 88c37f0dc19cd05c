//! One provider's synthesis, at its wire: OpenAI's `POST
//! {baseUrl}/audio/speech` (any OpenAI-compatible server), ElevenLabs'
//! `POST {baseUrl}/v1/text-to-speech/{voiceId}`, or the local command
//! (OpenClaw's `tts-local-cli`: `{{Text}}`, `{{OutputPath}}`,
//! `{{OutputDir}}`, `{{OutputBase}}` in its arguments; without
//! `{{OutputPath}}` its stdout is the audio). Each asks for Opus when the
//! target is a voice note and MP3 otherwise, as OpenClaw does.

use std::path::Path;
use std::time::Duration;

use serde_json::{json, Value};

use super::resolve::{Attempt, ProviderKind};
use super::transcode::MAX_AUDIO;
use super::{ProviderError, SpeechTarget};
use crate::media::cli::{output, CliError};

const OPENAI_BASE: &str = "https://api.openai.com/v1";
const ELEVENLABS_BASE: &str = "https://api.elevenlabs.io";

/// The voice and model a provider uses when none is set (OpenClaw's).
pub fn defaults(kind: ProviderKind) -> (&'static str, &'static str) {
    match kind {
        ProviderKind::OpenAi => ("coral", "gpt-4o-mini-tts"),
        ProviderKind::ElevenLabs => ("pMsXgVXv3BLzUgSXRplE", "eleven_multilingual_v2"),
        ProviderKind::LocalCli => ("", ""),
    }
}

/// The audio `a` makes of `text` for `target` (not yet converted).
pub async fn synthesize(
    http: &reqwest::Client,
    a: &Attempt,
    text: &str,
    target: SpeechTarget,
    timeout: Duration,
    scratch: &Path,
) -> Result<Vec<u8>, ProviderError> {
    let audio = match a.kind {
        ProviderKind::OpenAi => openai(http, a, text, target, timeout).await?,
        ProviderKind::ElevenLabs => elevenlabs(http, a, text, target, timeout).await?,
        ProviderKind::LocalCli => local_cli(a, text, timeout, scratch).await?,
    };
    if audio.is_empty() {
        return Err(ProviderError::Empty);
    }
    Ok(audio)
}

async fn openai(
    http: &reqwest::Client,
    a: &Attempt,
    text: &str,
    target: SpeechTarget,
    timeout: Duration,
) -> Result<Vec<u8>, ProviderError> {
    let c = &a.config;
    let (voice, model) = defaults(a.kind);
    let format = c.response_format.clone().unwrap_or_else(|| {
        match target {
            SpeechTarget::VoiceNote => "opus",
            SpeechTarget::AudioFile => "mp3",
        }
        .into()
    });
    let mut body = json!({
        "model": c.voice.model_name().unwrap_or(model),
        "input": text,
        "voice": c.voice.voice_name().unwrap_or(voice),
        "response_format": format,
    });
    if let Some(s) = c.voice.speed {
        body["speed"] = json!(s);
    }
    if let Some(i) = c.voice.instructions.as_deref() {
        body["instructions"] = json!(i);
    }
    for (k, v) in c.extra_body.iter().flatten() {
        if !matches!(k.as_str(), "__proto__" | "constructor" | "prototype") {
            body[k] = v.clone();
        }
    }
    let base = c
        .base_url
        .as_deref()
        .unwrap_or(OPENAI_BASE)
        .trim_end_matches('/');
    let mut req = http.post(format!("{base}/audio/speech")).json(&body);
    if let Some(k) = a.key.as_deref() {
        req = req.bearer_auth(k);
    }
    fetch(req, timeout).await
}

async fn elevenlabs(
    http: &reqwest::Client,
    a: &Attempt,
    text: &str,
    target: SpeechTarget,
    timeout: Duration,
) -> Result<Vec<u8>, ProviderError> {
    let c = &a.config;
    let key = a
        .key
        .as_deref()
        .ok_or_else(|| ProviderError::NotConfigured("no ElevenLabs API key".into()))?;
    let (voice, model) = defaults(a.kind);
    let format = match target {
        SpeechTarget::VoiceNote => "opus_48000_64",
        SpeechTarget::AudioFile => "mp3_44100_128",
    };
    let mut body = json!({ "text": text, "model_id": c.voice.model_name().unwrap_or(model) });
    if let Some(s) = c.voice.voice_settings.as_ref() {
        let mut settings = serde_json::Map::new();
        for (k, v) in s {
            let snake = match k.as_str() {
                "similarityBoost" => "similarity_boost",
                "useSpeakerBoost" => "use_speaker_boost",
                other => other,
            };
            settings.insert(snake.to_string(), v.clone());
        }
        if let Some(speed) = c.voice.speed {
            settings.insert("speed".into(), json!(speed));
        }
        body["voice_settings"] = Value::Object(settings);
    } else if let Some(speed) = c.voice.speed {
        body["voice_settings"] = json!({ "speed": speed });
    }
    if let Some(seed) = c.voice.seed {
        body["seed"] = json!(seed);
    }
    if let Some(l) = c.language_code.as_deref() {
        body["language_code"] = json!(l);
    }
    if let Some(n) = c.apply_text_normalization.as_deref() {
        body["apply_text_normalization"] = json!(n);
    }
    let base = c
        .base_url
        .as_deref()
        .unwrap_or(ELEVENLABS_BASE)
        .trim_end_matches('/');
    let voice = c.voice.voice_name().unwrap_or(voice);
    let url = format!("{base}/v1/text-to-speech/{voice}?output_format={format}");
    fetch(
        http.post(url).header("xi-api-key", key).json(&body),
        timeout,
    )
    .await
}

/// The body of a speech request's answer (an error status with its text).
async fn fetch(req: reqwest::RequestBuilder, timeout: Duration) -> Result<Vec<u8>, ProviderError> {
    let call = async {
        let resp = req
            .send()
            .await
            .map_err(|e| ProviderError::Transport(e.to_string()))?;
        let status = resp.status();
        if !status.is_success() {
            let body = resp.text().await.unwrap_or_default();
            return Err(ProviderError::Status {
                status: status.as_u16(),
                body: body.chars().take(300).collect(),
            });
        }
        if resp.content_length().is_some_and(|n| n > MAX_AUDIO as u64) {
            return Err(ProviderError::TooLarge);
        }
        let bytes = resp
            .bytes()
            .await
            .map_err(|e| ProviderError::Transport(e.to_string()))?;
        if bytes.len() > MAX_AUDIO {
            return Err(ProviderError::TooLarge);
        }
        Ok(bytes.to_vec())
    };
    tokio::time::timeout(timeout, call)
        .await
        .unwrap_or(Err(ProviderError::Timeout(timeout.as_millis() as u64)))
}

async fn local_cli(
    a: &Attempt,
    text: &str,
    timeout: Duration,
    scratch: &Path,
) -> Result<Vec<u8>, ProviderError> {
    let c = &a.config;
    let program = c
        .command
        .as_deref()
        .filter(|p| !p.trim().is_empty())
        .ok_or_else(|| ProviderError::NotConfigured("no command".into()))?;
    let ext = match c.output_format.as_deref().unwrap_or("mp3") {
        "opus" | "ogg" => "ogg",
        "wav" => "wav",
        _ => "mp3",
    };
    let out = scratch.join(format!("speech.{ext}"));
    let fill = |arg: &str| {
        arg.replace("{{Text}}", text)
            .replace("{{OutputPath}}", &out.to_string_lossy())
            .replace("{{OutputDir}}", &scratch.to_string_lossy())
            .replace("{{OutputBase}}", "speech")
    };
    let args: Vec<String> = c.args.iter().flatten().map(|a| fill(a)).collect();
    let writes_file = c
        .args
        .iter()
        .flatten()
        .any(|a| a.contains("{{OutputPath}}"));
    let mut cmd = tokio::process::Command::new(program);
    cmd.args(&args);
    if let Some(dir) = c.cwd.as_deref() {
        cmd.current_dir(dir);
    }
    for (k, v) in c.env.iter().flatten() {
        cmd.env(k, v);
    }
    let limit = c.timeout_ms.map(Duration::from_millis).unwrap_or(timeout);
    let stdout = output(cmd, None, MAX_AUDIO, limit)
        .await
        .map_err(|e| match e {
            CliError::Timeout(_) => ProviderError::Timeout(limit.as_millis() as u64),
            CliError::TooMuch(_) => ProviderError::TooLarge,
            e => ProviderError::Command(e.to_string()),
        })?;
    if !writes_file {
        return Ok(stdout);
    }
    let meta = tokio::fs::metadata(&out)
        .await
        .map_err(|_| ProviderError::Command("wrote no file at {{OutputPath}}".into()))?;
    if meta.len() > MAX_AUDIO as u64 {
        return Err(ProviderError::TooLarge);
    }
    tokio::fs::read(&out)
        .await
        .map_err(|e| ProviderError::Command(e.to_string()))
}
