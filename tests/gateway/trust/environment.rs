//! Item 6 of the second trust wave: media reads the environment only
//! through the `EnvReader` `main.rs` hands the gateway (invariant 3), like
//! the provider hub, so a test's fixed environment and what an operator
//! configured are all it sees. A provider entry of `tools.media` with no
//! `apiKey` takes `<ID>_API_KEY` from that reader, and auto-detection
//! finds a provider by the keys the reader gives, never the process's.

use std::sync::{Arc, Mutex};

use base64::Engine;
use serde_json::{json, Value};

use crate::support::{admin, chat_until_done, TestGateway};

/// A fake OpenAI-compatible transcription endpoint: records each
/// request's head (lower-cased) and answers with a fixed transcript.
struct FakeTranscriber {
    base: String,
    heads: Arc<Mutex<Vec<String>>>,
}

async fn transcriber() -> FakeTranscriber {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}/v1", listener.local_addr().unwrap());
    let heads = Arc::new(Mutex::new(Vec::new()));
    let seen = heads.clone();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            let seen = seen.clone();
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 16384];
                let head = loop {
                    let n = s.read(&mut chunk).await.unwrap_or(0);
                    if n == 0 {
                        return;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                    if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                        break (
                            String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase(),
                            end + 4,
                        );
                    }
                };
                let len: usize = head
                    .0
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:"))
                    .and_then(|v| v.trim().parse().ok())
                    .unwrap_or(0);
                while buf.len() < head.1 + len {
                    let n = s.read(&mut chunk).await.unwrap_or(0);
                    if n == 0 {
                        break;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                }
                seen.lock().unwrap().push(head.0);
                let body = json!({ "text": "the heron nests by the river" }).to_string();
                let res = format!("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len());
                let _ = s.write_all(res.as_bytes()).await;
            });
        }
    });
    FakeTranscriber { base, heads }
}

fn openai_at(base: &str) -> Value {
    json!({ "models": { "providers": { "openai": { "baseUrl": base, "api": "openai-completions", "models": [] } } } })
}

/// Sends a voice note as `chat.send` does and returns the reply's text.
async fn say_with_audio(gw: &TestGateway, id: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let speech = super::super::media::speak(dir.path(), "hello there");
    let mut c = admin(gw).await;
    let r = c
        .call(
            "chat.send",
            json!({"sessionKey": "main", "message": "", "idempotencyKey": id,
                   "attachments": [{"mimeType": "audio/wav", "content": base64::engine::general_purpose::STANDARD.encode(&speech)}]}),
        )
        .await;
    assert_eq!(r["ok"], true, "{r}");
    let events = chat_until_done(&mut c, id).await;
    events.last().unwrap()["payload"]["message"].to_string()
}

#[tokio::test]
async fn a_media_provider_entry_takes_its_key_from_the_gateways_environment() {
    let fake = transcriber().await;
    let mut cfg = openai_at(&fake.base);
    cfg["tools"] = json!({ "media": { "audio": { "models": [{ "provider": "openai", "model": "whisper-1" }] } } });
    let gw = TestGateway::with_env(cfg, &[], &[("OPENAI_API_KEY", "sk-reader-0123456789")]);
    let reply = say_with_audio(&gw, "e1").await;
    assert!(reply.contains("heron"), "transcribed: {reply}");
    let heads = fake.heads.lock().unwrap().clone();
    assert_eq!(heads.len(), 1, "{heads:?}");
    assert!(
        heads[0].contains("authorization: bearer sk-reader-0123456789"),
        "the key came from the gateway's environment: {heads:?}"
    );
}

#[tokio::test]
async fn auto_detection_sees_only_the_keys_the_gateways_environment_gives() {
    let fake = transcriber().await;
    // No tools.media.audio: a transcriber is detected from the keys there are.
    let with_key = TestGateway::with_env(
        openai_at(&fake.base),
        &[],
        &[("OPENAI_API_KEY", "sk-detected-0123456789")],
    );
    let reply = say_with_audio(&with_key, "d1").await;
    assert!(reply.contains("heron"), "detected and transcribed: {reply}");
    let heads = fake.heads.lock().unwrap().clone();
    assert!(
        heads.len() == 1 && heads[0].contains("authorization: bearer sk-detected-0123456789"),
        "{heads:?}"
    );
    // The same config with an empty environment detects nothing: the
    // turn runs without a transcript and the endpoint is never called.
    let without = TestGateway::with_config(openai_at(&fake.base));
    let reply = say_with_audio(&without, "d2").await;
    assert!(!reply.contains("heron"), "{reply}");
    assert_eq!(fake.heads.lock().unwrap().len(), 1, "no second call");
}
