//! Audio converted to Ogg/Opus for a voice note (48 kHz, 64 kbit/s,
//! mono). ferroclaw links no codec: it runs `ffmpeg` (any input, as
//! OpenClaw does) or else `opusenc` from opus-tools (WAV, FLAC, AIFF
//! input), whichever is found on PATH, and says which to install when
//! neither is. Opus through a crate would link libopus (a C build) into
//! a binary that stays small; the encoders are one package away and
//! already what OpenClaw's users have installed.

use std::path::Path;
use std::time::Duration;

use super::{AudioFormat, ProviderError};
use crate::media::cli::{output, CliError};

/// The most a conversion may produce (OpenClaw's 50 MiB).
pub const MAX_AUDIO: usize = 50 << 20;

/// `bytes` as Ogg/Opus (as they are when they already are); `scratch`:
/// a folder of this job's own.
pub async fn to_ogg_opus(
    bytes: Vec<u8>,
    scratch: &Path,
    timeout: Duration,
) -> Result<Vec<u8>, ProviderError> {
    let format = AudioFormat::of(&bytes);
    if format == AudioFormat::Ogg {
        return Ok(bytes);
    }
    let input = scratch.join(format!("in.{}", format.extension()));
    tokio::fs::write(&input, &bytes)
        .await
        .map_err(|e| ProviderError::Transcode(e.to_string()))?;
    let mut ffmpeg = tokio::process::Command::new("ffmpeg");
    ffmpeg
        .args(["-hide_banner", "-loglevel", "error", "-nostdin", "-i"])
        .arg(&input)
        .args([
            "-vn", "-c:a", "libopus", "-b:a", "64k", "-ar", "48000", "-ac", "1", "-f", "ogg",
            "pipe:1",
        ]);
    match output(ffmpeg, None, MAX_AUDIO, timeout).await {
        Ok(out) => return checked(out),
        Err(CliError::Start(e)) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(ProviderError::Transcode(format!("ffmpeg {e}"))),
    }
    if format == AudioFormat::Mp3 {
        return Err(ProviderError::Transcode(
            "MP3 needs ffmpeg on PATH to become a voice note (opusenc reads WAV)".into(),
        ));
    }
    let mut opusenc = tokio::process::Command::new("opusenc");
    opusenc
        .args(["--quiet", "--bitrate", "64", "--downmix-mono"])
        .arg(&input)
        .arg("-");
    match output(opusenc, None, MAX_AUDIO, timeout).await {
        Ok(out) => checked(out),
        Err(CliError::Start(e)) if e.kind() == std::io::ErrorKind::NotFound => {
            Err(ProviderError::Transcode(
                "no Opus encoder on PATH: install ffmpeg or opus-tools (opusenc)".into(),
            ))
        }
        Err(e) => Err(ProviderError::Transcode(format!("opusenc {e}"))),
    }
}

fn checked(out: Vec<u8>) -> Result<Vec<u8>, ProviderError> {
    match AudioFormat::of(&out) {
        AudioFormat::Ogg => Ok(out),
        _ => Err(ProviderError::Transcode(
            "the encoder wrote no Ogg stream".into(),
        )),
    }
}
