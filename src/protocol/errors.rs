//! The error shape of `res` frames and the one table of error codes: every
//! error the actor tree answers with gets one wire code (and with it one
//! HTTP status) here, in `WireError`'s implementations.

use ferroclaw_actors::approvals::ApprovalError;
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
    }
}
