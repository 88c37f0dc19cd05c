//! `users.list`, `users.self`: ferroclaw has no user profiles (one owner,
//! operators by token or device), so it answers as OpenClaw answers a
//! gateway without them: no profiles, and no authenticated user.

use serde_json::{json, Value};

use super::{json, MethodResult};
use crate::protocol::errors::{ErrorCode, ErrorShape};

/// A method that takes no params: none, or `{}`.
pub(super) fn no_params(method: &str, p: &Value) -> Result<(), ErrorShape> {
    match p {
        Value::Null => Ok(()),
        Value::Object(o) if o.is_empty() => Ok(()),
        Value::Object(o) => Err(ErrorShape::invalid(format!(
            "invalid {method} params: unexpected property {:?}",
            o.keys().next().map(String::as_str).unwrap_or_default()
        ))),
        _ => Err(ErrorShape::invalid(format!(
            "invalid {method} params: must be object"
        ))),
    }
}

/// The user profiles: none (ferroclaw keeps none).
pub fn list(p: &Value) -> MethodResult {
    no_params("users.list", p)?;
    json(json!({ "profiles": [] }))
}

/// The caller's profile: OpenClaw's refusal for a connection without one.
pub fn this(p: &Value) -> MethodResult {
    no_params("users.self", p)?;
    Err(ErrorShape::new(
        ErrorCode::Forbidden,
        "users.self requires an authenticated user",
    ))
}
