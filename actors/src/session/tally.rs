//! A run's usage row: its tokens (added to the entry's per-model counts)
//! and what it did (`usage::Activity`: the channel, messages, tool calls,
//! errors and reply latencies the session tallied while it ran), written
//! with the run's end whatever way it ended.

use super::state::ActiveRun;
use super::SessionEntry;
use crate::ids::SessionKey;
use crate::provider::{ChatMessage, Usage};
use crate::run::RunEvent;
use crate::store::StoreWrite;
use crate::usage::{Activity, RunUsage, Totals};

impl ActiveRun {
    /// A message of this run, at `now`.
    pub fn tally(&mut self, m: &ChatMessage, now: u64) {
        self.activity.note(m, self.started_at, now);
    }
}

/// The `usage` row recording `run`'s end by `event` (None for a
/// compaction, which answers no one); a final answer's tokens are added to
/// the entry's per-model counts.
pub(super) fn row(
    e: &mut SessionEntry,
    (key, agent): (&SessionKey, &str),
    run: &ActiveRun,
    event: &RunEvent,
    now: u64,
) -> Option<StoreWrite> {
    if run.compaction {
        return None;
    }
    let model = match (&e.model_provider, &e.model) {
        (Some(p), Some(m)) => format!("{p}/{m}"),
        _ => "unknown/unknown".to_string(),
    };
    let mut activity: Activity = run.activity.clone();
    // The turn's input is one user message (steered ones were tallied).
    activity.user += 1;
    activity.channel = run
        .overrides
        .channel
        .clone()
        .unwrap_or_else(|| crate::context::channel_of_key(key.as_str()).to_string());
    let tokens = match event {
        RunEvent::Final { usage, .. } => tokens(e, &model, usage),
        RunEvent::Failed { .. } => {
            activity.errors += 1;
            Totals::default()
        }
        _ => Totals::default(),
    };
    let row = RunUsage {
        agent_id: agent.to_string(),
        session_key: key.clone(),
        model,
        at_ms: now,
        tokens,
        activity,
    };
    crate::usage::record(run.run_id.as_str(), &row).ok()
}

/// A final answer's tokens, counted on the entry under `model` (when the
/// model is known).
fn tokens(e: &mut SessionEntry, model: &str, usage: &Usage) -> Totals {
    let tokens = Totals::of(usage);
    if e.model_provider.is_some() && e.model.is_some() {
        e.usage_by_model
            .entry(model.to_string())
            .or_default()
            .add(&tokens);
    }
    tokens
}
