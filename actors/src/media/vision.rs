//! Provider entries of `tools.media` for images and video: the file is
//! described by a model that can see it. OpenAI-compatible
//! `POST <baseUrl>/chat/completions` (OpenAI, Gemini's OpenAI endpoint,
//! local servers), the image as an `image_url` data URL; a video as a
//! `video_url` data URL (the servers that take video that way: vLLM,
//! Qwen-VL). Anthropic's `POST <baseUrl>/messages` (an `api` of
//! `anthropic-messages`, or the id `anthropic`) for images.

use std::time::Duration;

use base64::Engine;
use serde_json::{json, Value};

use super::config::{CapabilityLimits, ModelEntry};
use super::provider::{answer, client, endpoint};
use super::store::{MediaKind, MediaRef};
use super::AttemptError;

/// The prompt when the entry sets none (OpenClaw's default wording).
pub fn default_prompt(kind: MediaKind, max_chars: Option<usize>) -> String {
    let what = match kind {
        MediaKind::Video => "video",
        _ => "image",
    };
    match max_chars {
        Some(n) => format!("Describe the {what} in <= {n} characters."),
        None => format!("Describe the {what}."),
    }
}

/// Anthropic's Messages API: the image as a base64 block, then the prompt.
fn anthropic_request(
    ep: &super::provider::Endpoint,
    model: &str,
    media: &MediaRef,
    data: &str,
    prompt: &str,
) -> reqwest::RequestBuilder {
    let body = json!({
        "model": model,
        "max_tokens": 1024,
        "messages": [{ "role": "user", "content": [
            { "type": "image", "source": {
                "type": "base64", "media_type": media.content_type, "data": data } },
            { "type": "text", "text": prompt },
        ]}],
    });
    let r = client()
        .post(format!("{}/messages", ep.base))
        .header("anthropic-version", "2023-06-01")
        .json(&body);
    match &ep.key {
        Some(k) => r.header("x-api-key", k),
        None => r,
    }
}

/// An OpenAI-compatible chat completion: the prompt, then the image or
/// video as a data URL.
fn openai_request(
    ep: &super::provider::Endpoint,
    model: &str,
    media: &MediaRef,
    data: &str,
    prompt: &str,
) -> reqwest::RequestBuilder {
    let url = format!("data:{};base64,{data}", media.content_type);
    let part = match media.kind {
        MediaKind::Video => json!({ "type": "video_url", "video_url": { "url": url } }),
        _ => json!({ "type": "image_url", "image_url": { "url": url } }),
    };
    let body = json!({
        "model": model,
        "messages": [{ "role": "user", "content": [
            { "type": "text", "text": prompt }, part,
        ]}],
    });
    let r = client()
        .post(format!("{}/chat/completions", ep.base))
        .json(&body);
    match &ep.key {
        Some(k) => r.bearer_auth(k),
        None => r,
    }
}

/// Describes `media` with a provider entry; the text or why not.
pub(super) async fn describe(
    entry: &ModelEntry,
    limits: &CapabilityLimits,
    media: &MediaRef,
    timeout: Duration,
    cfg: &super::MediaConfig,
) -> Result<String, AttemptError> {
    let ep = endpoint(entry, cfg)?;
    let model = ep
        .model
        .clone()
        .ok_or(AttemptError::NoModel(" to describe media"))?;
    let prompt = limits
        .prompt
        .clone()
        .unwrap_or_else(|| default_prompt(media.kind, limits.max_chars));
    let bytes = tokio::fs::read(&media.path)
        .await
        .map_err(AttemptError::Read)?;
    let data = base64::engine::general_purpose::STANDARD.encode(&bytes);
    let anthropic = ep.id == "anthropic" || ep.api.as_deref() == Some("anthropic-messages");
    if anthropic && media.kind == MediaKind::Video {
        return Err(AttemptError::NoVideo);
    }
    let req = match anthropic {
        true => anthropic_request(&ep, &model, media, &data, &prompt),
        false => openai_request(&ep, &model, media, &data, &prompt),
    };
    let body = answer(req, &ep, timeout).await?;
    text_of(&body, anthropic).ok_or(AttemptError::Empty("text"))
}

fn text_of(body: &Value, anthropic: bool) -> Option<String> {
    if anthropic {
        let parts = body.get("content")?.as_array()?;
        let text: String = parts
            .iter()
            .filter(|p| p["type"] == "text")
            .filter_map(|p| p["text"].as_str())
            .collect();
        return Some(text).filter(|t| !t.trim().is_empty());
    }
    let content = body.pointer("/choices/0/message/content")?;
    match content {
        Value::String(s) => Some(s.clone()),
        Value::Array(parts) => Some(
            parts
                .iter()
                .filter_map(|p| p["text"].as_str())
                .collect::<String>(),
        ),
        _ => None,
    }
    .filter(|t| !t.trim().is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_text_is_read_from_both_answer_shapes() {
        let openai = json!({"choices": [{"message": {"content": "a red square"}}]});
        assert_eq!(text_of(&openai, false).as_deref(), Some("a red square"));
        let parts =
            json!({"choices": [{"message": {"content": [{"type": "text", "text": "a cat"}]}}]});
        assert_eq!(text_of(&parts, false).as_deref(), Some("a cat"));
        let anthropic = json!({"content": [{"type": "text", "text": "a dog"}]});
        assert_eq!(text_of(&anthropic, true).as_deref(), Some("a dog"));
        assert_eq!(text_of(&json!({"choices": []}), false), None);
        assert_eq!(
            default_prompt(MediaKind::Image, Some(500)),
            "Describe the image in <= 500 characters."
        );
    }
}
