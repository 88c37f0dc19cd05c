//! Media understanding, configured with OpenClaw's `tools.media` keys:
//! a capability's own `models[]`, then the shared `tools.media.models[]`
//! entries tagged with it, tried in order; an entry that fails, times out
//! or is given a file over its `maxBytes` hands over to the next. This
//! step runs CLI entries (a command and its `args` with OpenClaw's
//! templates, `{{AttachmentPath}}` and the older `{{MediaPath}}` names;
//! its stdout, capped at 5 MB, is the text) and provider entries
//! (`provider.rs`: OpenAI-compatible `/audio/transcriptions`, Deepgram's
//! `/listen`; `vision.rs`: chat completions that describe an image or a
//! video). With no `tools.media.audio` models, a transcriber is detected
//! (`detect.rs`, OpenClaw's order).
//!
//! On success the body becomes OpenClaw's block (`[Audio]`, `User text:`
//! when there was a caption, `Transcript:`). Trust: the text is what the
//! sender's file said, so it is outside data like the sender's own words.

use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::cli::CliError;
use super::config::{entry_name, CapabilityLimits, MediaConfig, ModelEntry};
use super::store::{MediaKind, MediaRef};
use super::AttemptError;

/// What a CLI may print before it is cut off (OpenClaw's cap).
const STDOUT_MAX: usize = 5 * 1024 * 1024;

/// What understanding one file came to.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Understood {
    /// The text (None: no entry succeeded).
    pub text: Option<String>,
    /// Which entry gave it (`cli:<command>`).
    pub by: Option<String>,
    /// Why each entry before it did not (for the log and the model's note).
    pub attempts: Vec<String>,
}

/// Runs the audio entries on `media` until one gives a transcript.
pub async fn transcribe(cfg: &MediaConfig, media: &MediaRef) -> Understood {
    understand(cfg, MediaKind::Audio, media).await
}

/// Runs `kind`'s entries on `media` until one gives text: a transcript
/// for audio, a description for an image or a video.
pub async fn understand(cfg: &MediaConfig, kind: MediaKind, media: &MediaRef) -> Understood {
    let mut out = Understood::default();
    let Some(defaults) = cfg.defaults(kind) else {
        out.attempts
            .push("no tools.media.document models configured".into());
        return out;
    };
    for entry in cfg.entries(kind) {
        let mut limits = entry.limits.over(defaults);
        if kind != MediaKind::Audio && limits.prompt.is_none() {
            limits.prompt = Some(super::vision::default_prompt(kind, limits.max_chars));
        }
        let max_bytes = limits.max_bytes;
        let name = entry_name(entry);
        if media.size > max_bytes {
            out.attempts.push(format!(
                "{name}: {} bytes is over its {max_bytes}",
                media.size
            ));
            continue;
        }
        let timeout = Duration::from_secs_f64(limits.timeout_seconds.clamp(0.1, 3600.0));
        let run = match (entry.kind.as_deref().unwrap_or("provider"), kind) {
            ("cli", _) => run_cli(entry, &limits, media, timeout).await,
            (_, MediaKind::Audio) => {
                super::provider::transcribe(entry, &limits, media, timeout, cfg).await
            }
            _ => super::vision::describe(entry, &limits, media, timeout, cfg).await,
        };
        match run {
            Ok(text) if !text.trim().is_empty() => {
                let max = limits.max_chars.unwrap_or(usize::MAX);
                let clean = crate::inbound::sanitize_text(text.trim());
                out.text = Some(clean.chars().take(max).collect());
                out.by = Some(name);
                return out;
            }
            Ok(_) => out.attempts.push(format!("{name}: no text")),
            Err(e) => out.attempts.push(format!("{name}: {e}")),
        }
    }
    if out.attempts.is_empty() {
        out.attempts.push(format!(
            "no tools.media.{} models configured",
            kind.capability().unwrap_or("document")
        ));
    }
    out
}

/// OpenClaw's templates in one argument.
fn fill(
    arg: &str,
    media: &MediaRef,
    out_dir: &Path,
    prompt: &str,
    max_chars: &str,
    lang: &str,
) -> String {
    let path = media.path.display().to_string();
    let dir = media
        .path
        .parent()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    let base = out_dir.join(&media.id).display().to_string();
    let out = out_dir.display().to_string();
    [
        ("{{AttachmentPath}}", path.as_str()),
        ("{{MediaPath}}", path.as_str()),
        ("{{AttachmentUrl}}", ""),
        ("{{MediaUrl}}", ""),
        ("{{AttachmentContentType}}", media.content_type.as_str()),
        ("{{MediaType}}", media.content_type.as_str()),
        ("{{AttachmentDir}}", dir.as_str()),
        ("{{MediaDir}}", dir.as_str()),
        ("{{AttachmentIndex}}", "0"),
        ("{{OutputDir}}", out.as_str()),
        ("{{OutputBase}}", base.as_str()),
        ("{{Prompt}}", prompt),
        ("{{MaxChars}}", max_chars),
        ("{{Language}}", lang),
    ]
    .iter()
    .fold(arg.to_string(), |a, (k, v)| a.replace(k, v))
}

/// Runs one CLI entry in a scratch dir (removed after); its stdout.
async fn run_cli(
    entry: &ModelEntry,
    limits: &CapabilityLimits,
    media: &MediaRef,
    timeout: Duration,
) -> Result<String, AttemptError> {
    let command = entry.command.as_deref().filter(|c| !c.trim().is_empty());
    let Some(command) = command.filter(|_| !entry.args.is_empty()) else {
        return Err(CliError::Entry("`command` and `args`").into());
    };
    let scratch = Scratch::new().map_err(CliError::Io)?;
    let prompt = limits.prompt.clone().unwrap_or_default();
    let max_chars = limits.max_chars.map(|n| n.to_string()).unwrap_or_default();
    let lang = limits.language.clone().unwrap_or_default();
    let args: Vec<String> = entry
        .args
        .iter()
        .map(|a| fill(a, media, scratch.path(), &prompt, &max_chars, &lang))
        .collect();
    let mut cmd = tokio::process::Command::new(command);
    cmd.args(&args).current_dir(scratch.path());
    let mut bytes = super::cli::output(cmd, None, STDOUT_MAX, timeout).await?;
    if bytes.iter().all(u8::is_ascii_whitespace) {
        // A CLI that writes its text to a file (`whisper --output_dir`).
        bytes = written_text(scratch.path()).unwrap_or_default();
    }
    Ok(String::from_utf8(bytes).map_err(|_| CliError::NotText)?)
}

/// The first `.txt` a CLI wrote into its scratch folder (at most 5 MB).
fn written_text(dir: &Path) -> Option<Vec<u8>> {
    use std::io::Read;
    let file = std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "txt"))?;
    let mut out = Vec::new();
    std::fs::File::open(file)
        .ok()?
        .take(STDOUT_MAX as u64)
        .read_to_end(&mut out)
        .ok()?;
    Some(out)
}

/// A scratch folder for one run (`{{OutputDir}}`), removed when dropped.
struct Scratch(std::path::PathBuf);

impl Scratch {
    fn new() -> std::io::Result<Scratch> {
        let dir =
            (crate::host::env().tmp).join(format!("ferroclaw-media-{}", ulid::Ulid::generate()));
        std::fs::create_dir_all(&dir)?;
        Ok(Scratch(dir))
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// OpenClaw's body for one understood audio file: `[Audio]`, the caption
/// as `User text:` when there was one, then `Transcript:`.
pub fn audio_body(caption: &str, transcript: &str) -> String {
    block(MediaKind::Audio, caption, transcript)
}

/// OpenClaw's block for an understood file: `[Audio]` with `Transcript:`,
/// `[Image]` or `[Video]` with `Description:`; the caption as `User text:`.
pub fn block(kind: MediaKind, caption: &str, text: &str) -> String {
    let user = match caption.trim() {
        "" => String::new(),
        c => format!("User text:\n{c}\n"),
    };
    let (label, field) = match kind {
        MediaKind::Audio => ("Audio", "Transcript"),
        MediaKind::Video => ("Video", "Description"),
        _ => ("Image", "Description"),
    };
    format!("[{label}]\n{user}{field}:\n{text}")
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::media::{MediaStore, PutMedia, Understand};
    use actix::Actor;
    use std::sync::Arc;

    pub(in crate::media) fn grammar() -> String {
        format!(
            "{}/../tests/media/commands.gram",
            env!("CARGO_MANIFEST_DIR")
        )
    }

    /// Speech made by espeak-ng (Debian; `tests/run.sh` installs it).
    pub(in crate::media) fn speak(dir: &Path, text: &str) -> Vec<u8> {
        let wav = dir.join("speech.wav");
        let ok = std::process::Command::new("espeak-ng")
            .args(["-v", "en-us", "-s", "130", "-w"])
            .arg(&wav)
            .arg(text)
            .status()
            .expect("espeak-ng (apt-get install espeak-ng; tests/run.sh does)");
        assert!(ok.success());
        std::fs::read(wav).unwrap()
    }

    fn cli(command: &str, args: &[&str]) -> ModelEntry {
        ModelEntry {
            kind: Some("cli".into()),
            command: Some(command.into()),
            args: args.iter().map(|a| a.to_string()).collect(),
            ..Default::default()
        }
    }

    pub(in crate::media) fn pocketsphinx() -> ModelEntry {
        let g = grammar();
        cli(
            "pocketsphinx_continuous",
            &[
                "-infile",
                "{{MediaPath}}",
                "-samprate",
                "22050",
                "-nfft",
                "1024",
                "-jsgf",
                &g,
                "-logfn",
                "/dev/null",
            ],
        )
    }

    /// A media store in `dir/media` (an hour's TTL, no size cap).
    fn store_in(dir: &Path) -> actix::Addr<MediaStore> {
        MediaStore::new(dir.join("media"), Duration::from_secs(3600), u64::MAX).start()
    }

    /// `bytes` stored as an OGG voice note (its type is told from them).
    async fn put_audio(
        store: &actix::Addr<MediaStore>,
        bytes: Vec<u8>,
        name: Option<&str>,
    ) -> crate::media::MediaRef {
        let put = PutMedia {
            bytes: bytes.into(),
            content_type: Some("audio/ogg".into()),
            file_name: name.map(str::to_string),
        };
        store.send(put).await.unwrap().unwrap()
    }

    /// `/proc/<pid>/stat` of the process whose pid is written in `pid_file`
    /// (empty once it is gone).
    fn stat_of(pid_file: &Path) -> String {
        let pid = std::fs::read_to_string(pid_file).unwrap();
        std::fs::read_to_string(format!("/proc/{}/stat", pid.trim())).unwrap_or_default()
    }

    pub(in crate::media) fn audio(models: Vec<ModelEntry>) -> Arc<MediaConfig> {
        let mut cfg = MediaConfig::default();
        cfg.audio.models = models;
        Arc::new(cfg)
    }

    /// A CLI that writes its transcript to a file in `{{OutputDir}}` (the
    /// Python `whisper` does) and prints nothing: the file is read.
    #[tokio::test]
    async fn a_transcript_written_to_the_output_dir_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let m = super::super::store::put(dir.path(), b"RIFF....WAVEfmt ", None, None, 0).unwrap();
        let cfg = audio(vec![cli(
            "sh",
            &[
                "-c",
                "echo 'from the file' > \"$1/memo.txt\"",
                "sh",
                "{{OutputDir}}",
            ],
        )]);
        let u = transcribe(&cfg, &m).await;
        assert_eq!(u.text.as_deref(), Some("from the file"), "{u:?}");
    }

    /// A real recognizer behind a failing entry: the fallback answers, and
    /// the same file is not transcribed again (the second config could not).
    #[actix::test]
    async fn a_voice_note_is_transcribed_once_by_a_real_local_cli() {
        let dir = tempfile::tempdir().unwrap();
        let store = store_in(dir.path());
        let bytes = speak(dir.path(), "remind me to buy milk");
        let media = put_audio(&store, bytes, Some("voice.ogg")).await;
        assert_eq!(media.content_type, "audio/wav", "told from the bytes");
        let first = store
            .send(Understand {
                media: media.clone(),
                config: audio(vec![cli("false", &["{{MediaPath}}"]), pocketsphinx()]),
            })
            .await
            .unwrap();
        assert_eq!(
            first.text.as_deref(),
            Some("remind me to buy milk"),
            "{first:?}"
        );
        assert_eq!(first.by.as_deref(), Some("cli:pocketsphinx_continuous"));
        assert!(first.attempts[0].contains("exited"), "{first:?}");
        let again = store
            .send(Understand {
                media,
                config: audio(vec![cli("false", &["x"])]),
            })
            .await
            .unwrap();
        assert_eq!(again, first, "kept beside the file");
    }

    /// Every way an entry can fail is a line of the outcome, and the next
    /// entry is tried; a hung CLI's process group is killed.
    #[actix::test]
    async fn failing_entries_each_leave_a_reason_and_a_hung_cli_is_killed() {
        let dir = tempfile::tempdir().unwrap();
        let store = store_in(dir.path());
        let media = put_audio(&store, vec![1u8; 4096], None).await;
        let pid_file = dir.path().join("pid");
        let hang = format!("echo $$ > {}; exec sleep 30", pid_file.display());
        let mut slow = cli("sh", &["-c", &hang]);
        slow.limits.timeout_seconds = Some(0.5);
        let mut small = pocketsphinx();
        small.limits.max_bytes = Some(100);
        // A provider with no endpoint configured or known: never dialled.
        let provider = ModelEntry {
            provider: Some("nowhere".into()),
            model: Some("m".into()),
            ..Default::default()
        };
        let u = store
            .send(Understand {
                media,
                config: audio(vec![
                    slow,
                    cli("sh", &["-c", "head -c 6000000 /dev/zero"]),
                    cli("sh", &["-c", "printf '\\377\\376'"]),
                    cli("sh", &["-c", "true"]),
                    small,
                    provider,
                    cli("", &[]),
                ]),
            })
            .await
            .unwrap();
        assert_eq!(u.text, None);
        let a = &u.attempts;
        assert_eq!(a.len(), 7, "{a:?}");
        assert!(a[0].contains("timed out"), "{a:?}");
        assert!(a[1].contains("more than"), "{a:?}");
        assert!(a[2].contains("not text"), "{a:?}");
        assert!(a[3].contains("no text"), "{a:?}");
        assert!(a[4].contains("over its 100"), "{a:?}");
        assert!(a[5].contains("no baseUrl"), "{a:?}");
        assert!(a[6].contains("needs `command`"), "{a:?}");
        let stat = stat_of(&pid_file);
        assert!(
            stat.is_empty()
                || stat
                    .rsplit_once(") ")
                    .is_some_and(|(_, r)| r.starts_with('Z')),
            "the hung CLI is gone: {stat}"
        );
    }

    #[test]
    fn the_body_is_openclaws_audio_block() {
        assert_eq!(
            audio_body("", "turn on the lights"),
            "[Audio]\nTranscript:\nturn on the lights"
        );
        assert_eq!(
            audio_body("for tonight", "buy milk"),
            "[Audio]\nUser text:\nfor tonight\nTranscript:\nbuy milk"
        );
        let cfg = MediaConfig::shipped_with(serde_json::json!({
            "models": [{"type": "cli", "command": "x", "args": ["y"], "capabilities": ["audio"]},
                       {"provider": "google", "model": "g", "capabilities": ["image"]}],
            "audio": {"models": [{"type": "cli", "command": "a", "args": ["b"]}], "language": "en"},
        }));
        let names: Vec<String> = cfg.audio_entries().into_iter().map(entry_name).collect();
        assert_eq!(names, ["cli:a", "cli:x"]);
        // The shared keys land in `limits`; the rest is kept as written.
        assert_eq!(cfg.audio.limits.language.as_deref(), Some("en"));
        let kept = MediaConfig::shipped_with(serde_json::json!({
            "audio": {"maxBytes": 5, "echoTranscript": true}}));
        let audio = kept.audio;
        assert_eq!(audio.limits.max_bytes, 5);
        assert_eq!(
            audio.other.get("echoTranscript"),
            Some(&serde_json::json!(true))
        );
        let off = MediaConfig::shipped_with(
            serde_json::json!({"audio": {"enabled": false, "models": [{"type": "cli"}]}}),
        );
        assert!(off.audio_entries().is_empty());
    }
}
