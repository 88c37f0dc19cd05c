//! `progress_card` (OpenClaw's tool): replaces the calling session's
//! progress card (`progressCard.put`), which the Control UI shows next to
//! the session. Never offered to a stranger's turn: the card is the
//! owner's status surface (checked here again).

use ferroclaw_actors::session::card::{CardPut, CardStep};
use ferroclaw_actors::tool::{ExecuteTool, ToolOutcome};
use serde::Deserialize;
use serde_json::json;

use super::{fail, refused};
use crate::state::SharedState;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    #[serde(default)]
    markdown: Option<String>,
    #[serde(default)]
    plan: Option<Vec<CardStep>>,
}

pub(super) async fn run(state: &SharedState, msg: &ExecuteTool) -> ToolOutcome {
    if msg.trust.untrusted {
        return refused("progress_card: not available on this turn");
    }
    let args: Args = match serde_json::from_value(msg.call.arguments.clone()) {
        Ok(a) => a,
        Err(e) => return fail(format!("progress_card: {e}")),
    };
    let put = CardPut {
        markdown: args.markdown,
        plan: args.plan,
        expected_revision: None,
    };
    let card = match crate::ws::methods::cards::put(state, &msg.session_key, put).await {
        Ok(c) => c,
        Err(e) => return fail(format!("progress_card: {}", e.message)),
    };
    let Some(card) = card else {
        return ToolOutcome::ok("Progress card cleared");
    };
    let steps = card.steps.as_deref().unwrap_or_default();
    let done = steps
        .iter()
        .filter(|s| s.status == ferroclaw_actors::session::card::StepStatus::Completed)
        .count();
    let text = match steps.len() {
        0 => format!("Progress card updated (rev {})", card.revision),
        n => format!(
            "Progress card updated (rev {}, {done}/{n} done)",
            card.revision
        ),
    };
    let counts = (!steps.is_empty()).then(|| json!({ "completed": done, "total": steps.len() }));
    ToolOutcome::ok(format!(
        "{text}\n{}",
        json!({ "revision": card.revision, "steps": counts })
    ))
}
