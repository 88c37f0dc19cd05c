//! The provider family: one actor per configured provider answers
//! `StreamCompletion` with a stream of `ProviderEvent`s. Dropping the stream's
//! receiver cancels the completion (the producer stops at its next send and
//! drops its upstream connection): that is how an abort reaches a provider.
//! Wire formats (OpenAI SSE, Anthropic SSE) stay private to each provider
//! module; everything here is provider-neutral.

pub mod anthropic;
pub mod embedded;
mod http;
pub mod hub;
pub mod limits;
mod messages;
pub mod offline;
pub mod openai;
pub mod overflow;
pub mod selection;

pub use messages::StreamCompletion;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::mpsc;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MessageRole {
    User,
    Assistant,
    Tool,
}

/// A tool call the model asked for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: Value,
}

/// One message of the conversation sent to a provider.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatMessage {
    pub role: MessageRole,
    pub text: String,
    /// Assistant messages: the tool calls it made.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// Tool messages: which call this answers, and whether it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    #[serde(default)]
    pub is_error: bool,
    /// User messages: attached images.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<Image>,
}

/// An image sent to the model: its MIME type and base64 data. An image
/// kept in the media store is held by reference (`media_id`) wherever it
/// is stored or kept for long (transcript, inbox, a session's history) and
/// loaded by the run that sends it (`media::load_images`); its `data` is
/// empty until then, and a provider skips an image with no data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Image {
    pub mime_type: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub data: String,
    /// The media store's id of the original.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_id: Option<String>,
}

impl Image {
    /// An image carried inline (not kept in the media store).
    pub fn inline(mime_type: &str, data: String) -> Image {
        Image {
            mime_type: mime_type.to_string(),
            data,
            media_id: None,
        }
    }

    /// What is kept of it: the reference alone when it has one.
    pub fn kept(&self) -> Image {
        match &self.media_id {
            Some(id) => Image {
                mime_type: self.mime_type.clone(),
                data: String::new(),
                media_id: Some(id.clone()),
            },
            None => self.clone(),
        }
    }
}

impl ChatMessage {
    pub fn user(text: &str) -> ChatMessage {
        ChatMessage {
            role: MessageRole::User,
            text: text.to_string(),
            tool_calls: Vec::new(),
            tool_call_id: None,
            is_error: false,
            images: Vec::new(),
        }
    }
    /// The images a request can carry: those with their bytes (one by
    /// reference that was never loaded is left out).
    pub fn loaded_images(&self) -> impl Iterator<Item = &Image> {
        self.images.iter().filter(|i| !i.data.is_empty())
    }
    pub fn assistant(text: &str) -> ChatMessage {
        ChatMessage {
            role: MessageRole::Assistant,
            ..ChatMessage::user(text)
        }
    }
    pub fn tool_result(call_id: &str, text: &str, is_error: bool) -> ChatMessage {
        ChatMessage {
            role: MessageRole::Tool,
            text: text.to_string(),
            tool_calls: Vec::new(),
            tool_call_id: Some(call_id.to_string()),
            is_error,
            images: Vec::new(),
        }
    }
}

/// A tool the model may call: name, description, JSON schema.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    pub parameters: Value,
}

/// A conversation as it is handed around: every message shared, so giving a
/// session's history to a run, and a run's messages to a provider request,
/// copies pointers instead of every message's text (three times per model
/// call before; with long sessions that churn dominated the heap).
pub type Messages = Vec<std::sync::Arc<ChatMessage>>;

/// Everything a provider needs for one completion.
#[derive(Debug, Clone, Default)]
pub struct CompletionRequest {
    /// The model id within the provider (no `provider/` prefix).
    pub model: String,
    /// Shared by every request of a session (built once per gateway).
    pub system: std::sync::Arc<str>,
    pub messages: Messages,
    pub tools: std::sync::Arc<[ToolSpec]>,
    pub max_tokens: Option<u32>,
    /// Extended-thinking budget in tokens (None: thinking off).
    pub thinking_budget: Option<u32>,
    /// The auth profile's key for this request (overrides the provider's own).
    pub api_key: Option<String>,
    /// Attempts for transient errors (None: the default 3). Failover asks for
    /// one when another profile or model can take over at once.
    pub max_attempts: Option<u32>,
}

/// The thinking budget for an OpenClaw thinking level (`/think <level>`).
pub fn thinking_budget(level: &str) -> Option<u32> {
    match level {
        "minimal" => Some(1024),
        "low" => Some(2048),
        "medium" => Some(8192),
        "high" => Some(16_384),
        "xhigh" => Some(32_768),
        _ => None,
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write: u64,
    /// A run's context as the provider counted it: its last model call's
    /// prompt (input and cache) plus output; 0 when not reported.
    #[serde(skip)]
    pub context: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum StopReason {
    /// The model finished its answer.
    Stop,
    /// The model wants tool results before it goes on.
    ToolUse,
    /// The output token limit was hit.
    Length,
}

impl StopReason {
    /// The wire's `stopReason`.
    pub fn as_str(self) -> &'static str {
        match self {
            StopReason::Stop => "stop",
            StopReason::ToolUse => "toolUse",
            StopReason::Length => "length",
        }
    }
}

/// Why a completion failed; the kind drives retry and failover.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ProviderError {
    #[error("rate limited")]
    RateLimited { retry_after_ms: Option<u64> },
    #[error("authentication failed: {0}")]
    Auth(String),
    #[error("billing: {0}")]
    Billing(String),
    #[error("context overflow: {0}")]
    ContextOverflow(String),
    #[error("bad request: {0}")]
    BadRequest(String),
    #[error("provider unavailable: {0}")]
    Unavailable(String),
    #[error("malformed response: {0}")]
    Malformed(String),
}

impl ProviderError {
    /// Another profile or model may succeed where this one failed.
    pub fn fails_over(&self) -> bool {
        !matches!(
            self,
            ProviderError::BadRequest(_) | ProviderError::ContextOverflow(_)
        )
    }

    /// A later try of the same request may succeed (supervision restarts).
    pub fn transient(&self) -> bool {
        matches!(
            self,
            ProviderError::RateLimited { .. }
                | ProviderError::Unavailable(_)
                | ProviderError::Malformed(_)
        )
    }
}

/// One step of a streamed completion, in order: text and thinking deltas,
/// tool calls, then usage and exactly one `Done` (or an `Error`).
#[derive(Debug, Clone, PartialEq)]
pub enum ProviderEvent {
    TextDelta(String),
    ThinkingDelta(String),
    ToolCall(ToolCall),
    Usage(Usage),
    Done(StopReason),
    Error(ProviderError),
}

/// Events of one completion; dropping it cancels the completion.
pub type CompletionStream = mpsc::Receiver<ProviderEvent>;

/// Events buffered per completion before the producer waits for the reader.
pub const STREAM_BUFFER: usize = 64;
