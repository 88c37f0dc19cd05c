//! `users.list`, `users.self`: ferroclaw has no user profiles (one owner,
//! operators by token or device), so it answers as OpenClaw answers a
//! gateway without them: no profiles, and no authenticated user.

use serde_json::{json, Value};

use super::{json, MethodResult};
use crate::protocol::errors::{ErrorCode, ErrorShape};

/// The user profiles: none (ferroclaw keeps none).
pub fn list(p: &Value) -> MethodResult {
    super::empty_params("users.list", p)?;
    json(json!({ "profiles": [] }))
}

/// The caller's profile: OpenClaw's refusal for a connection without one.
pub fn this(p: &Value) -> MethodResult {
    super::empty_params("users.self", p)?;
    Err(ErrorShape::new(
        ErrorCode::Forbidden,
        "users.self requires an authenticated user",
    ))
}
