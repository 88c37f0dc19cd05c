//! Provider entries of `tools.media` for audio: an OpenAI-compatible
//! `POST <baseUrl>/audio/transcriptions` (multipart: `file`, `model`,
//! `language`, `prompt`; OpenAI, Groq, local servers that speak it) or
//! Deepgram's `POST <baseUrl>/listen?model=..` (the raw bytes). Where a
//! provider is: `models.providers.<id>` (`baseUrl`, `apiKey`, `headers`),
//! else the public endpoint of a known id with the key from `<ID>_API_KEY`.

use std::collections::BTreeMap;
use std::sync::OnceLock;
use std::time::Duration;

use serde_json::Value;

use super::config::{CapabilityLimits, MediaConfig, ModelEntry};
use super::store::MediaRef;
use super::AttemptError;

/// (base URL, default model) of the providers known by name.
fn known(id: &str) -> Option<(&'static str, &'static str)> {
    Some(match id {
        "openai" => ("https://api.openai.com/v1", "gpt-4o-mini-transcribe"),
        "groq" => ("https://api.groq.com/openai/v1", "whisper-large-v3-turbo"),
        "deepgram" => ("https://api.deepgram.com/v1", "nova-3"),
        "anthropic" => ("https://api.anthropic.com/v1", ""),
        "google" | "gemini" => (
            "https://generativelanguage.googleapis.com/v1beta/openai",
            "",
        ),
        _ => return None,
    })
}

/// Where a provider entry's requests go.
pub(super) struct Endpoint {
    pub id: String,
    /// Without a trailing `/`.
    pub base: String,
    pub key: Option<String>,
    /// `models.providers.<id>.api` (`deepgram`, `anthropic-messages`...).
    pub api: Option<String>,
    pub headers: BTreeMap<String, String>,
    /// The entry's model, else the provider's default one for audio.
    pub model: Option<String>,
}

/// Why a provider entry names no endpoint (the text is the attempt's note).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EndpointError {
    #[error("a provider entry needs `provider`")]
    NoProvider,
    #[error("provider {id} has no baseUrl (models.providers.{id})")]
    NoBaseUrl { id: String },
}

/// The entry's provider: `models.providers.<id>`, else a known one with
/// its key from `<ID>_API_KEY` (read through the gateway's `EnvReader`).
pub(super) fn endpoint(entry: &ModelEntry, cfg: &MediaConfig) -> Result<Endpoint, EndpointError> {
    let providers = &cfg.providers;
    let id = entry.provider.as_deref().ok_or(EndpointError::NoProvider)?;
    let configured = providers.get(id);
    let base = configured
        .and_then(|p| p.base_url.clone())
        .or_else(|| known(id).map(|k| k.0.to_string()))
        .ok_or_else(|| EndpointError::NoBaseUrl { id: id.to_string() })?;
    let key = configured
        .and_then(|p| p.api_key.clone())
        .or_else(|| cfg.env.var(&crate::provider::selection::env_var_for(id)))
        .filter(|k| !k.is_empty());
    Ok(Endpoint {
        id: id.to_string(),
        base: base.trim_end_matches('/').to_string(),
        key,
        api: configured.and_then(|p| p.api.clone()),
        headers: configured
            .and_then(|p| p.headers.clone())
            .unwrap_or_default(),
        model: entry.model.clone(),
    })
}

/// Sends `req` (with the provider's headers) within `timeout`; the JSON
/// answer or why not.
pub(super) async fn answer(
    mut req: reqwest::RequestBuilder,
    ep: &Endpoint,
    timeout: Duration,
) -> Result<Value, AttemptError> {
    for (k, v) in &ep.headers {
        req = req.header(k, v);
    }
    let resp = req
        .timeout(timeout)
        .send()
        .await
        .map_err(|e| match e.is_timeout() {
            true => AttemptError::Timeout(timeout.as_secs_f64()),
            false => AttemptError::Request(e.without_url()),
        })?;
    let status = resp.status();
    if !status.is_success() {
        return Err(AttemptError::Http(status.as_u16()));
    }
    resp.json()
        .await
        .map_err(|e| AttemptError::NotJson(e.without_url()))
}

pub(super) fn client() -> &'static reqwest::Client {
    static CLIENT: OnceLock<reqwest::Client> = OnceLock::new();
    CLIENT.get_or_init(reqwest::Client::new)
}

/// Deepgram's `/listen`: the audio as the body.
fn deepgram_request(
    ep: &Endpoint,
    model: &str,
    media: &MediaRef,
    bytes: Vec<u8>,
    language: Option<&str>,
) -> reqwest::RequestBuilder {
    let mut url = format!("{}/listen?model={model}&smart_format=true", ep.base);
    if let Some(l) = language {
        url.push_str(&format!("&language={l}"));
    }
    let r = client()
        .post(url)
        .header(reqwest::header::CONTENT_TYPE, media.content_type.clone())
        .body(bytes);
    match &ep.key {
        Some(k) => r.header(reqwest::header::AUTHORIZATION, format!("Token {k}")),
        None => r,
    }
}

/// OpenAI's `/audio/transcriptions` (Whisper's form): the audio as a file.
fn whisper_request(
    ep: &Endpoint,
    model: &str,
    media: &MediaRef,
    bytes: Vec<u8>,
    (language, prompt): (Option<String>, Option<String>),
) -> Result<reqwest::RequestBuilder, AttemptError> {
    let ext = media
        .content_type
        .rsplit('/')
        .next()
        .unwrap_or("bin")
        .to_string();
    let file = reqwest::multipart::Part::bytes(bytes)
        .file_name(format!("audio.{ext}"))
        .mime_str(&media.content_type)
        .map_err(AttemptError::Request)?;
    let mut form = reqwest::multipart::Form::new()
        .part("file", file)
        .text("model", model.to_string())
        .text("response_format", "json");
    if let Some(l) = language {
        form = form.text("language", l);
    }
    if let Some(p) = prompt {
        form = form.text("prompt", p);
    }
    let r = client()
        .post(format!("{}/audio/transcriptions", ep.base))
        .multipart(form);
    Ok(match &ep.key {
        Some(k) => r.bearer_auth(k),
        None => r,
    })
}

/// Transcribes `media` with a provider entry; the text or why not.
pub(super) async fn transcribe(
    entry: &ModelEntry,
    limits: &CapabilityLimits,
    media: &MediaRef,
    timeout: Duration,
    cfg: &MediaConfig,
) -> Result<String, AttemptError> {
    let ep = endpoint(entry, cfg)?;
    let id = ep.id.as_str();
    let model = ep
        .model
        .clone()
        .or_else(|| known(id).map(|k| k.1.to_string()))
        .filter(|m| !m.is_empty())
        .ok_or(AttemptError::NoModel(""))?;
    let (language, prompt) = (limits.language.clone(), limits.prompt.clone());
    let bytes = tokio::fs::read(&media.path)
        .await
        .map_err(AttemptError::Read)?;
    let deepgram = id == "deepgram" || ep.api.as_deref() == Some("deepgram");
    let req = match deepgram {
        true => deepgram_request(&ep, &model, media, bytes, language.as_deref()),
        false => whisper_request(&ep, &model, media, bytes, (language, prompt))?,
    };
    let body = answer(req, &ep, timeout).await?;
    let text = if deepgram {
        body.pointer("/results/channels/0/alternatives/0/transcript")
    } else {
        body.get("text")
    };
    text.and_then(Value::as_str)
        .map(str::to_string)
        .ok_or(AttemptError::Empty("transcript"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::media::understand::tests::{audio, grammar, speak};
    use crate::media::{MediaStore, PutMedia, Understand};
    use crate::settings::ProviderSettings;
    use actix::Actor;
    use std::io::{Read, Write};

    /// One request off a socket: its head (lower-cased names) and body.
    fn read_request(s: &mut std::net::TcpStream) -> (String, Vec<u8>) {
        let mut buf = Vec::new();
        let mut chunk = [0u8; 8192];
        let head_end = loop {
            let n = s.read(&mut chunk).unwrap();
            buf.extend_from_slice(&chunk[..n]);
            if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break i + 4;
            }
        };
        let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
        let len: Option<usize> = head.lines().find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("content-length:")
                .map(|v| v.trim().parse().unwrap())
        });
        if let Some(len) = len {
            while buf.len() < head_end + len {
                let n = s.read(&mut chunk).unwrap();
                buf.extend_from_slice(&chunk[..n]);
            }
            return (head, buf[head_end..head_end + len].to_vec());
        }
        // Chunked: read to the last chunk, then join the chunks.
        while !buf.ends_with(b"0\r\n\r\n") {
            let n = s.read(&mut chunk).unwrap();
            assert!(n > 0, "the request ended early");
            buf.extend_from_slice(&chunk[..n]);
        }
        let mut raw = &buf[head_end..];
        let mut body = Vec::new();
        loop {
            let eol = raw.windows(2).position(|w| w == b"\r\n").unwrap();
            let size = usize::from_str_radix(std::str::from_utf8(&raw[..eol]).unwrap().trim(), 16)
                .unwrap();
            if size == 0 {
                return (head, body);
            }
            body.extend_from_slice(&raw[eol + 2..eol + 2 + size]);
            raw = &raw[eol + 2 + size + 2..];
        }
    }

    /// What pocketsphinx hears in `wav` (the fakes transcribe for real).
    fn hear(wav: &[u8]) -> String {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("in.wav");
        std::fs::write(&path, wav).unwrap();
        let out = std::process::Command::new("pocketsphinx_continuous")
            .arg("-infile")
            .arg(&path)
            .args([
                "-samprate",
                "22050",
                "-nfft",
                "1024",
                "-jsgf",
                &grammar(),
                "-logfn",
                "/dev/null",
            ])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// The file part of a multipart body, cut at its boundary.
    fn file_part(head: &str, body: &[u8]) -> Vec<u8> {
        let boundary = head
            .lines()
            .find_map(|l| l.split("boundary=").nth(1))
            .unwrap()
            .trim()
            .to_string();
        let mark = b"name=\"file\"";
        let at = body.windows(mark.len()).position(|w| w == mark).unwrap();
        let start = at
            + body[at..]
                .windows(4)
                .position(|w| w == b"\r\n\r\n")
                .unwrap()
            + 4;
        let end_mark = format!("\r\n--{boundary}");
        let len = body[start..]
            .windows(end_mark.len())
            .position(|w| w == end_mark.as_bytes())
            .unwrap();
        body[start..start + len].to_vec()
    }

    /// A service that answers each request with `answer(head, body)`.
    fn serve(
        n: usize,
        answer: impl Fn(usize, &str, &[u8]) -> (u16, String) + Send + 'static,
    ) -> (String, std::thread::JoinHandle<Vec<String>>) {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let base = format!("http://{}/v1", l.local_addr().unwrap());
        let t = std::thread::spawn(move || {
            let mut heads = Vec::new();
            for i in 0..n {
                let (mut s, _) = l.accept().unwrap();
                let (head, body) = read_request(&mut s);
                let (status, json) = answer(i, &head, &body);
                let _ = write!(
                    s,
                    "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{json}",
                    json.len()
                );
                heads.push(head);
            }
            heads
        });
        (base, t)
    }

    fn provider(id: &str, model: &str) -> ModelEntry {
        ModelEntry {
            provider: Some(id.into()),
            model: Some(model.into()),
            ..Default::default()
        }
    }

    fn settings(base: &str, api: Option<&str>) -> ProviderSettings {
        serde_json::from_value(serde_json::json!({"baseUrl": base, "apiKey": "k-123", "api": api}))
            .unwrap()
    }

    /// OpenAI's wire (multipart): a 429, a 500 and an answer slower than
    /// the entry's timeout each hand over to the next entry (the same
    /// service), which answers; Deepgram's wire (raw bytes, `Token` auth).
    #[actix::test]
    async fn openai_compatible_and_deepgram_services_transcribe_with_fallback() {
        let dir = tempfile::tempdir().unwrap();
        let store =
            MediaStore::new(dir.path().join("m"), Duration::from_secs(60), u64::MAX).start();
        let wav = speak(dir.path(), "what is the weather today");
        let media = store
            .send(PutMedia {
                bytes: wav.clone().into(),
                content_type: None,
                file_name: None,
            })
            .await
            .unwrap()
            .unwrap();
        let (base, oai) = serve(4, |i, head, body| match i {
            0 => (429, r#"{"error":{"message":"slow down"}}"#.into()),
            1 => (500, r#"{"error":{"message":"upstream"}}"#.into()),
            2 => {
                // Slower than the entry's timeout: it has given up.
                std::thread::sleep(Duration::from_millis(1500));
                (200, r#"{"text":"too late"}"#.into())
            }
            _ => {
                assert!(
                    head.to_ascii_lowercase()
                        .contains("authorization: bearer k-123"),
                    "{head}"
                );
                let text = hear(&file_part(head, body));
                (200, serde_json::json!({ "text": text }).to_string())
            }
        });
        let mut slow = provider("local", "whisper-1");
        slow.limits.timeout_seconds = Some(0.3);
        let mut cfg = (*audio(vec![
            provider("local", "whisper-1"),
            provider("local", "whisper-1"),
            slow,
            provider("local", "whisper-1"),
        ]))
        .clone();
        cfg.providers.insert("local".into(), settings(&base, None));
        let u = store
            .send(Understand {
                media: media.clone(),
                config: std::sync::Arc::new(cfg),
            })
            .await
            .unwrap();
        assert_eq!(
            u.text.as_deref(),
            Some("what is the weather today"),
            "{u:?}"
        );
        assert!(u.attempts[0].contains("HTTP 429"), "{u:?}");
        assert!(u.attempts[1].contains("HTTP 500"), "{u:?}");
        assert!(u.attempts[2].contains("timed out"), "{u:?}");
        let heads = oai.join().unwrap();
        assert!(
            heads[3].starts_with("POST /v1/audio/transcriptions "),
            "{heads:?}"
        );

        let wav = speak(dir.path(), "start a new session");
        let media = store
            .send(PutMedia {
                bytes: wav.into(),
                content_type: None,
                file_name: None,
            })
            .await
            .unwrap()
            .unwrap();
        let (base, dg) = serve(1, |_, head, body| {
            assert!(head.contains("Token k-123"), "{head}");
            let text = hear(body);
            (200, serde_json::json!({"results": {"channels": [{"alternatives": [{"transcript": text}]}]}}).to_string())
        });
        let mut cfg = (*audio(vec![provider("dg", "nova-3")])).clone();
        cfg.providers
            .insert("dg".into(), settings(&base, Some("deepgram")));
        let u = store
            .send(Understand {
                media,
                config: std::sync::Arc::new(cfg),
            })
            .await
            .unwrap();
        assert_eq!(u.text.as_deref(), Some("start a new session"), "{u:?}");
        let heads = dg.join().unwrap();
        assert!(
            heads[0].starts_with("POST /v1/listen?model=nova-3"),
            "{heads:?}"
        );
    }
}
