//! The error shape of `res` frames and the one table of error codes: every
//! error the actor tree answers with gets one wire code (and with it one
//! HTTP status) here, in `WireError`'s implementations.

use ferroclaw_actors::approvals::ApprovalError;
use ferroclaw_actors::audit::DbError;
use ferroclaw_actors::channels::ChannelSendError;
use ferroclaw_actors::cron::CronError;
use ferroclaw_actors::gateway::SecretsError;
use ferroclaw_actors::ids::SessionKeyError;
use ferroclaw_actors::memory::IndexError;
use ferroclaw_actors::session::SessionError;
use ferroclaw_actors::store::StoreError;
use ferroclaw_actors::transcript::TranscriptError;
use serde::Serialize;
use serde_json::Value;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ErrorCode {
    InvalidRequest,
    Unavailable,
    NotPaired,
    NotLinked,
    AgentTimeout,
    Forbidden,
    ApprovalNotFound,
}

impl ErrorCode {
    /// The HTTP status of an error with this code (admin and OpenAI routes).
    pub fn http_status(self) -> u16 {
        match self {
            ErrorCode::InvalidRequest => 400,
            ErrorCode::NotPaired | ErrorCode::Forbidden => 403,
            ErrorCode::NotLinked | ErrorCode::ApprovalNotFound => 404,
            ErrorCode::Unavailable => 503,
            ErrorCode::AgentTimeout => 504,
        }
    }
}

/// An actor error as the wire sees it.
pub trait WireError: std::fmt::Display {
    fn code(&self) -> ErrorCode;
    /// The client may retry after this long (transient failures).
    fn retry_after_ms(&self) -> Option<u64> {
        None
    }
    fn message(&self) -> String {
        self.to_string()
    }
}

/// Store failures are transient: retry in a second.
const STORE_RETRY_MS: u64 = 1000;

/// Store and transcript failures: `UNAVAILABLE`, retry in a second.
macro_rules! store_failure {
    ($($t:ty),*) => {$(
        impl WireError for $t {
            fn code(&self) -> ErrorCode {
                ErrorCode::Unavailable
            }
            fn retry_after_ms(&self) -> Option<u64> {
                Some(STORE_RETRY_MS)
            }
            fn message(&self) -> String {
                format!("store unavailable: {self}")
            }
        }
    )*};
}

store_failure!(StoreError, TranscriptError);

impl WireError for SessionError {
    fn code(&self) -> ErrorCode {
        match self {
            SessionError::Invalid(_) => ErrorCode::InvalidRequest,
            SessionError::Store(e) => e.code(),
            SessionError::Transcript(e) => e.code(),
        }
    }
    fn retry_after_ms(&self) -> Option<u64> {
        match self {
            SessionError::Invalid(_) => None,
            SessionError::Store(e) => e.retry_after_ms(),
            SessionError::Transcript(e) => e.retry_after_ms(),
        }
    }
    fn message(&self) -> String {
        match self {
            SessionError::Invalid(m) => m.clone(),
            SessionError::Store(e) => e.message(),
            SessionError::Transcript(e) => e.message(),
        }
    }
}

impl WireError for ApprovalError {
    fn code(&self) -> ErrorCode {
        match self {
            ApprovalError::Exists(_) | ApprovalError::Stale | ApprovalError::Invalid(_) => {
                ErrorCode::InvalidRequest
            }
            ApprovalError::Unknown(_) | ApprovalError::NotPending(_) => ErrorCode::ApprovalNotFound,
            ApprovalError::Io(_) | ApprovalError::Stopped => ErrorCode::Unavailable,
        }
    }
}

/// OpenClaw answers every question error as INVALID_REQUEST, with its
/// reason in `details` (`ws/methods/questions.rs` adds it).
impl WireError for ferroclaw_actors::questions::QuestionError {
    fn code(&self) -> ErrorCode {
        match self {
            ferroclaw_actors::questions::QuestionError::Stopped => ErrorCode::Unavailable,
            _ => ErrorCode::InvalidRequest,
        }
    }
}

/// `memory.search`: the index's database is transient; an index built
/// with other embeddings needs a reindex, which a retry does not bring.
impl WireError for IndexError {
    fn code(&self) -> ErrorCode {
        ErrorCode::Unavailable
    }
    fn retry_after_ms(&self) -> Option<u64> {
        match self {
            IndexError::Sql(_) => Some(STORE_RETRY_MS),
            IndexError::Dimensions { .. } => None,
        }
    }
}

/// A client's session key that cannot be one.
impl WireError for SessionKeyError {
    fn code(&self) -> ErrorCode {
        ErrorCode::InvalidRequest
    }
    fn message(&self) -> String {
        format!("invalid sessionKey: {self}")
    }
}

/// `cron.*`: an unknown job or a bad definition is the caller's; the store
/// is transient. (`ws/methods/cron.rs` adds OpenClaw's details.)
impl WireError for CronError {
    fn code(&self) -> ErrorCode {
        match self {
            CronError::NotFound(_) | CronError::Invalid(_) => ErrorCode::InvalidRequest,
            CronError::Store(e) => e.code(),
        }
    }
    fn retry_after_ms(&self) -> Option<u64> {
        match self {
            CronError::Store(e) => e.retry_after_ms(),
            _ => None,
        }
    }
}

/// `send` and `chat.send deliver`: an unknown channel is the caller's;
/// everything else is the platform's or ours, and may pass.
impl WireError for ChannelSendError {
    fn code(&self) -> ErrorCode {
        match self {
            ChannelSendError::NoAccount(_) => ErrorCode::InvalidRequest,
            _ => ErrorCode::Unavailable,
        }
    }
    fn retry_after_ms(&self) -> Option<u64> {
        match self {
            ChannelSendError::Store(e) => e.retry_after_ms(),
            ChannelSendError::Down => Some(1000),
            _ => None,
        }
    }
    fn message(&self) -> String {
        match self {
            ChannelSendError::NoAccount(what) => format!("unsupported channel: {what}"),
            ChannelSendError::Store(e) => e.message(),
            ChannelSendError::Down => "agent runtime unavailable".into(),
            other => format!("send failed: {other}"),
        }
    }
}

/// The audit ledger: its file failed (retry), or it is not running.
impl WireError for DbError {
    fn code(&self) -> ErrorCode {
        ErrorCode::Unavailable
    }
    fn retry_after_ms(&self) -> Option<u64> {
        matches!(self, DbError::Sql(_)).then_some(STORE_RETRY_MS)
    }
}

/// `secrets.reload`: a credential file that cannot be read (fix it, retry).
impl WireError for SecretsError {
    fn code(&self) -> ErrorCode {
        ErrorCode::Unavailable
    }
    fn message(&self) -> String {
        format!("secrets.reload failed: {self}")
    }
}

/// `{code, message, details?, retryable?, retryAfterMs?}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ErrorShape {
    pub code: ErrorCode,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retryable: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_after_ms: Option<u64>,
}

impl ErrorShape {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> ErrorShape {
        ErrorShape {
            code,
            message: message.into(),
            details: None,
            retryable: None,
            retry_after_ms: None,
        }
    }
    /// An actor error by the table (`WireError`); failures the client
    /// cannot fix are logged here, once.
    pub fn from_error(e: &impl WireError) -> ErrorShape {
        let shape = ErrorShape::new(e.code(), e.message());
        if shape.code == ErrorCode::Unavailable {
            tracing::error!(error = %e, "request failed");
        }
        match e.retry_after_ms() {
            Some(ms) => shape.retry_after(ms),
            None => shape,
        }
    }
    pub fn invalid(message: impl Into<String>) -> ErrorShape {
        ErrorShape::new(ErrorCode::InvalidRequest, message)
    }
    pub fn unavailable(message: impl Into<String>) -> ErrorShape {
        ErrorShape::new(ErrorCode::Unavailable, message)
    }
    pub fn with_details(mut self, details: Value) -> ErrorShape {
        self.details = Some(details);
        self
    }
    pub fn retry_after(mut self, ms: u64) -> ErrorShape {
        self.retryable = Some(true);
        self.retry_after_ms = Some(ms);
        self
    }
    /// `missing scope: <scope>` (clients parse the scope out of the message).
    pub fn missing_scope(scope: &str) -> ErrorShape {
        ErrorShape::new(ErrorCode::Forbidden, format!("missing scope: {scope}")).with_details(
            serde_json::json!({
                "code": "MISSING_SCOPE",
                "missingScope": scope,
                "requiredScopes": [scope],
            }),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn actor_errors_map_to_one_code_and_status() {
        let reindex = IndexError::Dimensions { want: 3, got: 4 };
        let shape = ErrorShape::from_error(&reindex);
        assert_eq!(shape.code, ErrorCode::Unavailable);
        assert_eq!(shape.retry_after_ms, None, "a retry does not cure it");
        let shape = ErrorShape::from_error(&ApprovalError::Unknown("x".into()));
        assert_eq!(shape.code, ErrorCode::ApprovalNotFound);
        assert_eq!(shape.code.http_status(), 404);
        let shape = ErrorShape::from_error(&SessionError::Invalid("bad level".into()));
        assert_eq!(
            (shape.code, shape.message.as_str()),
            (ErrorCode::InvalidRequest, "bad level")
        );
        let stopped = SessionError::Transcript(TranscriptError::Stopped);
        let shape = ErrorShape::from_error(&stopped);
        assert_eq!(
            (shape.code, shape.retry_after_ms),
            (ErrorCode::Unavailable, Some(1000))
        );
        assert_eq!(ErrorCode::Unavailable.http_status(), 503);
        // Every error enum a method answers with has its row.
        let key = SessionKeyError::Empty;
        let shape = ErrorShape::from_error(&key);
        assert_eq!(
            (shape.code, shape.message.as_str()),
            (
                ErrorCode::InvalidRequest,
                "invalid sessionKey: session key is empty"
            )
        );
        let gone = ErrorShape::from_error(&CronError::NotFound("j".into()));
        assert_eq!(gone.code, ErrorCode::InvalidRequest);
        let cron_store = CronError::Store(StoreError::Corrupt {
            tree: "cron_jobs",
            key: "j".into(),
            message: "x".into(),
        });
        assert_eq!(
            ErrorShape::from_error(&cron_store).retry_after_ms,
            Some(1000)
        );
        let none = ErrorShape::from_error(&ChannelSendError::NoAccount("irc".into()));
        assert_eq!(
            (none.code, none.message.as_str()),
            (ErrorCode::InvalidRequest, "unsupported channel: irc")
        );
        let unknown = ErrorShape::from_error(&ChannelSendError::Unknown);
        assert_eq!(unknown.code, ErrorCode::Unavailable);
        assert!(unknown.message.starts_with("send failed: no answer"));
        let ledger = ErrorShape::from_error(&DbError::Gone);
        assert_eq!(
            (ledger.code, ledger.retry_after_ms),
            (ErrorCode::Unavailable, None)
        );
        let secrets = ErrorShape::from_error(&SecretsError::Read("no file".into()));
        assert_eq!(
            secrets.message,
            "secrets.reload failed: cannot read the credentials: no file"
        );
    }
}
