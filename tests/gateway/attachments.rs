//! `chat.send` attachments on the media path (issue 32): a real voice
//! note (espeak-ng, transcribed by a real pocketsphinx), a PDF and an
//! image made here reach the model understood; the originals stay on the
//! transcript entry (`MediaPaths`, `MediaUrls`, `MediaTypes`).

use std::path::Path;

use base64::Engine;
use serde_json::{json, Value};

use super::media::{audio_config, speak};
use crate::support::fake_provider::{FakeProvider, Script};
use crate::support::{admin, chat_until_done, TestGateway};

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

pub(super) use crate::support::pdf::pdf;

/// A PNG's first bytes (the type is told from them; the describer is a
/// fake at the wire and never decodes it).
pub(super) fn png() -> Vec<u8> {
    let mut v = b"\x89PNG\r\n\x1a\n".to_vec();
    v.extend_from_slice(&[7u8; 200]);
    v
}

/// The fake provider as the reply model `fake/m1` (no image input) and
/// as the image describer `fake/eye`: a streamed request is a reply, a
/// plain one a description.
fn provider_config(provider: &FakeProvider) -> Value {
    provider.respond_with(|body| match body["stream"].as_bool() {
        Some(true) => Script::text(&["got them"]),
        _ => Script::json_answer("a red square on a white background"),
    });
    json!({
        "models": { "providers": { "fake": {
            "baseUrl": provider.base_url(), "api": "openai-completions", "apiKey": "k0",
            "models": [{ "id": "m1", "input": ["text"] }, { "id": "eye", "input": ["text", "image"] }],
        } } },
        "agents": { "defaults": { "model": { "primary": "fake/m1", "fallbacks": [] } } },
        "tools": { "media": { "image": { "models": [{ "provider": "fake", "model": "eye" }] } } },
    })
}

pub(super) fn user_text(body: &Value) -> String {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .map(|m| m["content"].to_string())
        .unwrap_or_default()
}

#[tokio::test]
async fn chat_send_files_reach_the_model_understood_and_stay_on_the_entry() {
    let dir = tempfile::tempdir().unwrap();
    let provider = FakeProvider::start().await;
    let mut cfg = provider_config(&provider);
    ferroclaw::config::merge_patch(&mut cfg, &audio_config(&dir.path().join("runs")));
    let gw = TestGateway::with_config(cfg);
    let mut c = admin(&gw).await;
    let speech = speak(dir.path(), "remind me to buy milk");
    let r = c
        .call(
            "chat.send",
            json!({"sessionKey": "main", "message": "here are my files", "idempotencyKey": "f1",
            "attachments": [
                {"mimeType": "audio/wav", "fileName": "note.wav", "content": b64(&speech)},
                {"type": "image", "mimeType": "image/png", "fileName": "sq.png", "content": b64(&png())},
                {"mimeType": "application/pdf", "fileName": "inv.pdf",
                 "content": b64(&pdf(&["Invoice 42", "Total 99 EUR"]))},
            ]}),
        )
        .await;
    assert_eq!(r["payload"]["status"], "started", "{r}");
    chat_until_done(&mut c, "f1").await;
    let requests = provider.requests.lock().unwrap().clone();
    let describe = requests
        .iter()
        .find(|(b, _)| b["model"] == "eye")
        .expect("the image was described");
    assert!(describe.0.to_string().contains("data:image/png;base64,"));
    let reply = requests
        .iter()
        .find(|(b, _)| b["model"] == "m1")
        .expect("a reply request");
    let user = user_text(&reply.0);
    for want in [
        "[Audio]\\nUser text:\\nhere are my files\\nTranscript:\\nremind me to buy milk",
        "[Image]\\nDescription:\\na red square on a white background",
        "[Document]\\nName: inv.pdf (application/pdf)\\nContent:\\nInvoice 42",
        "Total 99 EUR",
    ] {
        assert!(user.contains(want), "{want}: {user}");
    }
    assert!(!user.contains("image_url"), "m1 sees no images: {user}");

    // The originals, on the transcript entry.
    let h = c.call("chat.history", json!({"sessionKey": "main"})).await["payload"].clone();
    let first = &h["messages"][0];
    let types: Vec<&str> = first["MediaTypes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    assert_eq!(
        types,
        ["audio/wav", "image/png", "application/pdf"],
        "{first}"
    );
    for p in first["MediaPaths"].as_array().unwrap() {
        let p = Path::new(p.as_str().unwrap());
        assert!(
            p.starts_with(gw.state_dir().join("media")) && p.exists(),
            "{p:?}"
        );
    }
    assert_eq!(first["MediaUrls"].as_array().unwrap().len(), 3);
    assert_eq!(first["media"][2]["name"], "inv.pdf");

    // The originals, for the Control UI and the web chat: `GET /media/<id>`
    // behind the token; an image inline, a PDF as a download.
    let get = |id: &str, token: Option<&str>| {
        let mut r = reqwest::Client::new().get(format!("http://{}/media/{id}", gw.addr));
        if let Some(t) = token {
            r = r.bearer_auth(t);
        }
        r.send()
    };
    let image_id = first["media"][1]["id"].as_str().unwrap().to_string();
    let pdf_id = first["media"][2]["id"].as_str().unwrap();
    let r = get(&image_id, Some(crate::support::TOKEN)).await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["content-type"], "image/png");
    assert!(r.headers()["content-disposition"]
        .to_str()
        .unwrap()
        .starts_with("inline"));
    assert_eq!(r.bytes().await.unwrap().to_vec(), png());
    let r = get(pdf_id, Some(crate::support::TOKEN)).await.unwrap();
    assert!(r.headers()["content-disposition"]
        .to_str()
        .unwrap()
        .starts_with("attachment; filename=\"inv.pdf\""));
    assert_eq!(get(&image_id, None).await.unwrap().status(), 401);
    assert_eq!(get(&image_id, Some("wrong")).await.unwrap().status(), 401);
    assert_eq!(
        get("../../etc/passwd", Some(crate::support::TOKEN))
            .await
            .unwrap()
            .status(),
        404
    );
    assert_eq!(
        get(&"0".repeat(64), Some(crate::support::TOKEN))
            .await
            .unwrap()
            .status(),
        404
    );
}

/// A spoken command works for an operator: the transcript is what
/// directives are parsed from (OpenClaw's CommandBody). The transcriber
/// here is a CLI entry that prints the command.
#[tokio::test]
async fn a_spoken_command_is_run_from_the_transcript() {
    let dir = tempfile::tempdir().unwrap();
    let gw = TestGateway::with_config(json!({"tools": {"media": {"audio": {"models": [
        {"type": "cli", "command": "sh", "args": ["-c", "echo /new", "sh", "{{MediaPath}}"]},
    ]}}}}));
    let mut c = admin(&gw).await;
    let r = c
        .call(
            "chat.send",
            json!({"sessionKey": "main", "message": "hello first", "idempotencyKey": "p1"}),
        )
        .await;
    assert_eq!(r["payload"]["status"], "started", "{r}");
    chat_until_done(&mut c, "p1").await;
    let speech = speak(dir.path(), "start a new session");
    c.call(
        "chat.send",
        json!({"sessionKey": "main", "message": "", "idempotencyKey": "p2",
        "attachments": [{"mimeType": "audio/wav", "content": b64(&speech)}]}),
    )
    .await;
    let events = chat_until_done(&mut c, "p2").await;
    let last = events.last().unwrap()["payload"]["message"].to_string();
    assert!(last.contains("New session started"), "{last}");
    let h = c.call("chat.history", json!({"sessionKey": "main"})).await;
    assert_eq!(
        h["payload"]["messages"].as_array().unwrap().len(),
        0,
        "a fresh transcript: {h}"
    );
}

/// Bad files end in a clear error or a note; the turn still runs.
#[tokio::test]
async fn bad_files_are_refused_or_named_and_the_turn_still_runs() {
    let gw = TestGateway::with_config(json!({"tools": {"media": {"audio": {"models": [
        {"type": "cli", "command": "sh", "args": ["-c", "printf '\\377\\376garbage'", "sh", "{{MediaPath}}"]},
    ]}}}}));
    let mut c = admin(&gw).await;
    let r = c
        .call(
            "chat.send",
            json!({"sessionKey": "main", "message": "check these", "idempotencyKey": "b1",
            "attachments": [
                // Said to be a PNG; its bytes are text.
                {"mimeType": "image/png", "fileName": "fake.png", "content": b64(b"just some words")},
                // Corrupt audio, and a transcriber that prints garbage.
                {"mimeType": "audio/ogg", "fileName": "v.ogg", "content": b64(b"OggS\x00garbage")},
                // A PDF that is not one.
                {"mimeType": "application/pdf", "fileName": "x.pdf", "content": b64(b"%PDF-1.7 nothing")},
            ]}),
        )
        .await;
    assert_eq!(r["payload"]["status"], "started", "{r}");
    let events = chat_until_done(&mut c, "b1").await;
    let said = events.last().unwrap()["payload"]["message"].to_string();
    for want in [
        "fake.png (application/octet-stream, 15 bytes): said to be image/png; its bytes are not",
        "v.ogg (audio/ogg, 12 bytes) (not understood: cli:sh: printed something that is not text",
        "[document: x.pdf (application/pdf, 16 bytes) (not read: the PDF cannot be read",
    ] {
        assert!(said.contains(want), "{want}: {said}");
    }
}
