//! `secrets.reload`: the provider credentials are read again without a
//! restart (`auth-profiles.json`, `<state dir>/credentials/*`, provider
//! keys written as `${VAR}`), and the next model call uses them. Answered
//! as OpenClaw answers it: `{ok, warningCount}`, the warnings (a profile
//! file that is not JSON, a profile without a key, an unset `${VAR}`) in
//! the gateway's log.

use ferroclaw_actors::gateway::ReloadSecrets;
use serde_json::{json, Value};

use super::{down, json, MethodResult};
use crate::protocol::errors::ErrorShape;
use crate::state::SharedState;

pub async fn reload(state: &SharedState, p: &Value) -> MethodResult {
    super::empty_params("secrets.reload", p)?;
    let warnings = state
        .gateway
        .root
        .send(ReloadSecrets)
        .await
        .map_err(down)?
        .map_err(|e| ErrorShape::from_error(&e))?;
    json(json!({ "ok": true, "warningCount": warnings.len() }))
}
