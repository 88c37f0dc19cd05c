//! The error shape of `res` frames and the one table of error codes.

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
