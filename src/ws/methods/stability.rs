//! `diagnostics.stability` (`openclaw gateway stability`): the process's
//! stability record (`ferroclaw_actors::stability`) in OpenClaw's snapshot
//! shape: memory samples, frames refused for size, slow consumers closed.

use ferroclaw_actors::stability::{Query, MAX_LIMIT};
use serde::Deserialize;
use serde_json::Value;

use super::{json, params, MethodResult};
use crate::protocol::errors::ErrorShape;
use crate::state::SharedState;

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct StabilityParams {
    #[serde(default)]
    limit: Option<u64>,
    #[serde(default, rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    since_seq: Option<u64>,
}

pub fn stability(state: &SharedState, p: &Value) -> MethodResult {
    let p: StabilityParams = params("diagnostics.stability", p)?;
    if let Some(l) = p.limit.filter(|l| *l == 0 || *l > MAX_LIMIT as u64) {
        return Err(ErrorShape::invalid(format!(
            "limit must be between 1 and {MAX_LIMIT} (got {l})"
        )));
    }
    let q = Query {
        limit: p.limit.map(|l| l as usize),
        kind: p.kind.filter(|k| !k.trim().is_empty()),
        since_seq: p.since_seq,
    };
    json(state.gateway.metrics.stability.snapshot(&q))
}
